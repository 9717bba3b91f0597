#include "models/workload/plan_search.h"

#include <algorithm>

#include "models/workload/recsys_training.h"

namespace trainsim::models {

std::vector<RankedPlan> rank_sharding_plans(const ClusterSpec& cluster,
                                            const RecsysModelSpec& model, const JobSpec& job,
                                            int nodes, const StepSimulationOptions& options) {
  const ShardingContext context = recsys_context(cluster, model, job, nodes);
  std::vector<ShardingPlan> plans;
  std::vector<int> groups = {context.world};
  if (nodes > 1) groups.push_back(cluster.gpus_per_node);
  for (const int group : groups) {
    for (const ShardingStrategy s : all_strategies()) {
      // The node-level strategies need nodes to choose from (inside one node table-column-wise
      // is column-wise).
      const bool per_node = s == ShardingStrategy::kTableRowWise ||
                            s == ShardingStrategy::kTableColumnWise ||
                            s == ShardingStrategy::kGridShard;
      if (per_node && group <= cluster.gpus_per_node) continue;
      plans.push_back(uniform_plan(s, context, group, job.hot_rows));
    }
    plans.push_back(greedy_plan(context, group, job.hot_rows));
    JobSpec hugectr = job;
    hugectr.sharding = "hugectr";
    hugectr.plan.clear();
    hugectr.group = ShardingGroup::of(group);
    plans.push_back(resolve_sharding(hugectr, context));
    if (group < context.world) {
      plans.back().name += " (2D, groups of " + std::to_string(group) + ")";
    }
    plans.push_back(torchrec_plan(context, group, job.hot_rows));
  }
  if (job.sharding == "plan" || !job.plan.empty()) {
    JobSpec own = job;
    if (own.sharding == "best") own.sharding = "greedy";
    plans.push_back(resolve_sharding(own, context));
    plans.back().name = "the job's plan";
  }
  std::vector<RankedPlan> ranked;
  for (const ShardingPlan& plan : plans) {
    RankedPlan r;
    r.plan = plan;
    try {
      r.costs = compute_shard_costs(plan, context);
    } catch (const ConfigError& e) {
      r.fits = false;
      r.overflow = e.message();
      ranked.push_back(std::move(r));
      continue;
    }
    const auto overflows = memory_overflows(r.costs, cluster);
    if (!overflows.empty()) {
      r.fits = false;
      r.overflow = overflows.front();
    } else {
      const StepSimulationResult result =
          simulate_recsys_training(cluster, model, job, nodes, options, nullptr, &plan);
      r.step_time = result.step_time;
      r.breakdown = result.breakdown;
    }
    ranked.push_back(std::move(r));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    if (a.fits != b.fits) return a.fits;
    return a.step_time < b.step_time;
  });
  return ranked;
}

StepSimulationOptions plan_ranking_options(const StepSimulationOptions& options) {
  StepSimulationOptions o = options;
  o.network = NetworkModel::kAnalytic;
  o.keep_trace = false;
  o.steps = 2;
  o.warmup_steps = 1;
  o.solve_quantum = Time{0};
  return o;
}

ShardingPlan job_plan(const ClusterSpec& given_cluster, const RecsysModelSpec& model,
                      const JobSpec& job, int nodes, const StepSimulationOptions& options) {
  // Planned with the kernel costs the step will pay (no launches under CUDA graphs).
  const ClusterSpec cluster = launched_on(given_cluster, job);
  if (job.sharding != "best")
    return resolve_sharding(job, recsys_context(cluster, model, job, nodes));
  const std::vector<RankedPlan> ranked =
      rank_sharding_plans(cluster, model, job, nodes, plan_ranking_options(options));
  if (ranked.empty() || !ranked.front().fits) {
    throw ConfigError(job.sharding_location.file.empty()
                          ? SourceLocation{job.source_file, 0, 0, "sharding"}
                          : job.sharding_location,
                      "no sharding plan fits on " + std::to_string(nodes) + " node(s)" +
                          (ranked.empty() ? "" : ": " + ranked.front().overflow));
  }
  return ranked.front().plan;
}

}  // namespace trainsim::models
