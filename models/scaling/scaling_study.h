// Runs the training-step simulation for each node count and derives the scaling figures:
// throughput (examples/s), speedup = throughput(N) / throughput(baseline) with the smallest node
// count as baseline, and efficiency = speedup / (N / N_baseline). Beyond the step, it adds the
// input pipeline's stalls, the checkpoint and failure overhead and the evaluation phases (folded
// into the step time and throughput), and time-to-quality from the model's convergence at each
// global batch.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <optional>

#include "models/runtime/checkpoint.h"
#include "models/runtime/input_pipeline.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/dense_model.h"
#include "models/spec/job_spec.h"
#include "models/spec/model_spec.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

// The job's evaluation phases, spread over the training steps between them.
struct EvaluationCost {
  Time step_time = 0;          // one evaluation step: its forward pass, or its read if longer
  Time read_time = 0;          // reading one evaluation batch from storage (0: no storage given)
  double steps = 0.0;          // per evaluation: ceil(examples / evaluation batch)
  double seconds = 0.0;        // one evaluation
  double steps_between = 0.0;  // training steps from one evaluation to the next
};

// A recommender's tables whose rows live in host memory (the job's sharding.storage, or moved
// there by the planner because no plan fits in HBM), at one node count.
struct HostMemoryUse {
  int tables = 0;         // in host memory
  int cached = 0;         // of them, behind an HBM cache
  int all_tables = 0;     // in the model
  double bytes = 0;       // rows and optimizer state the busiest GPU keeps there
  double link_bytes = 0;  // moved per step over the busiest GPU's host link (both directions)
};

// A sample's mean and the half-width of its 95% confidence interval for the mean (Student's t
// with n - 1 degrees of freedom; 0 for a single value).
struct Interval {
  double mean = 0.0;
  double half_width = 0.0;
};
Interval confidence_interval_95(const std::vector<double>& sample);

// Throughput, speedup and efficiency over independent runs (seeds) of everything random.
struct RepeatedFigures {
  int runs = 0;
  Interval throughput;
  Interval speedup;
  Interval efficiency;
  Interval step_time_s;
};

struct ScalingPoint {
  int nodes = 0;
  int gpus = 0;
  double global_batch = 0.0;  // examples per step
  Time step_time = 0;
  double throughput = 0.0;  // examples per second
  double speedup = 0.0;
  double efficiency = 0.0;
  StepBreakdown breakdown;  // adds up to step_time
  int slowest_rank = 0;
  Time slowest_rank_compute = 0;
  Time communication_busy = 0;  // per rank and step, overlapped or not
  std::uint64_t events = 0;
  // Under --solve-quantum auto: when the training steps' exact run (and the evaluation steps',
  // a run of its own) had changed too many flow rates and went on under `quantum_after` (none:
  // exact throughout).
  std::optional<Time> quantum_from;
  std::optional<Time> evaluation_quantum_from;
  Time quantum_after = 0;
  // Beyond the step (set when the job configures them).
  std::optional<InputPipelineResult> input;
  std::optional<CheckpointCost> checkpoint;
  std::optional<EvaluationCost> evaluation;
  std::optional<HostMemoryUse> host_memory;  // set when some table lives in host memory
  // Examples/s without the evaluation phases (input stalls and checkpoint overhead included;
  // throughput adds the evaluations: it is what the wall clock gives).
  double training_throughput = 0.0;
  // Time-to-quality: examples and steps the global batch needs to reach the target, and the wall
  // time (NaN when the convergence model gives no absolute number of examples).
  double examples_to_target = 0.0;
  double steps_to_target = 0.0;
  double time_to_quality_s = 0.0;
  double ttq_speedup = 0.0;  // time-to-quality(baseline) / time-to-quality(N)
  // Relative time-to-quality (per example of E_min), for the speedup when E_min is unknown.
  double relative_ttq = 0.0;
  std::optional<RepeatedFigures> repeated;  // run_repeated_scaling_study
};

// The figures of one node count over runs: each run's throughput, speedup, efficiency and step
// time (s).
struct RunSamples {
  std::vector<double> throughput, speedup, efficiency, step_time_s;
  void add(const ScalingPoint& point);
  RepeatedFigures figures() const;
};

struct BatchScaling {
  bool strong = false;
  double global_batch = 0.0;   // strong
  double batch_per_gpu = 0.0;  // weak
  double at(int gpus) const { return strong ? global_batch / gpus : batch_per_gpu; }
};

// The time-to-quality target: which quality, and E_min and B_noise for it.
struct QualityTarget {
  std::string metric;
  std::optional<double> quality;       // none: no convergence curve
  std::optional<double> min_examples;  // E_min; none: unknown (only ratios)
  double critical_batch = 0.0;         // B_noise (infinite: no batch penalty)
  bool default_model = false;          // the model gives no convergence section
};

// What is trained: a dense model alone, or a recommender with its job (batch, sharding).
struct Workload {
  ModelSpec model;
  std::optional<JobSpec> job;
};

struct ScalingStudyOptions {
  StepSimulationOptions simulation;
  int trace_nodes = 0;  // keep the trace of this node count (0: none)
  ScalingMode scaling = ScalingMode::kJob;
  std::optional<double> target_quality;  // overrides the job's and the model's
  SourceLocation target_origin;          // where target_quality was given, for errors
  // Node counts simulated at once (0: all cores), largest first, and a recommender job's
  // evaluation steps beside its training steps; the result does not depend on it.
  int threads = 1;
  // Called after each node count is simulated, with how many are done of how many (for a
  // progress display; optional). With several threads, one call at a time, in the order the
  // node counts finish.
  std::function<void(std::size_t done, std::size_t total, int nodes)> on_point;
};

struct ScalingStudy {
  std::vector<ScalingPoint> points;  // ascending node counts
  std::shared_ptr<StepTrace> trace;  // for trace_nodes, if asked
  BatchScaling batch;
  QualityTarget target;
};

// `node_counts` must be positive; duplicates are dropped and the result is sorted.
ScalingStudy run_scaling_study(const ClusterSpec& cluster, const Workload& workload,
                               std::vector<int> node_counts, const ScalingStudyOptions& options);
ScalingStudy run_scaling_study(const ClusterSpec& cluster, const DenseModelSpec& model,
                               std::vector<int> node_counts, const ScalingStudyOptions& options);
// The study `runs` times with seeds seed, seed + 1, ... (each run draws its stragglers, jitter and
// sampled ids afresh): the first run's points, each with the mean and 95% interval over the runs
// (speedup and efficiency within each run, over that run's baseline). The runs after the first
// go on up to `threads` threads at once (0: all cores), after the first run's node counts (on
// options.threads); the result does not depend on either.
// `draw`, when given, makes each run's cluster (from its seed: e.g. within the calibrated
// uncertainties); the points are then the given cluster's, and the intervals the drawn runs'.
ScalingStudy run_repeated_scaling_study(
    const ClusterSpec& cluster, const Workload& workload, std::vector<int> node_counts,
    const ScalingStudyOptions& options, int runs, int threads = 1,
    const std::function<ClusterSpec(std::uint64_t seed)>& draw = {});

// One node count of the study, `batch_per_gpu` examples per GPU; with the job's input pipeline and
// checkpoints and the time-to-quality of `target` (when given). A recommender job's evaluation
// steps are simulated beside its training steps unless `threads` is 1 (0: as many as the cores
// allow); the result does not depend on it.
ScalingPoint simulate_point(const ClusterSpec& cluster, const Workload& workload, int nodes,
                            double batch_per_gpu, const StepSimulationOptions& options,
                            const QualityTarget* target = nullptr,
                            std::shared_ptr<StepTrace>* trace = nullptr, int threads = 1);

// The batch of each node count under `mode`, with the smallest node count's GPUs as baseline.
// Throws ConfigError (at the job's batch) when strong scaling leaves less than one example a GPU.
BatchScaling resolve_batch_scaling(const Workload& workload, ScalingMode mode, int baseline_gpus,
                                   int largest_gpus);

// The quality target and convergence parameters; `target_quality`, given at `origin`, overrides
// the job's and the model's (throws ConfigError for a target the model's convergence curve cannot
// reach).
QualityTarget resolve_quality_target(const Workload& workload,
                                     const std::optional<double>& target_quality,
                                     const SourceLocation& origin = {});

// Parameters and optimizer state of the model: what a checkpoint holds.
double model_state_bytes(const Workload& workload);

// speedup, efficiency and time-to-quality speedup of `points` relative to points[0] (the
// baseline), filled in place.
void fill_speedup_and_efficiency(std::vector<ScalingPoint>& points);

}  // namespace trainsim::models
