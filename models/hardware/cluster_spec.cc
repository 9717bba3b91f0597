#include "models/hardware/cluster_spec.h"

#include <algorithm>

#include "engine/check.h"

namespace trainsim::models {

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
