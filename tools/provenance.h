// How a result was made, recorded with it: the trainsim version, the command and its arguments,
// the seed, every --set, each config file with its content hash (SHA-1, as git names contents),
// and the scenario as simulated (every key resolved, the settings applied). Predict's JSON holds
// it, a CSV's side file FILE.meta.json too, a sweep's header; report shows it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/scenario/scenario.h"

namespace trainsim::cli {

struct ProvenanceFile {
  std::string role;  // "cluster", "model", "job", "sweep", "histogram"
  std::string path;  // as given (resolved against the source tree when not found as is)
  std::string sha1;  // of its bytes; "" when it cannot be read
};

struct Provenance {
  std::string command;                 // "predict", "sweep"
  std::vector<std::string> arguments;  // after the command, as given
  std::uint64_t seed = 0;
  std::vector<std::string> settings;  // --set KEY=VALUE, in order
  std::vector<ProvenanceFile> files;
  std::string resolved;  // the scenario as simulated (YAML documents); "" for a sweep
};

// SHA-1 of a file's bytes as 40 hex digits, or "" when it cannot be read.
std::string file_sha1(const std::string& path);

// The config files of a scenario (cluster, model, job, and the histograms its tables read).
std::vector<ProvenanceFile> scenario_files(const models::Scenario& scenario);

nlohmann::ordered_json provenance_json(const Provenance& p);
// The same read back (missing keys empty).
Provenance provenance_from_json(const nlohmann::json& j);

}  // namespace trainsim::cli
