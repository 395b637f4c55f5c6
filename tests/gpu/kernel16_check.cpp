// kernel16_check: the 16-bit kernels on the GPU against the kernel interpreter (bench/gpu/run.sh).
// Each kernel of kernels/gpu_ops/*_bf16.hpp (flash attention fwd/bwd at head sizes 64 and 128,
// the cuBLASLt matmul with fused GELU fwd/bwd, residual + layernorm fwd, layernorm bwd, the
// chunked classifier, AdamW with 16-bit copies), at bf16 and at fp16, runs on the same inputs on
// both sides
// (kernels16_run.hpp); CI holds the interpreter's results to the CPU twin and float64
// (tests/unit/test_gpu_*16_interpreted.cpp), so agreement here carries that to the hardware.
//
// Bounds, per output:
//   - fp32 outputs of the GEMMs (the weight and bias gradients), element by element, from how
//     the tensor cores accumulate: the products of two 16-bit values are exact, and a block of n
//     of them (n = 4 on V100 and T4, 8 on A100; n grows on Hopper) is added to the fp32
//     accumulator with every addend aligned to the largest exponent and cut, and the sum cut
//     again (round toward zero): Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of
//     NVIDIA tensor cores", PeerJ Computer Science 7:e330 (2021). A block then errs by at most
//     (n + 2) 2^-23 times the sum of its addends' magnitudes, the accumulator's included, and a
//     sum of K terms by at most (K / n)(n + 2) 2^-23 <= 3 K 2^-24 times M = sum |term| (n >= 4).
//     cuBLASLt's split-K reduction adds its partials in fp32 (within K 2^-24 M), and the
//     interpreter's side (OpenBLAS, fp32 with FMA) errs by at most K 2^-24 M. So
//       |gpu - interpreter| <= (4 K + 8) 2^-24 M   per element,
//     the 8 for the epilogue's adds. A term dropped or doubled by a wrong tile or epilogue is
//     M / K on average: 2^24 / (K (4 K + 8)) times the bound, 100 at K = 201 (--plant);
//   - the other fp32 outputs (lse, layernorm statistics and gradients, losses, AdamW state),
//     norm-wise ||gpu - interpreter|| / ||interpreter|| <= 1e-5: the two sides differ only in
//     the order of fp32 sums and in FMA contraction, a few 1e-7 over these lengths;
//   - 16-bit outputs, norm-wise: their type's unit roundoff u, 2^-8 for bf16 and 2^-11 for fp16.
//     Both sides round the same fp32 value up to that noise, so an element differs, by one ulp
//     (at most 2u), only where the two straddle a rounding boundary: a fraction ~1e-6 / u of
//     them, far below u norm-wise. A wrong tile, mask, fragment or epilogue shows at 1e-1 or more.
// Every output must be finite on both sides (they start as NaN). Exit status: 0 all agree, 1 one
// does not, 77 no usable GPU.
//   kernel16_check [--interpreter-only]   (the interpreter's side alone: a dry run without a GPU)
//   kernel16_check --plant                (the interpreter against itself, then with one term's
//                                             worth of error planted in each GEMM output: each must fail)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "kernels/cuda/cuda_probe.hpp"
#include "tests/gpu/kernels16.hpp"

namespace bk = eth::test::bf16_kernels;

namespace {

// The interpreter's side alone: every output finite, and its size.
int dry_run() {
  bool all = true;
  for (const bk::Output& h : bk::run_in_interpreter()) {
    size_t nonfinite = 0;
    for (double x : h.values) nonfinite += std::isfinite(x) ? 0 : 1;
    all = all && nonfinite == 0;
    std::printf("%s %-37s %s %9zu values, %zu not finite\n", nonfinite ? "FAIL" : "ran ", h.name.c_str(),
                h.type.c_str(), h.values.size(), nonfinite);
  }
  return all ? 0 : 1;
}

// One output of each side compared: its line printed, whether it agrees.
bool agree(const bk::Output& g, const bk::Output& h) {
  double diff = 0, ref = 0, worst_ratio = 0;
  size_t nonfinite = 0;
  for (size_t i = 0; i < g.values.size(); i++) {
    if (!std::isfinite(g.values[i]) || !std::isfinite(h.values[i])) nonfinite++;
    const double d = g.values[i] - h.values[i];
    diff += d * d;
    ref += h.values[i] * h.values[i];
    if (!h.magnitude.empty())
      worst_ratio = std::max(worst_ratio, std::fabs(d) / ((4.0 * h.terms + 8) * std::ldexp(1.0, -24) * h.magnitude[i]));
  }
  char measure[96];
  bool ok;
  if (!h.magnitude.empty()) {
    ok = nonfinite == 0 && worst_ratio <= 1;
    std::snprintf(measure, sizeof measure, "worst element at %.2f of its bound (4 K + 8) 2^-24 M, K = %d", worst_ratio,
                  h.terms);
  } else {
    const double error = std::sqrt(diff / ref);
    const double bound = g.type == "bf16" ? 1.0 / 256 : g.type == "fp16" ? 1.0 / 2048 : 1e-5;
    ok = nonfinite == 0 && error <= bound;
    std::snprintf(measure, sizeof measure, "%.2e (bound %.1e)", error, bound);
  }
  std::printf("%s %-37s %s %9zu values: %s%s\n", ok ? "PASS" : "FAIL", g.name.c_str(), g.type.c_str(),
              g.values.size(), measure, nonfinite ? (", " + std::to_string(nonfinite) + " not finite").c_str() : "");
  return ok;
}

// The bound's power: the interpreter against itself passes; with an error of one average term
// (M / K) planted in the element of largest M, each GEMM output fails.
int plant() {
  const std::vector<bk::Output> host = bk::run_in_interpreter();
  bool all = true;
  for (const bk::Output& h : host) {
    if (h.magnitude.empty()) continue;
    const bool clean = agree(h, h);
    bk::Output planted = h;
    size_t at = 0;
    for (size_t i = 0; i < h.magnitude.size(); i++)
      if (h.magnitude[i] > h.magnitude[at]) at = i;
    planted.values[at] += h.magnitude[at] / h.terms;
    std::printf("planted %.3e at element %zu:\n", h.magnitude[at] / h.terms, at);
    const bool caught = !agree(planted, h);
    all = all && clean && caught;
  }
  std::printf("%s the GEMM bounds: clean outputs pass, planted errors fail\n", all ? "PASS" : "FAIL");
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--interpreter-only") return dry_run();
  if (argc == 2 && std::string(argv[1]) == "--plant") return plant();
  std::string why;
  if (eth::kernels::usable_cuda_devices(&why) == 0) {
    std::cout << "kernel16_check: skipped: no usable GPU (" << why << ")\n";
    return 77;
  }
  const std::vector<bk::Output> gpu = bk::run_on_gpu();
  const std::vector<bk::Output> host = bk::run_in_interpreter();
  const bool paired = gpu.size() == host.size() && !gpu.empty();
  bool all = paired;
  for (size_t o = 0; paired && o < gpu.size(); o++) all = agree(gpu[o], host[o]) && all;
  std::printf("%s the 16-bit kernels: GPU and interpreter %s\n", all ? "PASS" : "FAIL", all ? "agree" : "differ");
  return all ? 0 : 1;
}
