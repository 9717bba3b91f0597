#include "models/collectives/nccl_tuner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "engine/check.h"

namespace trainsim::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxChannels = 64;         // MAXCHANNELS
constexpr int kMaxSearchChannels = 32;   // ring/tree search: MAXCHANNELS / 2
constexpr double kP2pNetBwPerChannel = 14.0;  // NCCL_P2P_PER_CHANNEL_NET_BW (GB/s), 2.29

int arch_index(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta:
      return 0;
    case GpuArch::kAmpere:
      return 1;
    case GpuArch::kHopper:
      return 2;
    case GpuArch::kBlackwell:
      return 3;
  }
  return 2;
}

int node_index(int nodes) { return nodes == 1 ? 0 : nodes == 2 ? 1 : 2; }
int proto_index(Protocol p) { return p == Protocol::kLl ? 0 : p == Protocol::kLl128 ? 1 : 2; }

// NCCL's link speeds (topo.h): NVLink GB/s per link and direction by generation; PCIe as NCCL
// rates it (width x speed / 80: Gen4 x16 = 24, Gen5 x16 = 48 GB/s), which is 0.762 of the
// per-direction line rate (31.5 / 63 GB/s).
double nvlink_per_link(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta:
    case GpuArch::kAmpere:
      return 20.0;
    case GpuArch::kHopper:
      return 20.6;
    case GpuArch::kBlackwell:
      return 40.1;
  }
  return 20.6;
}
// Line rate per NVLink and direction (GB/s): NVLink 2-4 25, NVLink 5 50 (vendor datasheets).
double nvlink_line_per_link(GpuArch a) { return a == GpuArch::kBlackwell ? 50.0 : 25.0; }
constexpr double kNcclPcieOverLine = 48.0 / 63.0;

// Speed arrays of the search (search.cc), GB/s per channel, descending.
const std::vector<double>& speeds(GpuArch a, bool inter) {
  static const std::vector<double> sm90_intra = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> sm90_inter = {48, 45, 42, 40, 30, 24, 22, 20, 17.5,
                                                 15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> sm100_intra = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
  static const std::vector<double> sm100_inter = {96, 86,   80, 48, 45.1, 42,  40,  30,  24,  22,
                                                  20, 17.5, 15, 12, 6,    3,   2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> pre_intra = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> pre_inter = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9,
                                                7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
  if (a == GpuArch::kBlackwell) return inter ? sm100_inter : sm100_intra;
  if (a == GpuArch::kHopper) return inter ? sm90_inter : sm90_intra;
  return inter ? pre_inter : pre_intra;
}

// The search loop (ncclTopoCompute): from the first speed within reach, keep the solution with
// the most channels x speed; stop once it covers the GPU's bandwidth, or when the next speed is
// under half of the best found.
NcclGraph search(const std::vector<double>& speed, double max_bw, double total_bw,
                 const std::function<int(double)>& channels_at) {
  std::size_t i = 0;
  while (i + 1 < speed.size() && (speed[i] > max_bw + 1e-9 || speed[i] > total_bw + 1e-9)) ++i;
  NcclGraph best;
  for (;; ++i) {
    const double s = speed[i];
    const int n = std::min(kMaxSearchChannels, channels_at(s));
    if (n > 0 && n * s > best.channels * best.bw_intra + 1e-9) best = {n, s, s};
    if (best.channels > 0 && best.channels * best.bw_intra >= total_bw - 1e-9) break;
    if (i + 1 >= speed.size()) break;
    if (best.channels > 0 && speed[i + 1] / best.bw_intra <= 0.49) break;
  }
  if (best.channels == 0) best = {1, speed.back(), speed.back()};
  return best;
}

int floor_div(double a, double b) { return static_cast<int>(std::floor(a / b + 1e-9)); }

int pow2_up(int v) {
  return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(1, v))));
}

}  // namespace

int log2_floor(long long v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

namespace {

// What the graph search sees of a node, in GB/s.
struct NodePaths {
  bool multi = false;      // across nodes, with NICs
  double gpu_pcie = 0;     // a GPU's PCIe link to its NIC
  double nic_path = 0;     // a NIC's path from its GPUs: the NIC or that PCIe link, the slower
  double gpu_total = 0;    // a GPU's NVLink (or PCIe) bandwidth inside the node
};

// The links of the communicator's GPUs and NICs as NCCL rates them, and what it enables.
NodePaths rate_links(NcclComm& c, const ClusterSpec& cluster, int nodes) {
  const CollectiveTuning& env = cluster.collectives;
  const IntraNodeSpec& intra = cluster.intra_node;
  c.intra_nvlink = intra.fabric == IntraNodeFabric::kNvSwitch;
  if (c.intra_nvlink) {
    const int links =
        intra.nvlink_links > 0
            ? intra.nvlink_links
            : std::max(1, static_cast<int>(std::lround(intra.gpu_link.bandwidth_bytes_per_s / 1e9 /
                                                       nvlink_line_per_link(c.arch))));
    c.nvlink_bw = links * nvlink_per_link(c.arch);
  } else {
    c.pcie_bw = intra.gpu_link.bandwidth_bytes_per_s / 1e9 * kNcclPcieOverLine;
    if (intra.pcie_switches > 1) {
      c.pcie_bw = std::min(c.pcie_bw, intra.switch_link.bandwidth_bytes_per_s / 1e9 * kNcclPcieOverLine);
    }
  }
  NodePaths paths;
  paths.gpu_pcie = cluster.nic.gpu_link.bandwidth_bytes_per_s / 1e9 * kNcclPcieOverLine;
  c.nic_bw = cluster.nic.link.bandwidth_bytes_per_s / 1e9;
  c.nics_per_node = nodes > 1 ? cluster.nic.count : 0;
  paths.nic_path = paths.gpu_pcie > 0 ? std::min(c.nic_bw, paths.gpu_pcie) : c.nic_bw;
  paths.multi = nodes > 1 && c.nics_per_node > 0;
  paths.gpu_total = c.intra_nvlink ? c.nvlink_bw : c.pcie_bw;
  const int g = c.ppn;
  c.ll128 = (c.intra_nvlink || g == 1) && (nodes == 1 || cluster.nic.gpu_direct);
  c.nvls = c.arch >= GpuArch::kHopper && c.intra_nvlink && intra.nvls && env.nvls && g > 1;
  c.collnet = nodes > 1 && cluster.network.sharp && env.collnet && g <= 8;
  return paths;
}

// The ring search: inside one node over NVLink (or PCIe); across nodes one ring (or more) per
// NIC, the GPUs a NIC serves sharing its PCIe path.
NcclGraph search_rings(const NcclComm& c, const ClusterSpec& cluster, const NodePaths& paths) {
  const int g = c.ppn;
  if (!paths.multi) {
    const double path = g > 1 ? paths.gpu_total : kInf;
    return search(speeds(c.arch, false), path, path,
                  [&](double s) { return g > 1 ? floor_div(path, s) : 1; });
  }
  std::vector<int> nics_of_gpu(g, 0);
  for (const auto& list : cluster.nic.gpus) {
    for (const int gpu : list) ++nics_of_gpu[gpu];
  }
  int most_nics = 1;
  for (const int n : nics_of_gpu) most_nics = std::max(most_nics, n);
  const double per_nic_path =
      paths.gpu_pcie > 0 ? std::min(c.nic_bw, paths.gpu_pcie / most_nics) : c.nic_bw;
  const double max_bw = std::min(paths.nic_path, g > 1 ? paths.gpu_total : kInf);
  const double total = g > 1 ? paths.gpu_total : paths.nic_path;
  return search(speeds(c.arch, true), max_bw, total, [&](double s) {
    int n = 0;
    for (std::size_t k = 0; k < cluster.nic.gpus.size(); ++k) n += floor_div(per_nic_path, s);
    if (g > 1) {
      // Every channel crosses the NVLink (or PCIe) of all GPUs but its exit one.
      n = std::min(n, floor_div(paths.gpu_total * g, (g - 1) * s));
    }
    return n;
  });
}

// Duplication (ncclTopoDupChannels), then, on Hopper and later across nodes with fewer than 8
// GPUs per node, four compute channels per search channel for fast rings.
void duplicate_channels(NcclComm& c, bool multi) {
  auto dup = [](NcclGraph& graph, int max) {
    const int n = std::min(graph.channels * 2, max);
    const int factor = (n + graph.channels - 1) / graph.channels;
    graph.bw_intra /= factor;
    graph.bw_inter /= factor;
    graph.channels = n;
  };
  if (c.ring.bw_intra >= 25.0 &&
      !(c.arch >= GpuArch::kHopper && c.ring.bw_intra < 50.0 && c.ring.channels > 4)) {
    dup(c.ring, kMaxSearchChannels);
  }
  if (c.arch >= GpuArch::kHopper && multi && c.ppn < 8 && c.ring.bw_intra > 45.0 &&
      c.ring.channels < 16) {
    dup(c.ring, kMaxSearchChannels);
  }
}

// The tree search's second pass (ncclTopoCompute, pass 2): with the channels it found, a tree
// raises its intra-node speed step by step up the speed array, while the NVLink (or PCIe) still
// carries every channel and the speed stays under twice the network's. Across two nodes the tuner
// rates a tree at that intra speed: a two-node tree sends each byte over the network once where a
// ring sends it twice. Taken as arriving with 2.6 (the search rework that brought CollNet, the
// other case the raise serves): the 2.5.6 two-node log in validation/ (V100, RoCE) stays at 0.92
// of its NICs, where such a tree would reach twice.
void raise_tree_intra_speed(NcclComm& c, double gpu_total) {
  const int g = c.ppn;
  const std::vector<double>& inter = speeds(c.arch, true);
  std::size_t i = 0;
  while (i + 1 < inter.size() && inter[i] > c.tree.bw_inter + 1e-9) ++i;
  while (i > 0 && c.tree.bw_intra < 2.0 * c.tree.bw_inter - 1e-9) {
    const double s = inter[i - 1];
    if (g > 1 && floor_div(gpu_total * g, (g - 1) * s) < c.tree.channels) break;
    c.tree.bw_intra = s;
    --i;
  }
}

// The fastest speed of the array that `fits`, else `none`.
template <class Fits>
double fastest_speed(const std::vector<double>& speed, Fits fits, double none) {
  for (const double s : speed) {
    if (fits(s)) return s;
  }
  return none;
}

// NVLS and CollNet: one head per NIC rail across nodes (inside one node, NVLS has its channels),
// each at the fastest intra speed all heads fit into the GPU's links and the fastest inter speed
// within a NIC's path.
void head_graphs(NcclComm& c, const NodePaths& paths) {
  const std::vector<double>& intra = speeds(c.arch, false);
  const std::vector<double>& inter = speeds(c.arch, true);
  auto within_nic = [&](double s) { return s <= paths.nic_path + 1e-9; };
  const int rails = std::max(1, std::min(c.ppn, c.nics_per_node));
  c.nvls_channels = c.arch == GpuArch::kBlackwell ? (c.nodes == 1 ? 24 : 32) : 16;
  if (c.nvls) {
    const int heads = paths.multi ? rails : c.nvls_channels;
    const double intra_speed = fastest_speed(
        intra, [&](double s) { return heads * s <= c.nvlink_bw + 1e-9; }, intra.back());
    const double inter_speed = paths.multi ? fastest_speed(inter, within_nic, 0.0) : 0.0;
    c.nvls_graph = {heads, intra_speed, inter_speed};
  }
  if (c.collnet) {
    const double intra_speed = fastest_speed(
        intra, [&](double s) { return rails * s <= paths.gpu_total + 1e-9; }, intra.back());
    c.collnet_graph = {rails, intra_speed, fastest_speed(inter, within_nic, inter.back())};
  }
}

// Point-to-point channels (init.cc, paths.cc).
void p2p_channels(NcclComm& c, const CollectiveTuning& env, const NodePaths& paths) {
  c.p2p_channels = std::max(1, pow2_up(std::min(c.channels, kMaxChannels)));
  if (!paths.multi) {
    // NVLink peers: 2 x the links between them (capped by the p2p channels).
    c.p2p_channels_per_peer = c.p2p_channels;
    return;
  }
  const int g = c.ppn;
  int per_peer = 2;
  const int nics_per_gpu = std::max(1, (c.nics_per_node + g - 1) / g);
  const double gpu_net_bw =
      std::min(nics_per_gpu * c.nic_bw, paths.gpu_pcie > 0 ? paths.gpu_pcie : kInf);
  if (env.channels_per_net_peer > 0) {
    per_peer = env.channels_per_net_peer;
  } else if (c.version.minor >= 29) {
    per_peer = std::max(nics_per_gpu,
                        static_cast<int>(std::ceil(gpu_net_bw / kP2pNetBwPerChannel - 1e-9)));
    const int groups = (c.ranks + 7) / 8;
    while (per_peer > 1 && per_peer * groups > c.p2p_channels) per_peer /= 2;
  } else if (c.version.minor >= 21) {
    int ch = 2;
    while (ch > 1 && ch * c.ranks > 4 * c.p2p_channels) ch /= 2;
    per_peer = std::max(nics_per_gpu, ch);
  }
  c.p2p_channels_per_peer = std::min(pow2_up(per_peer), c.p2p_channels);
}

}  // namespace

NcclComm make_nccl_comm(const ClusterSpec& cluster, int nodes) {
  NcclComm c;
  c.arch = cluster.gpu.architecture;
  c.cpu = cluster.host.cpu_vendor;
  c.version = cluster.collectives.nccl_version;
  c.nodes = nodes;
  c.ppn = cluster.gpus_per_node;
  c.ranks = nodes * c.ppn;
  const CollectiveTuning& env = cluster.collectives;
  const NodePaths paths = rate_links(c, cluster, nodes);
  c.ring = search_rings(c, cluster, paths);
  duplicate_channels(c, paths.multi);
  c.tree = c.ring;
  if (paths.multi && c.version.minor >= 6) raise_tree_intra_speed(c, paths.gpu_total);
  c.channels = std::min(kMaxChannels, 2 * c.ring.channels);
  if (env.max_channels > 0) c.channels = std::min(c.channels, env.max_channels);
  if (env.min_channels > 0) c.channels = std::max(c.channels, std::min(kMaxChannels, env.min_channels));
  head_graphs(c, paths);
  p2p_channels(c, env, paths);
  return c;
}

double nccl_base_latency_us(const NcclComm& comm, Algorithm algorithm, Protocol protocol) {
  const int p = proto_index(protocol);
  switch (algorithm) {
    case Algorithm::kTree: {
      static constexpr std::array<double, 3> v = {6.8, 14.0, 8.4};
      if (p == 2 && comm.version.minor < 23) return 0.0;
      return v[p];
    }
    case Algorithm::kRing: {
      static constexpr std::array<double, 3> v = {6.6, 14.0, 8.4};
      return v[p];
    }
    case Algorithm::kNvls:
      return comm.version.minor <= 18 ? 23.0 : 0.0;
    case Algorithm::kPat:
      return 8.0;
    default:
      return 0.0;
  }
}

double nccl_hop_latency_us(const NcclComm& comm, HopKind hop, Algorithm algorithm,
                           Protocol protocol) {
  const int p = proto_index(protocol);
  const int minor = comm.version.minor;
  const bool simple = protocol == Protocol::kSimple;
  switch (algorithm) {
    case Algorithm::kTree: {
      static constexpr std::array<std::array<double, 3>, 3> v = {
          {{0.6, 1.25, 4.0}, {1.0, 1.9, 4.0}, {5.0, 8.5, 14.0}}};
      if (simple && minor >= 19 && minor <= 22 && hop != HopKind::kPcie) return 28.0;
      return v[static_cast<int>(hop)][p];
    }
    case Algorithm::kRing:
    case Algorithm::kHierarchical:
    case Algorithm::kDirect:
    case Algorithm::kTwoD:
    case Algorithm::kP2p: {
      static constexpr std::array<std::array<double, 3>, 3> v = {
          {{0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}}};
      return v[static_cast<int>(hop)][p];
    }
    case Algorithm::kCollNetDirect:
      if (!simple) return 0.0;
      if (minor <= 18) return hop == HopKind::kNetwork ? 10.7 : 8.0;
      return hop == HopKind::kNetwork ? 31.0 : 3.7;
    case Algorithm::kCollNetChain:
      if (!simple) return 0.0;
      if (minor <= 18) return hop == HopKind::kNetwork ? 14.0 : 4.75;
      return hop == HopKind::kNetwork ? 30.0 : 2.8;
    case Algorithm::kNvls:
      if (!simple || hop == HopKind::kPcie) return 0.0;
      if (hop == HopKind::kNetwork) return 18.0;
      return minor <= 18 ? 0.0 : 25.0;
    case Algorithm::kNvlsTree:
      if (!simple || hop == HopKind::kPcie) return 0.0;
      if (hop == HopKind::kNetwork) return minor <= 18 ? 19.0 : minor <= 22 ? 14.0 : 20.9;
      return minor <= 18 ? 0.0 : 25.0;
    case Algorithm::kPat:
      if (!simple) return 0.0;
      return hop == HopKind::kNetwork ? 14.0 : 4.0;
  }
  return 0.0;
}

double nccl_net_overhead_us(const NcclComm& comm, Protocol protocol) {
  const double base = comm.cpu == CpuVendor::kAmd ? 2.0 : 1.0;
  return protocol == Protocol::kSimple ? 3 * base : base;
}

NcclBandwidthCaps nccl_bandwidth_caps(const NcclComm& comm) {
  const int a = arch_index(comm.arch);
  const int n = node_index(comm.nodes);
  static constexpr double ll_max[4][3] = {
      {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
  static constexpr double ring_ll128[4] = {20.0, 20.0, 36.7, 40.0};
  static constexpr double tree_ll128[4][3] = {
      {20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
  static constexpr double tree[4][3] = {
      {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
  static constexpr double nvls_tree[4][3] = {
      {0, 0, 0}, {0, 0, 0}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
  static constexpr double nvls_eff[4] = {0, 0, 0.85, 0.74};
  NcclBandwidthCaps caps;
  // On one node the row is the GPU generation; across nodes NCCL indexes it by CPU vendor
  // (AMD: row 1, Intel and Arm: row 0). 2.18 and before used Ampere's row for Hopper.
  int row = a;
  if (comm.nodes > 1) row = comm.cpu == CpuVendor::kAmd ? 1 : 0;
  if (comm.nodes == 1 && comm.arch == GpuArch::kHopper && comm.version.minor <= 18) row = 1;
  caps.ll_max = ll_max[row][n];
  caps.ring_ll128_per_channel = ring_ll128[a];
  caps.tree_ll128_per_channel = tree_ll128[a][n];
  caps.tree_per_channel = tree[a][n];
  caps.nvls_tree_per_channel = nvls_tree[a][n];
  caps.nvls_efficiency = nvls_eff[a];
  return caps;
}

double nccl_tree_correction(Protocol protocol, double bytes) {
  static constexpr double table[3][23] = {
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
       1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
       1.0, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
       .9}};
  const long long units = static_cast<long long>(bytes) >> 6;
  if (units < 1) return 1.0;
  const int log_size = log2_floor(units);
  if (log_size < 0 || log_size >= 23) return 1.0;
  return table[proto_index(protocol)][log_size];
}

int nccl_ring_steps(CollectiveOp op, int ranks) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (ranks - 1);
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return ranks - 1;
    default:
      return ranks;
  }
}

int nccl_ring_inter_steps(const NcclComm& comm, CollectiveOp op) {
  if (comm.nodes == 1) return 0;
  const bool old = comm.version.minor <= 22;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return old ? 2 * comm.nodes : 2 * (comm.nodes - 1);
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return comm.nodes - 1;
    default:
      return old ? comm.nodes : comm.nodes - 1;
  }
}

bool nccl_enabled(const NcclComm& comm, const CollectiveTuning& env, CollectiveOp op,
                  Algorithm algorithm, Protocol protocol) {
  if (!env.allows(algorithm) || !env.allows(protocol)) return false;
  const bool reduce_op = op == CollectiveOp::kAllReduce;
  const bool ag_rs = op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter;
  const bool simple_only = algorithm != Algorithm::kRing && algorithm != Algorithm::kTree;
  if (simple_only && protocol != Protocol::kSimple) return false;
  if (protocol == Protocol::kLl128 && !comm.ll128) return false;
  switch (algorithm) {
    case Algorithm::kRing:
      return op != CollectiveOp::kAllToAll && op != CollectiveOp::kSendRecv;
    case Algorithm::kTree:
      return reduce_op && comm.ranks > 1;
    case Algorithm::kNvls:
      if (!comm.nvls || comm.nvls_channels < 2 || !(reduce_op || ag_rs)) return false;
      return comm.nodes == 1 || comm.collnet;
    case Algorithm::kNvlsTree:
      return comm.nvls && reduce_op && comm.nodes > 1;
    case Algorithm::kCollNetDirect:
      return comm.collnet && reduce_op && comm.intra_nvlink;
    case Algorithm::kCollNetChain:
      return comm.collnet && reduce_op;
    case Algorithm::kPat:
      return ag_rs && comm.ppn == 1 && comm.nodes > 1 && comm.version.minor >= 23;
    default:
      return false;
  }
}

double nccl_latency_us(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                       Protocol protocol, double bytes, const HopLatencyScales& scales) {
  const HopKind intra_hop = comm.intra_nvlink ? HopKind::kNvlink : HopKind::kPcie;
  const bool per_step = algorithm == Algorithm::kRing || algorithm == Algorithm::kTree ||
                        algorithm == Algorithm::kPat;
  const double intra_lat = nccl_hop_latency_us(comm, intra_hop, algorithm, protocol) *
                           (per_step ? scales.of(intra_hop, protocol) : 1.0);
  const double inter_lat =
      (comm.ppn == 1 ? nccl_hop_latency_us(comm, HopKind::kNetwork, Algorithm::kTree, protocol)
                     : nccl_hop_latency_us(comm, HopKind::kNetwork, algorithm, protocol)) *
      scales.of(HopKind::kNetwork, protocol);
  const int n = comm.ranks;
  const int nodes = comm.nodes;
  const int ppn = comm.ppn;
  const int log_nodes = log2_floor(nodes);
  double lat = nccl_base_latency_us(comm, algorithm, protocol);
  switch (algorithm) {
    case Algorithm::kRing: {
      if (op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce) {
        lat += intra_lat;
      } else {
        const int steps = nccl_ring_steps(op, n);
        const int inter = nccl_ring_inter_steps(comm, op);
        const double intra_step =
            std::max(intra_lat, nodes > 1 ? nccl_net_overhead_us(comm, protocol) : 0.0);
        lat += (steps - inter) * intra_step + inter * inter_lat;
      }
      break;
    }
    case Algorithm::kTree:
      lat += 2 * ((n / nodes - 1) * intra_lat + log_nodes * inter_lat);
      break;
    case Algorithm::kCollNetDirect:
      lat += 2 * (std::min(1, ppn - 1) * intra_lat + (ppn - 1) * 0.4) + inter_lat;
      break;
    case Algorithm::kCollNetChain:
      lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      break;
    case Algorithm::kNvls:
      // The hop latency stands in for the base since 2.19 (base 0); 2.18 had base 23, hop 0.
      lat += intra_lat + (nodes > 1 ? inter_lat : 0.0);
      break;
    case Algorithm::kNvlsTree:
      lat += intra_lat + 2 * log_nodes * inter_lat;
      break;
    case Algorithm::kPat:
      lat += log_nodes * inter_lat / 3.5 + n * 2.8;
      break;
    default:
      break;
  }
  // Plateau: multi-node Ring Simple all-reduce pays more latency once the message fills channels.
  if (algorithm == Algorithm::kRing && protocol == Protocol::kSimple && nodes > 1 &&
      op == CollectiveOp::kAllReduce && bytes / (comm.channels * static_cast<double>(n)) >= 64) {
    lat *= comm.arch >= GpuArch::kAmpere ? 1.4 : 1.9;
  }
  return lat;
}

NcclTunerCost nccl_tuner_cost(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                              Protocol protocol, double bytes) {
  NcclTunerCost cost;
  cost.latency_us = nccl_latency_us(comm, op, algorithm, protocol, bytes, HopLatencyScales{});
  const int n = comm.ranks;
  const int nodes = comm.nodes;
  const int ppn = comm.ppn;
  // Bandwidth.
  const NcclBandwidthCaps caps = nccl_bandwidth_caps(comm);
  const bool collnet = algorithm == Algorithm::kCollNetDirect || algorithm == Algorithm::kCollNetChain;
  const NcclGraph& graph = algorithm == Algorithm::kRing   ? comm.ring
                           : algorithm == Algorithm::kTree ? comm.tree
                           : (algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree)
                               ? comm.nvls_graph
                           : collnet ? comm.collnet_graph
                                     : comm.ring;
  const double bw = (nodes <= 2 || collnet) ? graph.bw_intra : graph.bw_inter;
  double bus = graph.channels * bw;
  const int nch = graph.channels;
  switch (algorithm) {
    case Algorithm::kNvls:
    case Algorithm::kNvlsTree: {
      if (nch < 2) return cost;
      double intra = graph.bw_intra * caps.nvls_efficiency * (nch - 1) / nch;
      intra *= op == CollectiveOp::kAllReduce ? 2.0 : static_cast<double>(ppn - 1) / ppn;
      double per = intra;
      if (nodes > 1) {
        const double inter =
            graph.bw_inter * (algorithm == Algorithm::kNvlsTree && nodes <= 2 ? 2.0 : 1.0);
        per = std::min(per, inter);
      }
      if (algorithm == Algorithm::kNvlsTree) per = std::min(per, caps.nvls_tree_per_channel);
      bus = nch * per;
      break;
    }
    case Algorithm::kRing:
      if (protocol == Protocol::kLl) bus = std::min(caps.ll_max, bus * 0.5);
      if (protocol == Protocol::kLl128) {
        bus = std::min(bus * 0.92, nch * caps.ring_ll128_per_channel);
      }
      break;
    case Algorithm::kTree:
      bus = std::min(bus * 0.92, nch * caps.tree_per_channel);
      if (protocol == Protocol::kLl) bus = std::min(bus / 3.8, caps.ll_max);
      if (protocol == Protocol::kLl128) {
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                       nch * caps.tree_ll128_per_channel);
      }
      break;
    case Algorithm::kPat:
      bus *= 0.75;
      break;
    case Algorithm::kCollNetDirect: {
      double factor = static_cast<double>(ppn) / nch;
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (comm.arch >= GpuArch::kHopper) bus *= 0.85;
      break;
    }
    default:
      break;
  }
  // Bus bandwidth to algorithm bandwidth.
  double alg = bus;
  const bool ring_like =
      algorithm == Algorithm::kRing ||
      ((algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree) &&
       op == CollectiveOp::kAllReduce);
  if (ring_like) {
    alg = bus * n / nccl_ring_steps(op, n);
  } else if (op == CollectiveOp::kAllReduce) {
    alg = bus * 0.5;
  }
  if (algorithm == Algorithm::kTree && op == CollectiveOp::kAllReduce) {
    alg *= nccl_tree_correction(protocol, bytes);
  }
  if (algorithm == Algorithm::kNvlsTree && comm.arch == GpuArch::kBlackwell &&
      comm.cpu != CpuVendor::kArm) {
    alg *= nccl_tree_correction(protocol, bytes);
  }
  cost.algbw = alg;
  return cost;
}

double nccl_tuner_time_us(const NcclComm& comm, CollectiveOp op, Algorithm algorithm,
                          Protocol protocol, double bytes) {
  const NcclTunerCost cost = nccl_tuner_cost(comm, op, algorithm, protocol, bytes);
  if (!(cost.algbw > 0)) return kInf;
  return cost.latency_us + bytes / (1000.0 * cost.algbw);
}

std::optional<NcclChoice> nccl_choose(const NcclComm& comm, const CollectiveTuning& env,
                                      CollectiveOp op, double bytes,
                                      std::optional<Algorithm> forced) {
  if (op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv) {
    NcclChoice choice;
    choice.algorithm = op == CollectiveOp::kSendRecv ? Algorithm::kP2p
                       : (env.pxn && comm.intra_nvlink && comm.nodes > 1 && comm.ppn > 1)
                           ? Algorithm::kTwoD
                           : Algorithm::kDirect;
    if (forced) choice.algorithm = *forced;
    // LL when a peer's share fits 16 KiB per channel (NCCL_P2P_LL_THRESHOLD).
    const double per_peer = op == CollectiveOp::kAllToAll ? bytes / comm.ranks : bytes;
    const int channels = nccl_p2p_op_channels(comm, per_peer);
    choice.protocol = per_peer <= channels * 16384.0 && env.allows(Protocol::kLl)
                          ? Protocol::kLl
                          : Protocol::kSimple;
    return choice;
  }
  std::optional<NcclChoice> best;
  for (const Algorithm a : all_algorithms()) {
    if (forced ? a != *forced : !is_nccl_algorithm(a)) continue;
    for (const Protocol p : all_protocols()) {
      if (!nccl_enabled(comm, env, op, a, p)) continue;
      const double t = nccl_tuner_time_us(comm, op, a, p, bytes);
      if (!std::isfinite(t)) continue;
      if (!best || t < best->tuner_time_us) best = NcclChoice{a, p, t};
    }
  }
  return best;
}

int nccl_launched_channels(const NcclComm& comm, Algorithm algorithm, Protocol protocol,
                           double bytes) {
  int nc = comm.channels;
  if (algorithm == Algorithm::kNvls || algorithm == Algorithm::kNvlsTree) nc = comm.nvls_channels;
  if (algorithm == Algorithm::kCollNetDirect || algorithm == Algorithm::kCollNetChain) {
    nc = comm.collnet_graph.channels;
  }
  if (algorithm != Algorithm::kRing && algorithm != Algorithm::kTree) return std::max(1, nc);
  const double threads = protocol == Protocol::kLl128 ? 640 : 512;
  const double per_thread = protocol == Protocol::kSimple ? 64.0
                            : protocol == Protocol::kLl128
                                ? 8.0
                                : 8.0 * (algorithm == Algorithm::kRing ? comm.ranks : 1);
  while (nc > 1 && bytes < nc * threads * per_thread) --nc;
  return std::max(1, nc);
}

int nccl_nvls_concurrent_ops(const NcclComm& comm) {
  const int heads = comm.nodes > 1 ? comm.nvls_graph.channels : comm.ppn;
  return std::max(1, comm.nvls_channels) * std::max(1, heads);
}

double nccl_nvls_chunk_bytes(const NcclComm& comm, double bytes, bool tree) {
  double chunk = 131072.0;  // NCCL_NVLS_CHUNKSIZE
  const Algorithm algorithm = tree ? Algorithm::kNvlsTree : Algorithm::kNvls;
  if (comm.nodes > 1 &&
      nccl_tuner_cost(comm, CollectiveOp::kAllReduce, algorithm, Protocol::kSimple, bytes).algbw <
          150.0) {
    chunk = 32768.0;
  }
  const double ops = nccl_nvls_concurrent_ops(comm);
  if (tree) {
    if (bytes < 4 * ops * chunk && chunk > 65536.0) chunk = 65536.0;
    if (bytes < 1 * ops * chunk && chunk > 32768.0) chunk = 32768.0;
    return chunk;
  }
  if (bytes < 64 * ops * chunk && chunk > 65536.0) chunk = 65536.0;
  if (bytes < 8 * ops * chunk && chunk > 32768.0) chunk = 32768.0;
  if (bytes < 2 * ops * chunk && chunk > 16384.0) chunk = 16384.0;
  return chunk;
}

double nccl_nvls_chunks_per_op(const NcclComm& comm, double bytes, bool tree) {
  const double chunk = nccl_nvls_chunk_bytes(comm, bytes, tree);
  return std::max(1.0, std::ceil(bytes / (nccl_nvls_concurrent_ops(comm) * chunk)));
}

NcclP2pPlacement::NcclP2pPlacement(const NcclComm& comm)
    : nodes_(std::max(1, comm.nodes)),
      ppn_(std::max(1, comm.ppn)),
      channels_(pow2_up(std::max(1, comm.p2p_channels))),
      node_round_(nodes_, 0),
      reversed_(channels_, 0) {
  const int pow2 = pow2_up(nodes_);
  int probe = 0;
  int round = 0;
  for (int step = 0; step < pow2; ++step) {
    if (probe < nodes_) node_round_[probe] = round++;
    probe = (probe + step + 1) & (pow2 - 1);
  }
  const int bits = std::countr_zero(static_cast<unsigned>(channels_));  // a power of two
  for (int part = 0; part < channels_; ++part) {
    for (int b = 0; b < bits; ++b) {
      if (part & (1 << b)) reversed_[part] |= 1 << (bits - 1 - b);
    }
  }
}

int NcclP2pPlacement::round(int from, int to) const {
  const int local = ((to % ppn_) - (from % ppn_) + ppn_) % ppn_;
  if (nodes_ == 1) return local;
  const int delta = ((to / ppn_) - (from / ppn_) + nodes_) % nodes_;
  return node_round_[delta] * ppn_ + local;
}

int NcclP2pPlacement::base(int round) const {
  constexpr int kOpsPerBatch = 8;  // NCCL_MAX_DEV_WORK_P2P_PER_BATCH
  if (nodes_ == 1) return round;
  return (round / ppn_) * ((ppn_ + kOpsPerBatch - 1) / kOpsPerBatch) +
         (round % ppn_) / kOpsPerBatch;
}

int nccl_p2p_op_channels(const NcclComm& comm, double bytes) {
  // Every peer gets p2pnChannelsPerPeer, the minimum over all peers.
  const int per_peer = comm.p2p_channels_per_peer;
  int minimum = per_peer;
  while (minimum > 1 && minimum * comm.ranks > comm.p2p_channels) minimum /= 2;
  const bool multi = comm.nodes > 1;
  const double chunk = multi ? 131072.0 : comm.intra_nvlink ? 524288.0 : 131072.0;
  const double min_part = multi ? chunk / 2 : chunk / 8;
  const double max_part = multi ? chunk : 32 * chunk;
  int c = std::max(1, std::min(minimum, static_cast<int>(std::ceil(bytes / min_part))));
  while (bytes / c > max_part && c < per_peer) c *= 2;
  return std::min(c, per_peer);
}

}  // namespace trainsim::models
