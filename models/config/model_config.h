// Loads and validates a model spec (configs/models/*.yaml). See configs/README.md for the schema.
#pragma once

#include <string>

#include "models/spec/cluster_spec.h"
#include "models/spec/dense_model.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

DenseModelSpec load_dense_model_spec(const std::string& path);
DenseModelSpec parse_dense_model_spec(const ConfigNode& root);

// A model's compute format must have a peak on the cluster's GPU; throws ConfigError at the
// model's key (`where`).
void check_compute_dtype(Dtype dtype, const SourceLocation& where, const ClusterSpec& cluster);

}  // namespace trainsim::models
