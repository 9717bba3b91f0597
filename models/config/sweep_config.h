// A sweep file (configs/sweeps/*.yaml): base cluster, model and job files and axes, each a config
// key (cluster.nic.bandwidth, job.sharding.strategy, ...), a whole file (cluster, model, job) or
// the node count (nodes), with a list or a range of values. The axes combine as a grid (every
// combination; the last axis varies fastest) or zipped (the i-th value of every axis), into points
// numbered from 0 in that order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/config/param_doc.h"
#include "models/spec/config_error.h"
#include "models/spec/study_spec.h"

namespace trainsim::models {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // as YAML text (numbers and quantities as written)
  SourceLocation location;
};

struct SweepSpec {
  std::string name;
  std::string description;
  std::string source_file;
  std::string cluster, model, job;  // base files (empty: the job's, else the default)
  int baseline_nodes = 1;           // speedup and efficiency are relative to this node count
  std::optional<NetworkModel> network;  // unset: the command's default
  std::optional<ScalingMode> scaling;   // unset: the command's default
  bool zip = false;
  std::vector<SweepAxis> axes;
  std::uint64_t signature = 0;  // of the file's contents: a resumed output must come from it

  std::size_t point_count() const;
  // The value index of each axis at point `index` (< point_count()).
  std::vector<std::size_t> point(std::size_t index) const;
};

// Throws ConfigError for a bad file: no axes, an empty range or list, zipped axes of different
// lengths, an axis key that is not nodes, cluster, model, job or under one of them, a node count
// that is not a positive whole number.
SweepSpec load_sweep_spec(const std::string& path);
// The sweep file's keys (`trainsim describe sweep`).
ParamTableDoc sweep_param_doc();

// FNV-1a, 64 bits: a stable fingerprint of text (the same on every machine and run).
std::uint64_t fingerprint(const std::string& text, std::uint64_t seed = 14695981039346656037ull);

}  // namespace trainsim::models
