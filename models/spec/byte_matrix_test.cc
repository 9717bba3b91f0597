// The sparse byte matrix against a dense one filled the same way.
#include "models/spec/byte_matrix.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(ByteMatrixTest, AddsInAnyOrderAndKeepsRowsSortedWithoutZeros) {
  ByteMatrix m(4);
  m.add(1, 3, 5.0);
  m.add(1, 0, 2.0);
  m.add(1, 2, 0.0);   // nothing
  m.add(1, 2, -1.0);  // nothing
  m.add(1, 3, 1.5);
  m.add(2, 1, 4.0);
  EXPECT_FALSE(m.consolidated());  // (1, 0) came after (1, 3)
  m.consolidate();
  EXPECT_TRUE(m.consolidated());
  EXPECT_EQ(m.size(), 4);
  EXPECT_EQ(m.entries(), 3u);
  ASSERT_EQ(m.row(1).size(), 2u);
  EXPECT_EQ(m.row(1)[0].to, 0);
  EXPECT_EQ(m.row(1)[0].bytes, 2.0);
  EXPECT_EQ(m.row(1)[1].to, 3);
  EXPECT_EQ(m.row(1)[1].bytes, 6.5);
  EXPECT_EQ(m(1, 3), 6.5);
  EXPECT_EQ(m(1, 2), 0.0);
  EXPECT_EQ(m(0, 0), 0.0);
  EXPECT_TRUE(m.row(0).empty());
  // Receivers 1 and 2 of row 1: none; 0 up to 4: both.
  EXPECT_TRUE(m.row(1, 1, 3).empty());
  EXPECT_EQ(m.row(1, 0, 4).size(), 2u);
  EXPECT_EQ(m.row(1, 3, 4)[0].bytes, 6.5);
}

TEST(ByteMatrixTest, MatchesADenseMatrixAndItsTranspose) {
  constexpr int n = 37;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> rank(0, n - 1);
  std::uniform_real_distribution<double> bytes(0.0, 10.0);
  std::vector<std::vector<double>> dense(n, std::vector<double>(n, 0.0));
  ByteMatrix m(n);
  for (int i = 0; i < 500; ++i) {
    const int a = rank(rng), b = rank(rng);
    const double v = bytes(rng);
    dense[a][b] += v;
    m.add(a, b, v);
  }
  m.consolidate();
  const ByteMatrix t = m.transposed();
  std::size_t nonzero = 0;
  for (int a = 0; a < n; ++a) {
    int last = -1;
    for (const auto& e : m.row(a)) {
      EXPECT_GT(e.to, last);
      last = e.to;
    }
    for (int b = 0; b < n; ++b) {
      EXPECT_EQ(m(a, b), dense[a][b]);
      EXPECT_EQ(t(b, a), dense[a][b]);
      nonzero += dense[a][b] > 0;
    }
  }
  EXPECT_EQ(m.entries(), nonzero);
  EXPECT_EQ(t.transposed(), m);
}

TEST(ByteMatrixTest, PairsAddedOutOfOrderSumInTheOrderTheyCame) {
  // Row 0 gets receivers in descending order, many times over, so pairs wait and are folded in
  // again and again; each pair's bytes must come out as the same additions in the same order
  // (1 + 1e16 + 3 differs from 1e16 + 1 + 3 in doubles), as a dense row accumulates them.
  constexpr int n = 200;
  ByteMatrix m(n);
  std::vector<double> dense(n, 0.0);
  for (int round = 0; round < 5; ++round) {
    for (int to = n - 1; to >= 0; --to) {
      const double v = (round == 2 && to % 3 == 0) ? 1e16 : 1.0 + to % 7;
      m.add(0, to, v);
      dense[to] += v;
    }
  }
  m.consolidate();
  ASSERT_EQ(m.row(0).size(), static_cast<std::size_t>(n));
  for (int to = 0; to < n; ++to) {
    EXPECT_EQ(m.row(0)[to].to, to);
    EXPECT_EQ(m(0, to), dense[to]) << to;
  }
}

TEST(ByteMatrixTest, EmptyMatricesAndRangesHoldNothing) {
  const ByteMatrix none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0);
  EXPECT_TRUE(none.transposed().empty());
  ByteMatrix m(3);
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.entries(), 0u);
  EXPECT_EQ(m.transposed(), m);
  m.add(0, 2, 1.0);
  m.add(0, 1, 1.0);
  m.consolidate();
  EXPECT_TRUE(m.row(0, 2, 1).empty());  // a range that ends before it starts
  EXPECT_TRUE(m.row(0, 0, 1).empty());  // receiver 0 alone
  EXPECT_EQ(m.row(0, 0, 3).size(), 2u);
  ByteMatrix other(3);
  other.add(0, 2, 1.0);
  EXPECT_FALSE(other == m);
  other.add(0, 1, 1.0);
  other.consolidate();
  EXPECT_TRUE(other == m);
  other.add(0, 1, 1.0);
  EXPECT_FALSE(other == m);  // same pairs, other bytes
}

TEST(ByteMatrixTest, AppendedBlocksLandAtTheirOffset) {
  ByteMatrix block(2);
  block.add(0, 1, 3.0);
  block.add(1, 0, 4.0);
  ByteMatrix world(4);
  for (int k = 0; k < 2; ++k) {
    for (int r = 0; r < 2; ++r) world.append(k * 2 + r, block.row(r), k * 2);
  }
  EXPECT_EQ(world(0, 1), 3.0);
  EXPECT_EQ(world(1, 0), 4.0);
  EXPECT_EQ(world(2, 3), 3.0);
  EXPECT_EQ(world(3, 2), 4.0);
  EXPECT_EQ(world(0, 3), 0.0);
  EXPECT_EQ(world.entries(), 4u);
}

}  // namespace
}  // namespace trainsim::models
