// TorchRec's planner view of a sharding plan: its own estimate, as its planner rates plans
// (pytorch/torchrec @ a48cef79: EmbeddingPerfEstimator in distributed/planner/shard_estimators.py,
// NoopPerfModel in perf_models.py, constants in constants.py). Per shard, forward and backward
// compute and communication from its byte formulas, with no latency, no overlap and no skew (ids
// uniform over row shards); a rank's estimate is the sum over the shards it holds, and the plan's
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
  static TorchrecTopology defaults();
  // The context's GPU HBM, its NVLink and its share of the node's NICs (as a user would set
  // Topology(hbm_mem_bw=..., intra_host_bw=..., inter_host_bw=...)); TorchRec's default for any
  // the context lacks.
  static TorchrecTopology of(const ShardingContext& context);
};

struct TorchrecPerf {
  double fwd_compute = 0, fwd_comms = 0, bwd_compute = 0, bwd_comms = 0;  // seconds
  double total() const { return fwd_compute + fwd_comms + bwd_compute + bwd_comms; }
};

// Per rank of one sharding group (group-local ranks), the sum of its shards' estimates.
std::vector<TorchrecPerf> torchrec_estimate(const ShardingPlan& plan,
                                            const ShardingContext& context,
                                            const TorchrecTopology& topology);
// The plan's rating: the largest rank's total.
double torchrec_rating(const ShardingPlan& plan, const ShardingContext& context,
                       const TorchrecTopology& topology);

}  // namespace trainsim::models
