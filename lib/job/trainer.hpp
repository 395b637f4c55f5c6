// A training job: one rank per device, each running its stage of its pipeline. Rank 0 prints
// the settings table and a line per step and writes metrics.jsonl; --trace writes one Chrome
// trace of every rank.
#pragma once

#include <ostream>

#include "kernels/backend.hpp"
#include "lib/job/job.hpp"

namespace eth {

// Collective over every rank of the job (world_comm()), on the job load_job described (it takes
// over the job's token shards). A user's mistake on any rank becomes an AgreedError on every
// rank. SIGUSR1 or SIGTERM (lib/runtime/preemption.hpp) ends it after the current step with a
// checkpoint. Returns the last training loss.
double train(Job& job, kernels::Backend& backend, std::ostream& log);

}  // namespace eth
