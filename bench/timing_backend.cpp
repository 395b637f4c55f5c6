#include "bench/timing_backend.hpp"

namespace eth::bench {

void TimingBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_device(dst, src, bytes); });
}
void TimingBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_host(dst, src, bytes); });
}
void TimingBackend::copy_to_device_async(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_device_async(dst, src, bytes); });
}
void TimingBackend::copy_to_host_async(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy_to_host_async(dst, src, bytes); });
}
void TimingBackend::copy(void* dst, const void* src, size_t bytes) {
  timed("copy", [&] { inner_.copy(dst, src, bytes); });
}
void TimingBackend::fill_zero(Tensor x, size_t n) {
  timed("fill_zero", [&] { inner_.fill_zero(x, n); });
}

}  // namespace eth::bench
