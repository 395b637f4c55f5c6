// A 64-bit checksum of a byte range, for checkpoint datasets (lib/io/checkpoint.hpp): FNV-1a's
// prime over 8-byte words, so it runs at memory speed rather than a byte at a time. It detects
// damaged or truncated data, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace eth {

inline uint64_t checksum64(const void* data, size_t bytes) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = 0xcbf29ce484222325ull ^ bytes;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * kPrime;
    h ^= h >> 29;
  }
  for (; i < bytes; i++) h = (h ^ p[i]) * kPrime;
  return h;
}

}  // namespace eth
