// The 1F1B schedule without MPI: order, counts, memory bound, and that a whole pipeline's
// lists can be executed without deadlock (every receive has its send earlier in a feasible
// global order).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "lib/plan/schedule.hpp"

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

// The buffer rules carried by the list: each receive is posted only after the backward that
// frees its buffer (and that backward comes earlier in the same list), and each forward or
// gradient send overwrites a slot only after the previous send from that slot.
TEST(Schedule, BufferRulesFreeEachBufferBeforeItsReuse) {
  for (int S = 1; S <= 6; S++) {
    for (int m = 1; m <= 9; m++) {
      const PlanPipeline p = pipeline(S, m);
      for (int s = 0; s < S; s++) {
        SCOPED_TRACE("S=" + std::to_string(S) + " m=" + std::to_string(m) + " stage=" + std::to_string(s));
        const int slots = activation_slots(s, S, m);
        std::set<int> backwards_done, activations_sent, grads_sent;
        std::map<int, int> slot_holder;    // slot -> micro-batch whose activations it holds
        std::map<int, int> last_act_send;  // slot -> last micro-batch sent from it
        std::map<int, int> last_grad_send;
        int grad_buffer_holder = -1;       // the micro-batch whose gradient the one buffer holds
        for (const Action& a : one_f_one_b(p, s)) {
          const int i = a.micro_batch, slot = i < 0 ? -1 : i % slots;
          const int k = a.posted_after_backward;
          switch (a.kind) {
            case ActionKind::recv_activation:
              EXPECT_TRUE(k < 0 || backwards_done.count(k)) << "recv " << i << " after backward " << k;
              // Once backward k has completed, the slot holds nothing that is still needed.
              if (slot_holder.count(slot)) EXPECT_EQ(slot_holder[slot], k) << "recv " << i;
              else EXPECT_EQ(k, -1) << "recv " << i;
              slot_holder[slot] = i;
              break;
            case ActionKind::recv_grad:
              EXPECT_TRUE(k < 0 || backwards_done.count(k)) << "recv grad " << i;
              EXPECT_EQ(k, grad_buffer_holder) << "recv grad " << i;
              grad_buffer_holder = i;
              break;
            case ActionKind::forward:
              if (s == 0) slot_holder[slot] = i;
              if (s + 1 < S) {
                const int previous = last_act_send.count(slot) ? last_act_send[slot] : -1;
                EXPECT_EQ(a.after_send_of, previous) << "forward " << i;
                EXPECT_TRUE(a.after_send_of < 0 || activations_sent.count(a.after_send_of));
              } else {
                EXPECT_EQ(a.after_send_of, -1);
              }
              break;
            case ActionKind::send_activation:
              activations_sent.insert(i);
              last_act_send[slot] = i;
              break;
            case ActionKind::backward:
              EXPECT_EQ(slot_holder[slot], i);
              backwards_done.insert(i);
              break;
            case ActionKind::send_grad: {
              const int previous = last_grad_send.count(slot) ? last_grad_send[slot] : -1;
              EXPECT_EQ(a.after_send_of, previous) << "send grad " << i;
              grads_sent.insert(i);
              last_grad_send[slot] = i;
              break;
            }
            default:
              break;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace eth::test
