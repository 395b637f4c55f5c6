// A kernel's time on a named GPU from the interpreter's counters (profile.hpp): the time each
// resource needs for the launch's traffic at its rate, the largest of them (the bound), times the
// last wave's tail factor, plus a launch cost. docs/gpu.md, "The time model", gives the formulas,
// the constants and their calibration on an H200 (Hong and Kim's kind of model, ISCA 2009, with
// Nsight Compute's quantities). GEMMs (cuBLASLt, not interpreted) by the roofline of their shape.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "kernels/gpu_peaks.hpp"
#include "kernels/simt/profile.hpp"

namespace eth::kernels::simt {

// The fitted and the assumed constants (docs/gpu.md says which is which and from what).
struct TimeModelConstants {
  double dram_fraction = 0.665;   // of the datasheet DRAM bandwidth a streaming kernel attains (fitted)
  double mma_fraction = 0.60;     // of the dense tensor peak mma.sync (m16n8k16) attains (estimated)
  double l2_fraction = 0.75;      // of the L2 bandwidth (fitted)
  double launch_us = 2.0;         // launch and drain of one kernel (the smallest kernels measured)
  double gemm_efficiency = 0.68;  // cuBLASLt's share of the tensor peak on the step's GEMMs  (fitted)
};

enum class Resource { dram, l2, l1_shared, tensor, sfu, fp64 };
inline constexpr int kResources = 6;
const char* resource_name(Resource r);  // "dram", "l2", "l1/shared", "tensor", "sfu", "fp64"

struct KernelTime {
  std::array<double, kResources> us{};  // each resource's time, µs, before the tail
  Resource bound = Resource::dram;      // the largest
  int blocks_per_sm = 0;
  uint64_t dram_bytes = 0;              // dram_bytes(p, ...)
  double tail = 1.0;                    // profile.tail_factor(SMs x blocks_per_sm)
  double predicted_us = 0.0;            // us[bound] x tail + launch
};

// Blocks one SM holds at once: its block, thread and shared-memory limits and, where the
// kernel's registers per thread are known (ptxas -v; 0: not known), its register file.
int blocks_per_sm(const GpuSm& sm, const LaunchProfile& p, int registers_per_thread = 0);

// The DRAM traffic of a launch: its distinct bytes when the share of its distinct reads that the
// blocks resident together touch fits in L2 (a block's re-reads hit), else every byte its loads
// request plus the distinct bytes written (the re-reads miss: the classifier's 100 KB rows, four
// to an SM). A coarse stand-in for reuse distance, which the counters do not measure.
uint64_t dram_bytes(const LaunchProfile& p, const GpuSm& sm, int blocks_per_sm);

// The model on one launch. `gpu` must carry its SMs (gpu.sm.model set: find_gpu_model).
//   dram      = dram_bytes(p) / (bandwidth x dram_fraction)
//   l2        = (load + store sectors) x 32 / (L2 bandwidth x l2_fraction)
//   l1/shared = (global 128-byte lines + shared and ldmatrix wavefronts) / (SMs x clock)
//   tensor    = mma x 4096 / (16-bit tensor peak x mma_fraction)
//   sfu       = special / (SMs x sfu_per_clock x clock);  fp64 = fp64 / (FP64 peak / 2)
// each over the SMs the grid occupies (a grid of fewer blocks than SMs gets that share of every
// rate); predicted = max x tail + launch_us.
KernelTime predict(const LaunchProfile& p, const GpuPeak& gpu, const TimeModelConstants& k = {},
                   int registers_per_thread = 0);

// A GEMM (M x K) x (K x N) of `element_bytes` operands and outputs: the larger of its FLOPs at
// gemm_efficiency of the 16-bit tensor peak (the fp32 peak when element_bytes is 4) and its
// operands' bytes at the attained DRAM bandwidth, plus the launch cost; µs.
double gemm_us(int64_t M, int64_t N, int64_t K, int element_bytes, const GpuPeak& gpu,
               const TimeModelConstants& k = {});

}  // namespace eth::kernels::simt
