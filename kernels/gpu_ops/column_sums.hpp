// Deterministic sums over the rows of an (N, C) computation, for parameter gradients that add
// up every row: dbias of a matmul, dweight and dbias of a layernorm. No atomics: rows are cut
// into fixed chunks of kRowsPerChunk, each (chunk, 32 columns) block writes its partial sums, and
// one thread per column adds the partials in chunk order. The chunking depends on N alone, so a
// result never depends on the device or on scheduling.
#pragma once

#include <stdexcept>

#include "kernels/gpu_ops/common.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kColumnTile = 32;  // columns per block: one warp reads 32 consecutive floats
constexpr int kRowLanes = 8;     // rows read at once by a block
constexpr int kColumnFinishThreads = 256;

// Term: a functor `SIMT_DEVICE Float2 operator()(size_t row, int col) const` reading through
// Global<T> members: two quantities summed at once (the second is 0 where only one is wanted),
// with `static constexpr const char* kName`, the partials kernel's name in the launch counts.
//
// Block (x, y) = (32 columns from 32 x, rows [128 y, 128 y + 128)), 32 x 8 threads: thread
// (tx, ty) owns column 32 x + tx and adds rows 128 y + ty, + 8, ... in order; then thread
// (tx, 0) adds the 8 row lanes in order and writes the chunk's partial.
template <typename Term>
struct ColumnPartialsKernel {
  static constexpr const char* kName = Term::kName;
  Global<Float2> partials;  // (chunks, C)
  Term term;
  int N, C;

  struct Smem {
    simt::SharedArray2D<Float2, kRowLanes, kColumnTile> tile;
  };

  SIMT_DEVICE void operator()(Thread& t) const {
    Smem& s = t.shared<Smem>();
    const int tx = static_cast<int>(t.thread_idx().x), ty = static_cast<int>(t.thread_idx().y);
    const int c = static_cast<int>(t.block_idx().x) * kColumnTile + tx;
    const int chunk = static_cast<int>(t.block_idx().y);
    const int begin = chunk * kRowsPerChunk;
    const int end = simt::imin(N, begin + kRowsPerChunk);
    Float2 acc{0.f, 0.f};
    if (c < C) {
      for (int n = begin + ty; n < end; n += kRowLanes) {
        const Float2 v = term(static_cast<size_t>(n), c);
        acc.x += v.x;
        acc.y += v.y;
      }
    }
    s.tile(ty, tx) = acc;
    t.sync();
    if (ty == 0 && c < C) {
      Float2 sum = s.tile(0, tx);
      for (int r = 1; r < kRowLanes; r++) {
        const Float2 v = s.tile(r, tx);
        sum.x += v.x;
        sum.y += v.y;
      }
      partials[static_cast<size_t>(chunk) * C + c] = sum;
    }
  }
};

// Column c of (chunks, C) partials summed over the chunks in chunk order: the one order every
// deterministic column sum here finishes in (ColumnFinishKernel).
SIMT_DEVICE Float2 sum_of_partials(Global<const Float2> partials, int chunks, int C, int c) {
  Float2 sum{0.f, 0.f};
  for (int k = 0; k < chunks; k++) {
    const Float2 p = partials[static_cast<size_t>(k) * C + c];
    sum.x += p.x;
    sum.y += p.y;
  }
  return sum;
}

// dst_x[c] += the sum of the partials' x over the chunks, in chunk order; dst_y likewise with
// y, unless it is null. One thread per column c.
struct ColumnFinishKernel {
  static constexpr const char* kName = "column_finish";
  Global<float> dst_x;             // (C) accumulated
  Global<float> dst_y;             // (C) accumulated, or null
  Global<const Float2> partials;   // (chunks, C)
  int chunks, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int c = static_cast<int>(t.block_idx().x * t.block_dim().x + t.thread_idx().x);
    if (c >= C) return;
    const Float2 sum = sum_of_partials(partials, chunks, C, c);
    dst_x[c] += sum.x;
    if (dst_y) dst_y[c] += sum.y;
  }
};

// Rows of partial sums as a term: the second stage of a sum whose first stage wrote one partial
// per block of rows (layernorm.hpp's backward), each row in pieces of W columns stored value by
// value: column W p + k at k C / W + p (W 1: in column order).
struct PartialsTerm {
  static constexpr const char* kName = "column_sums_of_partials";
  Global<const Float2> partials;  // (rows, W, C / W)
  int C, W;
  SIMT_DEVICE Float2 operator()(size_t row, int col) const {
    return partials[row * C + static_cast<size_t>(col % W) * (C / W) + col / W];
  }
};

// dst_x (C) += the column sums of term's x over the N rows; dst_y (C, or null) those of its y.
// `partials` holds column_sums_scratch_bytes(N, C).
template <class Launch, typename Term>
void add_column_sums(Launch& launch, float* dst_x, float* dst_y, const Term& term, int N, int C, Float2* partials) {
  const int chunks = static_cast<int>(ceil_div(static_cast<size_t>(N), kRowsPerChunk));
  if (chunks > 65535) throw std::invalid_argument("column sums: more than 65535 * 128 rows");  // gridDim.y
  const Dim3 grid(static_cast<unsigned>(ceil_div(static_cast<size_t>(C), kColumnTile)), static_cast<unsigned>(chunks));
  using Partials = ColumnPartialsKernel<Term>;
  launch.kernel(Partials{partials, term, N, C}, LaunchShape{grid, Dim3(kColumnTile, kRowLanes), sizeof(typename Partials::Smem)});
  launch.kernel(ColumnFinishKernel{dst_x, dst_y, partials, chunks, C},
                LaunchShape{Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(C), kColumnFinishThreads))),
                            Dim3(kColumnFinishThreads), 0});
}

// The same with the partials in launch.scratch.
template <class Launch, typename Term>
void add_column_sums(Launch& launch, float* dst_x, float* dst_y, const Term& term, int N, int C) {
  static_assert(sizeof(Float2) == 2 * sizeof(float));
  auto* partials = static_cast<Float2*>(launch.scratch(column_sums_scratch_bytes(static_cast<size_t>(N), C)));
  add_column_sums(launch, dst_x, dst_y, term, N, C, partials);
}

}  // namespace eth::kernels::gpu_ops
