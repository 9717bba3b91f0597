// The sharding plans a recommender job could run, ranked by simulated step time: every uniform
// strategy, trainsim's greedy planner, HugeCTR's and TorchRec's, over all GPUs and (on several
// nodes) per node with replicas across nodes (2D), and the job's own plan. `sharding.strategy: best` runs the
// top-ranked one at each node count.
#pragma once

#include <string>
#include <vector>

#include "models/sharding/sharding_plan.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/job_spec.h"
#include "models/spec/recsys_model.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

struct RankedPlan {
  ShardingPlan plan;
  bool fits = true;      // in every GPU's memory
  std::string overflow;  // why not
  ShardCosts costs;      // when it could be costed
  Time step_time = 0;    // simulated (fitting plans only)
  StepBreakdown breakdown;
};

// Ranked fastest first; plans that do not fit last (in candidate order).
std::vector<RankedPlan> rank_sharding_plans(const ClusterSpec& cluster,
                                            const RecsysModelSpec& model, const JobSpec& job,
                                            int nodes, const StepSimulationOptions& options);

// The options `best` ranks with: the analytic network, one measured step after a warm-up.
StepSimulationOptions plan_ranking_options(const StepSimulationOptions& options);

// The plan the job runs on `nodes` nodes: its strategy's (resolve_sharding), or for `best` the
// top-ranked plan that fits (ConfigError at the job's sharding when none does).
ShardingPlan job_plan(const ClusterSpec& cluster, const RecsysModelSpec& model, const JobSpec& job,
                      int nodes, const StepSimulationOptions& options);

}  // namespace trainsim::models
