// A plan: how the devices of a topology form pipelines, which layers each stage holds, and how
// the global batch is split, down to single samples. Written by eth_plan or by hand, read by
// eth_train (docs/formats.md has the YAML).
//
// Pipeline k takes the samples [first_sample(k), first_sample(k) + samples()) of each step's
// global batch, in micro-batches of micro_batch samples; inside a stage of several ranks, rank
// i of the stage takes split[i] consecutive samples of every micro-batch.
#pragma once

#include <string>
#include <vector>

#include "lib/model/model_config.hpp"
#include "lib/model/recompute.hpp"
#include "lib/plan/topology.hpp"

namespace eth {

struct PlanStage {
  std::vector<int> ranks;
  LayerRange layers;
  std::vector<int> split;     // samples of each micro-batch per rank, summing to micro_batch
  std::vector<int> last_split = {};  // of a smaller last micro-batch, each at most split[i]; else empty
  Recompute recompute = Recompute::none;  // what its ranks keep for backward (lib/model/recompute.hpp)
};

struct PlanPipeline {
  int micro_batch = 1;        // samples per micro-batch
  int micro_batches = 1;      // micro-batches per step
  std::vector<PlanStage> stages;
  int last_micro_batch = 0;   // samples of the last micro-batch when below micro_batch; 0: full

  bool short_last() const { return last_micro_batch > 0; }
  int samples() const { return micro_batch * (micro_batches - 1) + (short_last() ? last_micro_batch : micro_batch); }
  // Samples of micro-batch i.
  int rows(int i) const { return short_last() && i == micro_batches - 1 ? last_micro_batch : micro_batch; }
};

// What the planner predicted; empty in a hand-written plan.
struct PlanPrediction {
  double iteration_ms = 0;
  std::vector<double> pipeline_ms;  // per pipeline
  std::vector<double> memory_gb;    // per rank
};

struct Plan {
  std::string source;               // file it was read from, for messages
  int global_batch = 0;
  std::vector<PlanPipeline> pipelines;
  // Ranks that do no training work (a slow device the plan is faster without): they take part
  // in start-up, the per-step agreement and checkpoints, and hold no layers.
  std::vector<int> idle;
  // Gradient blocks (lib/plan/grad_blocks.hpp, derive_grad_blocks order: block 0 holds the
  // embedding) whose AdamW moments are sharded among their owners (lib/plan/optimizer_shards.hpp).
  std::vector<int> sharded_blocks;
  PlanPrediction predicted;

  int first_sample(int pipeline) const;
};

// Where one rank sits in a plan; an idle rank's pipeline is -1.
struct RankRole {
  bool idle() const { return pipeline < 0; }
  int pipeline = -1;
  int stage = -1;
  int index_in_stage = -1;    // position among the stage's ranks
  int sample_offset = 0;      // its first sample within each full micro-batch
  int samples = 0;            // its samples of each full micro-batch (split[index_in_stage])
  int last_offset = 0;        // the same for a smaller last micro-batch (last_split)
  int last_samples = 0;
};

// Reads a plan; throws InputError naming the file and field of a malformed entry.
Plan load_plan(const std::string& path);
void save_plan(const Plan& plan, const std::string& path);
// The same YAML as text, and back (plans sent between ranks); `source` names it in messages.
std::string plan_yaml(const Plan& plan);
Plan plan_from_yaml(const std::string& text, const std::string& source);

// Every rank's role, indexed by rank; call on a validated plan.
std::vector<RankRole> rank_roles(const Plan& plan, int world_size);

}  // namespace eth
