#include "models/collectives/algorithms.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "engine/check.h"
#include "models/collectives/collective_plan.h"

namespace trainsim::models {

namespace {

constexpr double kGB = 1e9;

// The cluster's hop latency scales. On InfiniBand and RoCE (NCCL's own IB transport) a network
// step is posted as one work request per queue pair of the connection
// (NCCL_IB_QPS_PER_CONNECTION), each posted and its completion polled by the proxy in turn: the
// step's latency is that many times one request's. The plugins of other transports (EFA, TCPX)
// do not read the variable.
HopLatencyScales scales_of(const ClusterSpec& cluster) {
  const CollectiveTuning& t = cluster.collectives;
  const bool ib = cluster.nic.transport == NetTransport::kInfiniband ||
                  cluster.nic.transport == NetTransport::kRoce;
  const double qps = ib ? std::max(1, t.ib_qps_per_connection) : 1.0;
  return {t.nvlink_latency_scale, t.pcie_latency_scale, t.network_latency_scale * qps,
          t.ll_latency_scale, t.ll128_latency_scale};
}

Time launch_cost(const ClusterSpec& cluster, int gpus_per_thread) {
  return cluster.collectives.launch_latency * std::max(1, gpus_per_thread);
}

// Wire bytes per data byte of a protocol on rings (NCCL: LL moves 4 data bytes per 8, LL128 is
// rated at 0.92 of Simple; tuning.cc).
double ring_wire(Protocol p) {
  return p == Protocol::kLl ? 2.0 : p == Protocol::kLl128 ? 1.0 / 0.92 : 1.0;
}

// NVLS steps whose latency shows in the time. On one NVLink domain each concurrent NVLS operation
// moves its share in chunk steps, and every step costs the step latency on top of its bytes.
// NVLSTree runs the NVLS scatter, the NVLS reduce with the tree's sends, and the tree's receives
// with the NVLS broadcast in separate warp groups, a chunk in each: the network stage, at a NIC's
// share per operation (80 us or more per 128 KiB chunk at 8 x 400G), is the slower one, so a
// step's latency hides behind it except on the first chunk's way in (scatter, reduce) and the last
// one's way out (broadcast): three steps, whatever the size. (Counted per chunk, B200's rows from
// 128 MiB up came out 4 to 14% slow; counted as three, it is 7.7% held out, not 15.2%.)
double nvls_steps_exposed(const NcclComm& comm, const CollectiveRequest& r) {
  constexpr double kNvlsTreeExposedSteps = 3.0;
  if (r.algorithm == Algorithm::kNvlsTree) return kNvlsTreeExposedSteps;
  return nccl_nvls_chunks_per_op(comm, r.bytes, false);
}

// A stream's links, hop by hop.
struct PathBuilder {
  Router& router;
  const ClusterTopology& topo;
  std::vector<LinkId> links;

  void route(VertexId a, VertexId b) {
    if (a == b) return;
    for (const LinkId l : router.links(router.route(a, b))) links.push_back(l);
  }
  void link(VertexId a, VertexId b) { links.push_back(link_between(topo.topology, a, b)); }
  // GPU (node, local) to GPU (node2, local2) of another node: out through NIC `nic` of the
  // sender's node, in through NIC `nic2` of the receiver's.
  void cross(int node, int local, int nic, int node2, int local2, int nic2) {
    link(topo.gpu(node, local), topo.nic_send_vertices[node][nic]);
    route(topo.nic_send_vertices[node][nic], topo.nic_receive_vertices[node2][nic2]);
    link(topo.nic_receive_vertices[node2][nic2], topo.gpu(node2, local2));
  }
  // GPU to the switch its NIC plugs into, and back.
  void up_to_switch(int node, int local, int nic) {
    link(topo.gpu(node, local), topo.nic_send_vertices[node][nic]);
    link(topo.nic_send_vertices[node][nic], topo.nic_switch_vertices[node][nic]);
  }
  void down_from_switch(int node, int local, int nic) {
    link(topo.nic_switch_vertices[node][nic], topo.nic_receive_vertices[node][nic]);
    link(topo.nic_receive_vertices[node][nic], topo.gpu(node, local));
  }
};

// A NIC of `local` (the `slot`-th of its NICs, cyclically).
int nic_of(const ClusterTopology& topo, int local, int slot) {
  const auto& nics = topo.nics_of_gpu[local];
  TRAINSIM_ASSERT(!nics.empty(), "GPU without a NIC");
  return nics[slot % nics.size()];
}

// The first local GPU that sends through NIC `nic` (every NIC serves one at least).
int gpu_of_nic(const ClusterTopology& topo, int nic) {
  for (int local = 0; local < topo.gpus_per_node; ++local) {
    const auto& list = topo.nics_of_gpu[local];
    if (std::find(list.begin(), list.end(), nic) != list.end()) return local;
  }
  TRAINSIM_ASSERT(false, "NIC without a GPU");
  return 0;
}

// How many of C channels map to stream r of R (channel c runs on stream c mod R).
int channels_on(int c, int r, int streams) { return c / streams + (r < c % streams ? 1 : 0); }

// The rings of a ring algorithm, as rank sequences plus the NIC each inter-node hop leaves and
// enters by. Across nodes there is one ring per NIC (rail): ring r leaves even nodes from the GPU
// x of NIC r and enters them at x + 1, odd nodes run the chain backwards (NCCL's crossNic pairing
// with odd nodes swapping channels), so every inter-node hop stays on one rail, but for an odd
// number of nodes the hop from the last node back to node 0 (both even), which changes rail.
struct RingOrder {
  std::vector<int> ranks;      // node-major order of the whole ring
  std::vector<int> exit_nic;   // per node: NIC the hop to the next node leaves by
  std::vector<int> entry_nic;  // per node: NIC the hop from the previous node enters by
};

std::vector<RingOrder> ring_orders(const ClusterTopology& topo, int rings) {
  const int g = topo.gpus_per_node;
  const int nodes = topo.nodes;
  std::vector<RingOrder> out;
  if (nodes == 1) {
    RingOrder ring;
    for (int i = 0; i < g; ++i) ring.ranks.push_back(i);
    out.push_back(ring);
    return out;
  }
  const int nics = static_cast<int>(topo.nic_send_vertices[0].size());
  TRAINSIM_ASSERT(nics > 0, "nodes without NICs");
  for (int r = 0; r < rings; ++r) {
    // The NIC and its GPU x that even nodes leave by; y = x + 1 enters them.
    const int nic = r % nics;
    const int x = gpu_of_nic(topo, nic);
    const int y = (x + 1) % g;
    const auto& x_nics = topo.nics_of_gpu[x];
    const int slot =
        static_cast<int>(std::find(x_nics.begin(), x_nics.end(), nic) - x_nics.begin());
    const int y_nic = nic_of(topo, y, slot);
    RingOrder ring;
    for (int n = 0; n < nodes; ++n) {
      const bool even = n % 2 == 0;
      for (int i = 0; i < g; ++i) {
        const int local = even ? (y + i) % g : (x - i + g) % g;
        ring.ranks.push_back(n * g + local);
      }
      ring.exit_nic.push_back(even ? nic : y_nic);
      ring.entry_nic.push_back(even ? y_nic : nic);
    }
    out.push_back(ring);
  }
  return out;
}

// Distinct rings for C launched channels: one per NIC across nodes, one inside a node.
int distinct_rings(const ClusterTopology& topo, int channels) {
  if (topo.nodes == 1) return 1;
  return std::max(1, std::min(channels, static_cast<int>(topo.nic_send_vertices[0].size())));
}

// Links of the hop from ring position i to i+1 (wrapping).
void ring_hop(PathBuilder& path, const ClusterTopology& topo, const RingOrder& ring,
              std::size_t i) {
  const int g = topo.gpus_per_node;
  const int a = ring.ranks[i];
  const int b = ring.ranks[(i + 1) % ring.ranks.size()];
  if (a / g == b / g) {
    path.route(topo.gpu_vertices[a], topo.gpu_vertices[b]);
  } else {
    path.cross(a / g, a % g, ring.exit_nic[a / g], b / g, b % g, ring.entry_nic[b / g]);
  }
}

double busbw_cap_to_rate(double per_channel_busbw, int channels, double factor_n) {
  return per_channel_busbw * kGB * channels * factor_n;
}

// Tree parent of `rank` among n in NCCL's binary tree (ncclGetBtree); -1 for the root.
int btree_parent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

// Double binary tree (ncclGetDtree): tree 1 mirrors tree 0 for an even count, shifts it by one
// for an odd count.
int dtree_parent(int n, int tree, int rank) {
  if (tree == 0) return btree_parent(n, rank);
  if (n % 2 == 0) {
    const int p = btree_parent(n, n - 1 - rank);
    return p < 0 ? -1 : n - 1 - p;
  }
  const int p = btree_parent(n, (rank - 1 + n) % n);
  return p < 0 ? -1 : (p + 1) % n;
}

struct Lowering {
  Router& router;
  const ClusterSpec& cluster;
  const ClusterTopology& topo;
  const NcclComm& comm;
  const CollectiveRequest& request;
  Protocol protocol;
  LoweredCollective out;

  int g() const { return topo.gpus_per_node; }
  int nodes() const { return topo.nodes; }
  int ranks() const { return topo.gpu_count(); }
  PathBuilder path() { return PathBuilder{router, topo, {}}; }
  NcclBandwidthCaps caps() const { return nccl_bandwidth_caps(comm); }
  double nvls_efficiency() const {
    if (cluster.intra_node.nvls_efficiency > 0) return cluster.intra_node.nvls_efficiency;
    const double nccl = caps().nvls_efficiency;
    return nccl > 0 ? nccl : 1.0;
  }

  void add(int stage, PathBuilder&& p, double bytes_per_byte, double cap) {
    if (static_cast<int>(out.stages.size()) <= stage) out.stages.resize(stage + 1);
    if (p.links.empty() || bytes_per_byte <= 0) return;
    out.stages[stage].push_back(Stream{std::move(p.links), bytes_per_byte, cap});
  }

  // Ring all-reduce, all-gather, reduce-scatter, and the pipelined chain of broadcast / reduce.
  void ring() {
    const int n = ranks();
    const int c = nccl_launched_channels(comm, Algorithm::kRing, protocol, request.bytes);
    const int streams = distinct_rings(topo, c);
    const auto orders = ring_orders(topo, streams);
    const bool chain =
        request.op == CollectiveOp::kBroadcast || request.op == CollectiveOp::kReduce;
    const double steps = chain ? 1.0 : static_cast<double>(nccl_ring_steps(request.op, n)) / n;
    const NcclBandwidthCaps k = caps();
    const double wire = ring_wire(protocol);
    for (int r = 0; r < streams; ++r) {
      const int on = channels_on(c, r, streams);
      PathBuilder p = path();
      const RingOrder& ring = orders[r % orders.size()];
      if (chain) {
        const auto at =
            std::find(ring.ranks.begin(), ring.ranks.end(), request.root) - ring.ranks.begin();
        for (int i = 0; i + 1 < n; ++i) ring_hop(p, topo, ring, (at + i) % n);
      } else {
        for (int i = 0; i < n; ++i) ring_hop(p, topo, ring, i);
      }
      double cap = FlowNetwork::kUncapped;
      // Bus bandwidth of a ring = the sum of its channels' rates (each hop carries the same).
      if (protocol == Protocol::kLl128) cap = k.ring_ll128_per_channel * kGB * on * wire;
      if (protocol == Protocol::kLl) cap = k.ll_max * kGB * on / c * wire;
      add(0, std::move(p), steps * on / c * wire, cap);
    }
  }

  // Tree all-reduce: chains inside nodes towards the head GPU of the channel's NIC, NCCL's double
  // binary tree of the nodes' heads; each channel moves its share up (reduce) and down.
  void tree() {
    const int n = ranks();
    const int c = nccl_launched_channels(comm, Algorithm::kTree, protocol, request.bytes);
    const int nics = nodes() > 1 ? static_cast<int>(topo.nic_send_vertices[0].size()) : 1;
    const int streams = nodes() > 1 ? std::min(c, 2 * nics) : 1;
    const NcclBandwidthCaps k = caps();
    const double eff = protocol == Protocol::kSimple ? 0.92
                       : protocol == Protocol::kLl128
                           ? 0.92 * (nodes() == 1 ? 7.0 / 9.0 : 120.0 / 128.0)
                           : 0.92 / 3.8;
    double per_channel = k.tree_per_channel;
    if (protocol == Protocol::kLl128) {
      per_channel = std::min(per_channel * (nodes() == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                             k.tree_ll128_per_channel);
    }
    if (protocol == Protocol::kLl) per_channel = std::min(per_channel / 3.8, k.ll_max / c);
    // Per-channel bus bandwidth b over C_s channels of a stream moving S/C each: rate
    // b x C_s x n / (2 (n - 1)).
    const double factor = n > 1 ? n / (2.0 * (n - 1)) : 1.0;
    for (int s = 0; s < streams; ++s) {
      const int on = channels_on(c, s, streams);
      const int tree_index = s % 2;
      const int nic = (s / 2) % nics;
      const int head = nodes() > 1 ? gpu_of_nic(topo, nic) : 0;
      PathBuilder p = path();
      for (int node = 0; node < nodes(); ++node) {
        // Chain head, head+1, ...: up is towards the head.
        for (int i = g() - 1; i >= 1; --i) {
          const VertexId from = topo.gpu(node, (head + i) % g());
          const VertexId to = topo.gpu(node, (head + i - 1) % g());
          p.route(from, to);
          p.route(to, from);
        }
        const int parent = dtree_parent(nodes(), tree_index, node);
        if (parent >= 0) {
          p.cross(node, head, nic, parent, head, nic);
          p.cross(parent, head, nic, node, head, nic);
        }
      }
      const double wire = 1.0 / eff;
      add(0, std::move(p), static_cast<double>(on) / c * wire,
          busbw_cap_to_rate(per_channel, on, factor) * wire);
    }
  }

  // NVLS inside each node: every GPU's traffic to and from the switch (reduce via
  // multimem.ld_reduce, broadcast via multicast stores).
  void nvls_intra(double up, double down, double efficiency) {
    TRAINSIM_ASSERT(!topo.nvswitch_vertices.empty(), "NVLS needs NVSwitch nodes");
    for (int node = 0; node < nodes(); ++node) {
      const VertexId sw = topo.nvswitch_vertices[node];
      for (int local = 0; local < g(); ++local) {
        PathBuilder u = path();
        u.link(topo.gpu(node, local), sw);
        add(0, std::move(u), up / efficiency, FlowNetwork::kUncapped);
        PathBuilder d = path();
        d.link(sw, topo.gpu(node, local));
        add(0, std::move(d), down / efficiency, FlowNetwork::kUncapped);
      }
    }
  }

  void nvls() {
    const double gg = g();
    const double eff = nvls_efficiency();
    switch (request.op) {
      case CollectiveOp::kAllReduce:
        nvls_intra((gg + 1) / gg, (gg + 1) / gg, eff);
        if (nodes() > 1) in_network(1.0, 1.0);  // NCCL: interBw = bwInter, no NVLS factor
        break;
      case CollectiveOp::kAllGather:
        nvls_intra(1 / gg, 1.0, eff);
        break;
      default:  // reduce-scatter
        nvls_intra(1.0, 1 / gg, eff);
        break;
    }
  }

  // Heads (the GPU of each NIC rail) exchanging through the switch, which reduces (SHARP):
  // each head sends its share up and receives the result.
  void in_network(double share, double efficiency) {
    const int nics = static_cast<int>(topo.nic_send_vertices[0].size());
    const int heads = std::max(1, std::min(g(), nics));
    for (int node = 0; node < nodes(); ++node) {
      for (int h = 0; h < heads; ++h) {
        const int local = gpu_of_nic(topo, h);
        PathBuilder u = path();
        u.up_to_switch(node, local, h);
        add(0, std::move(u), share / heads / efficiency, FlowNetwork::kUncapped);
        PathBuilder d = path();
        d.down_from_switch(node, local, h);
        add(0, std::move(d), share / heads / efficiency, FlowNetwork::kUncapped);
      }
    }
  }

  void nvls_tree() {
    const int n = ranks();
    const double gg = g();
    const NcclBandwidthCaps k = caps();
    const double eff = nvls_efficiency();
    nvls_intra((gg + 1) / gg, (gg + 1) / gg, eff);
    const int heads = std::max(1, comm.nvls_graph.channels);
    const int nics = static_cast<int>(topo.nic_send_vertices[0].size());
    // Per head, two trees each move S / (2 H) up and down; a head's bus bandwidth is then
    // 4 r (n - 1) / n for stream rate r, capped at NCCL's per-channel NVLSTree figure.
    const double cap = k.nvls_tree_per_channel * kGB * n / (4.0 * (n - 1));
    for (int h = 0; h < heads; ++h) {
      const int nic = h % nics;
      const int head = gpu_of_nic(topo, nic);
      for (int tree_index = 0; tree_index < 2; ++tree_index) {
        PathBuilder p = path();
        for (int node = 0; node < nodes(); ++node) {
          const int parent = dtree_parent(nodes(), tree_index, node);
          if (parent < 0) continue;
          p.cross(node, head, nic, parent, head, nic);
          p.cross(parent, head, nic, node, head, nic);
        }
        add(0, std::move(p), 1.0 / (2.0 * heads), cap > 0 ? cap : FlowNetwork::kUncapped);
      }
    }
  }

  void collnet() {
    const double gg = g();
    // Inside the node: a reduce-scatter to the heads and an all-gather back, over NVLink (Direct:
    // every GPU to every head; Chain: a chain to one head per rail, the same bytes per GPU).
    if (g() > 1) {
      for (int node = 0; node < nodes(); ++node) {
        for (int local = 0; local < g(); ++local) {
          const VertexId gpu = topo.gpu(node, local);
          const VertexId next = topo.gpu(node, (local + 1) % g());
          PathBuilder u = path();
          u.route(gpu, next);
          add(0, std::move(u), 2 * (gg - 1) / gg, FlowNetwork::kUncapped);
        }
      }
    }
    const double eff =
        request.algorithm == Algorithm::kCollNetDirect && comm.arch >= GpuArch::kHopper ? 0.85
                                                                                        : 1.0;
    in_network(1.0, eff);
  }

  // PAT (one GPU per node): each rank's NICs carry (n - 1) / n of the buffer each way, at
  // NCCL's 0.75 of the ring's bandwidth.
  void pat() {
    const int n = ranks();
    const auto& nics = topo.nics_of_gpu[0];
    for (int node = 0; node < nodes(); ++node) {
      for (const int nic : nics) {
        const double share = (n - 1.0) / n / nics.size() / 0.75;
        PathBuilder u = path();
        u.up_to_switch(node, 0, nic);
        add(0, std::move(u), share, FlowNetwork::kUncapped);
        PathBuilder d = path();
        d.down_from_switch(node, 0, nic);
        add(0, std::move(d), share, FlowNetwork::kUncapped);
      }
    }
  }

  // Hierarchical (not NCCL's): ring reduce-scatter in each node, ring all-reduce of each 1/G shard
  // among the GPUs of one local index, ring all-gather in each node.
  void hierarchical() {
    const double gg = g();
    const double nn = nodes();
    for (int stage : {0, 2}) {
      for (int node = 0; node < nodes(); ++node) {
        PathBuilder p = path();
        for (int i = 0; i < g(); ++i) {
          p.route(topo.gpu(node, i), topo.gpu(node, (i + 1) % g()));
        }
        add(stage, std::move(p), (gg - 1) / gg, FlowNetwork::kUncapped);
      }
    }
    for (int local = 0; local < g(); ++local) {
      PathBuilder p = path();
      const int nic = nic_of(topo, local, 0);
      for (int node = 0; node < nodes(); ++node) {
        p.cross(node, local, nic, (node + 1) % nodes(), local, nic);
      }
      add(1, std::move(p), 2 * (nn - 1) / nn / gg, FlowNetwork::kUncapped);
    }
  }

  void latency() {
    const HopLatencyScales scales = scales_of(cluster);
    double us = 0.0;
    if (ranks() > 1) {
      if (request.algorithm == Algorithm::kHierarchical) {
        NcclComm node_comm = comm;
        node_comm.nodes = 1;
        node_comm.ranks = g();
        NcclComm rail_comm = comm;
        rail_comm.ppn = 1;
        rail_comm.ranks = nodes();
        us = 2 * nccl_latency_us(node_comm, CollectiveOp::kReduceScatter, Algorithm::kRing,
                                 protocol, request.bytes, scales) +
             nccl_latency_us(rail_comm, CollectiveOp::kAllReduce, Algorithm::kRing, protocol,
                             request.bytes / g(), scales);
      } else if (request.op == CollectiveOp::kBroadcast || request.op == CollectiveOp::kReduce) {
        // A chain fills once: one hop per rank, nodes - 1 of them across nodes.
        const HopKind intra = comm.intra_nvlink ? HopKind::kNvlink : HopKind::kPcie;
        const int inter = nodes() - 1;
        us = nccl_base_latency_us(comm, Algorithm::kRing, protocol) +
             (ranks() - 1 - inter) * nccl_hop_latency_us(comm, intra, Algorithm::kRing, protocol) *
                 scales.of(intra, protocol) +
             inter * nccl_hop_latency_us(comm, HopKind::kNetwork, Algorithm::kRing, protocol) *
                 scales.of(HopKind::kNetwork, protocol);
      } else {
        us = nccl_latency_us(comm, request.op, request.algorithm, protocol, request.bytes, scales);
      }
      const bool tree = request.algorithm == Algorithm::kNvlsTree;
      if ((request.algorithm == Algorithm::kNvls || tree) &&
          cluster.intra_node.nvls_step_latency > 0) {
        us += nvls_steps_exposed(comm, request) * to_seconds(cluster.intra_node.nvls_step_latency) *
              1e6;
      }
    }
    out.latency = launch_cost(cluster, request.gpus_per_thread) + time_from_seconds(us * 1e-6);
  }

  void run() {
    latency();
    if (ranks() == 1) return;
    switch (request.algorithm) {
      case Algorithm::kRing:
        ring();
        break;
      case Algorithm::kTree:
        tree();
        break;
      case Algorithm::kNvls:
        nvls();
        break;
      case Algorithm::kNvlsTree:
        nvls_tree();
        break;
      case Algorithm::kCollNetDirect:
      case Algorithm::kCollNetChain:
        collnet();
        break;
      case Algorithm::kPat:
        pat();
        break;
      case Algorithm::kHierarchical:
        hierarchical();
        break;
      default:
        TRAINSIM_ASSERT(false, "not a stream algorithm");
    }
  }
};

bool uses_plan(Algorithm a) {
  return a == Algorithm::kDirect || a == Algorithm::kTwoD || a == Algorithm::kP2p;
}

const NcclComm& comm_of(const ClusterSpec& cluster, const ClusterTopology& topology,
                        AnalyticCache* cache, std::optional<NcclComm>& local) {
  if (cache) {
    if (!cache->comm) cache->comm = make_nccl_comm(cluster, topology.nodes);
    return *cache->comm;
  }
  local = make_nccl_comm(cluster, topology.nodes);
  return *local;
}

// Point-to-point: the software latency of one operation (launch, NCCL's base and one hop).
Time p2p_latency(const ClusterSpec& cluster, const NcclComm& comm, Protocol protocol,
                 int gpus_per_thread) {
  if (comm.ranks == 1) return launch_cost(cluster, gpus_per_thread);  // nothing to exchange
  const HopLatencyScales scales = scales_of(cluster);
  const HopKind hop = comm.nodes > 1      ? HopKind::kNetwork
                      : comm.intra_nvlink ? HopKind::kNvlink
                                          : HopKind::kPcie;
  const double us =
      nccl_base_latency_us(comm, Algorithm::kRing, protocol) +
      nccl_hop_latency_us(comm, hop, Algorithm::kRing, protocol) * scales.of(hop, protocol);
  return launch_cost(cluster, gpus_per_thread) + time_from_seconds(us * 1e-6);
}

// The plan of a grouped point-to-point operation: bytes(a, b) from rank a to rank b, through
// the destination rail's GPU across nodes with PXN. Each operation runs in parts (NCCL's channels
// per peer), each on the channel NCCL gives it (its round's base channel and the part's index);
// a channel splits its warps evenly among the parts it carries, so a part moves at the channel's
// throughput over the sender's parts on that channel (its copy to itself included), and an
// operation's cap is the sum over its parts.
// `pairs(first, end, add)` calls add(a, b, bytes) for the pairs of senders first..end-1 that
// carry bytes, in an order that gives every flow its terms by sender, then by receiver.
template <class Pairs>
std::shared_ptr<CollectivePlan> p2p_plan(const ClusterSpec& cluster,
                                         const ClusterTopology& topology, const NcclComm& comm,
                                         Pairs&& pairs, bool pxn) {
  const int p = topology.gpu_count();
  const int g = topology.gpus_per_node;
  const double eff_intra = cluster.collectives.p2p_nvlink_efficiency;
  const double eff_net = cluster.collectives.p2p_network_efficiency;
  const double channel_bw = cluster.collectives.p2p_channel_bandwidth;
  const double nvlink_channel_bw =
      comm.intra_nvlink ? cluster.collectives.p2p_nvlink_channel_bandwidth : FlowNetwork::kUncapped;
  // Bytes and channel caps per (sender, receiver) flow, node by node: every flow leaving a GPU of
  // node n carries traffic from senders of node n only (to GPUs of n, to the proxy in n, or from
  // that proxy across), so the pairs of a few nodes' senders at a time are summed into a
  // (`kNodesAtOnce` x g) x p block, the flows they touched emitted row-major, and the block
  // cleared where it was touched. A transposed matrix is read receivers outer, those nodes'
  // senders inner. Every sum takes its terms in the same order either way (per flow: by sender,
  // then by receiver); pairs that carry nothing add nothing.
  constexpr int kNodesAtOnce = 8;
  // Parts per sender and channel.
  const NcclP2pPlacement placement(comm);
  const int channels_per_gpu = placement.channels();
  std::vector<std::uint32_t> load(static_cast<std::size_t>(p) * channels_per_gpu, 0);
  double last_bytes = -1.0;
  int last_channels = 0;
  auto parts_of = [&](double v) {
    if (v != last_bytes) {
      last_bytes = v;
      last_channels = nccl_p2p_op_channels(comm, v);
    }
    return last_channels;
  };
  // Sender a's loads, and the base channel of its operation to b.
  auto loads_of = [&](int a, int b) {
    return std::pair{load.data() + static_cast<std::size_t>(a) * channels_per_gpu,
                     placement.base(placement.round(a, b))};
  };
  pairs(0, p, [&](int a, int b, double v) {
    if (v <= 0.0) return;
    const int parts = parts_of(v);
    const auto [row, base] = loads_of(a, b);
    for (int k = 0; k < parts; ++k) ++row[placement.channel_at(base, k)];
  });
  auto plan = std::make_shared<CollectivePlan>(p);
  plan->set_gpus_per_node(g);
  const std::size_t span = static_cast<std::size_t>(std::min(p, kNodesAtOnce * g)) * p;
  std::vector<double> flows(span, 0.0);
  std::vector<double> caps(span, 0.0);
  std::vector<std::size_t> touched;
  for (int first = 0; first < p; first += kNodesAtOnce * g) {
    const int end = std::min(p, first + kNodesAtOnce * g);
    auto at = [&](int from, int to) { return static_cast<std::size_t>(from - first) * p + to; };
    auto charge = [&](std::size_t i, double v, double cap) {
      if (flows[i] == 0.0) touched.push_back(i);
      flows[i] += v;
      caps[i] += cap;
    };
    auto add = [&](int a, int b, double v) {
      if (a == b || v <= 0.0) return;
      // The operation's channels' worth: its parts, each sharing a channel with the sender's
      // parts per channel when they are more than one.
      const int parts = parts_of(v);
      const auto [row, base] = loads_of(a, b);
      double share = 0.0;
      for (int k = 0; k < parts; ++k) share += 1.0 / row[placement.channel_at(base, k)];
      if (a / g == b / g) {
        charge(at(a, b), v, share * nvlink_channel_bw);
        return;
      }
      const int proxy = pxn ? (a / g) * g + b % g : a;
      if (proxy != a) charge(at(a, proxy), v, share * nvlink_channel_bw);
      charge(at(proxy, b), v, share * channel_bw);
    };
    pairs(first, end, add);
    std::sort(touched.begin(), touched.end());
    for (const std::size_t i : touched) {
      const int a = first + static_cast<int>(i / p);
      const int b = static_cast<int>(i % p);
      const double eff = a / g == b / g ? eff_intra : eff_net;
      PlanTransfer t;
      t.from = topology.gpu_vertices[a];
      t.to = topology.gpu_vertices[b];
      t.bytes = flows[i] / eff;
      t.sender = a;
      t.receiver = b;
      t.rate_cap = caps[i] > 0 && std::isfinite(caps[i]) ? caps[i] / eff : FlowNetwork::kUncapped;
      plan->add(t);
      flows[i] = 0.0;
      caps[i] = 0.0;
    }
    touched.clear();
  }
  plan->finalize();
  return plan;
}

// A matrix's pairs: a transposed one read receivers outer, the senders' entries inner.
std::shared_ptr<CollectivePlan> p2p_plan(const ClusterSpec& cluster,
                                         const ClusterTopology& topology, const NcclComm& comm,
                                         ByteMatrixView bytes, bool pxn) {
  const ByteMatrix& matrix = bytes.matrix();
  auto pairs = [&](int first, int end, auto&& add) {
    if (bytes.transposed()) {
      for (int b = 0; b < matrix.size(); ++b) {
        for (const ByteMatrix::Entry& e : matrix.row(b, first, end)) add(e.to, b, e.bytes);
      }
    } else {
      for (int a = first; a < end; ++a) {
        for (const ByteMatrix::Entry& e : matrix.row(a)) add(a, e.to, e.bytes);
      }
    }
  };
  return p2p_plan(cluster, topology, comm, pairs, pxn);
}

// nccl-tests' uniform operation, without a matrix: alltoall sends size / ranks to every rank,
// sendrecv its size to the next.
std::shared_ptr<CollectivePlan> uniform_p2p_plan(const ClusterSpec& cluster,
                                                 const ClusterTopology& topology,
                                                 const NcclComm& comm,
                                                 const CollectiveRequest& request, bool pxn) {
  const int p = topology.gpu_count();
  auto pairs = [&](int first, int end, auto&& add) {
    for (int a = first; a < end; ++a) {
      if (request.op == CollectiveOp::kSendRecv) {
        if (p > 1) add(a, (a + 1) % p, request.bytes);
      } else {
        for (int b = 0; b < p; ++b) add(a, b, request.bytes / p);
      }
    }
  };
  return p2p_plan(cluster, topology, comm, pairs, pxn);
}

Protocol protocol_for(const ClusterSpec& cluster, const NcclComm& comm,
                      const CollectiveRequest& request) {
  if (request.protocol) return *request.protocol;
  if (request.algorithm == Algorithm::kHierarchical) return Protocol::kSimple;
  CollectiveTuning env = cluster.collectives;
  env.algorithms.clear();  // the request names the algorithm
  const auto choice = nccl_choose(comm, env, request.op, request.bytes, request.algorithm);
  return choice ? choice->protocol : Protocol::kSimple;
}

}  // namespace

// A lowered collective's flows, by stage, on a router's explicit routes (bytes for one run).
struct FlowCollectiveShape {
  struct Flow {
    RouteId route;
    double bytes;
    double cap;
  };
  int participants = 0;
  Time latency = 0;
  std::vector<std::vector<Flow>> stages;  // stream algorithms
  // Point-to-point algorithms: the plan (none on one GPU: the latency alone).
  bool point_to_point = false;
  std::shared_ptr<const CollectivePlan> plan;
};

namespace {

// A lowered collective as flows: once every participant has joined, the latency, then each
// stage's streams as flows on explicit routes.
class StreamCollective final : public Collective {
 public:
  StreamCollective(Simulation& sim, FlowNetwork& network,
                   std::shared_ptr<const FlowCollectiveShape> shape)
      : sim_(sim),
        network_(network),
        shape_(std::move(shape)),
        latency_(shape_->latency),
        done_(shape_->participants) {}

  void join(int participant, std::function<void()> done) override {
    TRAINSIM_ASSERT(!done_[participant], "participant joined twice");
    done_[participant] = std::move(done);
    if (++joined_ < static_cast<int>(done_.size())) return;
    sim_.schedule_in(latency_, [this] { run_stage(0); });
  }

 private:
  void run_stage(std::size_t stage) {
    const auto& stages = shape_->stages;
    while (stage < stages.size() && stages[stage].empty()) ++stage;
    if (stage == stages.size()) {
      for (auto& d : done_) {
        auto f = std::move(d);
        f();
      }
      return;
    }
    left_ = stages[stage].size();
    for (const FlowCollectiveShape::Flow& f : stages[stage]) {
      network_.start(
          f.route, f.bytes, {},
          [this, stage] {
            if (--left_ == 0) run_stage(stage + 1);
          },
          f.cap);
    }
  }

  Simulation& sim_;
  FlowNetwork& network_;
  std::shared_ptr<const FlowCollectiveShape> shape_;
  Time latency_;
  std::vector<std::function<void()>> done_;
  int joined_ = 0;
  std::size_t left_ = 0;
};

// A lowered collective's streams on the router's explicit routes, `bytes` for one run.
std::shared_ptr<FlowCollectiveShape> shape_of(Router& router, int participants,
                                              const LoweredCollective& lowered, double bytes,
                                              Time latency) {
  auto shape = std::make_shared<FlowCollectiveShape>();
  shape->participants = participants;
  shape->latency = latency;
  for (const auto& stage : lowered.stages) {
    std::vector<FlowCollectiveShape::Flow> flows;
    for (const Stream& s : stage) {
      flows.push_back({router.add_route(s.links), s.bytes_per_byte * bytes, s.rate_cap});
    }
    shape->stages.push_back(std::move(flows));
  }
  return shape;
}

// How much longer than its streams' bytes a pipelined algorithm takes to fill. NVLSTree: each
// concurrent operation pipelines its chunks through the tree; before the last stage is busy the
// first chunk crosses the network up the tree and back down, two stages at the bottleneck's rate
// (on a binary tree the levels above run at half of it: an interior node receives from two
// children), so k chunks take k + 2 chunk times. The two-node logs in validation/ fit 1.8 to 2.6
// extra chunk times each; the 4-node one 0 to 2.
double pipeline_fill(const NcclComm& comm, const CollectiveRequest& r) {
  if (r.algorithm != Algorithm::kNvlsTree || comm.nodes < 2) return 1.0;
  const double chunks = nccl_nvls_chunks_per_op(comm, r.bytes, true);
  return (chunks + 2) / chunks;
}

// What a lowering depends on besides the size: the operation, algorithm, protocol, root and, for
// rings and trees, the channels NCCL launches for the size.
std::string shape_key(const NcclComm& comm, const CollectiveRequest& r, Protocol p) {
  const int channels = r.algorithm == Algorithm::kRing || r.algorithm == Algorithm::kTree
                           ? nccl_launched_channels(comm, r.algorithm, p, r.bytes)
                           : 0;
  return std::to_string(static_cast<int>(r.op)) + "/" +
         std::to_string(static_cast<int>(r.algorithm)) + "/" + std::to_string(static_cast<int>(p)) +
         "/" + std::to_string(channels) + "/" + std::to_string(r.root);
}

}  // namespace

double stage_seconds(const Topology& topology, const std::vector<Stream>& streams, double bytes) {
  // Compress: per stream, its distinct links with multiplicity; links renumbered locally in
  // the order of their ids. `slot` maps a link id to its local number (kNone when not in the
  // stage), then, per stream, to its place in that stream's uses; both are reset after use, so
  // the thread's copy serves every call in O(links of the stage).
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  thread_local std::vector<std::uint32_t> slot, use_of;
  if (slot.size() < topology.link_count()) {
    slot.resize(topology.link_count(), kNone);
    use_of.resize(topology.link_count(), kNone);
  }
  std::vector<LinkId> ids;
  for (const Stream& s : streams) {
    for (const LinkId l : s.links) {
      if (slot[l] == kNone) {
        slot[l] = 0;
        ids.push_back(l);
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  for (std::size_t j = 0; j < ids.size(); ++j) slot[ids[j]] = static_cast<std::uint32_t>(j);
  const std::size_t n = streams.size();
  std::vector<std::vector<std::pair<std::size_t, double>>> uses(n);
  for (std::size_t i = 0; i < n; ++i) {
    // In order of first appearance on the stream (the order of a stream's uses changes no sum
    // below: each link's terms come one per stream, in stream order).
    for (const LinkId l : streams[i].links) {
      if (use_of[l] == kNone) {
        use_of[l] = static_cast<std::uint32_t>(uses[i].size());
        uses[i].emplace_back(slot[l], 0.0);
      }
      uses[i][use_of[l]].second += 1.0;
    }
    for (const LinkId l : streams[i].links) use_of[l] = kNone;
  }
  for (const LinkId l : ids) slot[l] = kNone;
  std::vector<double> remaining(n);
  std::vector<bool> active(n, false);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    remaining[i] = streams[i].bytes_per_byte * bytes;
    active[i] = remaining[i] > 0 && !uses[i].empty();
    left += active[i];
  }
  std::vector<double> capacity(ids.size());
  std::vector<double> weight(ids.size());
  std::vector<double> rate(n);
  std::vector<bool> fixed(n);
  // The streams on each link, in stream order (the order the filling fixes them in).
  std::vector<std::vector<std::uint32_t>> on_link(ids.size());
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& use : uses[i]) on_link[use.first].push_back(static_cast<std::uint32_t>(i));
  }
  auto share_of = [&](std::size_t l) { return std::max(capacity[l], 0.0) / weight[l]; };
  // Links by (fair share, local id). A link's share only grows as streams are fixed, so each
  // keeps one entry whose key is at most its share: the top, once its key is its share, is the
  // link of the smallest share and, among equal shares, of the smallest id.
  using Entry = std::pair<double, std::size_t>;
  std::vector<Entry> heap;
  const auto later = std::greater<Entry>{};
  // The streams by rate cap, then index: the first one not fixed has the smallest cap left (the
  // lowest index among equal caps).
  std::vector<std::uint32_t> by_cap(n);
  std::iota(by_cap.begin(), by_cap.end(), 0u);
  std::stable_sort(by_cap.begin(), by_cap.end(), [&](std::uint32_t a, std::uint32_t b) {
    return streams[a].rate_cap < streams[b].rate_cap;
  });
  double elapsed = 0.0;
  while (left > 0) {
    // Max-min rates of the active streams (progressive filling, weighted by multiplicity).
    for (std::size_t l = 0; l < ids.size(); ++l) {
      capacity[l] = topology.link(ids[l]).bandwidth_bytes_per_s;
      weight[l] = 0.0;
    }
    for (std::size_t i = 0; i < n; ++i) {
      fixed[i] = !active[i];
      if (!active[i]) continue;
      for (const auto& [l, m] : uses[i]) weight[l] += m;
    }
    heap.clear();
    for (std::size_t l = 0; l < ids.size(); ++l) {
      if (weight[l] > 0) heap.emplace_back(share_of(l), l);
    }
    std::make_heap(heap.begin(), heap.end(), later);
    std::size_t unfixed = left;
    std::size_t next_cap = 0;  // in `by_cap`: fixed streams only before it
    while (unfixed > 0) {
      double share = std::numeric_limits<double>::infinity();
      std::size_t bottleneck = ids.size();
      while (!heap.empty()) {
        const auto [key, l] = heap.front();
        if (weight[l] <= 0) {
          std::pop_heap(heap.begin(), heap.end(), later);
          heap.pop_back();
          continue;
        }
        const double s = share_of(l);
        if (s > key) {
          std::pop_heap(heap.begin(), heap.end(), later);
          heap.back().first = s;
          std::push_heap(heap.begin(), heap.end(), later);
          continue;
        }
        share = s;
        bottleneck = l;
        break;
      }
      std::size_t capped = n;
      while (next_cap < n && fixed[by_cap[next_cap]]) ++next_cap;
      if (next_cap < n && streams[by_cap[next_cap]].rate_cap < share) {
        capped = by_cap[next_cap];
        share = streams[capped].rate_cap;
      }
      auto fix = [&](std::size_t i, double r) {
        fixed[i] = true;
        rate[i] = r;
        --unfixed;
        for (const auto& [l, m] : uses[i]) {
          capacity[l] -= m * r;
          weight[l] -= m;
        }
      };
      if (capped < n) {
        fix(capped, share);
        continue;
      }
      TRAINSIM_ASSERT(bottleneck < ids.size(), "stream without a bottleneck");
      for (const std::uint32_t i : on_link[bottleneck]) {
        if (!fixed[i]) fix(i, share);
      }
    }
    // Advance to the first completion.
    double step = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      if (active[i]) step = std::min(step, remaining[i] / rate[i]);
    }
    elapsed += step;
    for (std::size_t i = 0; i < n; ++i) {
      if (!active[i]) continue;
      remaining[i] -= rate[i] * step;
      if (remaining[i] <= 1e-9 * streams[i].bytes_per_byte * bytes) {
        active[i] = false;
        --left;
      }
    }
  }
  return elapsed;
}

LoweredCollective lower_collective(Router& router, const ClusterSpec& cluster,
                                   const ClusterTopology& topology, const NcclComm& comm,
                                   const CollectiveRequest& request, Protocol protocol) {
  Lowering l{router, cluster, topology, comm, request, protocol, {}};
  l.run();
  return std::move(l.out);
}

bool is_applicable(Algorithm algorithm, CollectiveOp op, const ClusterSpec& cluster, int nodes) {
  switch (algorithm) {
    case Algorithm::kHierarchical:
      return op == CollectiveOp::kAllReduce && nodes > 1 && cluster.gpus_per_node > 1 &&
             cluster.nic.count > 0;
    case Algorithm::kDirect:
      return op == CollectiveOp::kAllToAll;
    case Algorithm::kTwoD:
      return op == CollectiveOp::kAllToAll && nodes > 1 && cluster.gpus_per_node > 1;
    case Algorithm::kP2p:
      return op == CollectiveOp::kSendRecv;
    default: {
      if (op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv) return false;
      const NcclComm comm = make_nccl_comm(cluster, nodes);
      CollectiveTuning env = cluster.collectives;
      env.algorithms.clear();
      env.protocols.clear();
      for (const Protocol p : all_protocols()) {
        if (nccl_enabled(comm, env, op, algorithm, p)) return true;
      }
      return false;
    }
  }
}

std::vector<Algorithm> applicable_algorithms(CollectiveOp op, const ClusterSpec& cluster,
                                             int nodes) {
  std::vector<Algorithm> out;
  for (const Algorithm a : all_algorithms()) {
    if (is_applicable(a, op, cluster, nodes)) out.push_back(a);
  }
  return out;
}

Time analytic_collective_time(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache) {
  std::optional<NcclComm> local;
  const NcclComm& comm = comm_of(cluster, topology, cache, local);
  const Protocol protocol = protocol_for(cluster, comm, request);
  if (uses_plan(request.algorithm)) {
    const Time latency = p2p_latency(cluster, comm, protocol, request.gpus_per_thread);
    if (topology.gpu_count() == 1) return latency;
    const bool pxn = request.algorithm != Algorithm::kDirect && cluster.collectives.pxn;
    return latency + plan_time(router, *uniform_p2p_plan(cluster, topology, comm, request, pxn));
  }
  // The streams' time scales with the size for a given shape (launched channels): cache it.
  LoweredCollective lowered;
  double per_byte = 0.0;
  const std::string key = shape_key(comm, request, protocol);
  const auto found =
      cache ? cache->seconds_per_byte.find(key) : decltype(cache->seconds_per_byte.end()){};
  if (cache && found != cache->seconds_per_byte.end()) {
    per_byte = found->second;
    Lowering l{router, cluster, topology, comm, request, protocol, {}};
    l.latency();
    lowered.latency = l.out.latency;
  } else {
    lowered = lower_collective(router, cluster, topology, comm, request, protocol);
    for (const auto& stage : lowered.stages) {
      per_byte += stage_seconds(topology.topology, stage, 1.0);
    }
    if (cache) {
      cache->seconds_per_byte[key] = per_byte;
      auto kept = std::make_shared<LoweredCollective>();
      kept->stages = std::move(lowered.stages);
      cache->lowered[key] = std::move(kept);
    }
  }
  return lowered.latency +
         time_from_seconds(per_byte * request.bytes * pipeline_fill(comm, request));
}

std::shared_ptr<const FlowCollectiveShape> prepare_flow_collective(
    FlowNetwork& network, const ClusterSpec& cluster, const ClusterTopology& topology,
    const CollectiveRequest& request, AnalyticCache* cache) {
  std::optional<NcclComm> local;
  const NcclComm& comm = comm_of(cluster, topology, cache, local);
  const Protocol protocol = protocol_for(cluster, comm, request);
  if (uses_plan(request.algorithm)) {
    auto shape = std::make_shared<FlowCollectiveShape>();
    shape->point_to_point = true;
    shape->participants = topology.gpu_count();
    shape->latency = p2p_latency(cluster, comm, protocol, request.gpus_per_thread);
    if (topology.gpu_count() > 1) {
      const bool pxn = request.algorithm != Algorithm::kDirect && cluster.collectives.pxn;
      shape->plan = uniform_p2p_plan(cluster, topology, comm, request, pxn);
    }
    return shape;
  }
  const double bytes = request.bytes * pipeline_fill(comm, request);
  if (cache) {
    // The streams the analytic time of this shape was worked out from (the latency is the
    // request's own).
    const auto found = cache->lowered.find(shape_key(comm, request, protocol));
    if (found != cache->lowered.end()) {
      // Taken out of the cache: the shape is what the runner keeps (a 65,536-GPU ring's streams
      // are tens of MB).
      const std::shared_ptr<const LoweredCollective> lowered = std::move(found->second);
      cache->lowered.erase(found);
      Lowering l{network.router(), cluster, topology, comm, request, protocol, {}};
      l.latency();
      return shape_of(network.router(), topology.gpu_count(), *lowered, bytes, l.out.latency);
    }
  }
  const LoweredCollective lowered =
      lower_collective(network.router(), cluster, topology, comm, request, protocol);
  return shape_of(network.router(), topology.gpu_count(), lowered, bytes, lowered.latency);
}

std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 std::shared_ptr<const FlowCollectiveShape> shape) {
  if (!shape->point_to_point) {
    return std::make_unique<StreamCollective>(simulation, network, std::move(shape));
  }
  if (!shape->plan) {  // one GPU: nothing to exchange
    return std::make_unique<AnalyticCollective>(simulation, shape->participants, shape->latency);
  }
  return std::make_unique<PlanCollective>(simulation, network, shape->plan, shape->latency);
}

std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterSpec& cluster,
                                                 const ClusterTopology& topology,
                                                 const CollectiveRequest& request) {
  return make_flow_collective(simulation, network,
                              prepare_flow_collective(network, cluster, topology, request));
}

PickedAlgorithm pick_protocol(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache, bool with_time) {
  TRAINSIM_ASSERT(is_applicable(request.algorithm, request.op, cluster, topology.nodes),
                  "algorithm does not apply");
  std::optional<NcclComm> local;
  const NcclComm& comm = comm_of(cluster, topology, cache, local);
  CollectiveRequest r = request;
  r.protocol = protocol_for(cluster, comm, request);
  return {r.algorithm, *r.protocol,
          with_time ? analytic_collective_time(router, cluster, topology, r, cache) : 0};
}

PickedAlgorithm pick_algorithm(Router& router, const ClusterSpec& cluster,
                               const ClusterTopology& topology, CollectiveOp op, double bytes,
                               AnalyticCache* cache, int gpus_per_thread, bool with_time) {
  std::optional<NcclComm> local;
  const NcclComm& comm = comm_of(cluster, topology, cache, local);
  auto choice = nccl_choose(comm, cluster.collectives, op, bytes);
  if (!choice) {
    // NCCL_ALGO / NCCL_PROTO rule everything out here: NCCL would fail; use its defaults.
    CollectiveTuning env = cluster.collectives;
    env.algorithms.clear();
    env.protocols.clear();
    choice = nccl_choose(comm, env, op, bytes);
  }
  TRAINSIM_ASSERT(choice.has_value(), "no algorithm for this collective");
  CollectiveRequest r;
  r.op = op;
  r.algorithm = choice->algorithm;
  r.bytes = bytes;
  r.protocol = choice->protocol;
  r.gpus_per_thread = gpus_per_thread;
  return {r.algorithm, *r.protocol,
          with_time ? analytic_collective_time(router, cluster, topology, r, cache) : 0};
}

Algorithm pick_alltoallv_algorithm(const ClusterSpec& cluster, const ClusterTopology& topology) {
  return topology.nodes > 1 && topology.gpus_per_node > 1 &&
                 cluster.intra_node.fabric == IntraNodeFabric::kNvSwitch && cluster.collectives.pxn
             ? Algorithm::kTwoD
             : Algorithm::kDirect;
}

std::shared_ptr<const CollectivePlan> alltoallv_plan(const ClusterSpec& cluster,
                                                     const ClusterTopology& topology,
                                                     ByteMatrixView bytes, Algorithm algorithm,
                                                     bool per_node) {
  TRAINSIM_ASSERT(bytes.size() == topology.gpu_count(), "byte matrix does not match the GPUs");
  TRAINSIM_ASSERT(algorithm == Algorithm::kDirect || algorithm == Algorithm::kTwoD,
                  "all-to-all runs direct or 2D");
  if (per_node) {
    const int g = topology.gpus_per_node;
    // (Symmetric: the stored rows serve either orientation.)
    for (int a = 0; a < bytes.size(); ++a) {
      for (const ByteMatrix::Entry& e : bytes.matrix().row(a)) {
        TRAINSIM_ASSERT(a / g == e.to / g, "a per-node all-to-all leaves its node");
      }
    }
  }
  const NcclComm comm = make_nccl_comm(cluster, per_node ? 1 : topology.nodes);
  return p2p_plan(cluster, topology, comm, bytes, algorithm == Algorithm::kTwoD);
}

std::unique_ptr<Collective> make_alltoallv(Simulation& simulation, FlowNetwork& network,
                                           const ClusterSpec& cluster,
                                           const ClusterTopology& topology, ByteMatrixView bytes,
                                           Algorithm algorithm, bool per_node) {
  return make_alltoallv(simulation, network, cluster, topology,
                        alltoallv_plan(cluster, topology, bytes, algorithm, per_node), per_node);
}

std::unique_ptr<Collective> make_alltoallv(Simulation& simulation, FlowNetwork& network,
                                           const ClusterSpec& cluster,
                                           const ClusterTopology& topology,
                                           std::shared_ptr<const CollectivePlan> plan,
                                           bool per_node,
                                           std::shared_ptr<const PlanRoutes> routes,
                                           std::shared_ptr<const PlanBundles> bundles) {
  const NcclComm comm = make_nccl_comm(cluster, per_node ? 1 : topology.nodes);
  return std::make_unique<PlanCollective>(simulation, network, std::move(plan),
                                          p2p_latency(cluster, comm, Protocol::kSimple, 1),
                                          std::move(routes), std::move(bundles));
}

Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    ByteMatrixView bytes, Algorithm algorithm, bool per_node) {
  return alltoallv_time(router, cluster, topology,
                        *alltoallv_plan(cluster, topology, bytes, algorithm, per_node), per_node);
}

Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    const CollectivePlan& plan, bool per_node, const PlanRoutes* routes) {
  const NcclComm comm = make_nccl_comm(cluster, per_node ? 1 : topology.nodes);
  return p2p_latency(cluster, comm, Protocol::kSimple, 1) + plan_time(router, plan, routes);
}

namespace {

// A ring over given GPUs, one per node (routes as the fabric's shortest paths), as one stream
// carrying all of NCCL's channels of a one-GPU-per-node communicator.
LoweredCollective group_ring(Router& router, const ClusterSpec& cluster,
                             const std::vector<VertexId>& vertices, double bytes) {
  LoweredCollective out;
  const int n = static_cast<int>(vertices.size());
  const NcclComm comm = make_nccl_comm(restrict_gpus_per_node(cluster, 1), std::max(1, n));
  CollectiveTuning env = cluster.collectives;
  env.algorithms.clear();
  const auto choice = nccl_choose(comm, env, CollectiveOp::kAllReduce, bytes, Algorithm::kRing);
  const Protocol protocol = choice ? choice->protocol : Protocol::kSimple;
  out.latency = launch_cost(cluster, 1);
  if (n <= 1) return out;
  out.latency +=
      time_from_seconds(1e-6 * nccl_latency_us(comm, CollectiveOp::kAllReduce, Algorithm::kRing,
                                               protocol, bytes, scales_of(cluster)));
  Stream s;
  for (int i = 0; i < n; ++i) {
    for (const LinkId l : router.links(router.route(vertices[i], vertices[(i + 1) % n]))) {
      s.links.push_back(l);
    }
  }
  s.bytes_per_byte = 2.0 * (n - 1) / n * ring_wire(protocol);
  out.stages.push_back({std::move(s)});
  return out;
}

}  // namespace

std::unique_ptr<Collective> make_group_all_reduce(Simulation& simulation, FlowNetwork& network,
                                                  const ClusterSpec& cluster,
                                                  const std::vector<VertexId>& vertices,
                                                  double bytes) {
  const LoweredCollective ring = group_ring(network.router(), cluster, vertices, bytes);
  return std::make_unique<StreamCollective>(
      simulation, network,
      shape_of(network.router(), static_cast<int>(vertices.size()), ring, bytes, ring.latency));
}

Time group_all_reduce_time(Router& router, const ClusterSpec& cluster,
                           const std::vector<VertexId>& vertices, double bytes) {
  const LoweredCollective lowered = group_ring(router, cluster, vertices, bytes);
  double seconds = 0.0;
  for (const auto& stage : lowered.stages) {
    seconds += stage_seconds(router.topology(), stage, bytes);
  }
  return lowered.latency + time_from_seconds(seconds);
}

}  // namespace trainsim::models
