#include "models/workload/dense_training.h"

#include <algorithm>
#include <string>

#include "engine/check.h"
#include "engine/flow_network.h"
#include "models/collectives/algorithms.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {

Time dense_compute_time(const DenseModelSpec& model, const GpuSpec& gpu) {
  const auto peak = gpu.peak_flops_per_s.find(model.compute_dtype);
  TRAINSIM_ASSERT(peak != gpu.peak_flops_per_s.end(), "GPU has no peak for the compute format");
  const double flops = model.flops_per_example * model.batch_per_gpu;
  return time_from_seconds(flops / (peak->second * gpu.gemm_efficiency));
}

namespace {

struct StepTasks {
  std::vector<TaskId> rank_end;  // per rank: joins everything of the step
};

}  // namespace

StepSimulationResult simulate_dense_training(const ClusterSpec& cluster,
                                             const DenseModelSpec& model, int nodes,
                                             const StepSimulationOptions& options) {
  TRAINSIM_ASSERT(options.steps > options.warmup_steps && options.warmup_steps >= 0,
                  "need at least one measured step");
  Simulation sim(options.seed);
  const ClusterTopology cluster_topology = build_cluster_topology(cluster, nodes);
  FlowNetwork network(sim, cluster_topology.topology);
  TRAINSIM_ASSERT(std::holds_alternative<Time>(options.solve_quantum),
                  "the solve quantum is resolved to a time before a step runs");
  network.set_solve_quantum(std::get<Time>(options.solve_quantum));
  const int ranks = cluster_topology.gpu_count();

  // Compute split: forward, then backward in `buckets` equal pieces.
  const Time compute = dense_compute_time(model, cluster.gpu);
  const Time backward = time_from_seconds(to_seconds(compute) * model.backward_flops_fraction);
  const Time forward = compute - backward;
  const int buckets = model.overlap_all_reduce ? model.gradient_buckets : 1;
  const double bucket_bytes = model.parameter_bytes / buckets;

  auto trace = std::make_shared<StepTrace>();
  trace->gpus_per_node = cluster.gpus_per_node;
  TaskGraph& graph = trace->graph;
  const StreamId compute_stream = graph.add_stream("compute");
  const StreamId comm_stream = graph.add_stream("communication");
  const CategoryId compute_cat = graph.add_category("compute");
  const CategoryId comm_cat = graph.add_category("communication");
  const CategoryId sync_cat = graph.add_category("sync");

  std::vector<std::unique_ptr<Collective>> collectives;
  // Every bucket has the same size, so one algorithm choice serves them all.
  CollectiveRequest bucket_request;
  bucket_request.op = CollectiveOp::kAllReduce;
  bucket_request.bytes = bucket_bytes;
  const PickedAlgorithm picked =
      model.all_reduce_algorithm
          ? pick_protocol(network.router(), cluster, cluster_topology,
                          {CollectiveOp::kAllReduce, *model.all_reduce_algorithm, bucket_bytes})
          : pick_algorithm(network.router(), cluster, cluster_topology, CollectiveOp::kAllReduce,
                           bucket_bytes);
  bucket_request.algorithm = picked.algorithm;
  bucket_request.protocol = picked.protocol;
  const Time analytic_bucket_time = picked.analytic_time;

  std::vector<StepTasks> steps(options.steps);
  std::vector<std::vector<TaskId>> compute_tasks(options.steps);
  std::vector<std::vector<TaskId>> comm_tasks(options.steps);
  for (int s = 0; s < options.steps; ++s) {
    const std::string suffix = " #" + std::to_string(s);
    std::vector<Collective*> bucket_collectives;
    for (int b = 0; b < buckets; ++b) {
      if (options.network == NetworkModel::kFlow) {
        collectives.push_back(
            make_flow_collective(sim, network, cluster, cluster_topology, bucket_request));
      } else {
        collectives.push_back(
            std::make_unique<AnalyticCollective>(sim, ranks, analytic_bucket_time));
      }
      bucket_collectives.push_back(collectives.back().get());
    }
    for (int r = 0; r < ranks; ++r) {
      const TaskId fwd =
          graph.add_task("forward" + suffix, r, compute_stream, compute_cat, DelayAction{forward});
      compute_tasks[s].push_back(fwd);
      if (s > 0) graph.add_dependency(steps[s - 1].rank_end[r], fwd);
      TaskId previous = fwd;
      std::vector<TaskId> reduces;
      for (int b = 0; b < buckets; ++b) {
        // Split backward time exactly: bucket b ends at backward * (b + 1) / buckets.
        const Time piece = backward * (b + 1) / buckets - backward * b / buckets;
        const TaskId bwd = graph.add_task(
            "backward" + suffix + (buckets > 1 ? " bucket " + std::to_string(b) : ""), r,
            compute_stream, compute_cat, DelayAction{piece});
        compute_tasks[s].push_back(bwd);
        graph.add_dependency(previous, bwd);
        previous = bwd;
        if (model.overlap_all_reduce) {
          Collective* collective = bucket_collectives[b];
          const TaskId ar =
              graph.add_task("all-reduce" + suffix + " bucket " + std::to_string(b), r, comm_stream,
                             comm_cat, CustomAction{[collective, r](std::function<void()> done) {
                               collective->join(r, std::move(done));
                             }});
          graph.add_dependency(bwd, ar);
          reduces.push_back(ar);
          comm_tasks[s].push_back(ar);
        }
      }
      if (!model.overlap_all_reduce) {
        Collective* collective = bucket_collectives[0];
        const TaskId ar = graph.add_task("all-reduce" + suffix, r, comm_stream, comm_cat,
                                         CustomAction{[collective, r](std::function<void()> done) {
                                           collective->join(r, std::move(done));
                                         }});
        graph.add_dependency(previous, ar);
        reduces.push_back(ar);
        comm_tasks[s].push_back(ar);
      }
      const TaskId end = graph.add_task("step end" + suffix, r, kNoStream, sync_cat, JoinAction{});
      graph.add_dependency(previous, end);
      for (const TaskId ar : reduces) graph.add_dependency(ar, end);
      steps[s].rank_end.push_back(end);
    }
  }

  TaskGraphExecutor executor(sim, graph, &network);
  executor.start();
  sim.run();
  TRAINSIM_ASSERT(executor.finished(), "training steps did not finish (deadlock)");
  const auto& records = executor.records();

  std::vector<Time> step_end(options.steps, 0);
  for (int s = 0; s < options.steps; ++s) {
    for (const TaskId id : steps[s].rank_end) step_end[s] = std::max(step_end[s], records[id].end);
  }
  StepSimulationResult result;
  const int measured = options.steps - options.warmup_steps;
  const Time first = options.warmup_steps == 0 ? 0 : step_end[options.warmup_steps - 1];
  result.step_time = (step_end.back() - first) / measured;
  Time busy = 0;
  for (int s = options.warmup_steps; s < options.steps; ++s) {
    for (const TaskId id : compute_tasks[s]) busy += records[id].end - records[id].start;
  }
  result.breakdown.compute = busy / (static_cast<Time>(measured) * ranks);
  Time comm = 0;
  for (int s = options.warmup_steps; s < options.steps; ++s) {
    for (const TaskId id : comm_tasks[s]) comm += records[id].end - records[id].start;
  }
  result.communication_busy = comm / (static_cast<Time>(measured) * ranks);
  result.breakdown.exposed_communication =
      std::max<Time>(0, result.step_time - result.breakdown.compute);
  result.events = sim.events_processed();
  if (options.keep_trace) {
    trace->records = records;
    result.trace = std::move(trace);
  }
  return result;
}

}  // namespace trainsim::models
