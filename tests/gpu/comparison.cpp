// The comparison of two tensors behind every kernel check (cuda_checks.hpp states the
// tolerances): norm-wise relative error, the worst element, and the one-line verdict. Apart from
// cuda_checks.cpp so that tests without a CUDA backend (tests/unit/test_gpu_ops_interpreted.cpp)
// compare the same way.
#include <cmath>
#include <cstdio>

#include "tests/gpu/cuda_checks.hpp"

namespace eth::test::gpu {
namespace {

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

std::string Comparison::describe() const {
  std::string s = (passed() ? "ok    " : "FAIL  ") + tensor + ": ";
  if (!problem.empty()) return s + problem;
  s += "relative error " + format_number(rel_error) + " (tolerance " + format_number(tolerance) + ")";
  if (!passed()) {
    s += "; worst element [" + std::to_string(worst_index) + "]: ours " + format_number(ours) + ", reference " +
         format_number(ref);
  }
  return s;
}

template <typename F>
Comparison compare_impl(const std::string& tensor, const std::vector<F>& ours, const std::vector<F>& ref,
                        double tolerance, const std::vector<F>* start) {
  Comparison c;
  c.tensor = tensor;
  c.tolerance = tolerance;
  if (ours.size() != ref.size() || (start != nullptr && start->size() != ref.size())) {
    c.problem = "size mismatch: ours " + std::to_string(ours.size()) + ", reference " + std::to_string(ref.size());
    return c;
  }
  double diff2 = 0.0, ref2 = 0.0, worst = -1.0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double base = start != nullptr ? static_cast<double>((*start)[i]) : 0.0;
    const double o = static_cast<double>(ours[i]) - base, r = static_cast<double>(ref[i]) - base;
    const double d = std::abs(o - r);
    diff2 += d * d;
    ref2 += r * r;
    if (!(d <= worst)) {  // also catches NaN
      worst = d;
      c.worst_index = i;
      c.ours = o;
      c.ref = r;
    }
  }
  if (!(ref2 > 0.0)) {
    c.problem = "the reference is all zeros (or NaN), so the check would prove nothing";
    return c;
  }
  c.rel_error = std::sqrt(diff2 / ref2);
  if (std::isnan(c.rel_error)) c.problem = "NaN in the output: an element was left unwritten or overflowed";
  return c;
}

Comparison compare(const std::string& tensor, const std::vector<float>& ours, const std::vector<float>& ref,
                   double tolerance, const std::vector<float>* start) {
  return compare_impl(tensor, ours, ref, tolerance, start);
}
Comparison compare(const std::string& tensor, const std::vector<double>& ours, const std::vector<double>& ref,
                   double tolerance) {
  return compare_impl<double>(tensor, ours, ref, tolerance, nullptr);
}

}  // namespace eth::test::gpu
