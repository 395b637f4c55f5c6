// Communicators, hierarchical reduction and m:n redistribution under real MPI (4 or 8 ranks).
// Several "nodes" on one host come from the topology's node list.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "lib/base/random.hpp"
#include "lib/job/topology_discovery.hpp"
#include "lib/runtime/parallel_context.hpp"
#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "tests/mpi/world_ranks.hpp"

namespace eth::test {
namespace {

// `nodes` nodes of equal size (the last takes the rest) of one CPU device type.
Topology topology_with_nodes(int world, int nodes) {
  Topology t;
  t.source = "test-topology";
  t.device_types = {{"cpu", 4, 0.1, 0, 0, 20}};
  const int per_node = world / nodes;
  for (int n = 0; n < nodes; n++) {
    Node node{"n" + std::to_string(n), {"shared-memory", 10, 1}, {}, n * per_node};
    const int count = n == nodes - 1 ? world - n * per_node : per_node;
    for (int d = 0; d < count; d++) {
      node.devices.push_back(0);
      t.ranks.push_back({n, d, 0});
    }
    t.nodes.push_back(node);
  }
  return t;
}

// The world ranks behind a group's communicator, in its rank order.
std::vector<int> world_ranks_of(const ProcessGroup& g) {
  MPI_Group world_group, group;
  MPI_Comm_group(world_comm(), &world_group);
  MPI_Comm_group(g.comm(), &group);
  std::vector<int> local(static_cast<size_t>(g.size())), global(local.size());
  std::iota(local.begin(), local.end(), 0);
  MPI_Group_translate_ranks(group, g.size(), local.data(), world_group, global.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  return global;
}

void expect_group(const ProcessGroup& g, const std::vector<int>& members, const char* what) {
  const int me = world_rank();
  const bool member = std::find(members.begin(), members.end(), me) != members.end();
  ASSERT_EQ(g.is_member(), member) << what;
  if (!member) return;
  EXPECT_EQ(g.members(), members) << what;
  EXPECT_EQ(world_ranks_of(g), members) << what << ": the communicator holds other ranks";
}

PlanStage stage(std::vector<int> ranks, int begin, int end, std::vector<int> split = {}) {
  return {std::move(ranks), {begin, end}, std::move(split)};
}

// Plans for 4 and 8 ranks with pipelines of different depths and a split stage.
Plan plan_for(int world) {
  Plan p;
  p.source = "test-plan";
  if (world == 4) {
    p.pipelines = {{2, 2, {stage({0}, 0, 4)}}, {4, 1, {stage({1, 2}, 0, 2, {3, 1}), stage({3}, 2, 4)}}};
    p.global_batch = 8;
  } else {
    p.pipelines = {{2, 2, {stage({6}, 0, 4)}},
                   {2, 2, {stage({0}, 0, 1), stage({1}, 1, 3), stage({7}, 3, 4)}},
                   {4, 1, {stage({2, 5}, 0, 3, {1, 3}), stage({3, 4}, 3, 4, {2, 2})}}};
    p.global_batch = 12;
  }
  return p;
}

ModelConfig four_layers() {
  return gpt2_config("four layers", 97, 128, 16, 4, 2, 8);
}

TEST(Communicators, MembershipFollowsThePlan) {
  const int world = world_size();
  ASSERT_TRUE(world == 4 || world == 8) << "run with 4 or 8 ranks";
  const Topology topo = topology_with_nodes(world, 2);
  const Plan plan = plan_for(world);
  const ParallelContext ctx = build_parallel_context(topo, plan, four_layers(), precision_paths(topo, kernels::Precision::fp32));
  const int me = world_rank();

  // The plan's place for this rank: a stage of its pipeline that lists it.
  const std::vector<int>& stage_ranks = plan.pipelines[ctx.role.pipeline].stages[ctx.role.stage].ranks;
  EXPECT_NE(std::find(stage_ranks.begin(), stage_ranks.end(), me), stage_ranks.end());
  EXPECT_EQ(ctx.stages, static_cast<int>(plan.pipelines[ctx.role.pipeline].stages.size()));

  ASSERT_EQ(ctx.block_groups.size(), ctx.blocks.size());
  for (size_t b = 0; b < ctx.blocks.size(); b++) expect_group(ctx.block_groups[b], ctx.blocks[b].owners, "block");
  expect_group(ctx.tied, tied_embedding_group(plan), "tied embedding");
  std::vector<int> everyone(static_cast<size_t>(world));  // no rank of these plans is idle
  std::iota(everyone.begin(), everyone.end(), 0);
  expect_group(ctx.flat, everyone, "flat");
  if (world == 8) {  // spot checks against the plan written by hand
    ASSERT_EQ(ctx.blocks.size(), 3u);
    EXPECT_EQ(ctx.blocks[0].owners, (std::vector<int>{0, 2, 5, 6}));  // embedding + layer 0
    EXPECT_EQ(ctx.blocks[1].owners, (std::vector<int>{1, 2, 5, 6}));  // layers 1, 2
    EXPECT_EQ(ctx.blocks[2].owners, (std::vector<int>{3, 4, 6, 7}));  // layer 3 + final norm
    EXPECT_EQ(tied_embedding_group(plan), (std::vector<int>{0, 2, 3, 4, 5, 6, 7}));
  }
}

// Integer-valued floats sum exactly in any order, so the hierarchical sum must equal MPI's
// bit for bit; random reals may differ by rounding (at most a few ulps over <= 8 terms).
void check_reduction(const ProcessGroup& g, MPI_Comm flat, uint64_t seed) {
  const size_t n = 1000;
  std::vector<float> ints(n), reals(n);
  for (size_t i = 0; i < n; i++) {
    ints[i] = static_cast<float>(static_cast<int>(uniform_at(seed + world_rank(), i) * 2000) - 1000);
    reals[i] = static_cast<float>(normal_at(seed + 100 + world_rank(), i));
  }
  std::vector<float> ints_ref = ints, reals_ref = reals;
  MPI_Allreduce(MPI_IN_PLACE, ints_ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, flat);
  MPI_Allreduce(MPI_IN_PLACE, reals_ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, flat);
  // In chunks of 300 floats, the last one shorter, so that the phases of different chunks
  // overlap; waited for, and polled.
  g.start_allreduce_sum(ints.data(), n, 300).wait();
  PendingReduce pending = g.start_allreduce_sum(reals.data(), n, 300);
  while (!pending.test()) {
  }
  EXPECT_EQ(ints, ints_ref);
  double err = 0, norm = 0;
  for (size_t i = 0; i < n; i++) {
    err += (reals[i] - reals_ref[i]) * (reals[i] - reals_ref[i]);
    norm += reals_ref[i] * reals_ref[i];
  }
  EXPECT_LE(std::sqrt(err / norm), 1e-6) << "hierarchical and flat float sums differ beyond rounding";
}

TEST(Communicators, HierarchicalSumEqualsAllreduce) {
  const int world = world_size();
  for (int nodes : {2, 4}) {
    SCOPED_TRACE(std::to_string(nodes) + " nodes");
    const Topology topo = topology_with_nodes(world, nodes);
    std::vector<int> node_of_rank;
    for (const RankPlace& p : topo.ranks) node_of_rank.push_back(p.node);
    std::vector<int> all(static_cast<size_t>(world));
    std::iota(all.begin(), all.end(), 0);
    const ProcessGroup whole = ProcessGroup::create(all, node_of_rank, 1000 + nodes);
    EXPECT_EQ(whole.nodes(), nodes);
    check_reduction(whole, world_comm(), 7 * nodes);

    // An uneven subset, spread over the nodes unequally.
    const std::vector<int> subset = world == 4 ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1, 3, 7};
    const ProcessGroup part = ProcessGroup::create(subset, node_of_rank, 2000 + nodes);
    const bool in = std::find(subset.begin(), subset.end(), world_rank()) != subset.end();
    MPI_Comm flat;
    MPI_Comm_split(world_comm(), in ? 0 : MPI_UNDEFINED, world_rank(), &flat);
    if (in) {
      check_reduction(part, flat, 11 * nodes);
      MPI_Comm_free(&flat);
    }
  }
}

void check_row_exchange(size_t row_elems) {
  const int world = world_size();
  // Senders split 6 rows 3:1:2, receivers 2:4 (4 ranks); with 8 ranks, 4 senders and 4 receivers.
  std::vector<int> from = {0, 1}, to = {2, 3};
  std::vector<int> from_rows = {4, 2}, to_rows = {1, 5};
  if (world == 8) {
    from = {0, 1, 2, 3};
    to = {4, 5, 6, 7};
    from_rows = {3, 1, 2, 4};
    to_rows = {2, 2, 5, 1};
  }
  const RowExchange exchange(from, from_rows, to, to_rows);
  auto value = [](int row, size_t e) { return static_cast<float>(row * 1000 + static_cast<int>(e)); };
  const int me = world_rank();
  std::vector<MPI_Request> requests;
  std::vector<float> buffer;
  int first_row = 0;
  if (auto it = std::find(from.begin(), from.end(), me); it != from.end()) {
    const size_t i = static_cast<size_t>(it - from.begin());
    first_row = std::accumulate(from_rows.begin(), from_rows.begin() + static_cast<long>(i), 0);
    buffer.resize(static_cast<size_t>(from_rows[i]) * row_elems);
    for (int r = 0; r < from_rows[i]; r++)
      for (size_t e = 0; e < row_elems; e++) buffer[r * row_elems + e] = value(first_row + r, e);
    // Rows of floats travel as two words each (wire_word.hpp).
    exchange.post_sends(me, reinterpret_cast<const WireWord*>(buffer.data()), 2 * row_elems, 5, world_comm(), requests);
  }
  std::vector<float> received;
  int to_first = 0, to_count = 0;
  if (auto it = std::find(to.begin(), to.end(), me); it != to.end()) {
    const size_t j = static_cast<size_t>(it - to.begin());
    to_first = std::accumulate(to_rows.begin(), to_rows.begin() + static_cast<long>(j), 0);
    to_count = to_rows[j];
    received.assign(static_cast<size_t>(to_count) * row_elems, std::nanf(""));
    exchange.post_recvs(me, reinterpret_cast<WireWord*>(received.data()), 2 * row_elems, 5, world_comm(), requests);
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  for (int r = 0; r < to_count; r++)
    for (size_t e = 0; e < row_elems; e++)
      ASSERT_EQ(received[r * row_elems + e], value(to_first + r, e)) << "row " << to_first + r << " element " << e;
}

TEST(RowExchange, EverySampleReachesItsRank) { check_row_exchange(7); }

// Messages over MPI's int count go in pieces (mpi_counts.hpp): with the limit lowered to 1000
// floats, messages of 1 to 5 rows of 701 floats take 1 to 4 pieces, the last one shorter.
TEST(RowExchange, MessagesOverTheCountLimitArriveWhole) {
  const MpiCountLimitForTest limit(1000);
  check_row_exchange(701);
}

// eth_topo's library half: what every rank reports becomes a topology the parser accepts and
// from which a job's communicators can be built.
TEST(TopologyDiscovery, WritesATopologyThatLoads) {
  const Topology found = discover_topology({});
  const std::string path = "/tmp/eth_discovered_topology_" + std::to_string(world_size()) + ".yaml";
  if (world_rank() == 0) {
    EXPECT_EQ(found.world_size(), world_size());
    save_topology(found, path);
  }
  MPI_Barrier(world_comm());
  const Topology loaded = load_topology(path);
  EXPECT_EQ(loaded.world_size(), world_size());
  EXPECT_EQ(loaded.nodes.size(), 1u) << "all ranks run on this host";
  EXPECT_GT(loaded.device_of(world_rank()).peak_tflops_fp32, 0);
  Plan plan;
  plan.source = "one-pipeline";
  plan.global_batch = 1;
  PlanStage all_ranks{{}, {0, 4}, std::vector<int>(static_cast<size_t>(world_size()), 1)};
  for (int r = 0; r < world_size(); r++) all_ranks.ranks.push_back(r);
  plan.global_batch = world_size();
  plan.pipelines = {{world_size(), 1, {all_ranks}}};
  const ParallelContext ctx = build_parallel_context(loaded, plan, four_layers(), precision_paths(loaded, kernels::Precision::fp32));
  EXPECT_EQ(ctx.flat.size(), world_size());
  EXPECT_EQ(ctx.stages, 1);
  MPI_Barrier(world_comm());
  if (world_rank() == 0) std::remove(path.c_str());
}

}  // namespace
}  // namespace eth::test
