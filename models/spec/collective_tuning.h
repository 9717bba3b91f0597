// Collective algorithms and protocols, and the few physical constants of the collective model
// that a cluster may set or calibration fits: the host's launch cost, per-hop latencies by link
// type, the throughput of a point-to-point network channel and the achieved fraction of links for
// point-to-point traffic; plus the settings NCCL takes from its environment (NCCL_ALGO,
// NCCL_PROTO, NCCL_MIN_NCHANNELS, ...). Link bandwidths and their achieved fractions are the
// links' own (cluster_spec.h); the algorithms' structure is NCCL's (nccl_tuner.h, algorithms.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/units.h"
#include "models/spec/enum_names.h"

namespace trainsim::models {

enum class Algorithm {
  kRing,           // ring (all-reduce, all-gather, reduce-scatter); pipelined chain (bcast, reduce)
  kTree,           // double binary tree across nodes, chains inside nodes (all-reduce)
  kNvls,           // NVLink SHARP: in-switch reduction and multicast on NVSwitch
  kNvlsTree,       // NVLS inside each node, a tree of the nodes' NVLS heads across nodes
  kCollNetDirect,  // in-network reduction (IB SHARP), every local GPU talking to the NIC heads
  kCollNetChain,   // in-network reduction, a chain inside the node to one head per rail
  kPat,            // parallel aggregated trees (all-gather, reduce-scatter at one GPU per node)
  // (the ones above are NCCL's collective algorithms, is_nccl_algorithm)
  kHierarchical,   // not NCCL's: reduce-scatter in node, ring all-reduce across, all-gather
  kDirect,         // all-to-all as grouped point-to-point, each GPU on its own NIC (no PXN)
  kTwoD,           // all-to-all as NCCL runs it with PXN: through the GPU on the destination's rail
  kP2p,            // point-to-point send/receive
};

// NCCL's protocols: Simple (full bandwidth, a fence per step), LL128 (120 of every 128 bytes are
// data) and LL (4 bytes of data and a 4-byte flag per 8 bytes).
enum class Protocol { kLl, kLl128, kSimple };

// An NCCL release, 2.minor: its tuning constants and channel rules differ between releases
// (notes/nccl-model.md, sections 2.3 and 4).
struct NcclVersion {
  int minor = 29;
  bool operator==(const NcclVersion&) const = default;
};

const EnumNames<Protocol>& protocol_names();
std::string_view protocol_name(Protocol protocol);
std::optional<Protocol> parse_protocol(std::string_view name);
const std::vector<Protocol>& all_protocols();

const EnumNames<Algorithm>& algorithm_names();
std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> parse_algorithm(std::string_view name);
const std::vector<Algorithm>& all_algorithms();
// NCCL's own collective algorithms, Ring to PAT (what --algo auto and NCCL_ALGO choose among;
// not trainsim's hierarchical one nor the point-to-point forms).
bool is_nccl_algorithm(Algorithm algorithm);

std::string nccl_version_name(NcclVersion version);  // "2.29"
// "2.18.5", "2.21", "2.26.2", "22602" (NCCL_VERSION_CODE as nccl-tests prints it).
std::optional<NcclVersion> parse_nccl_version(std::string_view text);

struct CollectiveTuning {
  NcclVersion nccl_version;

  // Physical constants (calibration fits them). A cluster file that leaves one out gets the joint
  // fit over the logs in validation/ (calibrated_collective_defaults, configs/README.md); the
  // neutral values below are for a spec built in code.
  // Host time to launch one GPU's kernels of an operation; a thread that drives several GPUs
  // (nccl-tests -g) launches them one after another.
  Time launch_latency = 0;
  // Per-hop latency of one step, by link type, as a multiple of NCCL's own figures (hwLat in its
  // tuning model, per algorithm and protocol). Inside a node NCCL's figures stand (1; calibration
  // leaves them, a what-if may change them); the network's is fitted per transport.
  double nvlink_latency_scale = 1.0;
  double pcie_latency_scale = 1.0;
  double network_latency_scale = 1.0;
  // ... and a network step's, as a multiple per protocol (Simple 1): LL and LL128 cross the
  // network through the proxy and host memory.
  double ll_latency_scale = 1.0;
  double ll128_latency_scale = 1.0;
  // Throughput one point-to-point channel reaches over the network, and over NVLink.
  double p2p_channel_bandwidth = 14e9;
  double p2p_nvlink_channel_bandwidth = 20e9;
  // Fraction of a link's achieved collective bandwidth that point-to-point traffic reaches, over
  // NVLink (or PCIe) inside a node and over the network.
  double p2p_nvlink_efficiency = 1.0;
  double p2p_network_efficiency = 1.0;

  // NCCL's environment (unset or 0: NCCL's default).
  std::vector<Algorithm> algorithms;  // NCCL_ALGO: allowed algorithms
  std::vector<Protocol> protocols;    // NCCL_PROTO: allowed protocols
  int min_channels = 0;               // NCCL_MIN_NCHANNELS (NCCL_MIN_CTAS)
  int max_channels = 0;               // NCCL_MAX_NCHANNELS (NCCL_MAX_CTAS)
  int channels_per_net_peer = 0;      // NCCL_NCHANNELS_PER_NET_PEER
  int ib_qps_per_connection = 1;      // NCCL_IB_QPS_PER_CONNECTION (InfiniBand and RoCE)
  bool pxn = true;                    // NCCL_PXN_DISABLE=0
  bool nvls = true;                   // NCCL_NVLS_ENABLE (where the hardware has it)
  bool collnet = true;                // NCCL_COLLNET_ENABLE (where the fabric has SHARP)

  bool allows(Algorithm a) const;
  bool allows(Protocol p) const;
};

// Sets one of NCCL's environment variables on the tuning: NCCL_ALGO, NCCL_PROTO,
// NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS,
// NCCL_NCHANNELS_PER_NET_PEER, NCCL_IB_QPS_PER_CONNECTION, NCCL_PXN_DISABLE, NCCL_NVLS_ENABLE,
// NCCL_COLLNET_ENABLE.
// Variables that do not change the model (NCCL_CROSS_NIC: rings stay on their rails where the
// fabric has them; NCCL_IB_HCA, NCCL_DEBUG, ...) are accepted and ignored. Returns an error
// message, empty on success.
std::string apply_nccl_env(CollectiveTuning& tuning, std::string_view name, std::string_view value);
// The variables that reproduce the tuning's non-default settings, in a fixed order.
std::vector<std::pair<std::string, std::string>> nccl_env_of(const CollectiveTuning& tuning);

}  // namespace trainsim::models
