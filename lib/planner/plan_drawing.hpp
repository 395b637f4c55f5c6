// A plan as a picture: a self-contained SVG that a browser opens without anything else. Above,
// one row per pipeline, a box per stage (its ranks with their device types, samples of each
// micro-batch and predicted memory; its layers), coloured by device type, as wide as the
// stage's simulated compute per step, and a row of the idle ranks; below, the simulator's
// timeline of one step, one row per rank (simulator.hpp's SimSpan). eth_plan --draw writes it.
#pragma once

#include <string>

#include "lib/plan/plan.hpp"
#include "lib/planner/cost_model.hpp"

namespace eth::planner {

// Simulates `plan` (validated, on cost's topology) and writes its drawing to `path`; an
// unwritable path is an InputError naming it.
void write_plan_drawing(const CostModel& cost, const Plan& plan, const std::string& path);

}  // namespace eth::planner
