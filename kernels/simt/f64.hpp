// simt::f64: a double whose arithmetic the interpreter counts as FP64 operations (profile.hpp's
// fp64), for kernels that compute in double. On the device it is double itself; on the host each
// +, -, *, / (and their compound forms) counts one operation and rounds exactly as double does,
// so a kernel's bits do not change when it writes f64 for double.
#pragma once

#include "kernels/simt/types.hpp"

namespace eth::kernels::simt {

#if defined(__CUDACC__)
using f64 = double;
#else
class f64 {
 public:
  f64(double v = 0.0) : v_(v) {}
  explicit operator double() const { return v_; }
  explicit operator float() const { return static_cast<float>(v_); }
  double value() const { return v_; }

  friend f64 operator+(f64 a, f64 b) { return host::count_fp64(1), f64(a.v_ + b.v_); }
  friend f64 operator-(f64 a, f64 b) { return host::count_fp64(1), f64(a.v_ - b.v_); }
  friend f64 operator*(f64 a, f64 b) { return host::count_fp64(1), f64(a.v_ * b.v_); }
  friend f64 operator/(f64 a, f64 b) { return host::count_fp64(1), f64(a.v_ / b.v_); }
  f64 operator-() const { return f64(-v_); }
  f64& operator+=(f64 b) { return *this = *this + b; }
  f64& operator-=(f64 b) { return *this = *this - b; }
  f64& operator*=(f64 b) { return *this = *this * b; }
  f64& operator/=(f64 b) { return *this = *this / b; }
  friend bool operator<(f64 a, f64 b) { return a.v_ < b.v_; }
  friend bool operator==(f64 a, f64 b) { return a.v_ == b.v_; }

 private:
  double v_;
};
// The dialect's double helpers (types.hpp) on f64: each counts itself.
inline f64 sqrt_(f64 x) { return f64(sqrt_(x.value())); }
inline f64 log_(f64 x) { return f64(log_(x.value())); }
#endif

}  // namespace eth::kernels::simt
