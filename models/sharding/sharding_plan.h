// Sharding of embedding tables over GPUs and what it costs per rank. A plan places each table with
// a strategy inside a sharding group of GPUs; with 2D sharding the world is split into groups that
// each hold a full copy of the tables (replicas all-reduce their gradients). From the tables'
// access distributions it gives, per rank and step: expected lookups and distinct rows (in-batch
// deduplication), HBM bytes of lookups and updates, the all-to-all bytes to and from every other
// rank (unequal under skew), the bytes to all-reduce across replicas, and memory against HBM.
//
// Strategies (per table): table-wise (one GPU), row-wise (rows hashed over the group), column-wise
// (columns split over k GPUs), table-row-wise (row-wise over the GPUs of one or more nodes, the
// partial sums reduced inside each node and sent on the requesters' rails, as HugeCTR's
// hierarchical exchange and TorchRec's TWRW run it), data-parallel (replicated everywhere,
// gradients all-reduced). Hot-row replication copies the most popular rows
// to every GPU: their lookups stay local and their gradients are all-reduced.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/spec/byte_matrix.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/job_spec.h"
#include "models/spec/recsys_model.h"
#include "models/spec/sharding_spec.h"

namespace trainsim::models {

struct ShardingContext {
  const RecsysModelSpec* model = nullptr;
  // The model as the job deploys it (its tables' storage), when that differs from the file's:
  // `model` points to it.
  std::shared_ptr<const RecsysModelSpec> deployed_model;
  int world = 1;  // GPUs
  int gpus_per_node = 1;
  double batch_per_gpu = 1;
  Dtype communication_dtype = Dtype::kFp32;  // all-to-all payload of embeddings
  // Embedding gradients all-reduced across replicas (2D) and for replicated rows.
  Dtype sync_dtype = Dtype::kFp32;
  GpuSpec gpu;
  std::uint64_t hash_salt = 0x5eed;
  // Per-rank loads only, without the all-to-all byte matrices (and buffer memory): for planners.
  bool loads_only = false;
  // Per-GPU bandwidth for all-to-all bytes inside a node and across nodes, for the planner's
  // communication cost (0: communication not costed).
  double local_bytes_per_s = 0;
  double network_bytes_per_s = 0;
  // The GPU's link to host memory, per direction, for tables whose rows live there (0: none).
  double host_link_bytes_per_s = 0;
};

struct RankLoad {
  double lookups = 0;      // ids looked up on this GPU per step (including local hot rows)
  double unique_rows = 0;  // distinct rows among them
  // HBM bytes of the table-batched embedding kernels (embedding_kernels.h), forward and backward
  // with the optimizer update, and their time at the GPU's achieved fractions, each with a launch.
  double lookup_bytes = 0;
  double update_bytes = 0;
  double lookup_seconds = 0;
  double update_seconds = 0;
  // The part of those two for replicated rows (data-parallel tables, hot-row copies): looked up
  // locally without waiting for the id all-to-all, updated once their gradients are all-reduced
  // (HugeCTR runs them on a stream of their own; TorchRec leaves them to the dense optimizer).
  double replicated_lookup_seconds = 0;
  double replicated_update_seconds = 0;
  double parameter_bytes = 0;  // embedding shards, hot-row copies and row caches held in HBM
  double optimizer_bytes = 0;  // in HBM
  // Tables in host memory (storage uvm, uvm_caching): the rows and state this GPU's shards keep
  // there, and the bytes its kernels move over its host link per step (both directions).
  double host_bytes = 0;
  double host_link_bytes = 0;
  double dense_bytes = 0;  // dense parameters and their optimizer state
  double activation_bytes = 0;
  double buffer_bytes = 0;        // all-to-all buffers
  double replica_sync_bytes = 0;  // all-reduced across replicas per step (2D)
  // Forward all-to-all bytes (ids and embeddings) this GPU sends and receives, to and from GPUs
  // of its own node and of other nodes (the backward all-to-all moves the embedding part again,
  // the other way).
  double sent_local = 0, sent_remote = 0, received_local = 0, received_remote = 0;
  double sent_self = 0;  // its own ids and vectors (in its send and its receive buffer)
  double memory_bytes() const {
    return parameter_bytes + optimizer_bytes + dense_bytes + activation_bytes + buffer_bytes;
  }
};

struct ShardCosts {
  std::vector<RankLoad> ranks;
  // Per step, [src][dst]: ids sent to the GPUs that own them, and pooled embeddings returned
  // (the backward all-to-all sends gradients of the same size the other way).
  ByteMatrix id_bytes;
  ByteMatrix embedding_bytes;
  // Per step, [src][dst] inside nodes: table-row-wise partial sums reduced onto each node's GPU
  // of the requester's rail before `embedding_bytes` leave (the backward gathers the gradients
  // back the other way after them). Empty (size 0) without table-row-wise tables.
  ByteMatrix partial_bytes;
  double global_sync_bytes =
      0;           // all-reduced over all GPUs per step: data-parallel tables, hot rows
  int groups = 1;  // replicas (2D)
  // Largest lookup load over the mean, over the GPUs of a group (1 = balanced).
  double imbalance() const;
};

// The table as placement `p` keeps it: `t` itself, or, when the placement moves it to another
// storage, a copy of it there held in `moved`.
const EmbeddingTableSpec& placed_table(const EmbeddingTableSpec& t, const TablePlacement& p,
                                       EmbeddingTableSpec& moved);

// The plan's costs. Throws ConfigError if the plan is inconsistent with the model or world.
ShardCosts compute_shard_costs(const ShardingPlan& plan, const ShardingContext& context);

// Every GPU whose memory exceeds HBM capacity: "GPU r needs X GB, has Y GB".
std::vector<std::string> memory_overflows(const ShardCosts& costs, const GpuSpec& gpu);
// The same, then every node whose GPUs keep more in host memory (storage uvm, uvm_caching) than
// the node has (host.memory, when the cluster gives it): "node n keeps X GB ...".
std::vector<std::string> memory_overflows(const ShardCosts& costs, const ClusterSpec& cluster);

// Uniform plans: every table with one strategy. Table-wise places tables on the least loaded GPU,
// largest expected cost first. `group_size` 0 means the whole world (no 2D).
ShardingPlan uniform_plan(ShardingStrategy strategy, const ShardingContext& context,
                          int group_size = 0, double hot_rows = 0);

// The greedy planner: tables go, largest predicted cost first, where they raise the most loaded
// GPU least, among: whole on one GPU (table-wise), split over the GPUs of one node (row-wise by
// hash, or column-wise) or over the group, or replicated on every GPU (data-parallel, for small
// tables), skipping GPUs without memory for them. A GPU's cost is its lookup and update time
// (skew included) plus, when the context gives bandwidths, its all-to-all time (and the gradient
// all-reduce of replicated tables). A table kept in HBM that fits nowhere goes to host memory
// behind an HBM cache, or else to host memory alone, when the GPUs have a host link (the
// placement's `storage` says so).
ShardingPlan greedy_plan(const ShardingContext& context, int group_size = 0, double hot_rows = 0);

// TorchRec's planner (enumerate, propose, partition, rate) on trainsim's costs: each table's
// options (table-wise, column-wise in blocks of 128 columns, table-row-wise over a node,
// row-wise, data-parallel where a replica fits) costed as the greedy planner costs them; a greedy
// proposer (each table at its cheapest option, then its next-cheapest kept while the rating
// improves or the proposal does not fit) and a uniform one (one sharding type for every table); the
// greedy partitioner (each shard on the least loaded GPU, or node, with memory for it); the rating
// is the most loaded GPU's cost, and the best rated proposal that fits is returned. Every option
// also exists in host memory behind an HBM cache and in host memory alone (for a table kept in
// HBM, when the GPUs have a host link); when no proposal fits, the table holding the most HBM on
// one GPU moves to its cheapest option holding less until one does (TorchRec's greedy proposer
// walks the table with the largest storage).
ShardingPlan torchrec_plan(const ShardingContext& context, int group_size = 0, double hot_rows = 0);

// Predicted embedding time (lookup + update) of a rank, the cost the planner balances.
inline double embedding_seconds(const RankLoad& load) {
  return load.lookup_seconds + load.update_seconds;
}

// The job's sharding plan (its strategy, group and listed tables) for the context's world. Throws
// ConfigError (at the job's key) for a group that does not divide the world, or a plan naming an
// unknown table or GPU.
ShardingPlan resolve_sharding(const JobSpec& job, const ShardingContext& context);

}  // namespace trainsim::models
