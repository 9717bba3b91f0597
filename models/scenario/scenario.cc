#include "models/scenario/scenario.h"

#include <filesystem>
#include <optional>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/model_config.h"
#include "models/config/recsys_config.h"

namespace trainsim::models {

std::string job_relative_path(const JobSpec& job, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute() || job.source_file.empty()) return path;
  const fs::path beside = fs::path(job.source_file).parent_path() / path;
  return fs::exists(beside) ? beside.lexically_normal().string() : path;
}

Scenario load_scenario(const ScenarioFiles& files, const std::vector<ConfigOverride>& overrides,
                       const ScenarioSources& sources) {
  auto resolve = [&](const std::string& path) {
    return sources.resolve_path ? sources.resolve_path(path) : path;
  };
  if (files.job.empty()) {
    for (const auto& o : overrides) {
      if (o.target == "job") {
        throw ConfigError(o.origin, o.key() + ": there is no job file to change");
      }
    }
  }
  std::optional<JobSpec> job;
  if (!files.job.empty()) {
    job = load_with_overrides(overrides, "job", [&] {
      return load_job_spec(resolve(files.job), settings_for(overrides, "job"));
    });
  }
  const std::string cluster_path = !files.cluster.empty() ? files.cluster
                                   : job && !job->cluster.empty()
                                       ? job_relative_path(*job, job->cluster)
                                       : sources.default_cluster;
  const std::string model_path = !files.model.empty() ? files.model
                                 : job && !job->model.empty()
                                     ? job_relative_path(*job, job->model)
                                     : sources.default_model;
  // A file the job names that cannot be read is reported where the job names it.
  auto at_job_key = [&](bool from_job, const SourceLocation& key, const std::string& path,
                        auto load) {
    try {
      return load();
    } catch (const ConfigError& e) {
      if (!from_job || e.line() != 0 || e.file() != resolve(path)) throw;
      throw ConfigError(key, "'" + path + "': " + e.message());
    }
  };
  const bool cluster_from_job = files.cluster.empty() && job && !job->cluster.empty();
  const bool model_from_job = files.model.empty() && job && !job->model.empty();
  ClusterSpec cluster = at_job_key(
      cluster_from_job, job ? job->cluster_location : SourceLocation{}, cluster_path, [&] {
        return load_with_overrides(overrides, "cluster", [&] {
          return load_cluster_spec(resolve(cluster_path), settings_for(overrides, "cluster"));
        });
      });
  ModelSpec model = at_job_key(
      model_from_job, job ? job->model_location : SourceLocation{}, model_path, [&] {
        return load_with_overrides(overrides, "model", [&] {
          const std::string path = resolve(model_path);
          return sources.load_model ? sources.load_model(path, settings_for(overrides, "model"))
                                    : load_model_spec(path, settings_for(overrides, "model"));
        });
      });
  return Scenario{std::move(cluster), Workload{std::move(model), std::move(job)}, overrides};
}

void check_scenario(const Scenario& scenario, const std::vector<int>& nodes) {
  const ClusterSpec& cluster = scenario.cluster;
  if (std::holds_alternative<RecsysModelSpec>(scenario.workload.model) && !scenario.workload.job) {
    throw ScenarioError("job", "",
                        "model '" + model_name(scenario.workload.model) +
                            "' is a recommender, which needs a job file (batch and sharding)");
  }
  for (const int n : nodes) {
    if (n > cluster.nodes) {
      throw ScenarioError("nodes", std::to_string(n),
                          "cluster '" + cluster.name + "' (" + cluster.source_file + ") has " +
                              std::to_string(cluster.nodes) + " nodes");
    }
  }
  // At the model's key, or at the setting that changed it.
  load_with_overrides(scenario.overrides, "model", [&] {
    std::visit(
        [&](const auto& m) { check_compute_dtype(m.compute_dtype, m.compute_dtype_location, cluster); },
        scenario.workload.model);
    return 0;
  });
}

void write_resolved_scenario(std::ostream& out, const Scenario& scenario,
                             const std::vector<std::string>& header) {
  for (const std::string& line : header) out << "# " << line << "\n";
  out << "--- # cluster, from " << scenario.cluster.source_file << "\n";
  write_cluster_yaml(out, scenario.cluster, {});
  out << "--- # model, from " << model_source_file(scenario.workload.model) << "\n";
  write_model_yaml(out, scenario.workload.model);
  if (scenario.workload.job) {
    out << "--- # job, from " << scenario.workload.job->source_file << "\n";
    write_job_yaml(out, *scenario.workload.job);
  }
}

}  // namespace trainsim::models
