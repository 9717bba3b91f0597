// A placement file (configs/placements/*.yaml): several jobs on node ranges of one cluster, each
// with its own model, job and start time, and background traffic between node groups. Loaded into
// the Placement that run_shared_cluster simulates.
#pragma once

#include <string>
#include <vector>

#include "models/config/config_override.h"
#include "models/scaling/shared_cluster.h"
#include "models/scenario/scenario.h"

namespace trainsim::models {

struct PlacementFile {
  std::string name;
  std::string description;
  std::string source_file;
  Placement placement;
  std::vector<std::string> files;  // every config file it loaded (cluster, models, jobs)
};

// Paths in the file are relative to its folder when a file is there, else found as `sources`
// finds any path. The file's cluster_settings, then `overrides`, change the cluster
// (cluster.KEY) for every job. Throws
// ConfigError (file, line, key) for a bad file or one it names: a node range beyond the cluster or
// overlapping another job's, two jobs of one name, a recommender without a job file, a model whose
// compute format the cluster's GPU lacks.
PlacementFile load_placement(const std::string& path, const std::vector<ConfigOverride>& overrides,
                             const ScenarioSources& sources);

}  // namespace trainsim::models
