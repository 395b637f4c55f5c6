// MPI counts are ints: a buffer of more than 2^31 - 1 elements goes in consecutive chunks.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>

namespace eth {

constexpr size_t kMaxMpiCount = INT_MAX;

// Calls fn(first, count) for consecutive chunks of [0, n), each of at most `limit` elements.
template <typename Fn>
void for_each_mpi_chunk(size_t n, Fn&& fn, size_t limit = kMaxMpiCount) {
  for (size_t first = 0; first < n; first += limit) fn(first, static_cast<int>(std::min(limit, n - first)));
}

}  // namespace eth
