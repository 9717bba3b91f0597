// Loads and validates a model spec (configs/models/*.yaml). See configs/README.md for the schema.
#pragma once

#include <ostream>
#include <string>

#include "models/config/param_doc.h"

#include "models/spec/cluster_spec.h"
#include "models/spec/dense_model.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

DenseModelSpec load_dense_model_spec(const std::string& path);
DenseModelSpec parse_dense_model_spec(const ConfigNode& root);
// Every key the reader reads, defaults filled in.
void write_dense_model_yaml(std::ostream& out, const DenseModelSpec& model);
// The dense model file's keys (`trainsim describe model`).
ParamTableDoc dense_model_param_doc();

// A model's compute format must have a peak on the cluster's GPU; throws ConfigError at the
// model's key (`where`).
void check_compute_dtype(Dtype dtype, const SourceLocation& where, const ClusterSpec& cluster);

}  // namespace trainsim::models
