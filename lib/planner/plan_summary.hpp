// What eth_plan and eth_train --auto-plan print about a plan: its stages, times and memory.
#pragma once

#include <ostream>
#include <vector>

#include "lib/planner/candidate.hpp"

namespace eth::planner {

// The plan's table (per stage: ranks, layers, samples, split, recomputation, fullest rank's
// memory), its times, and print_memory.
void print_summary(std::ostream& out, const CostModel& cost, const Candidate& c);
// Each rank's predicted peak memory by what holds it, against its device's.
void print_memory(std::ostream& out, const Topology& topo, const std::vector<MemoryBytes>& memory);

}  // namespace eth::planner
