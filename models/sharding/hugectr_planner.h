// HugeCTR's sharding planner, as NVIDIA's MLPerf DLRM-DCNv2 submissions run it
// (mlcommons/training_results_v3.1 NVIDIA/benchmarks/dlrm_dcnv2/implementations/hugectr/
// sharding/planner.py). Each GPU is a bucket whose cost is the hotness it serves (ids per sample,
// a table split k ways counting 1/k on each of its k GPUs) plus a cost per table shard it holds
// (comm_cost_ratio = mem_comm_bw_ratio / mem_comm_work_ratio: HBM against NVLink bandwidth, over
// 8/2). Tables smaller than `data_parallel_below_bytes` are replicated on every GPU. Up to 20
// candidates: place the shards, hottest first, each on the cheapest GPU that does not hold the
// table yet and has memory left under `memory_cap_bytes`; then split the hottest table that can
// still be split in two more (1, 2, 4, ... up to the GPU count), or, when a shard did not fit,
// that table. The candidate whose most expensive GPU costs least wins; a table on k GPUs is split
// by rows evenly over them. On several nodes (`hierarchical`, HugeCTR's hier_auto) the buckets are
// the nodes, each with the memory of its GPUs and the ratio taken against the network instead of
// NVLink; every GPU of a node then holds a row shard of each of the node's tables.
#pragma once

#include "models/sharding/sharding_plan.h"

namespace trainsim::models {

struct HugectrPlannerOptions {
  // mem_comm_bw_ratio / mem_comm_work_ratio; 0: HBM over the context's NVLink bandwidth per GPU,
  // over 4 (HugeCTR's train.py defaults: 3.35e12 / 450e9 and 8 / 2).
  double comm_cost_ratio = 0;
  double memory_cap_bytes = 60e9;       // memory_cap_for_embedding (HugeCTR's default, 60 GB)
  double data_parallel_below_bytes = 0;  // dp_sharding_threshold (GB) x 1e9; 0: none
  int max_iterations = 20;               // max_search_iter
  bool hierarchical = false;             // plan over nodes (hier_auto)
};

// The plan over the GPUs of one sharding group (`group_size`, 0: the world).
ShardingPlan hugectr_plan(const ShardingContext& context, int group_size = 0, double hot_rows = 0,
                          const HugectrPlannerOptions& options = {});

}  // namespace trainsim::models
