// A validation case (validation/**/*.yaml): calibrate a cluster on some measured logs, predict
// others (or the same ones), and require the busbw error to stay within tolerances.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/spec/collective_op.h"
#include "models/spec/collective_tuning.h"

namespace trainsim::models {

struct CaseLog {
  std::string path;  // relative to the repository root or absolute
  std::optional<Algorithm> algorithm;  // NCCL_ALGO of the run
  // Other NCCL environment variables the run set (NCCL_MIN_CTAS, NCCL_PROTO, ...).
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<CollectiveOp> ops;  // runs to score (empty: all)
  // Nodes and GPUs per node, for logs that list no ranks (0: from the log's device list).
  int nodes = 0;
  int gpus_per_node = 0;
  std::optional<CollectiveOp> op;  // for logs that do not say which collective they are
  int line = 0;                     // where the case names it
};

struct ValidationCase {
  std::string file;
  std::string name;
  std::string description;
  std::string cluster;
  // Keys of the cluster file changed for this system ("nic.count" -> "32"), as --set does.
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<CaseLog> fit;
  std::vector<CaseLog> check;  // empty: the fit logs
  double min_bytes = 1024.0 * 1024.0;
  double max_mean_error = 0.10;
  double max_error = 0.25;
  // The bound on each log's leave-one-out mean error per collective (default max_mean_error).
  double leave_one_out_max_mean_error = 0.0;
  // The leave-one-out accuracy goal for the system (0: none), printed beside the bound.
  double leave_one_out_target = 0.0;
};

ValidationCase load_validation_case(const std::string& path);

}  // namespace trainsim::models
