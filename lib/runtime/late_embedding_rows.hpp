// The tied word embedding's gradient sum, started early. wte has two uses: the head's matmul,
// whose gradient is dense and final right after the head's backward (the first work of a
// step's last backward), and the embedding lookup, whose gradient is one row per token and is
// final only with the last work of that backward. Summing the whole (Vp, C) buffer after both
// leaves the largest sum of the step behind no compute (26 of the 29 MB on the demo model's
// data-parallel plans). Instead, in block mode, where it pays:
//   - the step's last backward leaves its embedding rows out of dwte: the first stage keeps them
//     as they are, (rows, C) with their token ids (Stage::backward's `keep`);
//   - the tied group's sum of dwte starts once the rest is final: after the head's backward on a
//     stage with the head, when its last backward begins on a first stage without it
//     (grad_sync.hpp), and overlaps the remaining backward;
//   - after the sums, every member of the tied group gathers the rows every member kept and adds
//     all of them, in member order, into the summed dwte (add_gathered): the same additions in
//     the same order on every member, so the copies of wte stay bit-identical.
// It pays when the kept rows are few beside the vocabulary: tied_sum_starts_early
// (lib/plan/grad_blocks.hpp) asks for at most Vp/4 rows in all members together, so the gather
// moves at most a quarter of the bytes of the sum.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/device_buffer.hpp"
#include "mpi_topology/process_group.hpp"
#include "mpi_topology/wire_word.hpp"

namespace eth {

class LateEmbeddingRows {
 public:
  LateEmbeddingRows() = default;  // off
  // A member of the tied group `tied` keeping up to `my_rows` rows per step, of at most
  // `all_rows` kept by all members together, of the backend's storage type (the rows are
  // activation gradients).
  LateEmbeddingRows(const ProcessGroup& tied, kernels::Backend& backend, int C, int my_rows, int all_rows);

  bool on() const { return tied_ != nullptr; }
  kernels::Tensor rows() { return {rows_.data(), backend_->storage()}; }  // (my_rows, C) device: the stage's kept rows
  int32_t* ids() { return ids_.data(); }  // (my_rows) device: their token ids
  // Collective over the tied group, after its sum of dwte has completed: adds the `count` rows
  // this rank kept this step and every other member's into dwte ((Vp, C), device).
  void add_gathered(float* dwte, int count);

 private:
  const ProcessGroup* tied_ = nullptr;
  kernels::Backend* backend_ = nullptr;
  int C_ = 0;
  int row_words_ = 0;                                // C elements of the storage type
  kernels::DeviceBuffer<WireWord> rows_;             // (my_rows, C)
  kernels::DeviceBuffer<int32_t> ids_;               // (my_rows)
  kernels::DeviceBuffer<WireWord> gathered_rows_;    // (all_rows, C)
  kernels::DeviceBuffer<int32_t> gathered_ids_;      // (all_rows)
  std::vector<WireWord> host_rows_, all_host_rows_;  // the same on the host, for MPI
  std::vector<int32_t> host_ids_, all_host_ids_;
};

}  // namespace eth
