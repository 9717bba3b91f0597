#include "models/spec/cluster_spec.h"

#include <algorithm>

#include "engine/check.h"

namespace trainsim::models {

std::string_view gpu_arch_name(GpuArch arch) {
  switch (arch) {
    case GpuArch::kVolta:
      return "volta";
    case GpuArch::kAmpere:
      return "ampere";
    case GpuArch::kHopper:
      return "hopper";
    case GpuArch::kBlackwell:
      return "blackwell";
  }
  return "?";
}

std::optional<GpuArch> parse_gpu_arch(std::string_view name) {
  for (const GpuArch a : {GpuArch::kVolta, GpuArch::kAmpere, GpuArch::kHopper, GpuArch::kBlackwell}) {
    if (gpu_arch_name(a) == name) return a;
  }
  return std::nullopt;
}

std::string_view net_transport_name(NetTransport transport) {
  switch (transport) {
    case NetTransport::kInfiniband:
      return "infiniband";
    case NetTransport::kRoce:
      return "roce";
    case NetTransport::kEfa:
      return "efa";
    case NetTransport::kTcpx:
      return "tcpx";
    case NetTransport::kTcpxo:
      return "tcpxo";
    case NetTransport::kSocket:
      return "socket";
  }
  return "?";
}

std::optional<NetTransport> parse_net_transport(std::string_view name) {
  for (const NetTransport t : {NetTransport::kInfiniband, NetTransport::kRoce, NetTransport::kEfa,
                               NetTransport::kTcpx, NetTransport::kTcpxo, NetTransport::kSocket}) {
    if (net_transport_name(t) == name) return t;
  }
  return std::nullopt;
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
