// A scenario: the cluster, model and job files of one prediction, with the settings (--set, a
// sweep's axes) applied as they are loaded, resolved into the specs a study runs, and checked
// across files (a recommender has a job, the node counts fit the cluster, the cluster's GPU has the
// model's compute format). Every command that simulates training starts here.
#pragma once

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/config/config_override.h"
#include "models/scaling/scaling_study.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/model_spec.h"
#include "models/spec/setting.h"

namespace trainsim::models {

// The config files of a scenario; an empty one is the job's, else the default.
struct ScenarioFiles {
  std::string cluster, model, job;
};

// Loads a model file with settings (e.g. from a cache).
using ModelLoader =
    std::function<ModelSpec(const std::string& path, const std::vector<YamlSetting>& settings)>;

// How files are found: the defaults for a cluster and a model no file names, and how a path
// written in a job or on the command line becomes one that opens (e.g. relative to a source tree).
struct ScenarioSources {
  std::string default_cluster;
  std::string default_model;
  std::function<std::string(const std::string&)> resolve_path;  // unset: as written
  ModelLoader load_model;                                       // unset: load_model_spec
};

// The resolved scenario.
struct Scenario {
  ClusterSpec cluster;
  Workload workload;
  std::vector<ConfigOverride> overrides;  // applied while loading (for error locations)
};

// A scenario that cannot run as asked, though every file is valid: `input` names what must change
// ("nodes": a node count the cluster lacks, `value`; "job": a recommender without a job).
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(std::string input, std::string value, const std::string& message)
      : std::runtime_error(message), input_(std::move(input)), value_(std::move(value)) {}
  const std::string& input() const { return input_; }
  const std::string& value() const { return value_; }

 private:
  std::string input_, value_;
};

// A cluster or model file a job names: relative to the job file's folder when a file is there,
// else as written (then looked up as any path is).
std::string job_relative_path(const JobSpec& job, const std::string& path);

// Loads the files with the overrides that target each. Throws ConfigError (at the file's key, or
// at the override that set it), also for an override of a job when there is no job file.
Scenario load_scenario(const ScenarioFiles& files, const std::vector<ConfigOverride>& overrides,
                       const ScenarioSources& sources);

// The checks across files for the node counts to simulate: ScenarioError for a recommender
// without a job or a node count beyond the cluster's; ConfigError for a compute format the GPU
// lacks (at the model's key, or at the override that set it).
void check_scenario(const Scenario& scenario, const std::vector<int>& nodes);

// The scenario as YAML documents, every key with its default filled in and the settings applied:
// the cluster, the model and the job (if any), each of which loads back as a file of its kind.
// `header` lines come first, as comments.
void write_resolved_scenario(std::ostream& out, const Scenario& scenario,
                             const std::vector<std::string>& header);

}  // namespace trainsim::models
