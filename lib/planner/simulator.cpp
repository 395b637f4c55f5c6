#include "lib/planner/simulator.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/schedule.hpp"

namespace eth::planner {
namespace {

// One stage being replayed.
struct StageRun {
  std::vector<Action> actions;
  size_t next = 0;
  double clock = 0;
  ComputeMs compute;                // per micro-batch: the slowest rank's
  std::vector<double> act_arrival;  // per micro-batch: its activations arrive here (from s-1)
  std::vector<double> grad_arrival; // per micro-batch: its gradient arrives here (from s+1)
  std::vector<double> backward_end; // per micro-batch: its backward has completed here
  std::vector<double> sent;         // per micro-batch: its outgoing send (activation or gradient) has completed
  double last_backward_start = 0;
};

// Backward time after which units [u, stage end) of a stage are done, for one rank with
// `slots` micro-batches in flight: full recomputation runs first, selective per layer.
double unit_done_ms(const CostModel& cost, int type, const PlanStage& stage, int b, int slots, int unit) {
  const int L = cost.model().num_layers;
  const LayerRange layers = stage.layers;
  const ProfileEntry e = cost.profile(type).at(b);
  double t = stage.recompute == Recompute::full ? cost.recompute_ms(e, layers, stage.recompute, slots) : 0;
  const double layer_ms = e.layer.backward_ms + (stage.recompute == Recompute::selective
                                                     ? cost.recompute_ms(e, {0, 1}, stage.recompute, slots)
                                                     : 0);
  if (layers.end == L) t += e.head.backward_ms;                     // unit L + 1 (with the head)
  const int first_layer = std::max(layers.begin, unit - 1);          // unit u holds layer u - 1
  t += std::max(0, layers.end - first_layer) * layer_ms;
  if (unit == 0) t += e.embedding.backward_ms;
  return t;
}

// Per rank: when its compute ends, and when its last backward starts.
struct RankTimes {
  std::vector<double> compute_end, last_backward_start;
};

constexpr double kNever = -1;  // an arrival whose send has not been replayed yet

// Where the replay writes its spans when a drawing asks for them (simulate's `timeline`); a
// search passes none, and no span is built.
struct Recorder {
  std::vector<SimSpan>* spans = nullptr;
  void operator()(SimSpan::Kind kind, int index, const std::vector<int>& ranks, double start, double end) const {
    if (spans != nullptr) spans->push_back({kind, index, ranks, start, end});
  }
};

const PlanStage& stage_of(const Plan& plan, const RankRole& role) {
  return plan.pipelines[role.pipeline].stages[role.stage];
}

// One pipeline being replayed: its stages and, per boundary s|s+1, one micro-batch's transfer
// time and when each direction of the link is free again.
struct PipelineReplay {
  const PlanPipeline* pipe = nullptr;
  std::vector<StageRun> runs;
  std::vector<double> link_ms, fwd_link_free, bwd_link_free;
};

// Each stage's action list and per micro-batch compute (its slowest rank's); adds every rank's
// compute to busy_ms.
PipelineReplay start_replay(const CostModel& cost, const PlanPipeline& pipe, std::vector<double>& busy_ms) {
  const int S = static_cast<int>(pipe.stages.size());
  const int m = pipe.micro_batches;
  PipelineReplay rp{&pipe, std::vector<StageRun>(S), std::vector<double>(S, 0), std::vector<double>(S, 0),
                    std::vector<double>(S, 0)};
  for (int s = 0; s < S; s++) {
    StageRun& run = rp.runs[s];
    run.actions = one_f_one_b(pipe, s);
    for (size_t i = 0; i < pipe.stages[s].ranks.size(); i++) {
      const ComputeMs c = rank_compute(cost, pipe, s, static_cast<int>(i));
      run.compute = {std::max(run.compute.forward, c.forward), std::max(run.compute.backward, c.backward)};
      busy_ms[pipe.stages[s].ranks[i]] += m * c.total();
    }
    run.act_arrival.assign(m, kNever);
    run.grad_arrival.assign(m, kNever);
    run.backward_end.assign(m, 0);
    run.sent.assign(m, 0);
    if (s + 1 < S) rp.link_ms[s] = cost.boundary_ms(pipe.stages[s], pipe.stages[s + 1], pipe.micro_batch);
  }
  return rp;
}

// A transfer lands no earlier than a link time after its receive was posted, which the
// schedule's buffer rule allows only once a backward has freed the buffer.
double landed(const StageRun& run, const Action& a, double arrival, double link) {
  return a.posted_after_backward < 0 ? arrival : std::max(arrival, run.backward_end[a.posted_after_backward] + link);
}

// Runs stage s's actions until one waits for a transfer that has not been sent yet; true when
// it ran any.
bool advance_stage(PipelineReplay& rp, int s, const Recorder& record) {
  StageRun& run = rp.runs[s];
  bool progress = false;
  for (; run.next < run.actions.size(); run.next++) {
    const Action a = run.actions[run.next];
    const int i = a.micro_batch;
    if (a.kind == ActionKind::recv_activation) {
      if (run.act_arrival[i] == kNever) break;
      run.clock = std::max(run.clock, landed(run, a, run.act_arrival[i], rp.link_ms[s - 1]));
    } else if (a.kind == ActionKind::recv_grad) {
      if (run.grad_arrival[i] == kNever) break;
      run.clock = std::max(run.clock, landed(run, a, run.grad_arrival[i], rp.link_ms[s]));
    } else if (a.kind == ActionKind::forward) {
      if (a.after_send_of >= 0) run.clock = std::max(run.clock, run.sent[a.after_send_of]);
      record(SimSpan::Kind::forward, i, rp.pipe->stages[s].ranks, run.clock, run.clock + run.compute.forward);
      run.clock += run.compute.forward;
    } else if (a.kind == ActionKind::backward) {
      run.last_backward_start = run.clock;
      run.clock += run.compute.backward;
      run.backward_end[i] = run.clock;
      record(SimSpan::Kind::backward, i, rp.pipe->stages[s].ranks, run.last_backward_start, run.clock);
    } else if (a.kind == ActionKind::send_activation) {
      const double start = std::max(run.clock, rp.fwd_link_free[s]);
      rp.fwd_link_free[s] = start + rp.link_ms[s];
      rp.runs[s + 1].act_arrival[i] = rp.fwd_link_free[s];
      run.sent[i] = rp.fwd_link_free[s];
    } else if (a.kind == ActionKind::send_grad) {
      if (a.after_send_of >= 0) run.clock = std::max(run.clock, run.sent[a.after_send_of]);
      const double start = std::max(run.clock, rp.bwd_link_free[s - 1]);
      rp.bwd_link_free[s - 1] = start + rp.link_ms[s - 1];
      rp.runs[s - 1].grad_arrival[i] = rp.bwd_link_free[s - 1];
      run.sent[i] = rp.bwd_link_free[s - 1];
    } else {
      continue;  // reduce_grads and optimizer_step: replayed after the compute, for all pipelines at once
    }
    progress = true;
  }
  return progress;
}

// Replays one pipeline's compute and transfers, every stage as far as its receives allow until
// all are done; records its ranks' times and returns when its last stage finishes.
double replay_pipeline(const CostModel& cost, const PlanPipeline& pipe, std::vector<double>& busy_ms, RankTimes& times,
                       const Recorder& record) {
  PipelineReplay rp = start_replay(cost, pipe, busy_ms);
  const int S = static_cast<int>(pipe.stages.size());
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < S; s++) progress = advance_stage(rp, s, record) || progress;
  }
  double end = 0;
  for (int s = 0; s < S; s++) {
    assert(rp.runs[s].next == rp.runs[s].actions.size());  // 1F1B never deadlocks
    end = std::max(end, rp.runs[s].clock);
    for (int r : pipe.stages[s].ranks) {
      times.compute_end[r] = rp.runs[s].clock;
      times.last_backward_start[r] = rp.runs[s].last_backward_start;
    }
  }
  return end;
}

// When each reduction may start: every owner has finished the block's units in its last
// backward. The tied embedding: summed after the compute, or, where the runtime sums it early,
// after the head's backward (at once on a first stage without the head) and its late rows
// gathered after the compute.
std::vector<double> reduction_ready_ms(const CostModel& cost, const Plan& plan, const std::vector<RankRole>& roles,
                                       const std::vector<Reduction>& reductions, const RankTimes& times) {
  auto slots_of = [&](int r) {
    const PlanPipeline& pipe = plan.pipelines[roles[r].pipeline];
    return activation_slots(roles[r].stage, static_cast<int>(pipe.stages.size()), pipe.micro_batches);
  };
  std::vector<double> ready(reductions.size(), 0);
  const int L = cost.model().num_layers;
  const bool tied_early = std::any_of(reductions.begin(), reductions.end(),
                                      [](const Reduction& r) { return r.unit_begin == Reduction::kTiedGather; });
  for (size_t k = 0; k < reductions.size(); k++) {
    const int begin = reductions[k].unit_begin;
    for (int r : reductions[k].owners) {
      const int type = cost.topology().ranks[r].device_type;
      const PlanStage& stage = stage_of(plan, roles[r]);
      double done = times.compute_end[r];
      if (begin >= 0) {
        const int unit = std::max(begin, stage_units(stage.layers, L).begin);
        done = times.last_backward_start[r] + unit_done_ms(cost, type, stage, roles[r].samples, slots_of(r), unit);
      } else if (begin == Reduction::kTiedSum && tied_early) {
        done = times.last_backward_start[r] + unit_done_ms(cost, type, stage, roles[r].samples, slots_of(r), L + 1);
      }
      ready[k] = std::max(ready[k], std::min(done, times.compute_end[r]));
    }
  }
  return ready;
}

// Runs the reductions in order of readiness; returns per rank when its channel is free. A sum
// occupies its owners, and, when they span several nodes, those nodes' NICs: the sums of
// different groups whose leaders share a node take turns on its NIC (sharing it at full rate
// ends the last of them at the same time).
std::vector<double> replay_reductions(const Topology& topo, const std::vector<Reduction>& reductions,
                                      const std::vector<double>& ready, std::vector<double>& comm_ms,
                                      const Recorder& record) {
  std::vector<size_t> order(reductions.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  std::vector<double> channel_free(topo.world_size(), 0), nic_free(topo.nodes.size(), 0);
  for (size_t k : order) {
    const Reduction& red = reductions[k];
    if (red.ms <= 0) continue;
    std::vector<int> nodes;
    for (int r : red.owners) nodes.push_back(topo.ranks[r].node);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (nodes.size() < 2) nodes.clear();  // inside one node: no NIC
    double start = ready[k];
    for (int r : red.owners) start = std::max(start, channel_free[r]);
    for (int n : nodes) start = std::max(start, nic_free[n]);
    for (int r : red.owners) {
      channel_free[r] = start + red.ms;
      comm_ms[r] += red.ms;
    }
    for (int n : nodes) nic_free[n] = start + red.ms;
    record(SimSpan::Kind::reduction, static_cast<int>(k), red.owners, start, start + red.ms);
  }
  return channel_free;
}

// Per rank, when it is done: AdamW after its compute and its reductions, then each sharded
// block's all-gather of the updated shards. Adds the optimizer to busy_ms, the gathers to comm_ms.
std::vector<double> replay_optimizer(const CostModel& cost, const Plan& plan, const std::vector<RankRole>& roles,
                                     const std::vector<Reduction>& reductions, const RankTimes& times,
                                     const std::vector<double>& channel_free, Simulation& sim, const Recorder& record) {
  const int world = cost.topology().world_size();
  std::vector<double> done(world, 0);
  for (int r = 0; r < world; r++) {
    if (roles[r].idle()) continue;  // no layers, no update: an idle rank never sets the pace
    const double opt = cost.rank_optimizer_ms(plan, r, stage_of(plan, roles[r]).layers);
    sim.busy_ms[r] += opt;
    const double start = std::max(times.compute_end[r], channel_free[r]);
    done[r] = start + opt;
    if (record.spans != nullptr) record(SimSpan::Kind::optimizer, 0, {r}, start, done[r]);  // no vector built in a search
  }
  for (size_t k = 0; k < reductions.size(); k++) {  // in block order, as the runtime gathers them
    const Reduction& red = reductions[k];
    if (red.gather_ms <= 0) continue;
    double start = 0;
    for (int r : red.owners) start = std::max(start, done[r]);
    for (int r : red.owners) {
      done[r] = start + red.gather_ms;
      sim.comm_ms[r] += red.gather_ms;
    }
    record(SimSpan::Kind::gather, static_cast<int>(k), red.owners, start, start + red.gather_ms);
  }
  return done;
}

}  // namespace

Simulation simulate(const CostModel& cost, const Plan& plan, std::vector<SimSpan>* timeline) {
  const Recorder record{timeline};
  const int world = cost.topology().world_size();
  Simulation sim;
  sim.busy_ms.assign(world, 0);
  sim.comm_ms.assign(world, 0);
  RankTimes times{std::vector<double>(world, 0), std::vector<double>(world, 0)};
  for (const PlanPipeline& pipe : plan.pipelines) sim.pipeline_ms.push_back(replay_pipeline(cost, pipe, sim.busy_ms, times, record));

  const std::vector<RankRole> roles = rank_roles(plan, world);
  const std::vector<Reduction> reductions = plan_reductions(cost, plan);
  const std::vector<double> ready = reduction_ready_ms(cost, plan, roles, reductions, times);
  const std::vector<double> channel_free = replay_reductions(cost.topology(), reductions, ready, sim.comm_ms, record);
  const std::vector<double> done = replay_optimizer(cost, plan, roles, reductions, times, channel_free, sim, record);

  for (int r = 0; r < world; r++) sim.iteration_ms = std::max(sim.iteration_ms, done[r]);
  sim.idle_ms.assign(world, 0);
  for (int r = 0; r < world; r++) sim.idle_ms[r] = std::max(0.0, sim.iteration_ms - sim.busy_ms[r]);
  return sim;
}

}  // namespace eth::planner
