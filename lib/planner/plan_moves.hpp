// The local search's moves (local_search.hpp): a plan in a form that moves can edit freely, and
// Mover, which draws one move from a table of {name, weight, function} and applies it, then
// repairs what a plan needs (micro-batch sizes that divide, splits that add up, layer cuts).
// Every random draw comes from the one generator the caller passes, in a fixed order, so a
// seed fixes the search.
#pragma once

#include <random>
#include <vector>

#include "lib/planner/candidate.hpp"
#include "lib/planner/stage_cost.hpp"

namespace eth::planner::edit {

// A pipeline being edited: its samples, micro-batch, stages' ranks, layer cuts and splits.
struct Pipe {
  int samples = 0;
  int mb = 1;
  StageRanks ranks;
  std::vector<int> cuts;                // stage s holds layers [cuts[s], cuts[s + 1])
  std::vector<std::vector<int>> split;  // per stage; empty for one rank
};

struct State {
  std::vector<Pipe> pipes;
  std::vector<int> idle;
};

State from_plan(const Plan& plan);
Plan to_plan(const State& st, int global_batch);
// The most ranks in one stage of p.
size_t widest(const Pipe& p);

class Mover {
 public:
  // Micro-batches of at most max_mb samples, the largest size the request allows; stages of at
  // most max_width ranks (0: any).
  Mover(const CostModel& cost, std::mt19937_64& rng, const PlanRequest& request);

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // The micro-batch closest to the current one that divides the samples and is at least the
  // widest stage; splits of the right length that add up to it kept, others by speed; layers
  // by the DP when asked (or when the stage count no longer matches the cuts), else kept.
  bool repair(Pipe& p, bool relayer);

  // One random move; false when it does not apply or leaves no plan.
  bool apply(State& st);

 private:
  // Per pipeline: re-partition its layers by the DP when it is repaired.
  using Relayer = std::vector<bool>;
  // One kind of move: false when it does not apply to this plan.
  struct Move {
    const char* name;
    int weight;  // drawn with probability weight / (sum of the table's weights)
    bool (Mover::*run)(State&, Relayer&);
  };
  static const Move kMoves[];  // plan_moves.cpp

  bool finish(State& st, const Relayer& relayer);
  std::vector<size_t> targets(const State& st, size_t p);
  bool remove_rank(State& st, int r, Relayer& relayer);
  bool insert_rank(State& st, int r, Relayer& relayer);

  // The moves, in kMoves' order.
  bool move_device(State& st, Relayer& relayer);
  bool swap_devices(State& st, Relayer& relayer);
  bool split_stage(State& st, Relayer& relayer);
  bool merge_stages(State& st, Relayer& relayer);
  bool move_cut(State& st, Relayer& relayer);
  bool move_split_sample(State& st, Relayer& relayer);
  bool move_samples(State& st, Relayer& relayer);
  bool change_micro_batch(State& st, Relayer& relayer);
  bool idle_device(State& st, Relayer& relayer);
  bool wake_device(State& st, Relayer& relayer);
  bool repartition(State& st, Relayer& relayer);
  bool split_pipeline(State& st, Relayer& relayer);
  bool merge_pipelines(State& st, Relayer& relayer);

  const CostModel& cost_;
  std::mt19937_64& rng_;
  int L_;
  int max_mb_;
  int max_width_;
};

}  // namespace eth::planner::edit
