// Named running summaries (count, sum, min, max, mean, variance) collected during a simulation.
// Owned by one Simulation; nothing here is global.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace trainsim {

class Summary {
 public:
  void add(double value);
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double mean() const { return count_ ? mean_ : 0.0; }
  // Population variance (Welford's algorithm).
  double variance() const { return count_ ? m2_ / static_cast<double>(count_) : 0.0; }

 private:
  std::uint64_t count_ = 0;
  double sum_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
  double mean_ = 0.0;
  double m2_ = 0.0;
};

class Statistics {
 public:
  void add(std::string_view name, double value);
  // nullptr if nothing was recorded under `name`.
  const Summary* find(std::string_view name) const;
  const std::map<std::string, Summary, std::less<>>& all() const { return summaries_; }

 private:
  std::map<std::string, Summary, std::less<>> summaries_;
};

}  // namespace trainsim
