#include "models/spec/access_distribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/check.h"
#include "engine/simulation.h"
#include "models/spec/enum_names.h"

namespace trainsim::models {

namespace {

// Ranks summed term by term before switching to the integral approximation.
constexpr double kExactTerms = 4096;
// Ranks whose log(1 - p) is kept once computed (the hashed placements' explicit head).
constexpr double kCachedHead = 65536;

// log(1 - p): a row's chance of being missed by one lookup, in log space.
double log_miss(double p) { return std::log1p(-std::min(p, 1.0)); }
// 1 - (1 - p)^n without cancellation for small p, from log_miss(p) = `log_miss_p`.
double hits_given_log_miss(double log_miss_p, double n) { return -std::expm1(n * log_miss_p); }
double hits(double p, double n) { return hits_given_log_miss(log_miss(p), n); }

}  // namespace

AccessDistribution AccessDistribution::uniform(double rows) {
  AccessDistribution d;
  d.kind_ = Kind::kUniform;
  d.rows_ = rows;
  d.norm_ = 1.0 / rows;
  return d;
}

AccessDistribution AccessDistribution::zipf(double rows, double alpha) {
  if (alpha == 0.0) return uniform(rows);
  AccessDistribution d;
  d.kind_ = Kind::kZipf;
  d.rows_ = rows;
  d.alpha_ = alpha;
  d.norm_ = 1.0 / d.zipf_sum(1, rows);
  return d;
}

AccessDistribution AccessDistribution::histogram(double rows, std::vector<double> counts,
                                                 double other) {
  TRAINSIM_ASSERT(counts.size() <= rows, "histogram longer than the table");
  AccessDistribution d;
  d.kind_ = Kind::kHistogram;
  d.rows_ = rows;
  std::sort(counts.begin(), counts.end(), std::greater<>());
  d.head_ = std::move(counts);
  d.head_prefix_.resize(d.head_.size() + 1, 0.0);
  for (std::size_t i = 0; i < d.head_.size(); ++i)
    d.head_prefix_[i + 1] = d.head_prefix_[i] + d.head_[i];
  const double rest_rows = rows - static_cast<double>(d.head_.size());
  d.other_per_row_ = rest_rows > 0 ? other / rest_rows : 0.0;
  const double total = d.head_prefix_.back() + (rest_rows > 0 ? other : 0.0);
  TRAINSIM_ASSERT(total > 0, "histogram without accesses");
  d.norm_ = 1.0 / total;
  return d;
}

AccessDistribution AccessDistribution::hot_set(double rows, double hot_rows, double hot_mass) {
  TRAINSIM_ASSERT(hot_rows >= 1 && hot_rows <= rows && hot_mass > 0 && hot_mass <= 1,
                  "a hot set of 1 to all rows with a share in (0, 1]");
  AccessDistribution d;
  d.kind_ = Kind::kHotSet;
  d.rows_ = rows;
  d.hot_rows_ = hot_rows;
  d.hot_mass_ = hot_mass;
  return d;
}

double AccessDistribution::zipf_sum(double first, double last) const {
  if (last < first) return 0.0;
  double sum = 0.0;
  const double exact_end = std::min(last, std::max(first, kExactTerms) - 1);
  for (double k = first; k <= exact_end; k += 1) sum += std::pow(k, -alpha_);
  const double from = std::max(first, exact_end + 1);
  if (from <= last) {
    // Integral of x^-alpha over [from - 1/2, last + 1/2] (midpoint rule, error ~ alpha/(24
    // from^2)).
    const double a = from - 0.5;
    const double b = last + 0.5;
    if (std::abs(alpha_ - 1.0) < 1e-12) {
      sum += std::log(b / a);
    } else {
      sum += (std::pow(b, 1 - alpha_) - std::pow(a, 1 - alpha_)) / (1 - alpha_);
    }
  }
  return sum;
}

AccessDistribution AccessDistribution::derived_multi_hot(double ids_per_sample) const {
  TRAINSIM_ASSERT(ids_per_sample >= 1, "a sample has at least one id");
  AccessDistribution d = *this;
  d.derived_ = ids_per_sample;
  d.cache_ = std::make_shared<HeadCache>();
  return d;
}

// Derived multi-hot: a lookup is a first id with probability 1/k (this distribution), else a
// derived id, on a uniformly random row.
double AccessDistribution::probability(double rank) const {
  const double k = derived_;
  return base_probability(rank) / k + (k - 1) / (k * rows_);
}

double AccessDistribution::mass(double first, double last) const {
  const double k = derived_;
  first = std::max(first, 1.0);
  last = std::min(last, rows_);
  if (last < first) return 0.0;
  return base_mass(first, last) / k + (last - first + 1) * (k - 1) / (k * rows_);
}

// `lookups` = samples x k. A row is hit if its own first id is drawn among the samples, or if
// one of the (k - 1) derived ids of a distinct first id lands on it (1 / rows each).
double AccessDistribution::derived_hit(double lookups) const {
  if (derived_ <= 1) return 0.0;
  const double samples = lookups / derived_;
  const double distinct_first = base_expected_unique(samples, 1, rows_);
  return -std::expm1((derived_ - 1) * distinct_first * std::log1p(-1.0 / rows_));
}

double AccessDistribution::expected_unique(double lookups, double first, double last) const {
  first = std::max(first, 1.0);
  last = std::min(last, rows_);
  if (last < first || lookups <= 0) return 0.0;
  const double own = base_expected_unique(lookups / derived_, first, last);
  const double q = derived_hit(lookups);
  return own + q * ((last - first + 1) - own);
}

double AccessDistribution::base_probability(double rank) const {
  switch (kind_) {
    case Kind::kUniform:
      return norm_;
    case Kind::kZipf:
      return norm_ * std::pow(rank, -alpha_);
    case Kind::kHistogram:
      return rank <= static_cast<double>(head_.size())
                 ? norm_ * head_[static_cast<std::size_t>(rank) - 1]
                 : norm_ * other_per_row_;
    case Kind::kHotSet:
      return rank <= hot_rows_ ? hot_mass_ / hot_rows_ : cold_probability();
  }
  return 0.0;
}

double AccessDistribution::cold_probability() const {
  return rows_ > hot_rows_ ? (1 - hot_mass_) / (rows_ - hot_rows_) : 0.0;
}

double AccessDistribution::base_mass(double first, double last) const {
  switch (kind_) {
    case Kind::kUniform:
      return (last - first + 1) * norm_;
    case Kind::kZipf:
      return norm_ * zipf_sum(first, last);
    case Kind::kHistogram: {
      const double head = static_cast<double>(head_.size());
      double sum = 0.0;
      if (first <= head) {
        const auto lo = static_cast<std::size_t>(first) - 1;
        const auto hi = static_cast<std::size_t>(std::min(last, head));
        sum += head_prefix_[hi] - head_prefix_[lo];
      }
      const double tail_first = std::max(first, head + 1);
      if (tail_first <= last) sum += (last - tail_first + 1) * other_per_row_;
      return norm_ * sum;
    }
    case Kind::kHotSet: {
      const double hot = std::max(0.0, std::min(last, hot_rows_) - first + 1);
      return hot * hot_mass_ / hot_rows_ + (last - first + 1 - hot) * cold_probability();
    }
  }
  return 0.0;
}

double AccessDistribution::lru_miss_ratio(double lookups, double cache_rows, double first,
                                          double last) const {
  first = std::max(first, 1.0);
  last = std::min(last, rows_);
  const double rows = last - first + 1;
  if (rows <= 0 || lookups <= 0 || cache_rows >= rows) return 0.0;
  if (cache_rows <= 0) return 1.0;
  const std::array<double, 4> key{lookups, cache_rows, first, last};
  {
    const std::lock_guard<std::mutex> lock(cache_->mutex);
    for (const auto& [k, ratio] : cache_->miss_ratios) {
      if (k == key) return ratio;
    }
  }
  auto unique = [&](double n) { return expected_unique(n, first, last); };
  // U(n) <= n and U grows to `rows` > cache_rows: bracket n_C from cache_rows up, then bisect
  // (in log n) to 1e-12 relative.
  double lo = cache_rows, hi = cache_rows;
  while (unique(hi) < cache_rows) {
    lo = hi;
    hi *= 2;
    // Rows that are never looked up (a histogram without a tail) can leave the cache larger
    // than every row that is: then it misses nothing.
    if (hi > 1e300) return 0.0;
  }
  while (hi > lo * (1 + 1e-12)) {
    const double mid = std::sqrt(lo * hi);
    (unique(mid) < cache_rows ? lo : hi) = mid;
  }
  const double batch = unique(lookups);
  const double ratio =
      batch > 0 ? std::clamp((unique(hi + lookups) - unique(hi)) / batch, 0.0, 1.0) : 0.0;
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  constexpr std::size_t kKept = 64;
  if (cache_->miss_ratios.size() >= kKept) cache_->miss_ratios.erase(cache_->miss_ratios.begin());
  cache_->miss_ratios.emplace_back(key, ratio);
  return ratio;
}

double AccessDistribution::base_expected_unique(double lookups, double first, double last) const {
  first = std::max(first, 1.0);
  last = std::min(last, rows_);
  if (last < first || lookups <= 0) return 0.0;
  if (kind_ == Kind::kHotSet) {  // two flat segments
    const double hot = std::max(0.0, std::min(last, hot_rows_) - first + 1);
    return hot * hits(hot_mass_ / hot_rows_, lookups) +
           (last - first + 1 - hot) * hits(cold_probability(), lookups);
  }
  double unique = 0.0;
  const double exact_end =
      std::min(last, std::max(first + kExactTerms - 1, static_cast<double>(head_.size())));
  if (exact_end <= kCachedHead) {
    // The head's log(1 - p_k) are kept: the same terms, without their pow and log1p.
    const Rows lm = head_log_miss(static_cast<std::size_t>(exact_end));
    for (double k = first; k <= exact_end; k += 1)
      unique += hits_given_log_miss((*lm)[static_cast<std::size_t>(k) - 1], lookups);
  } else {
    for (double k = first; k <= exact_end; k += 1) unique += hits(base_probability(k), lookups);
  }
  if (exact_end < last) {
    if (kind_ == Kind::kZipf) {
      // Integrate 1 - exp(-n p(x)) over [exact_end + 1/2, last + 1/2] in log space (Simpson).
      const double a = std::log(exact_end + 0.5);
      const double b = std::log(last + 0.5);
      const int steps = 512;
      const double h = (b - a) / steps;
      double s = 0.0;
      for (int i = 0; i <= steps; ++i) {
        const double x = std::exp(a + i * h);
        const double f = x * -std::expm1(-lookups * norm_ * std::pow(x, -alpha_));
        s += f * (i == 0 || i == steps ? 1 : (i % 2 ? 4 : 2));
      }
      unique += s * h / 3;
    } else {
      // Flat tail: every remaining row has the same probability.
      unique += (last - exact_end) * hits(base_probability(last), lookups);
    }
  }
  return unique;
}

int AccessDistribution::shard_of(double rank, int shards, std::uint64_t salt) {
  return static_cast<int>(mix64(static_cast<std::uint64_t>(rank) ^ mix64(salt)) %
                          static_cast<std::uint64_t>(shards));
}

std::vector<double> AccessDistribution::hashed_shard_mass(int shards, std::uint64_t salt,
                                                          double exact_head) const {
  std::vector<double> mass_of(shards, 0.0);
  const double head = std::min(exact_head, rows_);
  const Rows p = head_probabilities(static_cast<std::size_t>(head));
  const auto shard = head_shards(shards, salt, static_cast<std::size_t>(head));
  for (std::size_t k = 0; k < p->size() && static_cast<double>(k) < head; ++k)
    mass_of[(*shard)[k]] += (*p)[k];
  const double tail = mass(head + 1, rows_);
  for (double& m : mass_of) m += tail / shards;
  return mass_of;
}

AccessDistribution::Rows AccessDistribution::head_probabilities(std::size_t count) const {
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  if (!cache_->probability || cache_->probability->size() < count) {
    auto p = std::make_shared<std::vector<double>>(count);
    for (std::size_t k = 0; k < count; ++k) (*p)[k] = probability(static_cast<double>(k + 1));
    cache_->probability = std::move(p);
  }
  return cache_->probability;
}

std::shared_ptr<const std::vector<int>> AccessDistribution::head_shards(int shards,
                                                                        std::uint64_t salt,
                                                                        std::size_t count) const {
  const std::pair<int, std::uint64_t> key{shards, salt};
  {
    const std::lock_guard<std::mutex> lock(cache_->mutex);
    for (const auto& [k, rows] : cache_->shards) {
      if (k == key && rows->size() >= count) return rows;
    }
  }
  auto shard = std::make_shared<std::vector<int>>(count);
  for (std::size_t k = 0; k < count; ++k)
    (*shard)[k] = shard_of(static_cast<double>(k + 1), shards, salt);
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  constexpr std::size_t kKept = 32;  // placements remembered per distribution
  if (cache_->shards.size() >= kKept) cache_->shards.erase(cache_->shards.begin());
  cache_->shards.emplace_back(key, shard);
  return shard;
}

AccessDistribution::Rows AccessDistribution::head_log_miss(std::size_t count) const {
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  if (!cache_->log_miss || cache_->log_miss->size() < count) {
    auto lm = std::make_shared<std::vector<double>>(count);
    for (std::size_t k = 0; k < count; ++k)
      (*lm)[k] = log_miss(base_probability(static_cast<double>(k + 1)));
    cache_->log_miss = std::move(lm);
  }
  return cache_->log_miss;
}

AccessDistribution::Rows AccessDistribution::head_hits(double lookups, std::size_t count) const {
  {
    const std::lock_guard<std::mutex> lock(cache_->mutex);
    for (const auto& [n, rows] : cache_->hits) {
      if (n == lookups && rows->size() >= count) return rows;
    }
  }
  const double derived = derived_hit(lookups);
  const Rows lm = head_log_miss(count);
  auto row_hits = std::make_shared<std::vector<double>>(count);
  for (std::size_t k = 0; k < count; ++k) {
    const double own = hits_given_log_miss((*lm)[k], lookups / derived_);
    (*row_hits)[k] = own + derived * (1 - own);
  }
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  constexpr std::size_t kKept = 32;  // lookup counts remembered per distribution
  if (cache_->hits.size() >= kKept) cache_->hits.erase(cache_->hits.begin());
  cache_->hits.emplace_back(lookups, row_hits);
  return row_hits;
}

std::vector<double> AccessDistribution::hashed_shard_unique(int shards, double lookups,
                                                            std::uint64_t salt,
                                                            double exact_head) const {
  std::vector<double> unique(shards, 0.0);
  const double head = std::min(exact_head, rows_);
  const Rows hits = head_hits(lookups, static_cast<std::size_t>(head));
  const auto shard = head_shards(shards, salt, static_cast<std::size_t>(head));
  for (std::size_t k = 0; k < hits->size() && static_cast<double>(k) < head; ++k)
    unique[(*shard)[k]] += (*hits)[k];
  const double tail = expected_unique(lookups, head + 1, rows_);
  for (double& u : unique) u += tail / shards;
  return unique;
}

std::string_view AccessDistribution::kind_name() const {
  static const EnumNames<Kind> names = {{Kind::kUniform, "uniform"},
                                        {Kind::kZipf, "zipf"},
                                        {Kind::kHistogram, "histogram"},
                                        {Kind::kHotSet, "hot_set"}};
  return names.name(kind_);
}

std::string AccessDistribution::describe() const {
  std::string text = describe_base();
  if (derived_ > 1) text += ", multi-hot derived from the first id";
  return text;
}

std::string AccessDistribution::describe_base() const {
  char buffer[96];
  switch (kind_) {
    case Kind::kUniform:
      return "uniform";
    case Kind::kZipf:
      std::snprintf(buffer, sizeof buffer, "zipf(alpha=%g)", alpha_);
      return buffer;
    case Kind::kHistogram:
      std::snprintf(buffer, sizeof buffer, "histogram(%zu rows)", head_.size());
      return buffer;
    case Kind::kHotSet:
      std::snprintf(buffer, sizeof buffer, "hot set(%g rows, %g of lookups)", hot_rows_, hot_mass_);
      return buffer;
  }
  return "?";
}

}  // namespace trainsim::models
