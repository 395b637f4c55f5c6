#include "lib/plan/schedule.hpp"

#include <algorithm>

namespace eth {

int activation_slots(int stage, int stages, int micro_batches) { return std::min(stages - stage, micro_batches); }

std::vector<Action> one_f_one_b(const PlanPipeline& pipeline, int stage) {
  const int S = static_cast<int>(pipeline.stages.size());
  const int m = pipeline.micro_batches;
  const bool first = stage == 0, last = stage == S - 1;
  const int slots = activation_slots(stage, S, m);
  auto earlier = [](int i) { return i >= 0 ? i : -1; };
  std::vector<Action> actions;
  auto forward = [&](int i) {
    if (!first) actions.push_back({ActionKind::recv_activation, i, earlier(i - slots)});
    actions.push_back({ActionKind::forward, i, -1, last ? -1 : earlier(i - slots)});
    if (!last) actions.push_back({ActionKind::send_activation, i});
  };
  auto backward = [&](int i) {
    if (!last) actions.push_back({ActionKind::recv_grad, i, earlier(i - 1)});
    actions.push_back({ActionKind::backward, i});
    if (!first) actions.push_back({ActionKind::send_grad, i, -1, earlier(i - slots)});
  };
  const int warmup = std::min(S - stage - 1, m);
  for (int i = 0; i < warmup; i++) forward(i);
  for (int i = 0; i < m - warmup; i++) {
    forward(warmup + i);
    backward(i);
  }
  for (int i = m - warmup; i < m; i++) backward(i);
  actions.push_back({ActionKind::reduce_grads});
  actions.push_back({ActionKind::optimizer_step});
  return actions;
}

std::string to_string(ActionKind kind) {
  switch (kind) {
    case ActionKind::recv_activation: return "recv_activation";
    case ActionKind::forward: return "forward";
    case ActionKind::send_activation: return "send_activation";
    case ActionKind::recv_grad: return "recv_grad";
    case ActionKind::backward: return "backward";
    case ActionKind::send_grad: return "send_grad";
    case ActionKind::reduce_grads: return "reduce_grads";
    case ActionKind::optimizer_step: return "optimizer_step";
  }
  return "?";
}

}  // namespace eth
