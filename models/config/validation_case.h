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

// A training validation case (validation/training/*.yaml): a job, a table of published
// throughputs (CSV), one row to calibrate the GPU's fractions on (trainsim calibrate --job), and
// every row predicted from that one fit, each on the cluster of its GPU, within a bound.
struct TrainingCaseSystem {
  std::string gpu;      // the table's `gpu` column
  std::string cluster;  // cluster file for rows of that GPU
  int line = 0;
};

struct TrainingCase {
  std::string file;
  std::string name;
  std::string description;
  std::string job;
  // --set style settings for every row ("job.global_batch" -> "55296").
  std::vector<std::pair<std::string, std::string>> set;
  std::string measurements;  // CSV path, relative to the repository root
  int measurements_line = 0;
  std::string fit_system;  // the row (its `system` column) the fit uses
  std::string fit_column;  // the column (examples/s in millions) it fits
  int fit_line = 0;
  // The columns every row is predicted on, what each measures ("train_only": the training
  // steps' throughput; "end_to_end": with the job's evaluation phases), and its bound.
  struct Column {
    std::string name;
    std::string measures;
    double max_error = 0.10;
  };
  std::vector<Column> columns;
  std::vector<TrainingCaseSystem> systems;
};

// True for a case file that names a job (a training case), false for a collective one.
bool is_training_case(const std::string& path);
TrainingCase load_training_case(const std::string& path);

// A CSV table with a header row; lines starting with '#' are comments. Throws ConfigError (at the
// line) for a row whose field count differs from the header's.
struct CsvRow {
  int line = 0;
  std::vector<std::pair<std::string, std::string>> fields;  // header name -> value
  const std::string* get(const std::string& name) const;
};
std::vector<CsvRow> read_csv_table(const std::string& path);

}  // namespace trainsim::models
