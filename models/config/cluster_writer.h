// Writes a cluster spec back as YAML (the format load_cluster_spec reads), with comments: a
// header naming where the figures came from, and a note next to any key.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "models/spec/cluster_spec.h"

namespace trainsim::models {

void write_cluster_yaml(std::ostream& out, const ClusterSpec& cluster,
                        const std::vector<std::string>& header,
                        const std::map<std::string, std::string>& notes = {});

}  // namespace trainsim::models
