// Simulates training steps of a sharded recommender: per GPU, the batch's host-to-device copy
// (prefetched one step ahead), the id all-to-all, the embedding lookup, the pooled-embedding
// all-to-all, dense forward and backward (bottom MLP overlapping the embedding exchange), the
// gradient all-to-all back to the shards, the embedding update, and the dense gradient all-reduce
// by buckets overlapping backward; with 2D sharding the replicas all-reduce their shard gradients.
// Every transfer is a flow on the fabric, so all-to-all and all-reduce contend for the same NICs,
// and each collective waits for its slowest participant (measured as load imbalance).
#pragma once

#include "models/sharding/sharding_plan.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/job_spec.h"
#include "models/spec/recsys_model.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

// Time of the dense network's forward pass for `batch` examples on one GPU (backward: twice).
struct DenseTimes {
  Time bottom_forward = 0;  // bottom MLP (needs only the dense features)
  Time top_forward = 0;     // transformer, interaction, top MLP (need the embeddings)
};
DenseTimes recsys_dense_times(const RecsysModelSpec& model, const GpuSpec& gpu, double batch);

struct RecsysStepDetails {
  ShardingPlan plan;
  ShardCosts costs;
  double batch_per_gpu = 0;
};

// The job's plan on `nodes` nodes (`plan` when given, else the job's sharding) and its costs.
// Throws ConfigError if the plan does not fit in memory (naming the GPU and the shortfall).
RecsysStepDetails plan_recsys_training(const ClusterSpec& cluster, const RecsysModelSpec& model,
                                       const JobSpec& job, int nodes,
                                       const StepSimulationOptions& options,
                                       const ShardingPlan* plan = nullptr);
class StepRunner;
// The job's steps on `details`' plan, added to `runner` (on launched_on(cluster, job); it runs
// them).
void add_recsys_training(StepRunner& runner, const RecsysModelSpec& model, const JobSpec& job,
                         const RecsysStepDetails& details);

// Simulates `plan` when given, else the job's sharding. Throws ConfigError if the plan does not fit
// in memory (naming the GPU and the shortfall).
StepSimulationResult simulate_recsys_training(const ClusterSpec& cluster,
                                              const RecsysModelSpec& model, const JobSpec& job,
                                              int nodes, const StepSimulationOptions& options,
                                              RecsysStepDetails* details = nullptr,
                                              const ShardingPlan* plan = nullptr);

// The same on a plan and its costs made earlier (by plan_recsys_training on the same cluster, job
// and node count).
StepSimulationResult simulate_recsys_training(const ClusterSpec& cluster,
                                              const RecsysModelSpec& model, const JobSpec& job,
                                              int nodes, const StepSimulationOptions& options,
                                              const RecsysStepDetails& planned);

// Evaluation steps: the forward pass alone (the batch's copy, id all-to-all, lookup,
// pooled-embedding all-to-all, bottom MLP, top part) at `batch_per_gpu` examples per GPU, on the
// training's `plan`.
StepSimulationResult simulate_recsys_evaluation(const ClusterSpec& cluster,
                                                const RecsysModelSpec& model, const JobSpec& job,
                                                int nodes, double batch_per_gpu,
                                                const ShardingPlan& plan,
                                                const StepSimulationOptions& options);

// The cluster as the job launches work on it: under CUDA graphs (overlap.cuda_graphs) no host
// launch cost for the step's kernels and collectives.
ClusterSpec launched_on(const ClusterSpec& cluster, const JobSpec& job);

// The sharding context of a job on `nodes` nodes.
ShardingContext recsys_context(const ClusterSpec& cluster, const RecsysModelSpec& model,
                               const JobSpec& job, int nodes);

}  // namespace trainsim::models
