#include "kernels/precision.hpp"

#include <algorithm>
#include <stdexcept>

namespace eth::kernels {

Precision parse_precision(const std::string& text) {
  if (text == "auto") return Precision::automatic;
  if (text == "fp32") return Precision::fp32;
  if (text == "tf32") return Precision::tf32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  throw std::invalid_argument("expected auto, fp32, tf32, bf16 or fp16, got " + text);
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::automatic: return "auto";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

ElementType storage_type(Precision precision) {
  switch (precision) {
    case Precision::bf16: return ElementType::bf16;
    case Precision::fp16: return ElementType::f16;
    default: return ElementType::f32;
  }
}

const char* arithmetic_name(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::fp32: return "fp32";
    case Arithmetic::tf32: return "tf32";
    case Arithmetic::bf16: return "bf16";
    case Arithmetic::fp16: return "fp16";
  }
  return "?";
}

Arithmetic parse_arithmetic(const std::string& text) {
  if (text == "fp32") return Arithmetic::fp32;
  if (text == "tf32") return Arithmetic::tf32;
  if (text == "bf16") return Arithmetic::bf16;
  if (text == "fp16") return Arithmetic::fp16;
  throw std::invalid_argument("expected fp32, tf32, bf16 or fp16, got " + text);
}

std::string PrecisionPath::name() const {
  if ((precision == Precision::bf16 || precision == Precision::fp16) && arithmetic == Arithmetic::fp32)
    return std::string(precision_name(precision)) + " in fp32 arithmetic";
  return precision_name(precision);
}

Precision resolve_precision(Precision requested, const std::vector<DeviceRates>& devices) {
  if (requested != Precision::automatic) return requested;
  auto any = [&](double DeviceRates::*rate) {
    return std::any_of(devices.begin(), devices.end(), [&](const DeviceRates& d) { return d.*rate > 0; });
  };
  if (any(&DeviceRates::bf16)) return Precision::bf16;
  if (any(&DeviceRates::fp16)) return Precision::fp16;
  return Precision::fp32;
}

Precision device_precision(Precision requested, Precision job, const DeviceRates& rates) {
  if (requested != Precision::automatic || storage_type(job) == ElementType::f32) return job;
  if (rates.bf16 > 0) return Precision::bf16;
  if (rates.fp16 > 0) return Precision::fp16;
  return job;
}

PrecisionPath precision_path(Precision precision, const DeviceRates& rates) {
  switch (precision) {
    case Precision::tf32:
      if (!(rates.tf32 > 0))
        throw std::invalid_argument("--precision tf32: expected a device with TF32 tensor cores (a TF32 peak rate), "
                                    "got none: use fp32 or bf16");
      return {Precision::tf32, Arithmetic::tf32, rates.tf32};
    case Precision::bf16:
      if (rates.bf16 > 0) return {Precision::bf16, Arithmetic::bf16, rates.bf16};
      return {Precision::bf16, Arithmetic::fp32, rates.fp32};
    case Precision::fp16:
      if (rates.fp16 > 0) return {Precision::fp16, Arithmetic::fp16, rates.fp16};
      return {Precision::fp16, Arithmetic::fp32, rates.fp32};
    case Precision::fp32: return {Precision::fp32, Arithmetic::fp32, rates.fp32};
    case Precision::automatic: break;
  }
  throw std::logic_error("precision_path: the job's precision is not resolved (auto)");
}

PrecisionPath own_arithmetic_path(Precision precision) {
  PrecisionPath path = precision_path(precision, {1, 1, 1, 1});
  path.peak_tflops = 0;
  return path;
}

}  // namespace eth::kernels
