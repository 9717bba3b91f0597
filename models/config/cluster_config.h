// Loads and validates a cluster spec (configs/clusters/*.yaml). See configs/README.md for the
// schema. Throws ConfigError naming file, line, column and key on any problem.
#pragma once

#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "models/config/param_doc.h"

#include "models/spec/cluster_spec.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

ClusterSpec load_cluster_spec(const std::string& path,
                              const std::vector<YamlSetting>& settings = {});
ClusterSpec parse_cluster_spec(const ConfigNode& root);
// A draw of the cluster within its `uncertainty` section: each value it names times exp(u z), z
// standard normal from `rng` (a draw that leaves a key's range is drawn again).
ClusterSpec draw_within_uncertainty(const ClusterSpec& cluster, std::mt19937_64& rng);
// The same, drawn from a run's seed (the draws of one seed are always the same).
ClusterSpec draw_within_uncertainty(const ClusterSpec& cluster, std::uint64_t seed);

// The collective constants a cluster file leaves out: the joint fit over the logs in validation/.
CollectiveTuning calibrated_collective_defaults(NetTransport transport);

Dtype parse_dtype_node(const ConfigNode& node);

// Writes a cluster spec back as YAML (every key the reader reads, defaults filled in), with
// comments: a header naming where the figures came from, and a note after any key (by path).
void write_cluster_yaml(std::ostream& out, const ClusterSpec& cluster,
                        const std::vector<std::string>& header,
                        const std::map<std::string, std::string>& notes = {});

// The cluster file's keys (`trainsim describe cluster`).
ParamTableDoc cluster_param_doc();

}  // namespace trainsim::models
