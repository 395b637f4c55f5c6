// The unit stage transfers travel in (lib/runtime/stage_transfers.hpp): 16-bit words, MPI's
// MPI_UINT16_T. A bf16 value is one word, an fp32 value two, so one message format carries the
// activations and their gradients of every precision path, byte for byte, and a bf16 job sends
// half the bytes of an fp32 one.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace eth {

using WireWord = uint16_t;
inline MPI_Datatype wire_word_type() { return MPI_UINT16_T; }
// Words per element of `element_bytes` bytes (2 or 4).
constexpr size_t wire_words(size_t element_bytes) { return element_bytes / sizeof(WireWord); }

}  // namespace eth
