// What a cluster is made of: nodes of GPUs, the fabric inside a node (NVSwitch or PCIe), the NICs
// and which GPUs use them, and the network between nodes (one switch or a leaf/spine fat-tree).
// Plain validated data; models/config/cluster_config.h builds it from YAML.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <utility>
#include <string>
#include <vector>

#include "engine/units.h"
#include "models/spec/collective_tuning.h"
#include "models/spec/dtype.h"
#include "models/spec/enum_names.h"
#include "models/spec/runtime_spec.h"

namespace trainsim::models {

// GPU generations, as NCCL tells them apart (compute capability 7.0, 8.0, 9.0, 10.0).
enum class GpuArch { kVolta, kAmpere, kHopper, kBlackwell };
const EnumNames<GpuArch>& gpu_arch_names();
std::string_view gpu_arch_name(GpuArch arch);
std::optional<GpuArch> parse_gpu_arch(std::string_view name);
// The generation of a GPU model name ("H100 SXM5 80GB" -> Hopper), if known.
std::optional<GpuArch> gpu_arch_of_model(std::string_view model);

struct GpuSpec {
  std::string model;
  GpuArch architecture = GpuArch::kHopper;
  // Dense peak compute per format (datasheet).
  std::map<Dtype, double> peak_flops_per_s;
  double hbm_bandwidth_bytes_per_s = 0.0;
  double hbm_capacity_bytes = 0.0;
  // Achieved fraction of peak for large GEMMs and for streaming HBM kernels.
  double gemm_efficiency = 1.0;
  double hbm_efficiency = 1.0;
  // GEMM efficiency falls for small problems: eff(F) = gemm_efficiency * F / (F + half), F the
  // FLOP of one GEMM; 0 means no falloff.
  double gemm_half_flops = 0.0;
  // FBGEMM's table-batched embedding kernels reach these fractions of HBM bandwidth, on the bytes
  // FBGEMM's benchmark counts (models/sharding/embedding_kernels.h), forward and backward (with
  // the fused optimizer update), for long rows; short rows reach less: eff(row) = efficiency *
  // row / (row + embedding_half_row_bytes), row in bytes. Defaults: FBGEMM on a production-like
  // mix of tables (meta-pytorch/torchrec PR #4757: forward 64.7%, backward 26.5% of peak).
  double embedding_efficiency = 0.647;
  double embedding_backward_efficiency = 0.265;
  double embedding_half_row_bytes = 0.0;
  // Host time to launch one group of kernels (one table-batched embedding forward or backward
  // call). Default: the launch of one NCCL operation's kernel as fitted over the nccl-tests logs
  // of validation/ (collectives.launch_latency, 1.97 +- 0.23 us), the same host path.
  Time kernel_launch_latency = 1970 * kNanosecond;
  // Pinned host-to-device copy bandwidth (0: unknown).
  double host_to_device_bytes_per_s = 0.0;

  double gemm_efficiency_at(double flops_per_gemm) const {
    return gemm_half_flops > 0
               ? gemm_efficiency * flops_per_gemm / (flops_per_gemm + gemm_half_flops)
               : gemm_efficiency;
  }
  double embedding_efficiency_at(double row_bytes) const {
    return embedding_efficiency * row_share(row_bytes);
  }
  double embedding_backward_efficiency_at(double row_bytes) const {
    return embedding_backward_efficiency * row_share(row_bytes);
  }
  double row_share(double row_bytes) const {
    return embedding_half_row_bytes > 0 ? row_bytes / (row_bytes + embedding_half_row_bytes) : 1.0;
  }
};

// One class of link: line rate per direction, latency, and the fraction of line rate that
// collectives achieve on it. Effective bandwidth = bandwidth * efficiency.
struct LinkClassSpec {
  double bandwidth_bytes_per_s = 0.0;
  Time latency = 0;
  double efficiency = 1.0;
  double effective_bandwidth() const { return bandwidth_bytes_per_s * efficiency; }
};

enum class IntraNodeFabric { kNvSwitch, kPcie };
const EnumNames<IntraNodeFabric>& intra_node_fabric_names();  // "nvswitch", "pcie"

struct IntraNodeSpec {
  IntraNodeFabric fabric = IntraNodeFabric::kNvSwitch;
  // NVSwitch: each GPU's NVLink to the switch. PCIe: each GPU's link to its PCIe switch.
  LinkClassSpec gpu_link;
  // PCIe only: GPUs are split evenly over this many PCIe switches (one per CPU socket, say),
  // joined pairwise by `switch_link`.
  int pcie_switches = 1;
  LinkClassSpec switch_link;
  // NVSwitch only: the switch can reduce in-network (NVLink SHARP, third-generation NVSwitch).
  bool nvls = false;
  // NVLinks per GPU (NVSwitch); 0: gpu_link bandwidth / the generation's per-link rate.
  int nvlink_links = 0;
  // Fraction of the GPU link's achieved bandwidth that in-switch reduction (NVLS) reaches;
  // 0: NCCL's figure for the generation (0.85 Hopper, 0.74 Blackwell).
  double nvls_efficiency = 0.0;
  // What one NVLS (or NVLSTree) chunk step costs beyond moving its bytes (the step's
  // synchronisation through the switch): NCCL shrinks NVLS chunks for mid-size messages, and
  // each chunk pays this once.
  // 0: not modelled.
  Time nvls_step_latency = 0;
  // Hosts one NVLink domain spans (a multi-node NVLink rack, e.g. 18 trays of an NVL72): the
  // cluster's "node" is then the whole domain, and nccl-tests logs list this many hosts per node.
  int hosts = 1;
};

// How NCCL reaches the network: its InfiniBand verbs transport (InfiniBand, RoCE), or a network
// plugin (AWS EFA through libfabric; Google's GPUDirect-TCPX and TCPXO over TCP), or sockets.
// Systems on one transport share its per-hop network latency.
enum class NetTransport { kInfiniband, kRoce, kEfa, kTcpx, kTcpxo, kSocket };
const EnumNames<NetTransport>& net_transport_names();
std::string_view net_transport_name(NetTransport transport);
std::optional<NetTransport> parse_net_transport(std::string_view name);

struct NicSpec {
  int count = 0;                       // per node
  NetTransport transport = NetTransport::kInfiniband;
  LinkClassSpec link;                  // NIC to the network, per direction
  LinkClassSpec gpu_link;              // GPU to its NIC (PCIe, GPUDirect RDMA)
  std::vector<std::vector<int>> gpus;  // per NIC: local GPU indices that send through it
  // GPUDirect RDMA between GPU and NIC (NCCL's LL128 needs it across nodes).
  bool gpu_direct = true;
};

enum class NetworkTopology { kSingleSwitch, kFatTree };
const EnumNames<NetworkTopology>& network_topology_names();  // "single_switch", "fat_tree"
// How the switches pick among equal-cost paths: by a hash of source and destination (Ethernet's
// ECMP, the default) or by destination alone (InfiniBand's forwarding tables, D-mod-k).
enum class NetworkRouting { kEcmp, kDestination };
const EnumNames<NetworkRouting>& network_routing_names();  // "ecmp", "destination"

struct NetworkSpec {
  NetworkTopology topology = NetworkTopology::kSingleSwitch;
  // Fat-tree only.
  int nodes_per_leaf = 1;
  int spines = 1;
  double oversubscription = 1.0;  // leaf downlink bandwidth / uplink bandwidth
  bool rail_optimized = false;    // NIC i of every node on its own leaf ("rail")
  Time switch_latency = 0;        // per switch-to-switch hop
  NetworkRouting routing = NetworkRouting::kEcmp;
  // The switches reduce in the network (InfiniBand SHARP with NCCL's CollNet plugin).
  bool sharp = false;
  // A transfer waits its route latency before it takes bandwidth (SimGrid's message model);
  // default: it takes bandwidth at once and arrives its route latency after its last byte leaves.
  bool latency_first = false;
};

// A cluster that is not all healthy, as what-ifs (the questions of "Understanding Stragglers in
// Large Model Training Using What-if Analysis", OSDI 2025): GPUs that compute slower (a fixed set,
// whole nodes, or every GPU drawn from a distribution: thermal throttling, a slow host), NICs
// below their line rate, failed leaf-spine links whose traffic the other spines carry. Indices
// beyond the nodes of a run do not apply to it.
enum class SlowdownDistribution { kNone, kUniform, kExponential };
const EnumNames<SlowdownDistribution>& slowdown_distribution_names();

struct SlowGpu {
  int rank = 0;           // global: node * gpus_per_node + local index
  double slowdown = 1.0;  // its compute takes this many times as long
};
struct SlowNode {
  int node = 0;
  double slowdown = 1.0;  // every GPU of the node
};
struct SlowNic {
  int node = 0;
  int nic = 0;
  double fraction = 1.0;  // of its bandwidth, both directions
};
struct FailedUplink {
  int leaf = 0;  // in build order: leaf group by group, rails within a group
  int spine = 0;
};
struct StragglerSpec {
  std::vector<SlowGpu> gpus;
  std::vector<SlowNode> nodes;
  std::vector<SlowNic> nics;
  std::vector<FailedUplink> failed_uplinks;
  // Every GPU's slowdown drawn once per run from the run's seed (times the fixed ones above):
  // uniform in [min, max], or 1 + an exponential of mean `mean_excess`.
  SlowdownDistribution distribution = SlowdownDistribution::kNone;
  double min = 1.0;
  double max = 1.0;
  double mean_excess = 0.0;
};

// Each rank's compute slowdown in a run of `nodes` x `gpus_per_node` GPUs: the fixed ones times a
// draw (rank by rank from `rng`, which must come from the run's seed).
std::vector<double> compute_slowdowns(const StragglerSpec& stragglers, int nodes,
                                      int gpus_per_node, std::mt19937_64& rng);

// Steady traffic between node groups that is not the job's (another tenant, storage): `bytes_per_s`
// in all from nodes [from_first, from_last] to nodes [to_first, to_last], split evenly over the
// node pairs and, rail by rail, over their NICs; it shares the links by max-min fairness with the
// job's traffic for the whole run. Nodes beyond a run's do not take part.
struct BackgroundTraffic {
  int from_first = 0;
  int from_last = 0;
  int to_first = 0;
  int to_last = 0;
  double bytes_per_s = 0.0;
};

struct ClusterSpec {
  std::string name;
  std::string description;
  std::string source_file;
  int nodes = 1;  // nodes available
  int gpus_per_node = 1;
  GpuSpec gpu;
  IntraNodeSpec intra_node;
  NicSpec nic;
  NetworkSpec network;
  CollectiveTuning collectives;
  // Beyond the step: where data is read from and checkpoints go, host CPUs, failures.
  StorageSpec storage;
  HostSpec host;
  ReliabilitySpec reliability;
  StragglerSpec stragglers;
  std::vector<BackgroundTraffic> background_traffic;
  // Relative standard uncertainty of values a calibration fitted (key path, e.g.
  // "gpu.gemm_efficiency", and sd / value): repeated runs draw the cluster within them.
  std::vector<std::pair<std::string, double>> uncertainty;

  // Host-GPU copy bandwidth: the GPU's measured pinned copy rate, else its PCIe link to the NIC.
  double host_link_bytes_per_s() const {
    return gpu.host_to_device_bytes_per_s > 0 ? gpu.host_to_device_bytes_per_s
                                              : nic.gpu_link.effective_bandwidth();
  }
};

// The cluster with only GPUs 0..gpus-1 of each node taking part (e.g. one GPU per node for a
// network test): those GPUs keep their NICs, NICs left without a GPU are dropped.
ClusterSpec restrict_gpus_per_node(ClusterSpec spec, int gpus);

}  // namespace trainsim::models
