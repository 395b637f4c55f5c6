#include "lib/planner/cost_model.hpp"

#include <algorithm>
#include <map>

#include "lib/plan/grad_blocks.hpp"
#include "lib/plan/optimizer_shards.hpp"
#include "lib/plan/schedule.hpp"
#include "lib/planner/attention_memory.hpp"

namespace eth::planner {

CostModel::CostModel(const Topology& topology, const ModelConfig& model, int seq_len, std::vector<Profile> profiles)
    : topology_(topology),
      model_(model),
      seq_len_(seq_len),
      storage_(profiles.empty() ? kernels::ElementType::f32 : profiles.front().path().storage()),
      profiles_(std::move(profiles)) {}

ComputeMs CostModel::compute(const ProfileEntry& e, LayerRange layers) const {
  ComputeMs c{layers.count() * e.layer.forward_ms, layers.count() * e.layer.backward_ms};
  if (layers.begin == 0) {
    c.forward += e.embedding.forward_ms;
    c.backward += e.embedding.backward_ms;
  }
  if (layers.end == model_.num_layers) {
    c.forward += e.head.forward_ms;
    c.backward += e.head.backward_ms;
  }
  return c;
}

MemoryBytes CostModel::memory(LayerRange layers, int b, int slots, Recompute recompute) const {
  // A 16-bit path's working copies priced as on the twin (fp32 arithmetic), whatever the path's
  // arithmetic: the larger, and what a CPU standing in for the device computes on. The GPU
  // ops' launch workspace (device: host) is left out with the transfers below: tens of MiB that
  // would move every prediction (docs/planner.md, "Cost model").
  const JobMemoryOptions options{planner_attention_path(seq_len_), storage_, false, true, kernels::Arithmetic::fp32};
  MemoryBytes bytes = stage_memory(model_, layers, b, seq_len_, slots, footprint(layers, b, recompute), options);
  // Left out, as before the model was shared: 4 (slots + 1) b T C bytes that would move every
  // predicted memory, and with them plans and their tests (docs/planner.md, "Cost model").
  bytes.transfers = 0;
  return bytes;
}

const Stage::ActivationFootprint& CostModel::footprint(LayerRange layers, int b, Recompute recompute) const {
  // The footprint depends on the layer count, whether the stage ends the model, b and the
  // recomputation (at this model's T and attention path); the searches ask for few such shapes
  // millions of times, and computing one took a third of the planning time.
  const size_t shape = (static_cast<size_t>(layers.count()) * 2 + (layers.end == model_.num_layers)) * 3 +
                       static_cast<size_t>(recompute);
  if (footprints_.size() <= shape) footprints_.resize(shape + 1);
  std::vector<std::optional<Stage::ActivationFootprint>>& by_b = footprints_[shape];
  if (by_b.size() <= static_cast<size_t>(b)) by_b.resize(static_cast<size_t>(b) + 1);
  std::optional<Stage::ActivationFootprint>& f = by_b[static_cast<size_t>(b)];
  if (!f)
    f = Stage::activation_footprint(model_, layers, b, seq_len_, planner_attention_path(seq_len_), storage_, recompute);
  return *f;
}

std::optional<Recompute> CostModel::lightest_recompute(int type, LayerRange layers, int b, int slots,
                                                       double sharded_bytes) const {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (memory_bytes(layers, b, slots, mode) - sharded_bytes <= device_bytes(type)) return mode;
    if (!allow_recompute_) break;
  }
  return std::nullopt;
}

double CostModel::attention_share() const {
  // Per token: the q, k, v projection, then QK^T and PV over the causal half; of the layer's forward.
  const double causal_scores = attention_score_flops(model_, seq_len_) / 2;
  return (attention_projection_flops(model_) + causal_scores) / (layer_matmul_flops(model_) + causal_scores);
}

double CostModel::recompute_ms(const ProfileEntry& e, LayerRange layers, Recompute recompute, int slots) const {
  switch (recompute) {
    case Recompute::none: return 0;
    case Recompute::selective: return layers.count() * e.layer.forward_ms * attention_share();
    case Recompute::full: return slots > 1 ? layers.count() * e.layer.forward_ms : 0;
  }
  return 0;
}

double CostModel::p2p_ms(int from, int to, double bytes) const {
  const RankPlace& a = topology_.ranks[from];
  const RankPlace& b = topology_.ranks[to];
  if (a.node == b.node) {  // device to device: NCCL's send/receive, or shared memory on CPUs
    const Link& link = topology_.nodes[a.node].link;
    return link.latency_us * 1e-3 + bytes / (link.bandwidth_gbs * 1e6);
  }
  // Across nodes MPI carries them; GPU ranks stage them through pinned host mirrors (the MPI is
  // not CUDA-aware, lib/runtime/stage_transfers.hpp): a copy to the host at the sender, one back
  // at the receiver, each over its host link.
  const Link& net = topology_.network;
  return net.latency_us * 1e-3 + bytes / (net.bandwidth_gbs * 1e6) + host_copy_ms(a.node, bytes) +
         host_copy_ms(b.node, bytes);
}

double CostModel::host_copy_ms(int node, double bytes) const {
  const Link& link = topology_.nodes[node].link;
  if (link.kind == "shared-memory") return 0;  // CPU ranks: their buffers are host memory
  // A PCIe node's link is its devices' host link; NVLink machines reach the host over PCIe 4 x16.
  constexpr double kPcie4Gbs = 25;
  return bytes / ((link.kind == "pcie" ? link.bandwidth_gbs : kPcie4Gbs) * 1e6);
}

double CostModel::boundary_ms(const PlanStage& from, const PlanStage& to, int micro_batch) const {
  const double per_sample = double(kernels::element_bytes(storage_)) * seq_len_ * model_.channels;
  auto share = [micro_batch](const PlanStage& s, size_t i) { return s.split.empty() ? micro_batch : s.split[i]; };
  double worst = 0;
  int a0 = 0;
  for (size_t i = 0; i < from.ranks.size(); i++) {
    const int a1 = a0 + share(from, i);
    double sender = 0;
    int b0 = 0;
    for (size_t j = 0; j < to.ranks.size(); j++) {
      const int b1 = b0 + share(to, j);
      const int overlap = std::min(a1, b1) - std::max(a0, b0);
      if (overlap > 0) sender += p2p_ms(from.ranks[i], to.ranks[j], overlap * per_sample);
      b0 = b1;
    }
    worst = std::max(worst, sender);
    a0 = a1;
  }
  return worst;
}

double CostModel::allreduce_ms(const std::vector<int>& owners, double bytes) const {
  if (owners.size() < 2 || bytes <= 0) return 0;
  std::map<int, int> per_node;
  for (int r : owners) per_node[topology_.ranks[r].node]++;
  auto ring = [bytes](int n, const Link& l) {
    return n < 2 ? 0.0 : 2.0 * (n - 1) / n * bytes / (l.bandwidth_gbs * 1e6) + 2.0 * (n - 1) * l.latency_us * 1e-3;
  };
  if (per_node.size() == 1) return ring(per_node.begin()->second, topology_.nodes[per_node.begin()->first].link);
  double local = 0;  // reduce to the node's leader, later broadcast from it: bytes once each way
  for (const auto& [node, count] : per_node) {
    const Link& l = topology_.nodes[node].link;
    if (count > 1) local = std::max(local, bytes / (l.bandwidth_gbs * 1e6) + l.latency_us * 1e-3);
  }
  return 2 * local + ring(static_cast<int>(per_node.size()), topology_.network);
}

double CostModel::sharded_collective_ms(const std::vector<int>& owners, double bytes) const {
  const int k = static_cast<int>(owners.size());
  if (k < 2 || bytes <= 0) return 0;
  std::map<int, int> per_node;
  for (int r : owners) per_node[topology_.ranks[r].node]++;
  const double moved = double(k - 1) / k * bytes;
  if (per_node.size() == 1) {
    const Link& l = topology_.nodes[per_node.begin()->first].link;
    return moved / (l.bandwidth_gbs * 1e6) + (k - 1) * l.latency_us * 1e-3;
  }
  int busiest = 0;  // owners behind one NIC
  for (const auto& [node, count] : per_node) busiest = std::max(busiest, count);
  const Link& net = topology_.network;
  return busiest * moved / (net.bandwidth_gbs * 1e6) + (k - 1) * net.latency_us * 1e-3;
}

double CostModel::optimizer_ms(int type, double params) const {
  return profiles_[type].optimizer_ms_per_mparam * params * 1e-6;
}

double CostModel::rank_optimizer_ms(const Plan& plan, int rank, LayerRange layers) const {
  const bool sharded = shard_optimizer_ || !plan.sharded_blocks.empty();
  const double floats = sharded ? double(moment_floats(model_, plan, rank, shard_optimizer_)) : param_floats(layers);
  return optimizer_ms(topology_.ranks[rank].device_type, floats);
}

ComputeMs rank_compute(const CostModel& cost, const PlanPipeline& pipe, int stage, int index_in_stage) {
  const PlanStage& s = pipe.stages[stage];
  const int b = s.split.empty() ? pipe.micro_batch : s.split[index_in_stage];
  const ProfileEntry e = cost.profile(cost.topology().ranks[s.ranks[index_in_stage]].device_type).at(b);
  ComputeMs c = cost.compute(e, s.layers);
  const int slots = activation_slots(stage, static_cast<int>(pipe.stages.size()), pipe.micro_batches);
  c.backward += cost.recompute_ms(e, s.layers, s.recompute, slots);
  return c;
}

std::vector<Reduction> plan_reductions(const CostModel& cost, const Plan& plan) {
  const ModelConfig& m = cost.model();
  // A unit's floats (ParamLayout::unit_size): tied, wte is reduced as the tied group, apart.
  const double tied_wte = m.tied_head ? double(head_params(m)) : 0.0;
  auto unit_floats = [&](int u) {
    if (u == 0) return double(embedding_params(m)) - tied_wte;
    if (u == m.num_layers + 1) return double(final_norm_params(m) + head_params(m)) - tied_wte;
    return double(layer_params(m));
  };
  std::vector<Reduction> out;
  const std::vector<GradBlock> blocks = derive_grad_blocks(plan, m.num_layers);
  const std::vector<bool> sharded = sharded_block_flags(plan, blocks, cost.shard_optimizer());
  for (size_t b = 0; b < blocks.size(); b++) {
    const GradBlock& block = blocks[b];
    double floats = 0;
    for (int u = block.unit_begin; u < block.unit_end; u++) floats += unit_floats(u);
    if (sharded[b]) {
      const double ms = cost.sharded_collective_ms(block.owners, 4 * floats);
      out.push_back({block.unit_begin, block.unit_end, block.owners, ms, ms});
    } else {
      out.push_back({block.unit_begin, block.unit_end, block.owners, cost.allreduce_ms(block.owners, 4 * floats)});
    }
  }
  if (!m.tied_head) return out;  // an untied wte and head are reduced in units 0 and L+1
  const double C = m.channels;
  const std::vector<int> tied = tied_embedding_group(plan);
  out.push_back({Reduction::kTiedSum, Reduction::kTiedSum, tied, cost.allreduce_ms(tied, 4.0 * m.padded_vocab_size * C)});
  if (tied_sum_starts_early(plan, m, cost.seq_len())) {
    const double rows = tied_rows_kept_late(plan, cost.seq_len());
    // An all-gather moves half the bytes of an all-reduce of the same buffer.
    out.push_back({Reduction::kTiedGather, Reduction::kTiedGather, tied, cost.allreduce_ms(tied, 4.0 * rows * C) / 2});
  }
  return out;
}

Estimate CostModel::estimate(const Plan& plan) const {
  const int world = topology_.world_size();
  Estimate est;
  est.memory_gb.assign(static_cast<size_t>(world), 0);
  est.memory.assign(static_cast<size_t>(world), {});
  std::vector<double> slack(static_cast<size_t>(world), 0);     // time from a rank's last backward to its pipeline's end
  std::vector<size_t> pipeline_of(static_cast<size_t>(world), 0);
  for (size_t p = 0; p < plan.pipelines.size(); p++) {
    const PlanPipeline& pipe = plan.pipelines[p];
    const int S = static_cast<int>(pipe.stages.size());
    double worst = 0, sum = 0, before = 0;
    for (int s = 0; s < S; s++) {
      const PlanStage& st = pipe.stages[s];
      ComputeMs stage{};
      for (size_t i = 0; i < st.ranks.size(); i++) {
        const ComputeMs c = rank_compute(*this, pipe, s, static_cast<int>(i));
        stage = {std::max(stage.forward, c.forward), std::max(stage.backward, c.backward)};
        const int b = st.split.empty() ? pipe.micro_batch : st.split[i];
        MemoryBytes bytes = memory(st.layers, b, activation_slots(s, S, pipe.micro_batches), st.recompute);
        if (shard_optimizer_ || !plan.sharded_blocks.empty())
          bytes.optimizer = rank_optimizer_bytes(model_, plan, st.ranks[i], shard_optimizer_);
        est.memory[st.ranks[i]] = bytes;
        est.memory_gb[st.ranks[i]] = bytes.total() * 1e-9;
        slack[st.ranks[i]] = before;
        pipeline_of[st.ranks[i]] = p;
      }
      const double link = s + 1 < S ? 2 * boundary_ms(st, pipe.stages[s + 1], pipe.micro_batch) : 0;
      worst = std::max(worst, stage.total());
      sum += stage.total() + link;
      before += stage.backward + link / 2;
    }
    est.pipeline_ms.push_back((pipe.micro_batches - 1) * worst + sum);
  }
  const double slowest = *std::max_element(est.pipeline_ms.begin(), est.pipeline_ms.end());
  std::vector<double> reduce(static_cast<size_t>(world), 0), tied_sum(static_cast<size_t>(world), 0),
      gather(static_cast<size_t>(world), 0);
  bool tied_early = false;
  for (const Reduction& r : plan_reductions(*this, plan)) {
    tied_early = tied_early || r.unit_begin == Reduction::kTiedGather;
    for (int rank : r.owners) {
      reduce[rank] += r.ms;
      gather[rank] += r.gather_ms;
      if (r.unit_begin == Reduction::kTiedSum) tied_sum[rank] = r.ms;
    }
  }
  const std::vector<RankRole> roles = rank_roles(plan, world);
  for (int r = 0; r < world; r++) {
    if (roles[r].idle()) continue;  // an idle rank waits for nothing and updates nothing
    double hidden = slack[r] + slowest - est.pipeline_ms[pipeline_of[r]];
    if (tied_early && tied_sum[r] > 0) {
      // The tied sum starts after the head's backward (at once on a first stage without the
      // head): the rest of the rank's last backward hides up to its length.
      const PlanPipeline& pipe = plan.pipelines[roles[r].pipeline];
      const PlanStage& st = pipe.stages[roles[r].stage];
      const int type = topology_.ranks[r].device_type;
      const double head = st.layers.end == model_.num_layers ? profiles_[type].at(roles[r].samples).head.backward_ms : 0;
      hidden += std::min(tied_sum[r], rank_compute(*this, pipe, roles[r].stage, roles[r].index_in_stage).backward - head);
    }
    est.reduction_ms = std::max(est.reduction_ms, reduce[r] - hidden);
    const PlanStage& st = plan.pipelines[roles[r].pipeline].stages[roles[r].stage];
    est.optimizer_ms = std::max(est.optimizer_ms, rank_optimizer_ms(plan, r, st.layers) + gather[r]);
  }
  est.iteration_ms = slowest + est.reduction_ms + est.optimizer_ms;
  return est;
}

}  // namespace eth::planner
