// The runtime of one rank's role in a plan: a pipeline stage (pipeline_runtime.hpp) or idle
// (idle_rank.hpp). Apart from rank_runtime.hpp so that the interface does not include its
// implementations.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/backend.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

// The runtime of this rank's role in `plan`: a pipeline stage, or idle, with the gradient sums and
// stage transfers `comm` chose (mpi_topology/sum_reducer.hpp). Its parameters are
// initialised from `seed`, or, given `carried` (what the same rank's runtime under another batch
// split of the same stages released: online re-balancing), taken from it with its AdamW state.
std::unique_ptr<RankRuntime> make_rank_runtime(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx,
                                               int seq_len, GradSyncMode sync, const AdamWConfig& adamw,
                                               kernels::Backend& backend, CommChoice comm, uint64_t seed,
                                               const StageState* carried = nullptr);

// How many communicators of its own this rank's runtime makes on the NCCL path, at most: two per
// gradient group of several members it belongs to (reduces, broadcasts), one per direction and
// kind of stage transfer. For the memory check: each holds device buffers (NCCL's).
int stream_communicators(const ParallelContext& ctx);

}  // namespace eth
