// A buffer of the kernel interface whose element type is the precision path's: fp32 on the fp32
// and tf32 paths, bf16 on the bf16 path, fp16 on the fp16 path (docs/design.md, "Precision"):
// the activations kept for backward and sent between stages, their gradients, and the parameter
// copies the kernels read.
// It is an address and that element type; shapes stay in comments, as everywhere else.
//
//   Tensor       written (or read and written)
//   ConstTensor  read only
//
// Both convert implicitly from a plain pointer of any element type (and from null), so that a
// caller on the fp32 path passes its float* as before; a backend takes the type it computes on
// (as_f32, as_bf16, as_f16, or as<E>: asserting that the buffer is of that type). `t + n` is the tensor
// n elements of its type further on, as with a pointer.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/bf16.hpp"
#include "kernels/fp16.hpp"

namespace eth::kernels {

enum class ElementType : uint8_t { f32, bf16, f16 };

constexpr size_t element_bytes(ElementType type) { return type == ElementType::f32 ? 4 : 2; }
// The largest finite value of a stored form (float, bf16 or fp16): a conversion to it of anything
// larger in magnitude overflows (or, where it saturates, is clamped to it).
template <class T>
inline constexpr float kLargestFinite = std::is_same_v<T, fp16> ? 65504.0f
                                        : std::is_same_v<T, bf16> ? 3.38953139e38f  // (2 - 2^-7) * 2^127
                                                                  : 3.40282347e38f;
constexpr const char* element_type_name(ElementType type) {
  return type == ElementType::bf16 ? "bf16" : type == ElementType::f16 ? "fp16" : "fp32";
}

class Tensor {
 public:
  Tensor(std::nullptr_t = nullptr) {}
  Tensor(float* p) : data_(p), type_(ElementType::f32) {}
  Tensor(bf16* p) : data_(p), type_(ElementType::bf16) {}
  Tensor(fp16* p) : data_(p), type_(ElementType::f16) {}
  Tensor(void* p, ElementType type) : data_(p), type_(type) {}

  ElementType type() const { return type_; }
  void* data() const { return data_; }
  explicit operator bool() const { return data_ != nullptr; }
  Tensor operator+(size_t elements) const { return {static_cast<char*>(data_) + elements * element_bytes(type_), type_}; }
  float* as_f32() const {
    assert(data_ == nullptr || type_ == ElementType::f32);
    return static_cast<float*>(data_);
  }
  bf16* as_bf16() const {
    assert(data_ == nullptr || type_ == ElementType::bf16);
    return static_cast<bf16*>(data_);
  }
  fp16* as_f16() const {
    assert(data_ == nullptr || type_ == ElementType::f16);
    return static_cast<fp16*>(data_);
  }
  // as_f32, as_bf16 or as_f16 by the type's name: E = float, bf16 or fp16, for code written once
  // for all.
  template <class E>
  E* as() const {
    if constexpr (std::is_same_v<E, bf16>) return as_bf16();
    else if constexpr (std::is_same_v<E, fp16>) return as_f16();
    else return as_f32();
  }

 private:
  void* data_ = nullptr;
  ElementType type_ = ElementType::f32;
};

class ConstTensor {
 public:
  ConstTensor(std::nullptr_t = nullptr) {}
  ConstTensor(const float* p) : data_(p), type_(ElementType::f32) {}
  ConstTensor(const bf16* p) : data_(p), type_(ElementType::bf16) {}
  ConstTensor(const fp16* p) : data_(p), type_(ElementType::f16) {}
  ConstTensor(const void* p, ElementType type) : data_(p), type_(type) {}
  ConstTensor(Tensor t) : data_(t.data()), type_(t.type()) {}

  ElementType type() const { return type_; }
  const void* data() const { return data_; }
  explicit operator bool() const { return data_ != nullptr; }
  ConstTensor operator+(size_t elements) const {
    return {static_cast<const char*>(data_) + elements * element_bytes(type_), type_};
  }
  const float* as_f32() const {
    assert(data_ == nullptr || type_ == ElementType::f32);
    return static_cast<const float*>(data_);
  }
  const bf16* as_bf16() const {
    assert(data_ == nullptr || type_ == ElementType::bf16);
    return static_cast<const bf16*>(data_);
  }
  const fp16* as_f16() const {
    assert(data_ == nullptr || type_ == ElementType::f16);
    return static_cast<const fp16*>(data_);
  }
  template <class E>
  const E* as() const {
    if constexpr (std::is_same_v<E, bf16>) return as_bf16();
    else if constexpr (std::is_same_v<E, fp16>) return as_f16();
    else return as_f32();
  }

 private:
  const void* data_ = nullptr;
  ElementType type_ = ElementType::f32;
};

}  // namespace eth::kernels
