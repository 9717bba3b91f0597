// Access distributions against closed forms and brute-force samples.
#include "models/spec/access_distribution.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <unordered_set>

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(AccessDistributionTest, ZipfMassesSumToOneAndMatchDirectSums) {
  for (const double alpha : {0.5, 0.9, 1.0, 1.1, 1.3}) {
    for (const double rows : {10.0, 1e5, 4e7}) {
      const auto d = AccessDistribution::zipf(rows, alpha);
      EXPECT_NEAR(d.mass(1, rows), 1.0, 1e-9) << alpha << " " << rows;
    }
    // Against the sum of k^-alpha computed directly.
    const double rows = 1e5;
    double total = 0.0, head = 0.0;
    for (int k = 1; k <= rows; ++k) {
      total += std::pow(k, -alpha);
      if (k <= 1000) head += std::pow(k, -alpha);
    }
    const auto d = AccessDistribution::zipf(rows, alpha);
    EXPECT_NEAR(d.mass(1, 1000), head / total, 1e-6 * head / total) << alpha;
    EXPECT_NEAR(d.probability(1), 1.0 / total, 1e-6 / total) << alpha;
  }
}

TEST(AccessDistributionTest, UniqueRowsMatchTheClosedFormForUniformAccess) {
  // n draws over N equally likely rows hit N (1 - (1 - 1/N)^n) distinct rows on average.
  const double rows = 1e6;
  const auto d = AccessDistribution::uniform(rows);
  for (const double n : {1e3, 1e5, 1e6, 1e7}) {
    EXPECT_NEAR(d.expected_unique(n), rows * (1 - std::pow(1 - 1 / rows, n)), 1e-6 * rows) << n;
  }
}

TEST(AccessDistributionTest, UniqueRowsMatchABruteForceSampleUnderZipf) {
  // Draw n ids from Zipf(1.1) over 1e6 rows and count distinct ones, against the formula.
  const double rows = 1e6;
  const double alpha = 1.1;
  std::vector<double> weights(static_cast<std::size_t>(rows));
  for (std::size_t i = 0; i < weights.size(); ++i)
    weights[i] = std::pow(static_cast<double>(i + 1), -alpha);
  std::discrete_distribution<std::size_t> draw(weights.begin(), weights.end());
  std::mt19937_64 rng(2026);
  const auto d = AccessDistribution::zipf(rows, alpha);
  for (const int n : {10000, 200000}) {
    double mean_unique = 0.0;
    const int trials = 5;
    for (int t = 0; t < trials; ++t) {
      std::unordered_set<std::size_t> seen;
      for (int i = 0; i < n; ++i) seen.insert(draw(rng));
      mean_unique += static_cast<double>(seen.size()) / trials;
    }
    EXPECT_NEAR(d.expected_unique(n) / mean_unique, 1.0, 0.01) << n;
  }
}

TEST(AccessDistributionTest, HashingBoundsTheBalanceByTheHottestRow) {
  // Rows hashed to shards: the shard holding the hottest row gets at least p_max, the mean is
  // 1 / shards, so max / mean >= shards x p_max.
  const auto d = AccessDistribution::zipf(4e7, 1.1);
  for (const int shards : {8, 64, 256}) {
    const auto mass = d.hashed_shard_mass(shards, 7);
    double total = 0.0, most = 0.0;
    for (const double m : mass) {
      total += m;
      most = std::max(most, m);
    }
    EXPECT_NEAR(total, 1.0, 1e-9);
    EXPECT_GE(most / (total / shards), shards * d.max_probability()) << shards;
  }
  // Uniform access spreads evenly.
  const auto flat = AccessDistribution::uniform(4e7);
  for (const double m : flat.hashed_shard_mass(64, 7)) EXPECT_NEAR(m * 64, 1.0, 1e-3);
}

TEST(AccessDistributionTest, ShardUniquesAddUpToTheTable) {
  const auto d = AccessDistribution::zipf(4e7, 0.9);
  const double lookups = 2e6;
  double sum = 0.0;
  for (const double u : d.hashed_shard_unique(16, lookups, 3)) sum += u;
  EXPECT_NEAR(sum / d.expected_unique(lookups), 1.0, 1e-6);  // head summed vs integrated
}

TEST(AccessDistributionTest, ShardFiguresHoldWhateverWasAskedBefore) {
  // A small Zipf table (all rows in the explicit head): each shard's mass is the sum of p_k and
  // its unique rows the sum of 1 - (1 - p_k)^n over the ranks shard_of() gives it, whatever
  // shard counts, salts and lookup counts were asked before (the distribution keeps per-row
  // figures between calls).
  const auto d = AccessDistribution::zipf(1000, 1.05);
  const std::array<std::pair<int, std::uint64_t>, 5> asks = {
      {{4, 1}, {8, 1}, {4, 2}, {4, 1}, {8, 1}}};
  for (const double lookups : {50.0, 3000.0, 50.0}) {
    for (const auto& [shards, salt] : asks) {
      std::vector<double> mass(shards, 0.0), unique(shards, 0.0);
      for (int k = 1; k <= 1000; ++k) {
        const int s = AccessDistribution::shard_of(k, shards, salt);
        const double p = d.probability(k);
        mass[s] += p;
        unique[s] += 1 - std::pow(1 - p, lookups);
      }
      const auto got_mass = d.hashed_shard_mass(shards, salt);
      const auto got_unique = d.hashed_shard_unique(shards, lookups, salt);
      ASSERT_EQ(got_mass.size(), static_cast<std::size_t>(shards));
      ASSERT_EQ(got_unique.size(), static_cast<std::size_t>(shards));
      for (int s = 0; s < shards; ++s) {
        EXPECT_NEAR(got_mass[s], mass[s], 1e-12) << shards << " " << salt << " " << s;
        EXPECT_NEAR(got_unique[s], unique[s], 1e-9) << shards << " " << salt << " " << s;
      }
    }
    // The exact head of expected_unique, over a range inside the kept rows.
    double head = 0.0;
    for (int k = 10; k <= 900; ++k) head += 1 - std::pow(1 - d.probability(k), lookups);
    EXPECT_NEAR(d.expected_unique(lookups, 10, 900), head, 1e-9);
  }
}

TEST(AccessDistributionTest, HistogramOfHotRowsWithAnEvenTail) {
  // 3 hot rows with counts 50, 30, 10, and 10 accesses spread over the other 7 rows: 100 in all.
  const auto d = AccessDistribution::histogram(10, {10, 50, 30}, 10);
  EXPECT_DOUBLE_EQ(d.probability(1), 0.5);
  EXPECT_DOUBLE_EQ(d.probability(3), 0.1);
  EXPECT_NEAR(d.probability(4), 10.0 / 7 / 100, 1e-15);
  EXPECT_NEAR(d.mass(1, 10), 1.0, 1e-12);
  EXPECT_NEAR(d.mass(2, 5), 0.3 + 0.1 + 2 * 10.0 / 7 / 100, 1e-12);
  // One lookup hits one row.
  EXPECT_NEAR(d.expected_unique(1), 1.0, 1e-12);
}

TEST(AccessDistributionTest, DerivedMultiHotByHand) {
  // Uniform first ids over 1000 rows, 2 ids per sample, 10 samples (20 lookups): 1000 (1 -
  // 0.999^10) distinct first ids; each brings one derived id on a uniform row, so a row not hit
  // as a first id is hit as a derived one with probability 1 - 0.999^(distinct first ids).
  const auto d = AccessDistribution::uniform(1000).derived_multi_hot(2);
  const double own = 1000 * (1 - std::pow(0.999, 10));
  const double q = 1 - std::pow(0.999, own);
  EXPECT_NEAR(d.expected_unique(20), own + q * (1000 - own), 1e-9);
  EXPECT_LT(d.expected_unique(20), AccessDistribution::uniform(1000).expected_unique(20));
  EXPECT_NEAR(d.probability(7), 1e-3, 1e-15);  // uniform stays uniform
  // Zipf first ids, 4 ids per sample: the hottest row keeps a quarter of its share, the rest
  // of the lookups spread evenly.
  const auto z = AccessDistribution::zipf(1e6, 1.1);
  const auto zd = z.derived_multi_hot(4);
  EXPECT_NEAR(zd.probability(1), z.probability(1) / 4 + 3.0 / 4e6, 1e-15);
  EXPECT_NEAR(zd.mass(1, 1e6), 1.0, 1e-9);
  EXPECT_NEAR(zd.mass(1, 100), z.mass(1, 100) / 4 + 100 * 3.0 / 4e6, 1e-12);
}

TEST(AccessDistributionTest, DerivedMultiHotMatchesTheBenchmarksGenerator) {
  // MLPerf DLRM-DCNv2's generator: a fixed table of k - 1 uniformly random rows per first id; a
  // sample's bag is its first id (Zipf) and that id's row of the table. Distinct rows in a batch,
  // averaged over batches, against expected_unique.
  const int rows = 20000, k = 5, samples = 2000;
  const auto d = AccessDistribution::zipf(rows, 1.1).derived_multi_hot(k);
  std::mt19937_64 rng(42);
  std::vector<std::vector<int>> derived(rows);
  std::uniform_int_distribution<int> any_row(0, rows - 1);
  for (auto& ids : derived) {
    for (int j = 1; j < k; ++j) ids.push_back(any_row(rng));
  }
  std::vector<double> cumulative(rows);
  double sum = 0;
  for (int r = 0; r < rows; ++r) cumulative[r] = sum += std::pow(r + 1.0, -1.1);
  std::uniform_real_distribution<double> u(0, sum);
  double mean = 0;
  const int batches = 40;
  for (int b = 0; b < batches; ++b) {
    std::unordered_set<int> seen;
    for (int s = 0; s < samples; ++s) {
      const int first = static_cast<int>(
          std::lower_bound(cumulative.begin(), cumulative.end(), u(rng)) - cumulative.begin());
      seen.insert(first);
      for (const int id : derived[first]) seen.insert(id);
    }
    mean += static_cast<double>(seen.size()) / batches;
  }
  EXPECT_NEAR(d.expected_unique(samples * k) / mean, 1.0, 0.02) << mean;
  // Drawing every id independently from the Zipf law misses the generator by far: its derived
  // ids are uniformly placed (many more distinct rows) but repeat with their first id.
  const double independent = AccessDistribution::zipf(rows, 1.1).expected_unique(samples * k);
  EXPECT_LT(independent / mean, 0.8) << independent << " vs " << mean;
}

TEST(AccessDistributionTest, HotSetWithAUniformTailByHand) {
  // 1000 rows, the 10 hottest sharing half the lookups: 0.05 each, the other 990 0.5 / 990.
  const auto d = AccessDistribution::hot_set(1000, 10, 0.5);
  EXPECT_DOUBLE_EQ(d.probability(3), 0.05);
  EXPECT_DOUBLE_EQ(d.probability(11), 0.5 / 990);
  EXPECT_NEAR(d.mass(1, 1000), 1.0, 1e-12);
  EXPECT_NEAR(d.mass(5, 20), 6 * 0.05 + 10 * 0.5 / 990, 1e-12);
  // 100 lookups: 10 (1 - 0.95^100) hot rows and 990 (1 - (1 - 0.5/990)^100) others.
  EXPECT_NEAR(d.expected_unique(100),
              10 * (1 - std::pow(0.95, 100)) + 990 * (1 - std::pow(1 - 0.5 / 990, 100)), 1e-9);
  double total = 0;
  for (const double m : d.hashed_shard_mass(8, 5)) total += m;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(AccessDistributionTest, LruMissRatioOfUniformIdsIsTheShareNotCached) {
  // Uniform over R rows: U(n) = R (1 - (1 - 1/R)^n). Che's characteristic time n_C has
  // (1 - 1/R)^n_C = 1 - C/R, so a batch of L lookups misses
  // U(n_C + L) - U(n_C) = (R - C)(1 - (1 - 1/R)^L) of its U(L) = R (1 - (1 - 1/R)^L) rows:
  // 1 - C/R whatever L. R = 1e6, C = 2e5: 0.8.
  const AccessDistribution d = AccessDistribution::uniform(1e6);
  for (const double lookups : {1e3, 1e5, 1e7}) {
    EXPECT_NEAR(d.lru_miss_ratio(lookups, 2e5, 1, 1e6), 0.8, 1e-6) << lookups;
  }
  // A cache of every row misses nothing; a cache of none misses everything.
  EXPECT_EQ(d.lru_miss_ratio(1e5, 1e6, 1, 1e6), 0.0);
  EXPECT_EQ(d.lru_miss_ratio(1e5, 0, 1, 1e6), 1.0);
  // Over ranks 500,001..1,000,000 only (500,000 rows), a cache of 100,000 of them misses 0.8.
  EXPECT_NEAR(d.lru_miss_ratio(1e5, 1e5, 500001, 1e6), 0.8, 1e-6);
}

TEST(AccessDistributionTest, LruMissRatioOfAHotSetByHand) {
  // 100 hot rows with 90% of the lookups and 900 cold ones: a cache of 100 rows. With
  // U(n) = 100 (1 - (1 - 0.009)^n) + 900 (1 - (1 - 0.1/900)^n), n_C solves U(n_C) = 100 (worked
  // here by bisection, independently of the code), and a batch of 50 lookups misses
  // (U(n_C + 50) - U(n_C)) / U(50).
  auto u = [](double n) {
    return 100 * (1 - std::pow(1 - 0.009, n)) + 900 * (1 - std::pow(1 - 0.1 / 900, n));
  };
  double lo = 1, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (u(mid) < 100 ? lo : hi) = mid;
  }
  const double expected = (u(hi + 50) - u(hi)) / u(50);
  const AccessDistribution d = AccessDistribution::hot_set(1000, 100, 0.9);
  EXPECT_NEAR(d.lru_miss_ratio(50, 100, 1, 1000), expected, 1e-9);
  // The hot rows are mostly cached: far fewer misses than a uniform table's 0.9.
  EXPECT_LT(expected, 0.5);
  // Rows that are never looked up cannot fill the cache: a histogram of 10 rows over 1000 (no
  // tail) with a cache of 10 rows misses nothing.
  const AccessDistribution head =
      AccessDistribution::histogram(1000, {5, 4, 3, 2, 1, 1, 1, 1, 1, 1}, 0);
  EXPECT_NEAR(head.lru_miss_ratio(20, 10, 1, 1000), 0.0, 1e-12);
}

}  // namespace
}  // namespace trainsim::models
