#include "models/scaling/scaling_study.h"

#include <algorithm>
#include <optional>

#include "engine/check.h"
#include "models/workload/recsys_training.h"

namespace trainsim::models {

void fill_speedup_and_efficiency(std::vector<ScalingPoint>& points) {
  if (points.empty()) return;
  const ScalingPoint& base = points.front();
  for (ScalingPoint& p : points) {
    p.speedup = p.throughput / base.throughput;
    p.efficiency = p.speedup / (static_cast<double>(p.nodes) / base.nodes);
  }
}

ScalingPoint simulate_point(const ClusterSpec& cluster, const Workload& workload, int nodes,
                            const StepSimulationOptions& options,
                            std::shared_ptr<StepTrace>* trace) {
  TRAINSIM_ASSERT(nodes >= 1, "node counts must be positive");
  ScalingPoint p;
  p.nodes = nodes;
  p.gpus = nodes * cluster.gpus_per_node;
  // A recommender's sharding plan is resolved once, for the estimate and the simulation.
  const auto* dense = std::get_if<DenseModelSpec>(&workload.model);
  const auto* recsys = std::get_if<RecsysModelSpec>(&workload.model);
  std::optional<ShardingPlan> plan;
  if (recsys) {
    TRAINSIM_ASSERT(workload.job.has_value(), "a recommender needs a job");
    plan = resolve_sharding(*workload.job, recsys_context(cluster, *recsys, *workload.job, nodes));
  }
  auto run = [&](const StepSimulationOptions& o) {
    return dense ? simulate_dense_training(cluster, *dense, nodes, o)
                 : simulate_recsys_training(cluster, *recsys, *workload.job, nodes, o, nullptr,
                                            &*plan);
  };
  StepSimulationOptions effective = options;
  if (options.network == NetworkModel::kFlow && options.solve_quantum < 0) {
    // Automatic quantum: a fixed fraction of the step, from a quick analytic run.
    StepSimulationOptions analytic = options;
    analytic.network = NetworkModel::kAnalytic;
    analytic.keep_trace = false;
    analytic.solve_quantum = 0;
    analytic.steps = 1;  // an estimate: one step, start-up included
    analytic.warmup_steps = 0;
    const Time estimate = run(analytic).step_time;
    effective.solve_quantum =
        std::max<Time>(kNanosecond, estimate / 1'000'000 * -options.solve_quantum);
  }
  const StepSimulationResult result = run(effective);
  p.global_batch = dense ? static_cast<double>(p.gpus) * dense->batch_per_gpu
                         : job_batch_per_gpu(*workload.job, p.gpus) * p.gpus;
  p.step_time = result.step_time;
  p.throughput = p.global_batch / to_seconds(result.step_time);
  p.breakdown = result.breakdown;
  p.slowest_rank = result.slowest_rank;
  p.slowest_rank_compute = result.slowest_rank_compute;
  p.events = result.events;
  if (trace && result.trace) *trace = result.trace;
  return p;
}

ScalingStudy run_scaling_study(const ClusterSpec& cluster, const Workload& workload,
                               std::vector<int> node_counts, const ScalingStudyOptions& options) {
  std::sort(node_counts.begin(), node_counts.end());
  node_counts.erase(std::unique(node_counts.begin(), node_counts.end()), node_counts.end());
  ScalingStudy study;
  for (const int nodes : node_counts) {
    StepSimulationOptions sim_options = options.simulation;
    sim_options.keep_trace = nodes == options.trace_nodes;
    study.points.push_back(simulate_point(cluster, workload, nodes, sim_options, &study.trace));
  }
  fill_speedup_and_efficiency(study.points);
  return study;
}

ScalingStudy run_scaling_study(const ClusterSpec& cluster, const DenseModelSpec& model,
                               std::vector<int> node_counts, const ScalingStudyOptions& options) {
  return run_scaling_study(cluster, Workload{model, std::nullopt}, std::move(node_counts), options);
}

}  // namespace trainsim::models
