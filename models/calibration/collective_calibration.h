// Calibration of a cluster's collective model against measured nccl-tests runs: fits per link
// class (NVLink or PCIe inside nodes, the NIC between them) the latency and achieved fraction of
// line rate, and per algorithm its software latency and efficiency (and the channel ramp of
// point-to-point transfers), by least squares on log(predicted / measured time) over every row.
// Also predicts runs with a given cluster, for validation and hold-out checks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective_tuning.h"
#include "models/collectives/nccl_tests_log.h"
#include "models/hardware/cluster_spec.h"

namespace trainsim::models {

struct MeasuredRun {
  std::string source;  // the log file
  NcclTestsRun run;
  std::optional<Algorithm> algorithm;  // as run; default: algorithm_for_run()
};

// Nodes and GPUs per node of a run, from its device list, checked against the cluster.
struct RunShape {
  int nodes = 1;
  int gpus_per_node = 1;
};
RunShape run_shape(const MeasuredRun& run, const ClusterSpec& cluster);

// The algorithm NCCL uses by default for large messages of `op` on this shape: NVLS for
// all-reduce inside one NVLS-capable node, ring otherwise; direct all-to-all; p2p send/recv.
Algorithm default_algorithm(CollectiveOp op, const ClusterSpec& cluster, int nodes);
// An algorithm named in a log's file name as a separate word ("..._RING_...", "-nvls.log").
std::optional<Algorithm> algorithm_in_file_name(const std::string& path);
// All runs of a log, with the algorithm from `forced`, else the file name, else the default.
std::vector<MeasuredRun> measured_runs(const NcclTestsLog& log, std::optional<Algorithm> forced);

struct FitRow {
  std::string source;
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  int line = 0;
  long long size_bytes = 0;
  double measured_us = 0.0;
  double predicted_us = 0.0;
  double measured_busbw = 0.0;   // GB/s
  double predicted_busbw = 0.0;  // GB/s
  double error = 0.0;            // (predicted - measured) / measured busbw
};

// Predicted time and busbw for every row of every run.
std::vector<FitRow> predict_runs(const ClusterSpec& cluster, const std::vector<MeasuredRun>& runs);

struct SourceError {
  std::string source;
  int rows = 0;
  double mean_abs_error = 0.0;  // over rows of at least `min_bytes`
  double max_abs_error = 0.0;
};
std::vector<SourceError> summarize_errors(const std::vector<FitRow>& rows, double min_bytes);

struct FittedParameter {
  std::string key;  // config key path, e.g. "nic.efficiency"
  double value = 0.0;
  std::string unit;  // "s", "", "B/s", "B"
};

struct CalibrationResult {
  ClusterSpec cluster;
  std::vector<FitRow> rows;
  std::vector<FittedParameter> parameters;
  double rms_log_error = 0.0;  // over all rows
};

// Fits the parameters the runs can inform (the link classes they cross, the algorithms they use)
// and returns the calibrated cluster. Throws ConfigError if a run does not fit the cluster.
CalibrationResult calibrate_collectives(const ClusterSpec& base,
                                        const std::vector<MeasuredRun>& runs);

}  // namespace trainsim::models
