#include "engine/statistics.h"

#include <algorithm>

namespace trainsim {

void Summary::add(double value) {
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  sum_ += value;
  const double delta = value - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (value - mean_);
}

void Statistics::add(std::string_view name, double value) {
  auto it = summaries_.find(name);
  if (it == summaries_.end()) it = summaries_.emplace(std::string(name), Summary{}).first;
  it->second.add(value);
}

const Summary* Statistics::find(std::string_view name) const {
  auto it = summaries_.find(name);
  return it == summaries_.end() ? nullptr : &it->second;
}

}  // namespace trainsim
