// A training job (configs/jobs/*.yaml): which cluster and model by default, the batch, how the
// embedding tables are sharded (a strategy for all, the greedy planner, or an explicit plan; 2D
// groups; hot-row replication), communication precision and algorithms, overlap switches.
// Plain data; models/config/job_config.h reads it from YAML.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/spec/collective_tuning.h"
#include "models/spec/config_error.h"
#include "models/spec/dtype.h"
#include "models/spec/runtime_spec.h"
#include "models/spec/sharding_spec.h"

namespace trainsim::models {

// The GPUs of one sharding group (2D sharding: each group holds a full copy of the tables).
struct ShardingGroup {
  enum class Kind {
    kWorld,  // every GPU (no 2D sharding)
    kNode,   // the GPUs of one node
    kGpus,   // a given number of GPUs
  };
  Kind kind = Kind::kWorld;
  int gpus = 0;  // kGpus only

  static ShardingGroup world() { return {}; }
  static ShardingGroup node() { return {Kind::kNode, 0}; }
  static ShardingGroup of(int gpus) { return {Kind::kGpus, gpus}; }
  // GPUs per group in a world of `world` GPUs, `gpus_per_node` to a node.
  int size(int world, int gpus_per_node) const;
};

struct PlannedTable {
  std::string table;
  ShardingStrategy strategy = ShardingStrategy::kTableWise;
  std::vector<int> gpus;  // group-local GPUs; empty: the strategy's default
  std::optional<double> hot_rows;
  std::optional<EmbeddingStorage> storage;  // unset: the job's
  SourceLocation location;
};

struct JobSpec {
  std::string name;
  std::string description;
  std::string source_file;
  std::string cluster;  // default cluster file (may be empty)
  std::string model;    // default model file (may be empty)
  SourceLocation cluster_location, model_location;  // where the job names them
  std::optional<double> batch_per_gpu;
  std::optional<double> global_batch;
  SourceLocation batch_location;
  // Sharding: "greedy", a strategy name, or "plan" (= greedy); the tables listed in `plan` are
  // placed as listed, the others by this strategy.
  std::string sharding = "greedy";
  ShardingGroup group;
  double hot_rows = 0;
  // strategy hugectr: tables smaller than this are replicated (its dp_sharding_threshold).
  double data_parallel_below_bytes = 0;
  std::vector<PlannedTable> plan;
  // Where the tables' rows live (a listed table may say otherwise), and the share of a cached
  // table's rows its HBM cache holds (TorchRec's and FBGEMM's default cache load factor, 0.2).
  EmbeddingStorage storage = EmbeddingStorage::kHbm;
  double cache_load_factor = 0.2;
  SourceLocation sharding_location;
  std::optional<Dtype> embedding_communication;  // all-to-all payload (overrides the model)
  Dtype embedding_sync = Dtype::kFp32;           // replica and replicated-row gradient all-reduces
  std::optional<Algorithm> all_reduce_algorithm;
  std::optional<Algorithm> all_to_all_algorithm;  // direct or 2d (unset: by the cluster)
  // Gradient all-reduce during backward, and its buckets (unset: for a recommender, overlap with
  // 2 buckets of the top part, the bottom MLP adding one; for a dense model, the model's own).
  std::optional<bool> overlap_gradient_all_reduce;
  std::optional<int> gradient_buckets;
  // A recommender's weight-gradient GEMMs off the critical path (HugeCTR's async_wgrad): the
  // embedding gradients leave once the data gradients reach the interaction. Default false
  // (TorchRec; HugeCTR's MLPerf runs set it).
  bool async_weight_gradients = false;
  // A recommender's next batch: its copy and id all-to-all (sparse input distribution) issued
  // during this step on a prefetch stream, beside this step's collectives (TorchRec's
  // TrainPipelineSparseDist, HugeCTR's train_inter_iteration_overlap). Default true (both).
  bool prefetch_ids = true;
  // The step replayed as a CUDA graph: no host launch cost for its kernels and collectives
  // (HugeCTR's use_cuda_graph in the MLPerf runs). Default false (TorchRec's pipelines).
  bool cuda_graphs = false;
  // The recommender's values.
  bool overlaps_gradient_all_reduce() const { return overlap_gradient_all_reduce.value_or(true); }
  int gradient_bucket_count() const { return gradient_buckets.value_or(2); }
  // Beyond the step.
  DataloaderSpec dataloader;
  CheckpointSpec checkpoint;
  EvaluationSpec evaluation;
  std::optional<double> target_quality;  // overrides the model's convergence target
  SourceLocation target_location;
};

// Batch per GPU for `gpus` GPUs (global batch split evenly, or the per-GPU batch).
double job_batch_per_gpu(const JobSpec& job, int gpus);

// The job with `plan` pinned: strategy `plan`, its sharding group, and every table placed as the
// plan places it (the tables in `table_names` order).
JobSpec job_with_plan(JobSpec job, const ShardingPlan& plan,
                      const std::vector<std::string>& table_names);

}  // namespace trainsim::models
