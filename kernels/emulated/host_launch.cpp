#include "kernels/emulated/host_launch.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace eth::kernels::emulated {

void* HostLaunch::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    scratch_ = std::make_unique<unsigned char[]>(bytes);
    scratch_bytes_ = bytes;
  }
  std::memset(scratch_.get(), 0xff, bytes);  // undefined content: NaN, as the interpreter's shared memory
  return scratch_.get();
}

void HostLaunch::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasColMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
              A, lda, B, ldb, beta, C, ldc);
  LibraryCounts& c = library_["cublas_sgemm"];
  const uint64_t mn = uint64_t(m) * n;
  c.calls += 1;
  c.bytes_read += 4 * (uint64_t(m) * k + uint64_t(k) * n + (beta != 0.f ? mn : 0));
  c.bytes_written += 4 * mn;
  c.flops += 2 * mn * uint64_t(k);
}

void HostLaunch::sort_pairs(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out,
                            int n) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys_in[a] < keys_in[b]; });
  for (int i = 0; i < n; i++) {
    keys_out[i] = keys_in[order[i]];
    values_out[i] = values_in[order[i]];
  }
  LibraryCounts& c = library_["cub_sort_pairs"];
  c.calls += 1;
  c.bytes_read += 8 * uint64_t(n);
  c.bytes_written += 8 * uint64_t(n);
}

void HostLaunch::read_back(void* host, const void* src, size_t bytes) { std::memcpy(host, src, bytes); }

// What the GPU cannot check cheaply, checked here: that every op restored its counters to zero
// (a kernel that forgets leaves the next op's last-block test wrong on the device).
unsigned* HostLaunch::counters(size_t n) {
  for (size_t i = 0; i < counter_count_; i++)
    if (counters_[i] != 0)
      throw std::logic_error("HostLaunch::counters: counter " + std::to_string(i) + " was left at " +
                             std::to_string(counters_[i]) + " by the previous op (it must leave it zero)");
  if (n > counter_count_) {
    counters_ = std::make_unique<unsigned[]>(n);  // value-initialised: zero
    counter_count_ = n;
  }
  return counters_.get();
}

}  // namespace eth::kernels::emulated
