#include "models/collectives/collective_tuning.h"

#include <algorithm>
#include <cmath>

namespace trainsim::models {

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kTwoD:
      return "2d";
    case Algorithm::kP2p:
      return "p2p";
  }
  return "?";
}

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = {
      Algorithm::kRing,   Algorithm::kTree, Algorithm::kNvls, Algorithm::kHierarchical,
      Algorithm::kDirect, Algorithm::kTwoD, Algorithm::kP2p};
  return all;
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (const Algorithm a : all_algorithms()) {
    if (algorithm_name(a) == name) return a;
  }
  return std::nullopt;
}

int AlgorithmTuning::channels(double bytes, int default_channels) const {
  const int most = std::max(1, max_channels > 0 ? max_channels : default_channels);
  if (bytes_per_channel <= 0.0) return most;
  const double wanted = std::ceil(bytes / bytes_per_channel);
  return static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(most)));
}

AlgorithmTuning CollectiveTuning::of(Algorithm algorithm) const {
  const auto it = algorithms.find(algorithm);
  return it == algorithms.end() ? AlgorithmTuning{} : it->second;
}

}  // namespace trainsim::models
