#include "models/spec/cluster_spec.h"

#include <algorithm>
#include <cmath>

#include "engine/check.h"

namespace trainsim::models {

const EnumNames<GpuArch>& gpu_arch_names() {
  static const EnumNames<GpuArch> names = {{GpuArch::kVolta, "volta"},
                                           {GpuArch::kAmpere, "ampere"},
                                           {GpuArch::kHopper, "hopper"},
                                           {GpuArch::kBlackwell, "blackwell"}};
  return names;
}
std::string_view gpu_arch_name(GpuArch arch) { return gpu_arch_names().name(arch); }
std::optional<GpuArch> parse_gpu_arch(std::string_view name) { return gpu_arch_names().parse(name); }

const EnumNames<NetTransport>& net_transport_names() {
  static const EnumNames<NetTransport> names = {
      {NetTransport::kInfiniband, "infiniband"}, {NetTransport::kRoce, "roce"},
      {NetTransport::kEfa, "efa"},               {NetTransport::kTcpx, "tcpx"},
      {NetTransport::kTcpxo, "tcpxo"},           {NetTransport::kSocket, "socket"}};
  return names;
}
const EnumNames<SlowdownDistribution>& slowdown_distribution_names() {
  static const EnumNames<SlowdownDistribution> names = {
      {SlowdownDistribution::kNone, "none"},
      {SlowdownDistribution::kUniform, "uniform"},
      {SlowdownDistribution::kExponential, "exponential"}};
  return names;
}

std::vector<double> compute_slowdowns(const StragglerSpec& stragglers, int nodes, int gpus_per_node,
                                      std::mt19937_64& rng) {
  const int ranks = nodes * gpus_per_node;
  std::vector<double> out(ranks, 1.0);
  for (const SlowGpu& g : stragglers.gpus) {
    if (g.rank < ranks) out[g.rank] *= g.slowdown;
  }
  for (const SlowNode& n : stragglers.nodes) {
    for (int l = 0; l < gpus_per_node && n.node < nodes; ++l) {
      out[n.node * gpus_per_node + l] *= n.slowdown;
    }
  }
  if (stragglers.distribution == SlowdownDistribution::kNone) return out;
  for (double& s : out) {
    // 53 random bits: u in [0, 1), the same on every platform.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    s *= stragglers.distribution == SlowdownDistribution::kUniform
             ? stragglers.min + (stragglers.max - stragglers.min) * u
             : 1.0 - stragglers.mean_excess * std::log1p(-u);
  }
  return out;
}

std::string_view net_transport_name(NetTransport transport) {
  return net_transport_names().name(transport);
}
std::optional<NetTransport> parse_net_transport(std::string_view name) {
  return net_transport_names().parse(name);
}

const EnumNames<IntraNodeFabric>& intra_node_fabric_names() {
  static const EnumNames<IntraNodeFabric> names = {{IntraNodeFabric::kNvSwitch, "nvswitch"},
                                                   {IntraNodeFabric::kPcie, "pcie"}};
  return names;
}

const EnumNames<NetworkTopology>& network_topology_names() {
  static const EnumNames<NetworkTopology> names = {{NetworkTopology::kSingleSwitch, "single_switch"},
                                                   {NetworkTopology::kFatTree, "fat_tree"}};
  return names;
}

const EnumNames<NetworkRouting>& network_routing_names() {
  static const EnumNames<NetworkRouting> names = {{NetworkRouting::kEcmp, "ecmp"},
                                                  {NetworkRouting::kDestination, "destination"}};
  return names;
}

const EnumNames<CpuVendor>& cpu_vendor_names() {
  static const EnumNames<CpuVendor> names = {
      {CpuVendor::kIntel, "intel"}, {CpuVendor::kAmd, "amd"}, {CpuVendor::kArm, "arm"}};
  return names;
}

std::optional<GpuArch> gpu_arch_of_model(std::string_view model) {
  auto has = [&](std::string_view part) { return model.find(part) != std::string_view::npos; };
  if (has("V100")) return GpuArch::kVolta;
  if (has("A100") || has("A800") || has("A30")) return GpuArch::kAmpere;
  if (has("H100") || has("H200") || has("H800") || has("H20") || has("GH200")) {
    return GpuArch::kHopper;
  }
  if (has("B200") || has("B100") || has("B300") || has("GB200") || has("GB300")) {
    return GpuArch::kBlackwell;
  }
  return std::nullopt;
}

ClusterSpec restrict_gpus_per_node(ClusterSpec spec, int gpus) {
  TRAINSIM_ASSERT(gpus >= 1 && gpus <= spec.gpus_per_node, "GPU count out of range");
  if (gpus == spec.gpus_per_node) return spec;
  spec.gpus_per_node = gpus;
  std::vector<std::vector<int>> kept;
  for (const auto& list : spec.nic.gpus) {
    std::vector<int> served;
    for (const int g : list) {
      if (g < gpus) served.push_back(g);
    }
    if (!served.empty()) kept.push_back(served);
  }
  spec.nic.gpus = kept;
  spec.nic.count = static_cast<int>(kept.size());
  spec.intra_node.pcie_switches = std::min(spec.intra_node.pcie_switches, gpus);
  return spec;
}

}  // namespace trainsim::models
