// Loads and validates a recommender model spec (configs/models/*.yaml with `kind: recsys`), and
// dispatches any model file to its loader. See configs/README.md for the schema.
#pragma once

#include <ostream>
#include <string>
#include <variant>

#include "models/config/param_doc.h"
#include "models/spec/model_spec.h"
#include "models/spec/setting.h"

namespace trainsim::models {

class ConfigNode;  // models/config/config_node.h (YAML stays inside models/config)

ModelSpec load_model_spec(const std::string& path, const std::vector<YamlSetting>& settings = {});
RecsysModelSpec parse_recsys_model_spec(const ConfigNode& root);
// The access distribution of a table from its config node: {distribution: uniform | zipf with
// alpha | histogram with file (relative to the model file)}.
// `file`, if given, receives a histogram's path; `ids_per_sample` is the table's pooling, for
// multi_hot: derived.
AccessDistribution parse_access(const ConfigNode& node, double rows, std::string* file = nullptr,
                                double ids_per_sample = 1);

// Every key the reader reads, defaults filled in (a dense or a recommender model).
void write_model_yaml(std::ostream& out, const ModelSpec& model);
// The recommender model file's keys (`trainsim describe model`).
ParamTableDoc recsys_model_param_doc();

}  // namespace trainsim::models
