// Calibration of the collective model against measured nccl-tests runs. The model's structure is
// NCCL's (nccl_tuner.h, algorithms.h); what is fitted is a handful of physical constants, by least
// squares on log(predicted / measured time) over every row of every log, jointly:
//   shared by all systems   host launch cost per GPU, per-hop latency scales of NVLink, PCIe and
//                           the network (relative to NCCL's figures), the throughput of one
//                           point-to-point network channel, point-to-point efficiency;
//   each system's own       achieved fraction of its NVLink (or PCIe) and NIC line rate.
// Each fitted value comes with its standard uncertainty (from the covariance of the fit). Warnings
// name parameters that two logs pull to different values. Leave-one-out prediction fits on every
// log but one and predicts that one.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/collectives/nccl_tests_log.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/collective_tuning.h"

namespace trainsim::models {

// Nodes and GPUs per node of a run.
struct RunShape {
  int nodes = 1;
  int gpus_per_node = 1;
};

struct MeasuredRun {
  std::string source;  // the log file
  NcclTestsRun run;
  std::optional<Algorithm> algorithm;  // NCCL_ALGO of the run, if forced
  std::vector<std::pair<std::string, std::string>> env;  // its other NCCL variables
  std::optional<RunShape> shape;  // for logs that list no ranks
  int gpus_per_thread = 1;        // nccl-tests -g
};

// The run's shape, from its device list (hosts, over the cluster's hosts per node) or as given;
// checked against the cluster. Throws ConfigError naming the log.
RunShape run_shape(const MeasuredRun& run, const ClusterSpec& cluster);
// An algorithm named in a log's file name as a separate word ("..._RING_...", "-nvls.log").
std::optional<Algorithm> algorithm_in_file_name(const std::string& path);
// All runs of a log, with the algorithm from `forced`, else the file name (all-reduce runs only).
std::vector<MeasuredRun> measured_runs(const NcclTestsLog& log, std::optional<Algorithm> forced);
// The cluster as the run had it: GPUs per node restricted, its NCCL environment applied.
ClusterSpec cluster_for_run(const ClusterSpec& cluster, const MeasuredRun& run);

struct FitRow {
  std::string source;
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;  // what NCCL's tuner runs for the row
  Protocol protocol = Protocol::kSimple;
  int line = 0;
  long long size_bytes = 0;
  double measured_us = 0.0;  // the faster of out-of-place and in-place
  double predicted_us = 0.0;
  double measured_busbw = 0.0;   // GB/s, from size and measured time
  double predicted_busbw = 0.0;  // GB/s
  double error = 0.0;            // (predicted - measured) / measured busbw
};

// Predicted time and busbw for every row of every run (analytic model).
std::vector<FitRow> predict_runs(const ClusterSpec& cluster, const std::vector<MeasuredRun>& runs);

struct SourceError {
  std::string source;
  std::optional<CollectiveOp> op;  // set when summarised per collective
  int rows = 0;
  double mean_abs_error = 0.0;  // over rows of at least `min_bytes`
  double max_abs_error = 0.0;
};
std::vector<SourceError> summarize_errors(const std::vector<FitRow>& rows, double min_bytes,
                                          bool per_collective = false);

struct FittedParameter {
  std::string key;     // config key path, e.g. "nic.efficiency"
  std::string system;  // the cluster it belongs to; empty for a shared constant
  double value = 0.0;
  double uncertainty = 0.0;  // standard uncertainty
  std::string unit;          // "s", "", "B/s"
};

// Logs pulling one parameter apart: fitted on each log alone (the others at the joint values),
// their values differ by more than three combined uncertainties and by more than 5%.
struct CalibrationWarning {
  std::string message;
};

// The hardware classes a cluster belongs to, which share fitted constants: its GPU generation
// and intra-node fabric ("hopper nvlink"), its NIC ("infiniband 400G"), its transport.
std::vector<std::string> hardware_classes(const ClusterSpec& cluster);

// One system (a cluster) and its measured runs.
struct SystemRuns {
  ClusterSpec cluster;
  std::vector<MeasuredRun> runs;
};

struct JointCalibration {
  std::vector<ClusterSpec> clusters;  // the systems, calibrated, shared constants included
  std::vector<FittedParameter> parameters;
  std::vector<CalibrationWarning> warnings;
  std::vector<std::vector<FitRow>> rows;  // per system
  double rms_log_error = 0.0;
};

struct CalibrationOptions {
  bool fit_shared = true;     // fit the shared constants (else keep the clusters' values)
  bool check_pulls = true;    // per-log fits for the warnings (costs one fit per log and value)
};

// Fits the shared constants and every system's own constants the runs inform.
JointCalibration calibrate_jointly(const std::vector<SystemRuns>& systems,
                                   const CalibrationOptions& options = {});

// One cluster: the joint fit with a single system.
struct CalibrationResult {
  ClusterSpec cluster;
  std::vector<FitRow> rows;
  std::vector<FittedParameter> parameters;
  std::vector<CalibrationWarning> warnings;
  double rms_log_error = 0.0;
};
CalibrationResult calibrate_collectives(const ClusterSpec& base,
                                        const std::vector<MeasuredRun>& runs,
                                        const CalibrationOptions& options = {});

// Leave one log out: for every log (source) of every system, fit on all other logs (shared
// constants on every other log, the system's own constants on its other logs, or its configured
// values when it has none) and predict the held-out log. With a single log there is nothing to
// fit on: it is predicted from the cluster as configured.
struct HeldOutLog {
  std::size_t system = 0;
  std::string source;
  std::vector<FitRow> rows;
  std::vector<FittedParameter> parameters;  // of the fit that did not see it
};
std::vector<HeldOutLog> leave_one_log_out(const std::vector<SystemRuns>& systems);

}  // namespace trainsim::models
