// Collective algorithms and the per-algorithm figures that calibration fits: the software latency
// an operation pays once (kernel launch, setup; NCCL's "base latency"), the fraction of the links'
// effective bandwidth it reaches, and how many channels (NCCL thread blocks, each with a
// throughput limit) it spreads a message over. Per-hop latency and bandwidth come from the links.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/units.h"

namespace trainsim::models {

enum class Algorithm {
  kRing,  // ring (all-reduce, all-gather, reduce-scatter); pipelined chain (broadcast, reduce)
  kTree,  // double binary tree across nodes, chains inside nodes (all-reduce)
  kNvls,  // in-switch reduction on NVSwitch (NVLink SHARP) inside one node (all-reduce)
  kHierarchical,  // reduce-scatter in node, all-reduce across nodes, all-gather in node
  kDirect,        // all-to-all with one flow per pair
  kTwoD,          // all-to-all: aggregate inside the node, exchange among same-local-rank GPUs
  kP2p,           // point-to-point send/receive
};

// NCCL's protocols: Simple (large messages, full bandwidth), LL128 and LL (low latency, less
// bandwidth). Each algorithm may carry a tuning per protocol; the fastest applies per size.
enum class Protocol { kSimple, kLl128, kLl };

std::string_view protocol_name(Protocol protocol);
std::optional<Protocol> parse_protocol(std::string_view name);
const std::vector<Protocol>& all_protocols();

std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> parse_algorithm(std::string_view name);
const std::vector<Algorithm>& all_algorithms();

struct AlgorithmTuning {
  Time software_latency = 0;
  double efficiency = 1.0;
  // Channels: a message of S bytes is worth c = clamp(S / bytes_per_channel, 1, max_channels)
  // channels of channel_bandwidth each (c may be fractional: the ramp is continuous in S). It runs
  // on ceil(c) channels sharing that throughput. bytes_per_channel 0 means always max_channels;
  // max_channels 0 means the algorithm's own count (rings: one per NIC of a node, at least 1).
  double channel_bandwidth = std::numeric_limits<double>::infinity();
  double bytes_per_channel = 0.0;
  int max_channels = 0;

  struct Channels {
    int count = 1;
    double rate_cap = std::numeric_limits<double>::infinity();  // per channel
    double total_cap() const { return rate_cap * count; }
  };
  Channels channels(double bytes, int default_channels) const;
};

struct CollectiveTuning {
  // Per algorithm, its tuning per protocol; absent: Simple with the defaults below.
  std::map<Algorithm, std::map<Protocol, AlgorithmTuning>> algorithms;
  double pipeline_chunk_bytes = 512.0 * 1024.0;  // chunk of pipelined algorithms

  // The tuning of an algorithm with a protocol: as configured; for an algorithm with no tuning at
  // all, the ring's Simple tuning; else the defaults (no software latency, full efficiency, no
  // channel limit).
  AlgorithmTuning of(Algorithm algorithm, Protocol protocol = Protocol::kSimple) const;
  // The protocols configured for an algorithm (Simple alone if none).
  std::vector<Protocol> protocols(Algorithm algorithm) const;
  AlgorithmTuning& at(Algorithm algorithm, Protocol protocol = Protocol::kSimple) {
    return algorithms[algorithm][protocol];
  }
};

}  // namespace trainsim::models
