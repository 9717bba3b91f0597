// Several jobs on one cluster: each on its own range of nodes, with its own model, job and start
// time, all on one simulated fabric, so the links they both cross (a leaf's uplinks, the spines)
// are shared by max-min fairness with each other and with background traffic (storage, another
// tenant). Each job is also run alone on the same nodes; its slowdown is the ratio of the two
// step times. The links where the jobs' traffic meets are named, with how long it met there.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/scaling/scaling_study.h"
#include "models/spec/cluster_spec.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

struct PlacedJob {
  std::string name;
  Workload workload;
  int first_node = 0;  // its nodes: [first_node, first_node + nodes)
  int nodes = 1;
  Time start = 0;  // when its first step starts
  // Where the job is placed and where its start is given (for errors about it).
  SourceLocation location;
  SourceLocation start_location;
};

struct Placement {
  ClusterSpec cluster;  // its background_traffic runs too
  std::vector<PlacedJob> jobs;
  std::vector<BackgroundTraffic> background;  // more of it, from the placement
};

// A job's figures over independent runs (seeds) of everything random: mean and 95% interval.
struct SharedJobRepeats {
  int runs = 0;
  Interval throughput_alone;
  Interval throughput_shared;
  Interval slowdown;
  Interval step_time_shared_s;
};

// One job's figures, alone on its nodes and sharing the cluster. Throughput in examples/s.
struct SharedJobResult {
  std::string name;
  int first_node = 0;
  int nodes = 0;
  int gpus = 0;
  Time start = 0;
  double global_batch = 0.0;
  StepSimulationResult alone;
  StepSimulationResult shared;  // slowest_rank: global (node * GPUs per node + local)
  Time measured_from = 0;       // when its measured steps began in the shared run
  double throughput_alone = 0.0;
  double throughput_shared = 0.0;
  double slowdown = 0.0;                     // shared step time / alone step time
  std::optional<SharedJobRepeats> repeated;  // run_repeated_shared_cluster
};

// A link that carried traffic of more than one owner (a job, or the background) at once.
struct LinkCollision {
  std::string link;   // "leaf0 -> spine0"
  std::string label;  // its class: "leaf-spine", "nic", ...
  Time shared = 0;    // while every job ran: how long two owners or more had flows on it
  std::vector<std::string> owners;  // whose traffic met there (jobs by name, "background")
};

struct SharedClusterResult {
  std::vector<SharedJobResult> jobs;  // in the placement's order
  // From when every job has started to when the last one's measured steps end: the window
  // over which collisions are measured.
  Time window_start = 0;
  Time window_end = 0;
  std::vector<LinkCollision> collisions;  // the longest shared first
  bool background = false;                // background traffic ran
  // Under --solve-quantum auto: when the shared run's exact solves had changed too many flow
  // rates and it went on under `quantum_after` (none: exact throughout; a job's alone run says
  // so in its alone.quantum_from).
  std::optional<Time> quantum_from;
  Time quantum_after = 0;
};

// Runs the jobs alone, then together. Each job runs options.steps steps (options.warmup_steps
// of them not measured) plus as many as it takes for its measured steps to begin once every job
// has started; it keeps stepping (unmeasured) until every job's measured steps are done, and
// alone one step more, so that its last measured step overlaps the next one's prefetch as in the
// shared run. The options' network must be the flow model. Throws ConfigError as the workloads do
// (a plan that does not fit in memory: the message names the placed job), and at a job's start
// when lining the jobs up would take more than kMostSharedSteps steps of one job.
inline constexpr int kMostSharedSteps = 10'000;
SharedClusterResult run_shared_cluster(const Placement& placement,
                                       const StepSimulationOptions& options);
// The same `runs` times with seeds options.seed, + 1, ... (stragglers and sampled ids drawn
// afresh in each): the first run's result, each job with the mean and 95% interval over the runs.
// `draw`, when given, makes each run's cluster from its seed (e.g. within a calibration's
// uncertainties); the result's figures are then the given cluster's, and the intervals the drawn
// runs'. Runs go on up to `threads` threads at once (0: all cores); the result does not depend on
// it.
SharedClusterResult run_repeated_shared_cluster(
    const Placement& placement, const StepSimulationOptions& options, int runs, int threads = 1,
    const std::function<ClusterSpec(std::uint64_t seed)>& draw = {});

}  // namespace trainsim::models
