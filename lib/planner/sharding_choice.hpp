// Which gradient blocks shard their AdamW moments among their owners (Plan::sharded_blocks,
// lib/plan/optimizer_shards.hpp), chosen from the cost model's memory and time.
#pragma once

#include "lib/planner/candidate.hpp"

namespace eth::planner {

// Greedy, in block order: a block of several owners is sharded when the plan, every stage's
// recomputation re-chosen for the smaller optimizer state, simulates faster than without. A
// shard trades the block's all-reduce for a sum to the shards' owners and an all-gather after
// AdamW (not hidden behind compute), for AdamW over 1/k of the block and 1/k of its moments,
// which may let a stage recompute less. The candidate as it is when the cost model allows no
// sharding.
Candidate choose_sharding(const CostModel& cost, Candidate candidate);

}  // namespace eth::planner
