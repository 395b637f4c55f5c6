// MPI calls past MPI's int count (mpi_topology/mpi_counts.hpp), under real MPI (4 or 8 ranks).
// Counts over 2^31 need 8 GiB buffers, so every test lowers the limit to 1000 elements and
// moves a few limits plus a remainder: the pieced path that large counts take in a job. Data is
// integer-valued and differs by rank and element, so sums are exact in any order and a piece
// landing in the wrong place shows; outputs are poisoned (NaN) first.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "mpi_topology/host_messages.hpp"
#include "mpi_topology/mpi_counts.hpp"
#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/process_group.hpp"
#include "mpi_topology/shard_collectives.hpp"
#include "tests/mpi/world_ranks.hpp"

namespace eth::test {
namespace {

constexpr size_t kLimit = 1000;

// Element i of rank r's data: exact in float, and distinct for the elements of one rank.
float value(int r, size_t i) { return static_cast<float>((r + 1) * 100000 + static_cast<int>(i % 90000)); }

std::vector<float> values_of(int r, size_t first, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = value(r, first + i);
  return v;
}

// Exact equality, reporting the first element that differs.
template <class T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++)
    ASSERT_EQ(got[i], want[i]) << what << ": first difference at element " << i << " of " << got.size();
}

// Shard sizes around the limit: several limits plus a remainder, exactly one limit, empty, one.
std::vector<size_t> shard_counts(int members) {
  const std::vector<size_t> sizes = {3 * kLimit + 17, kLimit, 0, 2 * kLimit + 1, kLimit - 1, 1, 4 * kLimit, 517};
  return {sizes.begin(), sizes.begin() + members};
}

ProcessGroup everyone(int tag) {
  std::vector<int> all(static_cast<size_t>(world_size())), node_of_rank(all.size(), 0);
  std::iota(all.begin(), all.end(), 0);
  return ProcessGroup::create(all, node_of_rank, tag);
}

TEST(MpiCounts, PiecesAreAtMostTheLimit) {
  const MpiCountLimitForTest limit(kLimit);
  EXPECT_EQ(mpi_count_limit(), kLimit);
  std::vector<float> data(3 * kLimit + 17);
  std::vector<MPI_Request> requests;
  large_ibcast(data.data(), data.size(), MPI_FLOAT, 0, world_comm(), requests);
  EXPECT_EQ(requests.size(), 4u) << "three full pieces and a remainder";
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

TEST(MpiCounts, PointToPointArrivesWhole) {
  const MpiCountLimitForTest limit(kLimit);
  const int me = world_rank(), n = world_size();
  const size_t count = 3 * kLimit + 17;
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  std::vector<float> received(count, std::nanf(""));
  std::vector<MPI_Request> requests;
  large_irecv(received.data(), count, MPI_FLOAT, from, 3, world_comm(), requests);
  const std::vector<float> mine = values_of(me, 0, count);
  send_floats(mine.data(), count, to, 3, "send around the ring");
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  expect_same(received, values_of(from, 0, count), "received from the previous rank");
}

// 64-bit elements (a checkpoint's checksums): the pieces step by the type's extent, not 4 bytes.
TEST(MpiCounts, AllreduceEqualsTheUnpiecedOne) {
  const size_t count = 2 * kLimit + 333;
  std::vector<uint64_t> sums(count);
  for (size_t i = 0; i < count; i++) sums[i] = (uint64_t{1} << 40) * (world_rank() + 1) + i * i;
  std::vector<uint64_t> want = sums;
  MPI_Allreduce(MPI_IN_PLACE, want.data(), static_cast<int>(count), MPI_UINT64_T, MPI_SUM, world_comm());
  const MpiCountLimitForTest limit(kLimit);
  std::vector<MPI_Request> requests;
  large_iallreduce(sums.data(), count, MPI_UINT64_T, MPI_SUM, world_comm(), requests);
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  expect_same(sums, want, "pieced all-reduce");
}

TEST(MpiCounts, ShardCollectivesMatchTheWholeSlice) {
  const ProcessGroup group = everyone(31);
  const int me = world_rank();
  const std::vector<size_t> counts = shard_counts(group.size());
  std::vector<size_t> first(counts.size(), 0);
  std::exclusive_scan(counts.begin(), counts.end(), first.begin(), size_t{0});
  const size_t total = first.back() + counts.back(), mine = counts[static_cast<size_t>(me)];
  const size_t my_first = first[static_cast<size_t>(me)];
  const MpiCountLimitForTest limit(kLimit);

  // Sums to the owners: this rank's shard equals the unpieced all-reduce's.
  std::vector<float> slice = values_of(me, 0, total), want = slice;
  MPI_Allreduce(MPI_IN_PLACE, want.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM, world_comm());
  PendingShards::reduce_to_owners(group, slice.data(), counts).wait("sums to the owners");
  expect_same(std::vector<float>(slice.begin() + my_first, slice.begin() + my_first + mine),
              std::vector<float>(want.begin() + my_first, want.begin() + my_first + mine), "own shard's sum");

  // All-gather: every shard from its owner.
  std::vector<float> whole(total), gathered(total, std::nanf(""));
  for (int r = 0; r < group.size(); r++) {
    const std::vector<float> shard = values_of(r, first[r], counts[r]);
    std::copy(shard.begin(), shard.end(), whole.begin() + first[r]);
  }
  std::copy(whole.begin() + my_first, whole.begin() + my_first + mine, gathered.begin() + my_first);
  PendingShards::all_gather(group, gathered.data(), counts).wait("all-gather");
  expect_same(gathered, whole, "all-gathered slice");

  // Gather to the first member (two in flight at once, as a checkpoint's moments are).
  const std::vector<float> own = values_of(me, my_first, mine);
  std::vector<float> twice = own;
  for (float& x : twice) x *= 2;
  std::vector<float> at_first(total, std::nanf("")), twice_at_first(total, std::nanf(""));
  PendingShards once = PendingShards::gather_to_first(group, own.data(), at_first.data(), counts);
  PendingShards again = PendingShards::gather_to_first(group, twice.data(), twice_at_first.data(), counts);
  once.wait("gather to the first member");
  again.wait("second gather to the first member");
  if (me != 0) return;
  expect_same(at_first, whole, "gathered at the first member");
  for (float& x : whole) x *= 2;
  expect_same(twice_at_first, whole, "second gather at the first member");
}

TEST(MpiCounts, LabelledRowsGatherInMemberOrder) {
  const ProcessGroup group = everyone(32);
  const int me = world_rank(), width = 3;
  const int count = 300 + 400 * me;  // the ids of ranks >= 2 and the rows of all ranks pass the limit
  const MpiCountLimitForTest limit(kLimit);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  std::iota(ids.begin(), ids.end(), 10000 * me);
  // Rows of floats, as the words they travel in (two per float).
  auto words = [](const std::vector<float>& v) {
    std::vector<WireWord> w(v.size() * 2);
    std::memcpy(w.data(), v.data(), v.size() * sizeof(float));
    return w;
  };
  const std::vector<WireWord> rows = words(values_of(me, 0, ids.size() * width));
  std::vector<int32_t> want_ids;
  std::vector<WireWord> want_rows;
  for (int r = 0; r < group.size(); r++) {
    const size_t n = static_cast<size_t>(300 + 400 * r);
    for (size_t i = 0; i < n; i++) want_ids.push_back(10000 * r + static_cast<int32_t>(i));
    const std::vector<WireWord> theirs = words(values_of(r, 0, n * width));
    want_rows.insert(want_rows.end(), theirs.begin(), theirs.end());
  }
  std::vector<WireWord> all_rows(want_rows.size(), 0xffff);
  std::vector<int32_t> all_ids(want_ids.size(), -1);
  gather_labelled_rows(group.comm(), group.members(), rows.data(), ids.data(), count, 2 * width, all_rows, all_ids,
                       "gather of labelled rows");
  expect_same(all_ids, want_ids, "gathered ids");
  expect_same(all_rows, want_rows, "gathered rows");
}

}  // namespace
}  // namespace eth::test
