#include "models/scaling/scaling_study.h"

#include <algorithm>

#include "engine/check.h"

namespace trainsim::models {

void fill_speedup_and_efficiency(std::vector<ScalingPoint>& points) {
  if (points.empty()) return;
  const ScalingPoint& base = points.front();
  for (ScalingPoint& p : points) {
    p.speedup = p.throughput / base.throughput;
    p.efficiency = p.speedup / (static_cast<double>(p.nodes) / base.nodes);
  }
}

ScalingStudy run_scaling_study(const ClusterSpec& cluster, const DenseModelSpec& model,
                               std::vector<int> node_counts, const ScalingStudyOptions& options) {
  std::sort(node_counts.begin(), node_counts.end());
  node_counts.erase(std::unique(node_counts.begin(), node_counts.end()), node_counts.end());
  ScalingStudy study;
  for (const int nodes : node_counts) {
    TRAINSIM_ASSERT(nodes >= 1, "node counts must be positive");
    StepSimulationOptions sim_options = options.simulation;
    sim_options.keep_trace = nodes == options.trace_nodes;
    const StepSimulationResult result = simulate_dense_training(cluster, model, nodes, sim_options);
    ScalingPoint p;
    p.nodes = nodes;
    p.gpus = nodes * cluster.gpus_per_node;
    p.global_batch = static_cast<double>(p.gpus) * model.batch_per_gpu;
    p.step_time = result.step_time;
    p.throughput = p.global_batch / to_seconds(result.step_time);
    p.breakdown = result.breakdown;
    p.events = result.events;
    study.points.push_back(p);
    if (result.trace) study.trace = result.trace;
  }
  fill_speedup_and_efficiency(study.points);
  return study;
}

}  // namespace trainsim::models
