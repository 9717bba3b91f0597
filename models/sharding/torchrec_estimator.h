// TorchRec's planner view of a sharding plan: its own estimate, as its planner rates plans
// (pytorch/torchrec @ a48cef79: EmbeddingPerfEstimator in distributed/planner/shard_estimators.py,
// NoopPerfModel in perf_models.py, constants in constants.py). Per shard, forward and backward
// compute and communication from its byte formulas, with no latency, no overlap and no skew (ids
// uniform over row shards); tables in host memory at its bandwidth blend (FUSED_UVM at 1/10 of
// the host link, FUSED_UVM_CACHING at 1/10 of the cache-load-factor blend of HBM and host link,
// plus the prefetch of the rows the cache misses over the host link, the miss rate from the
// table's access distribution, as TorchRec's cache statistics give it); a rank's estimate is the sum over the shards it holds, and the plan's
// rating the largest rank's. This is what TorchRec would believe, shown beside trainsim's
// simulated step, not a model trainsim runs.
#pragma once

#include <vector>

#include "models/sharding/sharding_plan.h"

namespace trainsim::models {

// The bandwidths the estimate divides by, bytes/s. TorchRec's defaults are its constants (HBM
// 897 GiB/s, intra-node 600 GiB/s, cross-node 12.5 GiB/s per GPU); a user passes the device's.
struct TorchrecTopology {
  double hbm_bytes_per_s = 0;
  double intra_node_bytes_per_s = 0;  // per GPU
  double cross_node_bytes_per_s = 0;  // per GPU
  double hbm_to_ddr_bytes_per_s = 0;  // GPU <-> host memory
  static TorchrecTopology defaults();
  // The context's GPU HBM, its NVLink, its share of the node's NICs and its host link (as a user
  // would set Topology(hbm_mem_bw=..., intra_host_bw=..., inter_host_bw=...,
  // hbm_to_ddr_mem_bw=...)); TorchRec's default for any the context lacks.
  static TorchrecTopology of(const ShardingContext& context);
};

struct TorchrecPerf {
  double fwd_compute = 0, fwd_comms = 0, bwd_compute = 0, bwd_comms = 0;  // seconds
  double prefetch = 0;  // a cached table's missed rows copied in (storage uvm_caching)
  double total() const { return fwd_compute + fwd_comms + bwd_compute + bwd_comms + prefetch; }
};

// Per rank of one sharding group (group-local ranks), the sum of its shards' estimates.
std::vector<TorchrecPerf> torchrec_estimate(const ShardingPlan& plan,
                                            const ShardingContext& context,
                                            const TorchrecTopology& topology);
// The plan's rating: the largest rank's total.
double torchrec_rating(const ShardingPlan& plan, const ShardingContext& context,
                       const TorchrecTopology& topology);

}  // namespace trainsim::models
