// Counter-based random numbers: value i of a stream is a pure function of (stream, i), so any
// process can draw exactly the numbers another would, in any order, without sharing state.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace eth {

// SplitMix64's finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a, to turn a tensor's name into a stream id that does not depend on the stage layout.
inline uint64_t hash_string(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Uniform in (0, 1) from 53 random bits.
inline double uniform_at(uint64_t stream, uint64_t i) {
  return (static_cast<double>(mix64(mix64(stream) + i) >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal by Box-Muller over two uniforms of the same counter.
inline double normal_at(uint64_t stream, uint64_t i) {
  const double u1 = uniform_at(stream, 2 * i);
  const double u2 = uniform_at(stream, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace eth
