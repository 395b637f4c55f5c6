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

}  // namespace

Simulation simulate(const CostModel& cost, const Plan& plan, std::vector<SimSpan>* timeline) {
  const int world = cost.topology().world_size();
  Simulation sim;
  sim.busy_ms.assign(world, 0);
  sim.comm_ms.assign(world, 0);
  std::vector<double> compute_end(world, 0), last_backward_start(world, 0);
  constexpr double kNever = -1;
  auto record = [&](SimSpan::Kind kind, int index, const std::vector<int>& ranks, double start, double end) {
    if (timeline) timeline->push_back({kind, index, ranks, start, end});
  };

  for (const PlanPipeline& pipe : plan.pipelines) {
    const int S = static_cast<int>(pipe.stages.size());
    const int m = pipe.micro_batches;
    std::vector<StageRun> runs(S);
    std::vector<double> link_ms(S, 0), fwd_link_free(S, 0), bwd_link_free(S, 0);
    for (int s = 0; s < S; s++) {
      StageRun& run = runs[s];
      run.actions = one_f_one_b(pipe, s);
      for (size_t i = 0; i < pipe.stages[s].ranks.size(); i++) {
        const ComputeMs c = rank_compute(cost, pipe, s, static_cast<int>(i));
        run.compute = {std::max(run.compute.forward, c.forward), std::max(run.compute.backward, c.backward)};
        sim.busy_ms[pipe.stages[s].ranks[i]] += m * c.total();
      }
      run.act_arrival.assign(m, kNever);
      run.grad_arrival.assign(m, kNever);
      run.backward_end.assign(m, 0);
      run.sent.assign(m, 0);
      if (s + 1 < S) link_ms[s] = cost.boundary_ms(pipe.stages[s], pipe.stages[s + 1], pipe.micro_batch);
    }
    // A transfer lands no earlier than a link time after its receive was posted, which the
    // schedule's buffer rule allows only once a backward has freed the buffer.
    auto landed = [&](const StageRun& run, const Action& a, double arrival, double link) {
      return a.posted_after_backward < 0 ? arrival : std::max(arrival, run.backward_end[a.posted_after_backward] + link);
    };
    // Advance every stage as far as its receives allow, until all are done.
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < S; s++) {
        StageRun& run = runs[s];
        for (; run.next < run.actions.size(); run.next++) {
          const Action a = run.actions[run.next];
          const int i = a.micro_batch;
          if (a.kind == ActionKind::recv_activation) {
            if (run.act_arrival[i] == kNever) break;
            run.clock = std::max(run.clock, landed(run, a, run.act_arrival[i], link_ms[s - 1]));
          } else if (a.kind == ActionKind::recv_grad) {
            if (run.grad_arrival[i] == kNever) break;
            run.clock = std::max(run.clock, landed(run, a, run.grad_arrival[i], link_ms[s]));
          } else if (a.kind == ActionKind::forward) {
            if (a.after_send_of >= 0) run.clock = std::max(run.clock, run.sent[a.after_send_of]);
            record(SimSpan::Kind::forward, i, pipe.stages[s].ranks, run.clock, run.clock + run.compute.forward);
            run.clock += run.compute.forward;
          } else if (a.kind == ActionKind::backward) {
            run.last_backward_start = run.clock;
            run.clock += run.compute.backward;
            run.backward_end[i] = run.clock;
            record(SimSpan::Kind::backward, i, pipe.stages[s].ranks, run.last_backward_start, run.clock);
          } else if (a.kind == ActionKind::send_activation) {
            const double start = std::max(run.clock, fwd_link_free[s]);
            fwd_link_free[s] = start + link_ms[s];
            runs[s + 1].act_arrival[i] = fwd_link_free[s];
            run.sent[i] = fwd_link_free[s];
          } else if (a.kind == ActionKind::send_grad) {
            if (a.after_send_of >= 0) run.clock = std::max(run.clock, run.sent[a.after_send_of]);
            const double start = std::max(run.clock, bwd_link_free[s - 1]);
            bwd_link_free[s - 1] = start + link_ms[s - 1];
            runs[s - 1].grad_arrival[i] = bwd_link_free[s - 1];
            run.sent[i] = bwd_link_free[s - 1];
          } else {
            continue;  // reduce_grads and optimizer_step: replayed below for all pipelines at once
          }
          progress = true;
        }
      }
    }
    double end = 0;
    for (int s = 0; s < S; s++) {
      assert(runs[s].next == runs[s].actions.size());  // 1F1B never deadlocks
      end = std::max(end, runs[s].clock);
      for (int r : pipe.stages[s].ranks) {
        compute_end[r] = runs[s].clock;
        last_backward_start[r] = runs[s].last_backward_start;
      }
    }
    sim.pipeline_ms.push_back(end);
  }

  // Block reductions: ready when every owner has finished the block's units in its last backward.
  const std::vector<RankRole> roles = rank_roles(plan, world);
  auto stage_of = [&](int r) -> const PlanStage& { return plan.pipelines[roles[r].pipeline].stages[roles[r].stage]; };
  auto slots_of = [&](int r) {
    const PlanPipeline& pipe = plan.pipelines[roles[r].pipeline];
    return activation_slots(roles[r].stage, static_cast<int>(pipe.stages.size()), pipe.micro_batches);
  };
  std::vector<Reduction> reductions = plan_reductions(cost, plan);
  std::vector<double> ready(reductions.size(), 0);
  // The tied embedding: summed after the compute, or, where the runtime sums it early, after the
  // head's backward (at once on a first stage without the head) and its late rows gathered after
  // the compute.
  const int L = cost.model().num_layers;
  const bool tied_early = std::any_of(reductions.begin(), reductions.end(),
                                      [](const Reduction& r) { return r.unit_begin == Reduction::kTiedGather; });
  for (size_t k = 0; k < reductions.size(); k++) {
    const int begin = reductions[k].unit_begin;
    for (int r : reductions[k].owners) {
      const int type = cost.topology().ranks[r].device_type;
      double done = compute_end[r];
      if (begin >= 0) {
        const int unit = std::max(begin, stage_units(stage_of(r).layers, L).begin);
        done = last_backward_start[r] + unit_done_ms(cost, type, stage_of(r), roles[r].samples, slots_of(r), unit);
      } else if (begin == Reduction::kTiedSum && tied_early) {
        done = last_backward_start[r] + unit_done_ms(cost, type, stage_of(r), roles[r].samples, slots_of(r), L + 1);
      }
      ready[k] = std::max(ready[k], std::min(done, compute_end[r]));
    }
  }
  std::vector<size_t> order(reductions.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ready[a] < ready[b]; });
  // A sum occupies its owners, and, when they span several nodes, those nodes' NICs: the sums of
  // different groups whose leaders share a node take turns on its NIC (sharing it at full rate
  // ends the last of them at the same time).
  std::vector<double> channel_free(world, 0), nic_free(cost.topology().nodes.size(), 0);
  for (size_t k : order) {
    const Reduction& red = reductions[k];
    if (red.ms <= 0) continue;
    std::vector<int> nodes;
    for (int r : red.owners) nodes.push_back(cost.topology().ranks[r].node);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (nodes.size() < 2) nodes.clear();  // inside one node: no NIC
    double start = ready[k];
    for (int r : red.owners) start = std::max(start, channel_free[r]);
    for (int n : nodes) start = std::max(start, nic_free[n]);
    for (int r : red.owners) {
      channel_free[r] = start + red.ms;
      sim.comm_ms[r] += red.ms;
    }
    for (int n : nodes) nic_free[n] = start + red.ms;
    record(SimSpan::Kind::reduction, static_cast<int>(k), red.owners, start, start + red.ms);
  }
  sim.idle_ms.assign(world, 0);
  std::vector<double> done(world, 0);  // AdamW done, then each sharded block's all-gather
  for (int r = 0; r < world; r++) {
    if (roles[r].idle()) continue;  // no layers, no update: an idle rank never sets the pace
    const double opt = cost.rank_optimizer_ms(plan, r, stage_of(r).layers);
    sim.busy_ms[r] += opt;
    const double start = std::max(compute_end[r], channel_free[r]);
    done[r] = start + opt;
    if (timeline) record(SimSpan::Kind::optimizer, 0, {r}, start, done[r]);  // no vector built in a search
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
  for (int r = 0; r < world; r++) sim.iteration_ms = std::max(sim.iteration_ms, done[r]);
  for (int r = 0; r < world; r++) sim.idle_ms[r] = std::max(0.0, sim.iteration_ms - sim.busy_ms[r]);
  return sim;
}

}  // namespace eth::planner
