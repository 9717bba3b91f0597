// Loads and validates a cluster spec (configs/clusters/*.yaml). See configs/README.md for the
// schema. Throws ConfigError naming file, line, column and key on any problem.
#pragma once

#include <string>

#include "models/spec/cluster_spec.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

ClusterSpec load_cluster_spec(const std::string& path,
                              const std::vector<YamlSetting>& settings = {});
ClusterSpec parse_cluster_spec(const ConfigNode& root);

// The collective constants a cluster file leaves out: the joint fit over the logs in validation/.
CollectiveTuning calibrated_collective_defaults(NetTransport transport);

// A link class: {bandwidth, latency, efficiency (optional, default 1)}.
LinkClassSpec parse_link_class(const ConfigNode& node);
Dtype parse_dtype_node(const ConfigNode& node);

}  // namespace trainsim::models
