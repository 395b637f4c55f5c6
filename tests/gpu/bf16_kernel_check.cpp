// bf16_kernel_check: the 16-bit kernels on the GPU against the kernel interpreter (bench/gpu/run.sh).
// Each kernel of kernels/gpu_ops/*_bf16.hpp (flash attention fwd/bwd at head sizes 64 and 128,
// the cuBLASLt matmul with fused GELU fwd/bwd, residual + layernorm fwd, layernorm bwd, the
// chunked classifier, AdamW with 16-bit copies), at bf16 and at fp16, runs on the same inputs on
// both sides
// (bf16_kernels_run.hpp); CI holds the interpreter's results to the CPU twin and float64
// (tests/unit/test_gpu_*_bf16_interpreted.cpp), so agreement here carries that to the hardware.
//
// Bounds, norm-wise relative ||gpu - interpreter|| / ||interpreter||, per output:
//   - fp32 outputs (lse, weight and bias gradients, layernorm statistics, losses, AdamW state):
//     1e-5. The two sides differ only in the order of fp32 sums (cuBLASLt's split against
//     OpenBLAS's, the tensor cores' accumulation against the interpreter's exact sum rounded
//     once, FMA contraction): a few 1e-7 over these lengths;
//   - 16-bit outputs: their type's unit roundoff u, 2^-8 for bf16 and 2^-11 for fp16. Both sides
//     round the same fp32 value up to that noise, so an element differs, by one ulp (at most 2u),
//     only where the two straddle a rounding boundary: a fraction ~1e-6 / u of them, far below u
//     norm-wise. A wrong tile, mask, fragment or epilogue shows at 1e-1 or more.
// Every output must be finite on both sides (they start as NaN). Exit status: 0 all agree, 1 one
// does not, 77 no usable GPU.
//   bf16_kernel_check [--interpreter-only]   (the interpreter's side alone: a dry run without a GPU)
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "kernels/cuda/cuda_probe.hpp"
#include "tests/gpu/bf16_kernels.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--interpreter-only") return dry_run();
  std::string why;
  if (eth::kernels::usable_cuda_devices(&why) == 0) {
    std::cout << "bf16_kernel_check: skipped: no usable GPU (" << why << ")\n";
    return 77;
  }
  const std::vector<bk::Output> gpu = bk::run_on_gpu();
  const std::vector<bk::Output> host = bk::run_in_interpreter();
  bool all = gpu.size() == host.size() && !gpu.empty();
  for (size_t o = 0; all && o < gpu.size(); o++) {
    const bk::Output &g = gpu[o], &h = host[o];
    double diff = 0, ref = 0;
    size_t nonfinite = 0;
    for (size_t i = 0; i < g.values.size(); i++) {
      if (!std::isfinite(g.values[i]) || !std::isfinite(h.values[i])) nonfinite++;
      diff += (g.values[i] - h.values[i]) * (g.values[i] - h.values[i]);
      ref += h.values[i] * h.values[i];
    }
    const double error = std::sqrt(diff / ref);
    const double bound = g.type == "bf16" ? 1.0 / 256 : g.type == "fp16" ? 1.0 / 2048 : 1e-5;
    const bool ok = nonfinite == 0 && error <= bound;
    all = all && ok;
    std::printf("%s %-37s %s %9zu values: %.2e (bound %.1e)%s\n", ok ? "PASS" : "FAIL", g.name.c_str(),
                g.type.c_str(), g.values.size(), error, bound,
                nonfinite ? (", " + std::to_string(nonfinite) + " not finite").c_str() : "");
  }
  std::printf("%s the 16-bit kernels: GPU and interpreter %s\n", all ? "PASS" : "FAIL", all ? "agree" : "differ");
  return all ? 0 : 1;
}
