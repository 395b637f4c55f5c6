// The m:n redistribution plan without MPI: the transfers tile the rows, each lies inside both
// its sender's and its receiver's range, and every sender-receiver overlap is one transfer.
#include <gtest/gtest.h>

#include <numeric>

#include "lib/base/random.hpp"
#include "mpi_topology/row_exchange.hpp"

namespace eth::test {
namespace {

std::vector<int> random_split(int total, int parts, uint64_t seed) {
  std::vector<int> rows(static_cast<size_t>(parts), 1);
  for (int extra = total - parts, i = 0; extra > 0; extra--, i++) rows[static_cast<size_t>(uniform_at(seed, i) * parts)]++;
  return rows;
}

TEST(RowTransfers, ThreeToOneIntoTwoToTwo) {
  const std::vector<RowTransfer> t = plan_row_transfers({3, 1}, {2, 2});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ((std::vector<int>{t[0].from, t[0].to, t[0].row_begin, t[0].rows}), (std::vector<int>{0, 0, 0, 2}));
  EXPECT_EQ((std::vector<int>{t[1].from, t[1].to, t[1].row_begin, t[1].rows}), (std::vector<int>{0, 1, 2, 1}));
  EXPECT_EQ((std::vector<int>{t[2].from, t[2].to, t[2].row_begin, t[2].rows}), (std::vector<int>{1, 1, 3, 1}));
}

TEST(RowTransfers, RandomSplitsTileTheRows) {
  for (uint64_t seed = 1; seed <= 300; seed++) {
    const int total = 1 + static_cast<int>(seed % 17);
    const int m = 1 + static_cast<int>(seed % std::min(total, 5));
    const int n = 1 + static_cast<int>((seed / 5) % std::min(total, 4));
    const std::vector<int> from = random_split(total, m, seed), to = random_split(total, n, seed + 1000);
    const std::vector<RowTransfer> t = plan_row_transfers(from, to);
    SCOPED_TRACE("seed " + std::to_string(seed));
    int row = 0;
    std::vector<int> from_first(from.size()), to_first(to.size());
    std::exclusive_scan(from.begin(), from.end(), from_first.begin(), 0);
    std::exclusive_scan(to.begin(), to.end(), to_first.begin(), 0);
    size_t overlaps = 0;
    for (size_t i = 0; i < from.size(); i++)
      for (size_t j = 0; j < to.size(); j++)
        overlaps += std::max(from_first[i], to_first[j]) < std::min(from_first[i] + from[i], to_first[j] + to[j]);
    EXPECT_EQ(t.size(), overlaps);
    for (const RowTransfer& x : t) {
      EXPECT_EQ(x.row_begin, row);
      EXPECT_GT(x.rows, 0);
      EXPECT_GE(x.row_begin, from_first[x.from]);
      EXPECT_LE(x.row_begin + x.rows, from_first[x.from] + from[x.from]);
      EXPECT_GE(x.row_begin, to_first[x.to]);
      EXPECT_LE(x.row_begin + x.rows, to_first[x.to] + to[x.to]);
      row += x.rows;
    }
    EXPECT_EQ(row, total);
  }
}

}  // namespace
}  // namespace eth::test
