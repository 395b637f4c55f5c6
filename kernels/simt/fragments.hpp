// The warp-level matrix instructions' register layouts, written once: which element of which
// matrix each (lane, register) of a warp holds. The host side of the dialect assembles and
// scatters fragments with these functions, the tests check them entry by entry against the PTX
// ISA's formulas, and a kernel that needs an element's coordinates calls them rather than
// re-deriving them.
//
// PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", with
//   groupID = lane >> 2, threadID_in_group = lane % 4:
//   A (16 x 16, row-major, bf16: registers a0..a7, two per 32-bit word)
//     row = groupID + 8 for i in {2, 3, 6, 7}, else groupID
//     col = threadID_in_group * 2 + (i & 1) + 8 for i >= 4
//   B (16 x 8, "col": k is the row): b0..b3
//     row = threadID_in_group * 2 + (i & 1) + 8 for i >= 2;  col = groupID
//   C and D (16 x 8, f32): c0..c3
//     row = groupID + 8 for i >= 2, else groupID;  col = threadID_in_group * 2 + (i & 1)
// "ldmatrix": lanes 8j..8j+7 give the addresses of matrix j's eight rows (16 bytes each); lane l
//   receives in its register j matrix j's row l >> 2, elements 2 (l % 4) and 2 (l % 4) + 1
//   (.trans: the same of the transposed matrix: rows 2 (l % 4) and 2 (l % 4) + 1, column l >> 2).
#pragma once

#include "kernels/simt/qualifiers.hpp"

namespace eth::kernels::simt {

struct MatrixCoord {
  int row;
  int col;
};

constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kMmaARegs = 8, kMmaBRegs = 4, kMmaCRegs = 4;  // bf16 halves of A and B; f32 of C/D

SIMT_HOST_DEVICE constexpr MatrixCoord mma_a_coord(int lane, int i) {
  return {(lane >> 2) + ((i & 2) ? 8 : 0), (lane % 4) * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
SIMT_HOST_DEVICE constexpr MatrixCoord mma_b_coord(int lane, int i) {
  return {(lane % 4) * 2 + (i & 1) + (i >= 2 ? 8 : 0), lane >> 2};
}
SIMT_HOST_DEVICE constexpr MatrixCoord mma_c_coord(int lane, int i) {
  return {(lane >> 2) + (i >= 2 ? 8 : 0), (lane % 4) * 2 + (i & 1)};
}

// ldmatrix: element h (0 or 1, the low and high half of the 32-bit register) that lane `lane`
// receives from an 8 x 8 matrix of 16-bit values, without and with .trans.
SIMT_HOST_DEVICE constexpr MatrixCoord ldmatrix_coord(int lane, int h, bool trans) {
  return trans ? MatrixCoord{(lane % 4) * 2 + h, lane >> 2} : MatrixCoord{lane >> 2, (lane % 4) * 2 + h};
}
// The lane whose address gives row r of matrix j.
SIMT_HOST_DEVICE constexpr int ldmatrix_address_lane(int matrix, int row) { return matrix * 8 + row; }

}  // namespace eth::kernels::simt
