// A validation case (validation/**/*.yaml): calibrate a cluster on some measured logs, predict
// others (or the same ones), and require the busbw error to stay within tolerances.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective_op.h"
#include "models/collectives/collective_tuning.h"

namespace trainsim::models {

struct CaseLog {
  std::string path;  // relative to the repository root or absolute
  std::optional<Algorithm> algorithm;
  std::vector<CollectiveOp> ops;  // runs to score (empty: all)
};

struct ValidationCase {
  std::string file;
  std::string name;
  std::string description;
  std::string cluster;
  std::vector<CaseLog> fit;
  std::vector<CaseLog> check;  // empty: the fit logs
  double min_bytes = 1024.0 * 1024.0;
  double max_mean_error = 0.10;
  double max_error = 0.25;
};

ValidationCase load_validation_case(const std::string& path);

}  // namespace trainsim::models
