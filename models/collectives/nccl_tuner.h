// NCCL's view of a communicator on a cluster and NCCL's own cost model: what its topology search
// finds (channels and their per-channel speed, per algorithm), which algorithms and protocols it
// enables, how many channels it launches for an operation, its point-to-point channel counts, and
// the tuner's time = latency + bytes / bandwidth per (algorithm, protocol), with which NCCL
// chooses. These are NCCL's figures (the link speeds it assumes, its constant tables per release):
// they decide what NCCL runs. algorithms.h predicts how long that takes on the modelled fabric.
//
// Source: NVIDIA/nccl src/graph/{topo,search,paths,tuning}.cc and src/enqueue.cc, as summarised
// with references in the project notes (nccl-model.md). The channel search is reduced to its
// capacity rules: per speed of NCCL's speed arrays, how many rings the NICs, the PCIe paths and
// NVLink can carry; NCCL's graph search explores paths one by one but, on the node shapes
// modelled here (NVSwitch or PCIe nodes with NICs), meets the same limits.
#pragma once

#include <optional>
#include <vector>

#include "models/spec/cluster_spec.h"
#include "models/spec/collective_op.h"
#include "models/spec/collective_tuning.h"

namespace trainsim::models {

// One search result: channels and GB/s per channel inside the node and across nodes.
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0.0;
  double bw_inter = 0.0;
};

struct NcclComm {
  GpuArch arch = GpuArch::kHopper;
  CpuVendor cpu = CpuVendor::kIntel;
  NcclVersion version;
  int nodes = 1;
  int ppn = 1;
  int ranks = 1;
  bool intra_nvlink = true;  // GPUs of a node joined by NVLink (NVSwitch), else PCIe
  bool ll128 = true;         // LL128 enabled (NVLink inside nodes, GPUDirect across)
  bool nvls = false;         // NVLS hardware and enabled
  bool collnet = false;      // in-network reduction (SHARP) available and enabled
  int nics_per_node = 0;     // NICs the GPUs of a node use
  // Link speeds NCCL assumes (GB/s): a GPU's NVLink in total, a GPU's PCIe link, one NIC.
  double nvlink_bw = 0.0;
  double pcie_bw = 0.0;
  double nic_bw = 0.0;
  NcclGraph ring;
  NcclGraph tree;
  NcclGraph nvls_graph;     // single node: nvls channels; several: one head per NIC rail
  NcclGraph collnet_graph;  // one head per NIC
  int channels = 1;         // comm->nChannels: collective channels
  int nvls_channels = 0;
  int p2p_channels = 1;           // p2pnChannels
  int p2p_channels_per_peer = 1;  // channels to one network peer (nodes > 1)
};

// NCCL's view of `cluster` (already restricted to the GPUs per node taking part) on `nodes`.
NcclComm make_nccl_comm(const ClusterSpec& cluster, int nodes);

// Whether NCCL runs `op` with this algorithm and protocol on this communicator.
bool nccl_enabled(const NcclComm& comm, const CollectiveTuning& env, CollectiveOp op,
                  Algorithm algorithm, Protocol protocol);

// The tuner's estimate (us) of `op` over `bytes` (nccl-tests' size: the larger buffer of a rank),
// infinite where the pair is not enabled or has no bandwidth.
double nccl_tuner_time_us(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                          Protocol protocol, double bytes);
// Its two parts: latency (us) and algorithm bandwidth (GB/s, 0 if none), for `bytes`.
struct NcclTunerCost {
  double latency_us = 0.0;
  double algbw = 0.0;
};
NcclTunerCost nccl_tuner_cost(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                              Protocol protocol, double bytes);

struct NcclChoice {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double tuner_time_us = 0.0;
};
// What NCCL runs for `op` of `bytes`: the enabled (algorithm, protocol) of least tuner time
// (NCCL_ALGO / NCCL_PROTO in `env`, or `forced`, restrict the choice). All-to-all and send/recv
// are grouped point-to-point operations (kTwoD with PXN, kDirect without, kP2p), whose protocol
// follows NCCL's size rule (LL up to 16 KiB per channel). Empty if nothing can run it.
std::optional<NcclChoice> nccl_choose(const NcclComm& comm, const CollectiveTuning& env,
                                      CollectiveOp op, double bytes,
                                      std::optional<Algorithm> forced = std::nullopt);

// Channels NCCL launches for one operation (fewer for small messages: enqueue.cc's threshold).
int nccl_launched_channels(const NcclComm& comm, Algorithm algorithm, Protocol protocol,
                           double bytes);
// Channels one point-to-point operation of `bytes` to a peer uses (the same rule for network
// and NVLink peers: every peer gets the communicator's channels per peer at most).
int nccl_p2p_op_channels(const NcclComm& comm, double bytes);
// Where NCCL runs the parts of point-to-point operations.
class NcclP2pPlacement {
 public:
  explicit NcclP2pPlacement(const NcclComm& comm);
  // The round of NCCL's schedule (init.cc) in which rank `from` sends to `to`: on one node the
  // rank delta; across nodes the node delta's place in NCCL's quadratic probing of node deltas
  // (0, 1, 3, 6, ... modulo the next power of two, those under the node count), times the GPUs
  // per node, plus the local delta.
  int round(int from, int to) const;
  // The channel of part `part` of an operation of round `round` (enqueue.cc): the round's base
  // channel (across nodes: one per node round and per 8 local ranks, NCCL's operations per
  // batch), plus the part's index bit-reversed, modulo the p2p channels.
  int channel(int round, int part) const { return channel_at(base(round), part); }
  // The same from the round's base (computed once for an operation's parts).
  int base(int round) const;
  int channel_at(int base, int part) const {
    return (base + reversed_[part & (channels_ - 1)]) & (channels_ - 1);
  }
  int channels() const { return channels_; }

 private:
  int nodes_;
  int ppn_;
  int channels_;
  std::vector<int> node_round_;  // by node delta
  std::vector<int> reversed_;    // by part: its index bit-reversed over log2(channels) bits
};

// NCCL's per-hop latency tables (us) and its bandwidth caps, by link type, algorithm and protocol.
enum class HopKind { kNvlink, kPcie, kNetwork };
struct HopLatencyScales {
  double nvlink = 1.0;
  double pcie = 1.0;
  double network = 1.0;
  // Protocol multipliers of every network step's latency (Simple: 1). LL and LL128 cross the
  // network through the proxy (the sender's steps staged in host memory, whose flags the proxy
  // polls before it posts them), which NCCL's network figures do not carry; NVLink and PCIe steps
  // are the GPUs' own loads and stores, as NCCL's figures have them.
  double ll = 1.0;
  double ll128 = 1.0;
  double of(HopKind kind) const {
    return kind == HopKind::kNvlink ? nvlink : kind == HopKind::kPcie ? pcie : network;
  }
  double of(Protocol p) const {
    return p == Protocol::kLl ? ll : p == Protocol::kLl128 ? ll128 : 1.0;
  }
  // A step's multiplier over `kind` under `p`: the link's, and on the network the protocol's too.
  double of(HopKind kind, Protocol p) const {
    return of(kind) * (kind == HopKind::kNetwork ? of(p) : 1.0);
  }
};
// NCCL's latency formula for the pair (us, its plateau factor included) with its per-step hop
// latencies scaled by link type, and its network steps by protocol (the intra-node constants of
// NVLS and CollNet, which are per operation, not per step, are kept); the tuner itself uses
// scale 1.
double nccl_latency_us(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                       Protocol protocol, double bytes, const HopLatencyScales& scales);
double nccl_base_latency_us(const NcclComm& comm, Algorithm algorithm, Protocol protocol);
double nccl_hop_latency_us(const NcclComm& comm, HopKind hop, Algorithm algorithm,
                           Protocol protocol);
// NCCL's network post overhead (us), x3 for Simple.
double nccl_net_overhead_us(const NcclComm& comm, Protocol protocol);
struct NcclBandwidthCaps {
  double ll_max = 0.0;                 // LL, whole operation, busbw GB/s
  double ring_ll128_per_channel = 0.0;  // busbw GB/s per channel
  double tree_per_channel = 0.0;
  double tree_ll128_per_channel = 0.0;
  double nvls_tree_per_channel = 0.0;
  double nvls_efficiency = 0.0;  // fraction of NVLink bandwidth in-switch reduction reaches
};
NcclBandwidthCaps nccl_bandwidth_caps(const NcclComm& comm);
// NCCL's treeCorrectionFactor for `bytes` (1 outside its table).
double nccl_tree_correction(Protocol protocol, double bytes);

// NVLS runs as many operations at once as it has channels times heads (on one node every GPU of
// the NVLink domain is a head; across nodes, one per NIC rail), each in chunk steps.
int nccl_nvls_concurrent_ops(const NcclComm& comm);
// The chunk an NVLS operation of `bytes` moves per step (enqueue.cc): NCCL_NVLS_CHUNKSIZE,
// 128 KiB (32 KiB across nodes when the tuner rates the algorithm under 150 GB/s), then 64, 32
// and 16 KiB while the message is under 64, 8 and 2 chunks per concurrent operation; NVLSTree
// (`tree`): 64 and 32 KiB under 4 and 1. Mid-size messages so take many small steps.
double nccl_nvls_chunk_bytes(const NcclComm& comm, double bytes, bool tree = false);
// The chunk steps each concurrent operation of an NVLS (or NVLSTree) operation takes: its share
// of `bytes` in those chunks, one step at least.
double nccl_nvls_chunks_per_op(const NcclComm& comm, double bytes, bool tree = false);

// Steps of a ring operation over n ranks and the inter-node ones among them (NCCL's counts).
int nccl_ring_steps(CollectiveOp op, int ranks);
int nccl_ring_inter_steps(const NcclComm& comm, CollectiveOp op);

int log2_floor(long long v);  // NCCL's log2i: 0 for v <= 1

}  // namespace trainsim::models
