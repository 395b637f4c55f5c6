// The CUDA backend against its reference twin, the CPU backend: each check runs one op (or a
// whole stage's training step) on both backends with the same fresh random inputs and compares
// every output. Written without GoogleTest, so that two drivers share it: test_cuda_backend
// (GoogleTest, ctest label gpu) and gpu_checks (a plain program for GPU machines that have no
// GoogleTest, run by bench/gpu/run.sh).
//
// Tolerances (norm-wise relative error ||ours - ref|| / ||ref||, accumulated outputs compared by
// what the op added to them):
//   kExact  0      ops whose additions happen in the CPU twin's order (encoder, residual):
//                  the results must be bitwise equal.
//   kFp32   1e-5   every other fp32 op with TF32 off. Both sides round each operation to fp32
//                  (unit roundoff 6e-8) but sum in different orders (cuBLAS tiling, warp trees,
//                  expf/tanhf within 2 ulp of glibc); for the sizes here, sums of at most a few
//                  hundred terms, that is ~1e-6 at worst, so 1e-5 leaves a margin while any
//                  wrong term or index shows at 1e-2 or more.
//   kTf32   5e-3   matmuls with TF32 on: inputs keep 11 significant bits. Each product a*b
//                  then errs by a relative e = da + db: rms 4e-4 if the conversion rounds,
//                  1.1e-3 if it truncates (biased, up to 2^-10 each); over random-signed terms
//                  the norm-wise error is that rms, so 5e-3 holds either way.
//   kStep   1e-4   a whole stage step (2 layers, 2 micro-batches): the fp32 differences of ~30
//                  chained ops add up; the loss itself is held to kFp32.
//   kDouble 1e-12  sum_of_squares, accumulated in double on both sides.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace eth::test::gpu {

constexpr double kExact = 0.0;
constexpr double kFp32 = 1e-5;
constexpr double kTf32 = 5e-3;
constexpr double kStep = 1e-4;
constexpr double kDouble = 1e-12;

struct Comparison {
  std::string tensor;      // e.g. "matmul_backward dweight"
  double rel_error = 0;    // ||ours - ref|| / ||ref||
  double tolerance = 0;
  size_t worst_index = 0;  // the element with the largest absolute difference
  double ours = 0, ref = 0;
  std::string problem;     // set when the comparison could not be made (sizes, all-zero reference)

  bool passed() const { return problem.empty() && rel_error <= tolerance; }
  std::string describe() const;  // one line: verdict, tensor, error, tolerance, worst element
};

// ||ours - ref|| / ||ref||, or with `start`, of what each side added to start (the op's
// contribution to an accumulated output). NaN anywhere (a poisoned element left unwritten)
// makes the error NaN, which fails.
Comparison compare(const std::string& tensor, const std::vector<float>& ours, const std::vector<float>& ref,
                   double tolerance, const std::vector<float>* start = nullptr);
Comparison compare(const std::string& tensor, const std::vector<double>& ours, const std::vector<double>& ref,
                   double tolerance);

struct Backends {
  kernels::Backend& gpu;  // the CUDA backend, TF32 off
  kernels::Backend& cpu;
  int device;             // for checks that need a CUDA backend of their own (TF32); -1 in
                          // gpu_checks --self-test, where `gpu` is a second CPU backend
};

struct Check {
  std::string name;  // a valid GoogleTest name: letters, digits, '_'
  std::function<std::vector<Comparison>(const Backends&)> run;
};

// Every op check, then the whole-step check (stage_check.cpp).
const std::vector<Check>& all_checks();
std::vector<std::string> check_names();
std::vector<Comparison> stage_step_check(const Backends& backends);
// The whole-model step of stage_step_check on one backend alone (simt_hardware_check counts what
// it launches).
void run_stage_step(kernels::Backend& backend);

}  // namespace eth::test::gpu
