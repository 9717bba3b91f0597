// Loads and validates a model spec (configs/models/*.yaml). See configs/README.md for the schema.
#pragma once

#include <string>

#include "models/config/config_node.h"
#include "models/hardware/cluster_spec.h"
#include "models/workload/dense_model.h"

namespace trainsim::models {

DenseModelSpec load_dense_model_spec(const std::string& path);
DenseModelSpec parse_dense_model_spec(const ConfigNode& root);

// Checks that span a model and a cluster (for runs of 1 to max_nodes nodes); throws ConfigError at
// the model's key.
void check_model_fits_cluster(const DenseModelSpec& model, const ClusterSpec& cluster,
                              int max_nodes = 1);

}  // namespace trainsim::models
