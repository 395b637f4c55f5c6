// The one table rank 0 prints at start-up: every setting of the run as resolved (llm.c prints
// one like it), so that a log says what ran without the command line beside it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/job/job.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

// `runtime` is rank 0's: its gradient sums and reduction path fill the "gradient sync" row.
// `precision_paths`: every rank's Backend::precision_path, by world rank (ranks of one job may
// take different paths to one precision: bf16 on bf16 kernels beside bf16 computed in fp32).
void print_settings(const Job& job, const RankRuntime& runtime, const kernels::Backend& backend,
                    const std::vector<std::string>& precision_paths, std::ostream& log);

}  // namespace eth
