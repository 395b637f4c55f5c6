#include "kernels/precision.hpp"

#include <stdexcept>

namespace eth::kernels {

Precision parse_precision(const std::string& text) {
  if (text == "auto") return Precision::automatic;
  if (text == "fp32") return Precision::fp32;
  if (text == "tf32") return Precision::tf32;
  if (text == "bf16") return Precision::bf16;
  throw std::invalid_argument("expected auto, fp32, tf32 or bf16, got " + text);
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::automatic: return "auto";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

ElementType storage_type(Precision precision) {
  return precision == Precision::bf16 ? ElementType::bf16 : ElementType::f32;
}

}  // namespace eth::kernels
