// Finite-difference checking in double precision, for the CPU reference ops instantiated on
// double. Central differences with h = 1e-6 have truncation error O(h^2) ~ 1e-12 and rounding
// error ~ 1e-16 * |loss| / h ~ 1e-10 relative: a tolerance of 1e-7 on the relative error norm
// leaves a wide margin while catching any wrong term (those show up at 1e-2 or worse).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lib/base/random.hpp"

namespace eth::test {

constexpr double kGradTolerance = 1e-7;

// Deterministic values in [-scale, scale), never all zero.
inline std::vector<double> random_vector(size_t n, uint64_t stream, double scale = 1.0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * (2.0 * uniform_at(stream, i) - 1.0);
  return v;
}

// Fills a buffer a kernel must write entirely: any element it misses stays NaN and fails.
template <typename F>
inline void poison(std::vector<F>& v) { std::fill(v.begin(), v.end(), std::numeric_limits<F>::quiet_NaN()); }

// d loss / d x by central differences, perturbing x in place and restoring it.
inline std::vector<double> numeric_gradient(std::vector<double>& x, const std::function<double()>& loss) {
  constexpr double h = 1e-6;
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); i++) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Parameter gradients accumulate: each check starts them from random values and subtracts.
inline std::vector<double> accumulated_minus_start(const std::vector<double>& after, const std::vector<double>& start) {
  std::vector<double> d(after.size());
  for (size_t i = 0; i < after.size(); i++) d[i] = after[i] - start[i];
  return d;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); i++) s += a[i] * b[i];
  return s;
}

// ||ours - ref|| / ||ref|| <= tol; on failure names the tensor and its worst element.
inline void expect_close(const std::string& name, const std::vector<double>& ours,
                         const std::vector<double>& ref, double tol) {
  ASSERT_EQ(ours.size(), ref.size()) << name;
  double diff2 = 0.0, ref2 = 0.0, worst = -1.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    const double d = std::abs(ours[i] - ref[i]);
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    if (!(d <= worst)) {  // also catches NaN
      worst = d;
      worst_i = i;
    }
  }
  ASSERT_GT(ref2, 0.0) << name << ": the reference is all zeros, so the check would prove nothing";
  const double rel = std::sqrt(diff2 / ref2);
  EXPECT_LE(rel, tol) << name << ": relative error " << rel << "; worst element [" << worst_i << "]: ours "
                      << ours[worst_i] << ", reference " << ref[worst_i];
}

// expect_close, with the error printed when it passes too, so that a run shows the margin.
inline void expect_close_printed(const std::string& name, const std::vector<double>& ours,
                                 const std::vector<double>& ref, double tol) {
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < ref.size() && i < ours.size(); i++) {
    diff2 += (ours[i] - ref[i]) * (ours[i] - ref[i]);
    ref2 += ref[i] * ref[i];
  }
  std::printf("  %-28s relative error %.3g (tolerance %.2g)\n", name.c_str(), std::sqrt(diff2 / ref2), tol);
  expect_close(name, ours, ref, tol);
}

// |ours[i] - ref[i]| <= tol(i) for every element i (a NaN fails), the largest error and the worst
// ratio printed; on failure names the worst element.
inline void expect_each_close(const std::string& name, const std::vector<double>& ours,
                              const std::vector<double>& ref, const std::function<double(size_t)>& tol) {
  ASSERT_EQ(ours.size(), ref.size()) << name;
  double max_err = 0, worst_ratio = 0;
  size_t worst = 0;
  for (size_t i = 0; i < ours.size(); i++) {
    const double err = std::fabs(ours[i] - ref[i]);
    const double ratio = std::isnan(err) ? INFINITY : err / tol(i);
    max_err = std::max(max_err, std::isnan(err) ? INFINITY : err);
    if (ratio > worst_ratio || (i == 0 && std::isnan(err))) worst_ratio = ratio, worst = i;
  }
  std::printf("  %-52s max |err| %.3e   max err/tol %.3f\n", name.c_str(), max_err, worst_ratio);
  EXPECT_LE(worst_ratio, 1.0) << name << ": element " << worst << " is " << ours[worst] << ", reference " << ref[worst]
                              << ", tolerance " << tol(worst);
}

}  // namespace eth::test
