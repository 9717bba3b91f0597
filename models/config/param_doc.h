// What a config key is, for people: its type, allowed values, default, meaning and where a
// default comes from. Every reader in models/config is driven by a table of keys (param_table.h)
// that carries these; `trainsim describe` and configs/README.md print them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainsim::models {

struct ParamDoc {
  // The key's path from the file's root, "gpu.hbm_bandwidth"; "embedding.tables[].rows" for a key
  // of every item of a list.
  std::string key = {};
  std::string type = {};          // "bandwidth (GB/s)", "whole number", "fraction", "flag", "map", ...
  std::string range = {};         // allowed values: "(0, 1]", "> 0", "ring, tree or nvls"
  std::string default_text = {};  // "required", the default value, or what an absent key means
  std::string help = {};          // one line
  std::string source = {};        // where a default or an allowed range comes from
  std::string applies = {};       // the key is allowed only then: "fabric: pcie"
};

struct ParamTableDoc {
  std::string title = {};  // "Cluster (configs/clusters/*.yaml)"
  std::vector<ParamDoc> params;
};

// The key tables of one kind of config file: "cluster", "model" (dense and recommender), "job",
// "sweep" or "placement". An unknown topic gives an empty list.
std::vector<ParamTableDoc> describe_config(std::string_view topic);
const std::vector<std::string>& config_topics();  // cluster, model, job, sweep, placement
// The placement file's keys (models/scenario/placement.h reads them).
ParamTableDoc placement_param_doc();

// A table as terminal text (a block per key) or as a Markdown table (configs/README.md).
std::string format_param_text(const ParamTableDoc& table);
std::string format_param_markdown(const ParamTableDoc& table);

}  // namespace trainsim::models
