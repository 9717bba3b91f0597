// How often each row of an embedding table is looked up: uniform, Zipf with exponent alpha over
// the rows ranked by popularity, or a measured histogram of the most popular rows. Gives the mass
// of any range of ranks, the expected number of distinct rows hit by n lookups (in-batch
// deduplication), and the load each shard gets when rows are placed by hashing.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim::models {

class AccessDistribution {
 public:
  static AccessDistribution uniform(double rows);
  static AccessDistribution zipf(double rows, double alpha);
  // `counts[i]` is the access count of the (i+1)-th most popular row; `other` the total count of
  // all remaining rows, spread evenly over them.
  static AccessDistribution histogram(double rows, std::vector<double> counts, double other);
  // A hot set plus a uniform tail: the `hot_rows` most popular rows share `hot_mass` of the
  // lookups evenly, the other rows the rest.
  static AccessDistribution hot_set(double rows, double hot_rows, double hot_mass);
  // Multi-hot ids derived from the first: each sample's first id follows this distribution and
  // its other `ids_per_sample` - 1 ids are fixed functions of it, uniformly placed over the rows
  // (MLPerf DLRM-DCNv2's generator). A row is then hit through its own first id (this
  // distribution, 1 / ids_per_sample of the lookups) or as a derived id of a drawn first id
  // (uniformly); the ids of a repeated first id repeat with it. 1: independent ids.
  AccessDistribution derived_multi_hot(double ids_per_sample) const;
  double ids_per_sample() const { return derived_; }

  double rows() const { return rows_; }
  // Probability that one lookup hits the row of popularity rank `rank` (1-based).
  double probability(double rank) const;
  // Probability mass of ranks [first, last] (1-based, inclusive).
  double mass(double first, double last) const;
  double max_probability() const { return probability(1); }

  // Expected distinct rows among ranks [first, last] hit by `lookups` independent lookups over
  // the whole table: sum of 1 - (1 - p)^n, computed exactly for the head and by integration for
  // the tail.
  double expected_unique(double lookups, double first, double last) const;
  double expected_unique(double lookups) const { return expected_unique(lookups, 1, rows_); }

  // An LRU cache of `cache_rows` of the rows of ranks [first, last], looked up `lookups` times
  // per batch, batches drawn independently: the expected share of a batch's distinct rows that
  // the cache does not hold, by Che's approximation (Che, Tung and Wang, IEEE JSAC 20(7), 2002).
  // A row is cached while it was hit within the cache's characteristic time of n_C lookups, the
  // lookups whose distinct rows fill it, U(n_C) = cache_rows (U: expected_unique over the ranks);
  // a batch's row is missed if it was not hit in the n_C lookups before, so a batch misses
  // U(n_C + lookups) - U(n_C) of its U(lookups) rows. Uniform ids: 1 - cache_rows / rows.
  double lru_miss_ratio(double lookups, double cache_rows, double first, double last) const;

  // The share of lookups each of `shards` shards receives when rows are placed by a hash of the
  // row (rank): the `exact_head` most popular rows are hashed explicitly, the rest spread evenly.
  std::vector<double> hashed_shard_mass(int shards, std::uint64_t salt,
                                        double exact_head = 65536) const;
  // Expected distinct rows per shard for `lookups` lookups, same placement.
  std::vector<double> hashed_shard_unique(int shards, double lookups, std::uint64_t salt,
                                          double exact_head = 65536) const;

  // Shard of a row rank under the hash placement above.
  static int shard_of(double rank, int shards, std::uint64_t salt);

  std::string describe() const;
  // How it was given: "uniform", "zipf" (with alpha()) or "histogram".
  std::string_view kind_name() const;
  double alpha() const { return alpha_; }
  double hot_rows() const { return hot_rows_; }  // hot set
  double hot_mass() const { return hot_mass_; }

 private:
  enum class Kind { kUniform, kZipf, kHistogram, kHotSet };
  double zipf_sum(double first, double last) const;  // sum of k^-alpha over [first, last]
  // The same for the first ids alone (derived multi-hot) or all ids (independent).
  double base_probability(double rank) const;
  double cold_probability() const;  // hot set: a row outside it
  std::string describe_base() const;
  double base_mass(double first, double last) const;
  double base_expected_unique(double draws, double first, double last) const;
  // Derived multi-hot, for `lookups` lookups: the chance that a row is hit as a derived id.
  double derived_hit(double lookups) const;

  // Per-row figures of the most popular rows, computed on first use and shared by copies (the
  // distribution never changes); safe to use from several threads. Planning a sweep or a greedy
  // plan asks for the same rows many times.
  using Rows = std::shared_ptr<const std::vector<double>>;
  struct HeadCache {
    std::mutex mutex;
    Rows probability;  // p_k for ranks 1..size
    Rows log_miss;     // log(1 - p_k) of the first ids' (base) probability, ranks 1..size
    std::vector<std::pair<double, Rows>> hits;  // 1 - (1 - p_k)^n, by n (most recent last)
    // The shard of each head row under the hash placement, by (shards, salt) (most recent last).
    std::vector<std::pair<std::pair<int, std::uint64_t>, std::shared_ptr<const std::vector<int>>>>
        shards;
    // lru_miss_ratio's answers: (lookups, cache rows, first, last) -> ratio.
    std::vector<std::pair<std::array<double, 4>, double>> miss_ratios;
  };
  Rows head_probabilities(std::size_t count) const;
  Rows head_hits(double lookups, std::size_t count) const;
  Rows head_log_miss(std::size_t count) const;
  // shard_of() of ranks 1..count.
  std::shared_ptr<const std::vector<int>> head_shards(int shards, std::uint64_t salt,
                                                      std::size_t count) const;

  Kind kind_ = Kind::kUniform;
  double rows_ = 1;
  double alpha_ = 0;
  double norm_ = 1;                  // Zipf: 1 / H(rows, alpha); histogram: 1 / total count
  std::vector<double> head_;         // histogram counts of the top rows
  std::vector<double> head_prefix_;  // prefix sums of head_
  double other_per_row_ = 0.0;
  double hot_rows_ = 0, hot_mass_ = 0;  // hot set
  double derived_ = 1;  // ids per sample derived from its first id (1: independent ids)
  std::shared_ptr<HeadCache> cache_ = std::make_shared<HeadCache>();
};

}  // namespace trainsim::models
