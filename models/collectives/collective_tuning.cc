#include "models/collectives/collective_tuning.h"

#include <algorithm>
#include <cmath>

namespace trainsim::models {

std::string_view protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::kSimple:
      return "simple";
    case Protocol::kLl128:
      return "ll128";
    case Protocol::kLl:
      return "ll";
  }
  return "?";
}

const std::vector<Protocol>& all_protocols() {
  static const std::vector<Protocol> all = {Protocol::kSimple, Protocol::kLl128, Protocol::kLl};
  return all;
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  for (const Protocol p : all_protocols()) {
    if (protocol_name(p) == name) return p;
  }
  return std::nullopt;
}

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

AlgorithmTuning::Channels AlgorithmTuning::channels(double bytes, int default_channels) const {
  const int most = std::max(1, max_channels > 0 ? max_channels : default_channels);
  if (bytes_per_channel <= 0.0) return {most, channel_bandwidth};
  const double worth = std::clamp(bytes / bytes_per_channel, 1.0, static_cast<double>(most));
  const int count = static_cast<int>(std::ceil(worth - 1e-9));
  return {count, channel_bandwidth * worth / count};
}

AlgorithmTuning CollectiveTuning::of(Algorithm algorithm, Protocol protocol) const {
  const auto it = algorithms.find(algorithm);
  if (it == algorithms.end()) {
    // Not calibrated: borrow the ring's Simple tuning (software latency, channel ramp), the one
    // every calibration fits, so an uncalibrated algorithm does not look free to the picker.
    if (algorithm == Algorithm::kRing) return AlgorithmTuning{};
    return of(Algorithm::kRing, Protocol::kSimple);
  }
  const auto p = it->second.find(protocol);
  return p == it->second.end() ? AlgorithmTuning{} : p->second;
}

std::vector<Protocol> CollectiveTuning::protocols(Algorithm algorithm) const {
  const auto it = algorithms.find(algorithm);
  if (it == algorithms.end() || it->second.empty()) return {Protocol::kSimple};
  std::vector<Protocol> out;
  for (const auto& [protocol, tuning] : it->second) out.push_back(protocol);
  return out;
}

}  // namespace trainsim::models
