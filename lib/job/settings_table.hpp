// The one table rank 0 prints at start-up: every setting of the run as resolved (llm.c prints
// one like it), so that a log says what ran without the command line beside it.
#pragma once

#include <ostream>

#include "kernels/backend.hpp"
#include "lib/job/job.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

// `runtime` is rank 0's: its gradient sums and reduction path fill the "gradient sync" row.
void print_settings(const Job& job, const RankRuntime& runtime, const kernels::Backend& backend, std::ostream& log);

}  // namespace eth
