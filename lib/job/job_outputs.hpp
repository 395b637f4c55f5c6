// What a job writes besides metrics.jsonl: the plan as a picture, checkpoints, the final
// parameters, the Chrome trace.
#pragma once

#include <ostream>
#include <string>

#include "lib/io/checkpoint.hpp"
#include "lib/io/step_trace.hpp"
#include "lib/model/model_config.hpp"
#include "lib/plan/plan.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

struct Job;

// Collective: rank 0 draws the job's plan and its simulated step (lib/planner/plan_drawing.hpp)
// into OUTPUT_DIR/plan.svg and names it on `log`; an unreadable profile or an unwritable file is
// an AgreedError on every rank.
void draw_plan(const Job& job, int rank, std::ostream& log);

// Collective: OUTPUT_DIR/checkpoints/step_N.h5, visible only once complete (checkpoint_files.hpp);
// the newest `keep` are kept (0: all). Rank 0 names it on `log`.
void save_checkpoint(RankRuntime& runtime, const std::string& output_dir, int keep, const CheckpointHeader& header,
                     int rank, std::ostream& log);

// Collective: the whole model after the last step, raw float32 in the one-stage layout, by rank 0;
// beside it PATH.json says what lies where: the model's name, its query and key/value widths (NH hs,
// NKV hs), and each tensor's name, shape, offset and size in floats (lib/model/param_layout.hpp).
void save_parameters(RankRuntime& runtime, const ModelConfig& model, const std::string& path, int rank);

// Collective: every rank's spans in one Chrome trace, a row per rank named by its place in `plan`.
void write_trace(StepTrace& trace, const Plan& plan, int world, const std::string& path);

}  // namespace eth
