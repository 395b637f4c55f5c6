// bf16 in memory: the upper 16 bits of an fp32 (sign, the same 8 exponent bits, 7 mantissa
// bits). The same two bytes as CUDA's __nv_bfloat16 and cuBLASLt's CUDA_R_16BF, so that one
// buffer is read alike by the custom kernels, cuBLASLt, NCCL (ncclBfloat16) and MPI (2-byte
// words). A plain struct, not an arithmetic type: every computation converts to fp32 first
// (kernels/simt/types.hpp: to_bf16, to_float), as the precision rule says.
#pragma once

#include <cstdint>

namespace eth::kernels {

struct bf16 {
  uint16_t bits;
};
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);

}  // namespace eth::kernels
