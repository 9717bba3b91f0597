// A training job (configs/jobs/*.yaml): which cluster and model by default, the batch, how the
// embedding tables are sharded (a strategy for all, the greedy planner, or an explicit plan; 2D
// groups; hot-row replication), communication precision and algorithms, overlap switches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective_tuning.h"
#include "models/config/config_error.h"
#include "models/config/config_node.h"
#include "models/hardware/dtype.h"
#include "models/runtime/runtime_spec.h"
#include "models/sharding/sharding_plan.h"

namespace trainsim::models {

struct PlannedTable {
  std::string table;
  ShardingStrategy strategy = ShardingStrategy::kTableWise;
  std::vector<int> gpus;  // group-local GPUs; empty: the strategy's default
  std::optional<double> hot_rows;
  SourceLocation location;
};

struct JobSpec {
  std::string name;
  std::string description;
  std::string source_file;
  std::string cluster;  // default cluster file (may be empty)
  std::string model;    // default model file (may be empty)
  std::optional<double> batch_per_gpu;
  std::optional<double> global_batch;
  SourceLocation batch_location;
  // Sharding: "greedy", a strategy name, or "plan" (= greedy); the tables listed in `plan` are
  // placed as listed, the others by this strategy.
  std::string sharding = "greedy";
  // GPUs per sharding group: 0 = all GPUs (no 2D), -1 = one node.
  int group = 0;
  double hot_rows = 0;
  std::vector<PlannedTable> plan;
  SourceLocation sharding_location;
  std::optional<Dtype> embedding_communication;  // all-to-all payload (overrides the model)
  Dtype embedding_sync = Dtype::kFp32;           // replica and replicated-row gradient all-reduces
  std::optional<Algorithm> all_reduce_algorithm;
  std::optional<Algorithm> all_to_all_algorithm;  // direct or 2d (unset: by the cluster)
  bool overlap_gradient_all_reduce = true;
  int gradient_buckets = 2;
  // Beyond the step.
  DataloaderSpec dataloader;
  CheckpointSpec checkpoint;
  std::optional<double> target_quality;  // overrides the model's convergence target
  SourceLocation target_location;
};

JobSpec load_job_spec(const std::string& path, const std::vector<YamlSetting>& settings = {});

// The job's sharding plan for a world of `world` GPUs. Throws ConfigError (at the job's key) for
// a plan naming an unknown table or GPU.
ShardingPlan resolve_sharding(const JobSpec& job, const ShardingContext& context);

// Batch per GPU for `gpus` GPUs (global batch split evenly, or the per-GPU batch).
double job_batch_per_gpu(const JobSpec& job, int gpus);

// The job as YAML (strategy: plan) with the given plan: what `trainsim shard` prints.
std::string job_yaml_with_plan(const JobSpec& job, const ShardingPlan& plan,
                               const RecsysModelSpec& model,
                               const std::vector<std::string>& header);

}  // namespace trainsim::models
