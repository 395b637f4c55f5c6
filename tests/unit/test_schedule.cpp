// The 1F1B schedule without MPI: order, counts, memory bound, and that a whole pipeline's
// lists can be executed without deadlock (every receive has its send earlier in a feasible
// global order).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "lib/schedule.hpp"

namespace eth::test {
namespace {

PlanPipeline pipeline(int stages, int micro_batches) {
  PlanPipeline p{1, micro_batches, {}};
  for (int s = 0; s < stages; s++) p.stages.push_back({{s}, {s, s + 1}, {}});
  return p;
}

std::string compact(const std::vector<Action>& actions) {
  std::string out;
  for (const Action& a : actions) {
    if (a.kind != ActionKind::forward && a.kind != ActionKind::backward) continue;
    out += a.kind == ActionKind::forward ? 'F' : 'B';
    out += std::to_string(a.micro_batch);
    out += ' ';
  }
  return out;
}

TEST(Schedule, OneFOneBOrder) {
  const PlanPipeline p = pipeline(4, 6);
  EXPECT_EQ(compact(one_f_one_b(p, 0)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_EQ(compact(one_f_one_b(p, 2)), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 ");
  EXPECT_EQ(compact(one_f_one_b(p, 3)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  EXPECT_EQ(compact(one_f_one_b(pipeline(3, 1), 0)), "F0 B0 ");  // fewer micro-batches than stages
}

TEST(Schedule, CommunicationAndStepEnd) {
  const std::vector<Action> middle = one_f_one_b(pipeline(3, 2), 1);
  ASSERT_GE(middle.size(), 3u);
  EXPECT_EQ(middle[0].kind, ActionKind::recv_activation);
  EXPECT_EQ(middle[1].kind, ActionKind::forward);
  EXPECT_EQ(middle[2].kind, ActionKind::send_activation);
  EXPECT_EQ(middle[middle.size() - 2].kind, ActionKind::reduce_grads);
  EXPECT_EQ(middle.back().kind, ActionKind::optimizer_step);
  const std::vector<Action> single = one_f_one_b(pipeline(1, 3), 0);
  for (const Action& a : single) {
    EXPECT_NE(a.kind, ActionKind::recv_activation);
    EXPECT_NE(a.kind, ActionKind::send_grad);
  }
}

// Executes every stage's list in lock-step rounds: an action runs once what it needs was sent.
// Checks that it finishes (no deadlock), that each micro-batch is forwarded then backwarded once
// per stage, and that no stage ever holds more activations than activation_slots.
TEST(Schedule, PipelinesRunToCompletionWithinTheirSlots) {
  for (int S = 1; S <= 6; S++) {
    for (int m = 1; m <= 9; m++) {
      SCOPED_TRACE("S=" + std::to_string(S) + " m=" + std::to_string(m));
      const PlanPipeline p = pipeline(S, m);
      std::vector<std::vector<Action>> lists;
      for (int s = 0; s < S; s++) lists.push_back(one_f_one_b(p, s));
      std::vector<size_t> next(S, 0);
      std::set<std::tuple<int, int, int>> sent;  // (to stage, kind: 0 activation 1 grad, micro-batch)
      std::vector<int> in_flight(S, 0), max_in_flight(S, 0), forwards(S, 0), backwards(S, 0);
      bool progress = true;
      while (progress) {
        progress = false;
        for (int s = 0; s < S; s++) {
          while (next[s] < lists[s].size()) {
            const Action a = lists[s][next[s]];
            if (a.kind == ActionKind::recv_activation && !sent.count({s, 0, a.micro_batch})) break;
            if (a.kind == ActionKind::recv_grad && !sent.count({s, 1, a.micro_batch})) break;
            if (a.kind == ActionKind::send_activation) sent.insert({s + 1, 0, a.micro_batch});
            if (a.kind == ActionKind::send_grad) sent.insert({s - 1, 1, a.micro_batch});
            if (a.kind == ActionKind::forward) {
              EXPECT_EQ(a.micro_batch, forwards[s]++);
              max_in_flight[s] = std::max(max_in_flight[s], ++in_flight[s]);
            }
            if (a.kind == ActionKind::backward) {
              EXPECT_EQ(a.micro_batch, backwards[s]++);
              in_flight[s]--;
            }
            next[s]++;
            progress = true;
          }
        }
      }
      for (int s = 0; s < S; s++) {
        EXPECT_EQ(next[s], lists[s].size()) << "stage " << s << " is stuck: deadlock";
        EXPECT_EQ(forwards[s], m);
        EXPECT_EQ(backwards[s], m);
        EXPECT_EQ(max_in_flight[s], activation_slots(s, S, m)) << "stage " << s;
      }
    }
  }
}

}  // namespace
}  // namespace eth::test
