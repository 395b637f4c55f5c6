// Memory as kernels of the dialect see it.
//
// Global<T>: a pointer into global memory. On the device it is the raw pointer; on the host each
// element read or written through it is counted (the launch's global-memory bytes, and with
// counters on its request, sectors and source line: profile.hpp), and the access goes through the
// raw host pointer, so that the sanitized build's ASan sees one past an allocation's end.
//
// SharedArray<T, N> and SharedArray2D<T, R, C>, indexed a(i) and a(r, c): an array in a block's
// shared memory, a member of the struct a kernel declares as its shared memory
// (Thread::shared<S>()). On the device a plain array whose index gives a T&; on the host every
// index is checked, and one out of range fails the launch in one line, and it gives a SharedRef:
// each read and write through it goes to the race detector (shared_shadow.hpp) with its source
// line. Its address (&a(i), for cp.async and ldmatrix) is the element's own. a.piece<W>(r, c):
// elements [c, c + W) of row r as one access of their Packed size (16 bytes for 8 16-bit values),
// which must be aligned to it.
//
// SharedSpan<T>, indexed s(i): n elements of T whose count the launch sets (a row of a length known
// at run time), placed after the kernel's struct S by Thread::shared_after<T, S>(n) and sized by
// shared_bytes_after<S, T>(n); on the host checked and raced as SharedArray's elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/simt/qualifiers.hpp"
#include "kernels/simt/types.hpp"

#if !defined(__CUDACC__)
#include <source_location>
#endif

namespace eth::kernels::simt {

#if defined(__CUDACC__)

template <typename T>
class Global {
 public:
  SIMT_HOST_DEVICE Global(T* p = nullptr) : p_(p) {}
  template <typename U, typename = std::enable_if_t<std::is_same_v<const U, T>>>
  SIMT_HOST_DEVICE Global(Global<U> other) : p_(other.get()) {}
  SIMT_DEVICE T& operator[](size_t i) const { return p_[i]; }
  SIMT_HOST_DEVICE Global operator+(size_t i) const { return Global(p_ + i); }
  SIMT_HOST_DEVICE T* get() const { return p_; }
  SIMT_HOST_DEVICE explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_;
};

template <typename T, size_t N>
struct SharedArray {
  T data[N];
  SIMT_DEVICE T& operator()(size_t i) { return data[i]; }
};

template <typename T, size_t R, size_t C>
struct SharedArray2D {
  T data[R][C];
  SIMT_DEVICE T& operator()(size_t r, size_t c) { return data[r][c]; }
  // Elements [c, c + W) of row r as one access (aligned to its size).
  template <int W>
  SIMT_DEVICE Packed<T, W>& piece(size_t r, size_t c) { return *reinterpret_cast<Packed<T, W>*>(&data[r][c]); }
};

template <typename T>
struct SharedSpan {
  T* data;
  size_t n;
  SIMT_DEVICE T& operator()(size_t i) const { return data[i]; }
};

#else  // the host side

namespace host {
// The running launch's counters on this host thread (set by the interpreter around each block).
struct Traffic {
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t mma_flops = 0;
};
extern thread_local Traffic* t_traffic;
// Out of line, in interpreter.cpp, the one translation unit that sets t_traffic: an inline read of
// the thread-local from a kernel's translation unit saw null in the sanitized build. The running
// thread reads or writes `bytes` of global memory at p, at `where` (a launch with counters on
// records the access for its profile, kernels/simt/profile.hpp).
void global_read(const void* p, size_t bytes, const std::source_location& where);
void global_written(const void* p, size_t bytes, const std::source_location& where);
// Fails the launch: "shared-memory index i is out of range [0, extent) at file:line".
[[noreturn]] void shared_out_of_range(size_t index, size_t extent, std::source_location where);
// Fails the launch: "a 16-byte shared-memory access is not 16-byte aligned at file:line".
[[noreturn]] void shared_misaligned(size_t bytes, std::source_location where);
// The running thread reads or writes `bytes` of shared memory at p (the race detector's record;
// a race fails the launch).
void shared_read(const void* p, size_t bytes, const std::source_location& where);
void shared_written(const void* p, size_t bytes, const std::source_location& where);
}  // namespace host

// One element of shared memory: a read when converted to T, a write when assigned.
template <typename T>
class SharedRef {
 public:
  SharedRef(T* p, std::source_location where) : p_(p), where_(where) {}
  operator T() const {
    host::shared_read(p_, sizeof(T), where_);
    return *p_;
  }
  const SharedRef& operator=(const T& v) const {
    host::shared_written(p_, sizeof(T), where_);
    *p_ = v;
    return *this;
  }
  const SharedRef& operator=(const SharedRef& other) const { return *this = static_cast<T>(other); }
  const SharedRef& operator+=(const T& v) const { return *this = static_cast<T>(*this) + v; }
  const SharedRef& operator-=(const T& v) const { return *this = static_cast<T>(*this) - v; }
  const SharedRef& operator*=(const T& v) const { return *this = static_cast<T>(*this) * v; }
  T* operator&() const { return p_; }

 private:
  T* p_;
  std::source_location where_;
};

// One element of global memory: a read when converted to T, a write when assigned.
template <typename T>
class GlobalRef {
  using Value = std::remove_const_t<T>;

 public:
  GlobalRef(T* p, std::source_location where) : p_(p), where_(where) {}
  operator Value() const {
    host::global_read(p_, sizeof(T), where_);
    return *p_;
  }
  const GlobalRef& operator=(const Value& v) const {
    host::global_written(p_, sizeof(T), where_);
    *p_ = v;
    return *this;
  }
  const GlobalRef& operator=(const GlobalRef& other) const { return *this = static_cast<Value>(other); }
  const GlobalRef& operator+=(const Value& v) const { return *this = static_cast<Value>(*this) + v; }
  const GlobalRef& operator-=(const Value& v) const { return *this = static_cast<Value>(*this) - v; }
  const GlobalRef& operator*=(const Value& v) const { return *this = static_cast<Value>(*this) * v; }

 private:
  T* p_;
  std::source_location where_;
};

// An index into global memory and the source location of the expression that indexes: operator[]
// takes one argument only, so the location comes with the index's implicit conversion (whose
// default argument is evaluated where the conversion happens, the kernel's line).
struct GlobalIndex {
  template <typename I, typename = std::enable_if_t<std::is_convertible_v<const I&, size_t>>>
  GlobalIndex(const I& index, std::source_location at = std::source_location::current())
      : i(static_cast<size_t>(index)), where(at) {}
  size_t i;
  std::source_location where;
};

template <typename T>
class Global {
 public:
  Global(T* p = nullptr) : p_(p) {}
  template <typename U, typename = std::enable_if_t<std::is_same_v<const U, T>>>
  Global(Global<U> other) : p_(other.get()) {}
  GlobalRef<T> operator[](GlobalIndex at) const { return GlobalRef<T>(p_ + at.i, at.where); }
  Global operator+(size_t i) const { return Global(p_ + i); }
  T* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_;
};

template <typename T, size_t N>
struct SharedArray {
  T data[N];
  SharedRef<T> operator()(size_t i, std::source_location where = std::source_location::current()) {
    if (i >= N) host::shared_out_of_range(i, N, where);
    return SharedRef<T>(&data[i], where);
  }
};

template <typename T, size_t R, size_t C>
struct SharedArray2D {
  T data[R][C];
  SharedRef<T> operator()(size_t r, size_t c, std::source_location where = std::source_location::current()) {
    if (r >= R) host::shared_out_of_range(r, R, where);
    if (c >= C) host::shared_out_of_range(c, C, where);
    return SharedRef<T>(&data[r][c], where);
  }
  template <int W>
  SharedRef<Packed<T, W>> piece(size_t r, size_t c, std::source_location where = std::source_location::current()) {
    if (r >= R) host::shared_out_of_range(r, R, where);
    if (c + W > C) host::shared_out_of_range(c + W - 1, C, where);
    if (reinterpret_cast<uintptr_t>(&data[r][c]) % sizeof(Packed<T, W>) != 0)
      host::shared_misaligned(sizeof(Packed<T, W>), where);
    return SharedRef<Packed<T, W>>(reinterpret_cast<Packed<T, W>*>(&data[r][c]), where);
  }
};

template <typename T>
struct SharedSpan {
  T* data;
  size_t n;
  SharedRef<T> operator()(size_t i, std::source_location where = std::source_location::current()) const {
    if (i >= n) host::shared_out_of_range(i, n, where);
    return SharedRef<T>(&data[i], where);
  }
};

#endif

// Where a SharedSpan<T> starts after the struct S (S's size rounded up to T's alignment), and the
// launch's shared bytes for S and n elements of T.
template <typename S, typename T>
SIMT_HOST_DEVICE constexpr size_t shared_offset_after() {
  return (sizeof(S) + alignof(T) - 1) / alignof(T) * alignof(T);
}
template <typename S, typename T>
SIMT_HOST_DEVICE constexpr size_t shared_bytes_after(size_t n) {
  return shared_offset_after<S, T>() + n * sizeof(T);
}

}  // namespace eth::kernels::simt
