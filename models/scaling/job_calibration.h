// Calibration of a training job's compute side against throughputs measured on the user's own
// runs. What a measured run informs least ambiguously is the achieved fraction of peak of the
// GPU's kernels (dense GEMMs, streaming HBM kernels, the embedding lookup and its update); these
// are also the least certain figures of a cluster file, because they depend on the software
// stack and the model's shapes. Everything that changes with scale (links, NICs, NCCL's
// constants, the sharding, the overlap) stays physics: the calibrated cluster predicts other node
// counts with only the GPU's fractions moved.
//
// The fit is a maximum a posteriori estimate in log space: each fraction starts at the cluster's
// value with a relative prior uncertainty (job_calibration_priors(): the spread of the public
// figures it comes from), each measurement has its own relative uncertainty, and Gauss-Newton
// minimises sum ((log predicted - log measured) / u_m)^2 + sum ((log value - log prior) / u_p)^2.
// One measured point cannot pin four fractions: the posterior moves most the fraction that is
// both least certain and most influential on the step, and each value's uncertainty (from the
// linearised posterior covariance) says how much the data narrowed it.
#pragma once

#include <string>
#include <vector>

#include "models/scaling/scaling_study.h"
#include "models/spec/cluster_spec.h"

namespace trainsim::models {

// One measured run at a node count, as the job runs it (its batch at that count): examples/s, or
// the time of one step (then examples/s = the global batch / the step time).
struct MeasuredThroughput {
  int nodes = 1;
  double throughput = 0.0;   // examples per second (0: from step_time_s)
  double step_time_s = 0.0;  // seconds per step, when the throughput is not given
  // The figure leaves out the job's evaluation phases (a train-only throughput): compared with
  // the training steps' throughput, not the wall clock's.
  bool training_only = false;
};

// A GPU fraction the fit may move, with its prior's relative standard uncertainty and basis.
struct EfficiencyPrior {
  const char* key;  // cluster key, "gpu.embedding_backward_efficiency"
  double GpuSpec::*field;
  double relative_uncertainty;  // of the cluster's value, in log space
  const char* basis;            // where that uncertainty comes from
};
const std::vector<EfficiencyPrior>& job_calibration_priors();

struct FittedEfficiency {
  std::string key;
  double prior = 0.0;              // the cluster's value
  double prior_uncertainty = 0.0;  // absolute, standard
  double value = 0.0;              // fitted
  double uncertainty = 0.0;        // absolute, standard (posterior)
  // d log(step time) / d log(value) at the fitted values, summed over the measured points: how
  // much the measurements see this fraction (0: not at all).
  double sensitivity = 0.0;
};

struct CalibratedPoint {
  int nodes = 0;
  double global_batch = 0.0;
  double measured = 0.0;  // examples/s
  double before = 0.0;    // predicted with the cluster as given
  double after = 0.0;     // predicted with the calibrated cluster
  bool training_only = false;
};

struct JobCalibrationOptions {
  ScalingStudyOptions study;
  double measurement_uncertainty = 0.02;  // relative standard uncertainty of each measurement
};

struct JobCalibration {
  ClusterSpec cluster;  // the fractions replaced by their fitted values
  std::vector<FittedEfficiency> parameters;
  std::vector<CalibratedPoint> points;
  int iterations = 0;
};

// Fits the GPU fractions of job_calibration_priors() so that the workload's predicted throughput
// matches `measured`. The batch at each node count follows the study's scaling mode (strong: the
// job's global batch; weak: its batch per GPU). The node counts must be the cluster's (the
// commands check them first, as a study's). Each point's sharding plan and solve quantum are
// resolved once, at the cluster's own values, and held while the fractions move.
JobCalibration calibrate_job(const ClusterSpec& cluster, const Workload& workload,
                             const std::vector<MeasuredThroughput>& measured,
                             const JobCalibrationOptions& options);

}  // namespace trainsim::models
