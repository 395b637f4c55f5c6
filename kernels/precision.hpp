// The arithmetic a job computes in (--precision), one setting for every rank, and the path it
// takes on each kind of device: resolved once per device type (precision_path) from the job's
// precision and the device's peak rates, and read from there by backend selection, the memory
// and cost models, the profiles, the settings table and MFU. What each value stores and where it
// accumulates is the mixed-precision rule of docs/design.md.
#pragma once

#include <string>
#include <vector>

#include "kernels/tensor.hpp"

namespace eth::kernels {

enum class Precision {
  automatic,  // each device on its own 16-bit units: bf16 where it has them, else fp16 (device_precision)
  fp32,       // fp32 storage and fp32 arithmetic throughout
  tf32,       // fp32 storage; GEMM inputs rounded to TF32 on tensor cores (GPUs from A100 on)
  bf16,       // fp32 master state; bf16 parameter copies, activations and activation gradients
  fp16,       // as bf16 with fp16 (5 exponent bits: a loss scale keeps gradients in range)
};

// "auto", "fp32", "tf32", "bf16", "fp16"; throws std::invalid_argument naming the values it expects.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision precision);
// The element type a path stores its activations, their gradients and its parameter copies in
// (Tensor): bf16 on the bf16 path, fp16 on the fp16 path, fp32 on the others. `precision` is
// resolved (not automatic).
ElementType storage_type(Precision precision);

// A device's dense peak rates in TFLOP/s (a topology's device type, or what eth_topo found);
// 0 where it has no such units (TF32 and bf16 before Ampere, fp16 tensor cores before Volta, all
// three on CPUs).
struct DeviceRates {
  double fp32 = 0;
  double tf32 = 0;
  double bf16 = 0;
  double fp16 = 0;
};

// What a path's GEMMs multiply in.
enum class Arithmetic {
  fp32,  // CUDA cores or the CPU's FMA units
  tf32,  // TF32 tensor cores
  bf16,  // bf16 tensor cores (the bf16 kernels)
  fp16,  // fp16 tensor cores (the fp16 kernels)
};
// "fp32", "tf32", "bf16", "fp16"; parse_arithmetic throws std::invalid_argument as parse_precision.
const char* arithmetic_name(Arithmetic arithmetic);
Arithmetic parse_arithmetic(const std::string& text);

// How a job at one precision computes on one device type.
struct PrecisionPath {
  Precision precision = Precision::fp32;  // the device's, resolved: fp32, tf32, bf16 or fp16
  Arithmetic arithmetic = Arithmetic::fp32;
  // The dense peak of that arithmetic on the device: the rate the planner prices GEMMs at and
  // the peak MFU divides by. 0 where the device's rates are not known.
  double peak_tflops = 0;

  ElementType storage() const { return storage_type(precision); }
  // fp16 holds magnitudes from 2^-24 to 65504 only, and a language model's activation gradients
  // fall below that: a path storing fp16 computes its backward on a scaled loss
  // (lib/model/loss_scale.hpp).
  bool loss_scaled() const { return storage() == ElementType::f16; }
  // "fp32", "tf32", "bf16", "fp16", or "bf16 in fp32 arithmetic" (bf16 bytes on a device without
  // bf16 units; "fp16 in fp32 arithmetic" alike).
  std::string name() const;
};

// The job's precision: `requested`, or for automatic its 16-bit format: bf16 when any of
// `devices` has bf16 units, else fp16 when any has fp16 tensor cores (V100s and T4s alone), else
// fp32 (CPUs, and GPUs before Volta).
Precision resolve_precision(Precision requested, const std::vector<DeviceRates>& devices);

// What a device of `rates` stores in a job at `requested`, resolved for the job to `job`: the
// job's precision, except in automatic, where each device of a 16-bit job takes its own 16-bit
// units: bf16 where it has them (A100 and later), fp16 where it has only fp16 tensor cores (V100,
// T4), the job's format where it has neither. Every device of a job stores elements of one width:
// a 16-bit format, or fp32 throughout; rows crossing between bf16 and fp16 stages are converted on
// arrival (lib/runtime/stage_transfers.hpp).
Precision device_precision(Precision requested, Precision job, const DeviceRates& rates);

// The path of a device with `rates` at `precision` (resolved): fp32 and tf32 at their rates;
// bf16 (fp16) on the bf16 (fp16) units where the device has them, else in fp32 arithmetic on the
// 16-bit bytes.
// tf32 on a device without TF32 units: std::invalid_argument ("--precision tf32: expected ...").
PrecisionPath precision_path(Precision precision, const DeviceRates& rates);
// The path of a device with units of every kind at `precision` (resolved): each precision in its
// own arithmetic, its peak not known. For what makes a backend for one precision's kernels by
// name (tests, benchmarks); a job's paths are precision_path's.
PrecisionPath own_arithmetic_path(Precision precision);

}  // namespace eth::kernels
