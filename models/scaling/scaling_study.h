// Runs the training-step simulation for each node count and derives the scaling figures:
// throughput (examples/s), speedup = throughput(N) / throughput(baseline) with the smallest node
// count as baseline, and efficiency = speedup / (N / N_baseline).
#pragma once

#include <memory>
#include <vector>

#include <optional>

#include "models/config/job_config.h"
#include "models/config/recsys_config.h"
#include "models/hardware/cluster_spec.h"
#include "models/workload/dense_model.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

struct ScalingPoint {
  int nodes = 0;
  int gpus = 0;
  double global_batch = 0.0;  // examples per step
  Time step_time = 0;
  double throughput = 0.0;  // examples per second
  double speedup = 0.0;
  double efficiency = 0.0;
  StepBreakdown breakdown;
  int slowest_rank = 0;
  Time slowest_rank_compute = 0;
  std::uint64_t events = 0;
};

// What is trained: a dense model alone, or a recommender with its job (batch, sharding).
struct Workload {
  ModelSpec model;
  std::optional<JobSpec> job;
};

struct ScalingStudyOptions {
  StepSimulationOptions simulation;
  int trace_nodes = 0;  // keep the trace of this node count (0: none)
};

struct ScalingStudy {
  std::vector<ScalingPoint> points;  // ascending node counts
  std::shared_ptr<StepTrace> trace;  // for trace_nodes, if asked
};

// `node_counts` must be positive; duplicates are dropped and the result is sorted.
ScalingStudy run_scaling_study(const ClusterSpec& cluster, const Workload& workload,
                               std::vector<int> node_counts, const ScalingStudyOptions& options);
ScalingStudy run_scaling_study(const ClusterSpec& cluster, const DenseModelSpec& model,
                               std::vector<int> node_counts, const ScalingStudyOptions& options);

// One node count of the study.
ScalingPoint simulate_point(const ClusterSpec& cluster, const Workload& workload, int nodes,
                            const StepSimulationOptions& options,
                            std::shared_ptr<StepTrace>* trace = nullptr);

// speedup and efficiency of `points` relative to points[0] (the baseline), filled in place.
void fill_speedup_and_efficiency(std::vector<ScalingPoint>& points);

}  // namespace trainsim::models
