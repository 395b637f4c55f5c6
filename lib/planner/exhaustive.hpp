// The exhaustive planner: for small clusters, every plan the plan format allows, each scored by
// the same simulator as the HPP search (simulator.hpp). It is the reference that search_hpp is
// audited against (bench/bench_planner_audit.cpp, tests/unit/test_planner_audit.cpp), not a
// planner for real clusters: its running time grows like the number of ordered set partitions
// of the devices times the compositions of the layers and of the batch.
//
// The space: every set of idle ranks (at least one rank trains); every partition of the other
// ranks into pipelines; for each pipeline every ordered sequence of stages, each stage any
// non-empty set of ranks (device types mixed freely, any order); every layer split (contiguous,
// every stage at least one layer); a micro-batch size and count per pipeline, the pipelines'
// samples adding up to the global batch; and for each stage of several ranks every order of its
// ranks and every split of the micro-batch into positive parts. A plan is kept when every rank
// fits its device: ExhaustiveLimits can cut the space further, and says so.
//
// What makes it tractable, all exact (exhaustive.cpp has the arguments):
//   - ranks of the same device type on the same node are interchangeable, so plans are
//     enumerated over (type, node) classes, never over permutations of such ranks;
//   - pipelines are unordered (a plan's pipeline order changes only which samples it takes);
//   - a pipeline is priced alone once per (its ranks' classes, its samples), and each plan of
//     several pipelines is pruned when a lower bound from its pipelines' lone replays is no
//     better than the best plan found so far (the simulator never finishes a plan before any of
//     its pipelines' last backward plus the least optimizer step among that pipeline's ranks).
// Everything is deterministic: fixed enumeration order, ties to the first plan found.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/planner/candidate.hpp"

namespace eth::planner {

struct ExhaustiveLimits {
  // Guards: larger problems are refused (std::invalid_argument), not cut.
  int max_devices = 6;
  int max_layers = 8;
  int max_global_batch = 8;
  // Cuts of the space (0: no cut). The defaults cut nothing but the micro-batch sizes.
  int max_micro_batch = 0;    // sizes 1 .. this; 0: 1 .. the largest of request.micro_batches, the
                              // range search_hpp picks from (it takes any divisor up to its b0)
  int max_stages = 0;         // stages per pipeline; 0: up to the layer count
  int max_stage_width = 0;    // ranks per stage; 0: up to the micro-batch
  int max_pipelines = 0;      // pipelines per plan; 0: up to the global batch
  bool allow_idle = true;     // plans may leave ranks idle
  // Cuts to search_hpp's own structure, to attribute a gap to what the search leaves out:
  bool one_type_per_stage = false;  // every stage's ranks of one device type
  bool stages_by_memory = false;    // a pipeline's ranks, stage after stage, in search_hpp's order:
                                    // device memory descending, then device type index
  bool types_in_rank_order = false; // a pipeline's ranks of one type, stage after stage, in
                                    // ascending rank order (search_hpp places them blind to nodes)
  bool prune = true;          // lower-bound pruning (exact); false simulates every plan
};

struct ExhaustiveStats {
  double plans = 0;              // plans in the space that fit memory, up to the symmetries above
  long long plans_simulated = 0; // of these, scored by the simulator (the rest were pruned)
  double plans_pruned = 0;       // skipped by the lower bound: plans = simulated + pruned
  long long pipelines = 0;       // pipelines replayed alone (to price them and bound plans)
};

struct ExhaustiveResult {
  std::optional<Candidate> best;  // nothing when no plan fits memory
  ExhaustiveStats stats;
};

// The plan with the lowest simulated iteration time. request.top and request.max_stage_width are
// ignored (limits.max_stage_width is this enumerator's own cut).
ExhaustiveResult exhaustive_best(const CostModel& cost, const PlanRequest& request, const ExhaustiveLimits& limits = {});

// A one-line outline of a plan for reports: per pipeline "b x m" and its stages, each stage
// its ranks as rank:type@node (with the split when it has several) and its layers, then idle
// ranks: "8x1 [0:A100-80GB@n0 L0-5 | 1:T4-16GB@n1+2:T4-16GB@n1 5:3 L5-8]; idle 3:T4-16GB@n1"
std::string plan_outline(const Plan& plan, const Topology& topology);

// A random small cluster for the audit: devices of 1..max_types types drawn from `catalog`, on
// 1..max_nodes nodes (in rank order), a GPT-2-proportioned model (vocabulary 50257, sequence
// 1024, 128 channels per head) whose width is drawn from `channels`, so that weights, AdamW state
// and activations (tens of GB) make memory decide some cases. A pure function of the seed.
struct AuditShape {
  int min_devices = 2, max_devices = 6;
  int max_types = 3;
  int max_nodes = 3;
  int min_layers = 2, max_layers = 8;
  int min_batch = 4, max_batch = 8;
  std::vector<int> channels = {2048, 4096, 5120};
  std::vector<int> micro_batches = {1, 2, 4};
};

struct AuditCase {
  std::string name;      // e.g. "2xA100-80GB+1xT4-16GB/2 nodes L6 C4096 B8"
  Topology topology;
  ModelConfig model;
  int seq_len = 1024;
  PlanRequest request;
};

AuditCase random_audit_case(uint64_t seed, const std::vector<DeviceType>& catalog, const AuditShape& shape = {});

}  // namespace eth::planner
