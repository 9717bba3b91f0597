#include "models/workload/recsys_training.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/check.h"
#include "engine/flow_network.h"
#include "models/collectives/algorithms.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {

namespace {

Time gemm_time(const Gemm& g, const GpuSpec& gpu, Dtype dtype) {
  const double peak = gpu.peak_flops_per_s.at(dtype);
  return time_from_seconds(g.flops() / (peak * gpu.gemm_efficiency_at(g.flops())));
}

// The ranks of one collective's tasks, to measure how long each waited for the last to join.
struct CollectiveTasks {
  std::vector<std::pair<int, TaskId>> members;  // (rank, task)
};

// One piece of the top part's backward: its time and the dense parameters whose gradients it
// produces.
struct BackwardChunk {
  Time time = 0;
  double parameters = 0.0;
};

// The top part's backward (twice the forward GEMM time, layers in reverse) cut into `chunks`
// pieces of about equal parameter counts.
std::vector<BackwardChunk> top_backward_chunks(const RecsysModelSpec& model, const GpuSpec& gpu,
                                               double batch, int chunks) {
  std::vector<Gemm> gemms;
  double total = 0.0;
  for (const Gemm& g : model.forward_gemms(batch)) {
    if (g.layer.rfind("bottom_mlp", 0) == 0) continue;
    gemms.push_back(g);
    total += g.parameters();
  }
  std::vector<BackwardChunk> out(1);
  double done = 0.0;
  for (auto g = gemms.rbegin(); g != gemms.rend(); ++g) {
    if (static_cast<int>(out.size()) < chunks && out.back().parameters > 0 &&
        done >= total * static_cast<double>(out.size()) / chunks) {
      out.emplace_back();
    }
    out.back().time += 2 * gemm_time(*g, gpu, model.compute_dtype);
    out.back().parameters += g->parameters();
    done += g->parameters();
  }
  return out;
}

}  // namespace

DenseTimes recsys_dense_times(const RecsysModelSpec& model, const GpuSpec& gpu, double batch) {
  DenseTimes t;
  for (const Gemm& g : model.forward_gemms(batch)) {
    const Time time = gemm_time(g, gpu, model.compute_dtype);
    if (g.layer.rfind("bottom_mlp", 0) == 0) {
      t.bottom_forward += time;
    } else {
      t.top_forward += time;
    }
  }
  return t;
}

ShardingContext recsys_context(const ClusterSpec& cluster, const RecsysModelSpec& model,
                               const JobSpec& job, int nodes) {
  ShardingContext c;
  c.model = &model;
  c.world = nodes * cluster.gpus_per_node;
  c.gpus_per_node = cluster.gpus_per_node;
  c.batch_per_gpu = job_batch_per_gpu(job, c.world);
  c.communication_dtype =
      job.embedding_communication ? *job.embedding_communication : model.communication_dtype;
  c.sync_dtype = job.embedding_sync;
  c.gpu = cluster.gpu;
  // For the planner: a GPU's share of the node's NICs, and its link into the node's fabric.
  c.local_bytes_per_s = cluster.intra_node.gpu_link.effective_bandwidth();
  c.network_bytes_per_s = cluster.nic.link.effective_bandwidth() * cluster.nic.count /
                          std::max(1, cluster.gpus_per_node);
  return c;
}

StepSimulationResult simulate_recsys_training(const ClusterSpec& cluster,
                                              const RecsysModelSpec& model, const JobSpec& job,
                                              int nodes, const StepSimulationOptions& options,
                                              RecsysStepDetails* details,
                                              const ShardingPlan* given) {
  TRAINSIM_ASSERT(options.steps > options.warmup_steps && options.warmup_steps >= 0,
                  "need at least one measured step");
  const ShardingContext context = recsys_context(cluster, model, job, nodes);
  const ShardingPlan plan = given ? *given : resolve_sharding(job, context);
  const ShardCosts costs = compute_shard_costs(plan, context);
  const auto overflows = memory_overflows(costs, cluster.gpu);
  if (!overflows.empty()) {
    std::string message = "the sharding plan '" + plan.name + "' does not fit on " +
                          std::to_string(nodes) + " node(s): " + overflows.front();
    if (overflows.size() > 1)
      message += " (and " + std::to_string(overflows.size() - 1) + " more GPUs)";
    throw ConfigError(job.sharding_location.file.empty()
                          ? SourceLocation{job.source_file, 0, 0, "sharding"}
                          : job.sharding_location,
                      message);
  }
  if (details) *details = {plan, costs, context.batch_per_gpu};

  Simulation sim(options.seed);
  const ClusterTopology topology = build_cluster_topology(cluster, nodes);
  FlowNetwork network(sim, topology.topology);
  TRAINSIM_ASSERT(std::holds_alternative<Time>(options.solve_quantum),
                  "the solve quantum is resolved to a time before a step runs");
  network.set_solve_quantum(std::get<Time>(options.solve_quantum));
  const int ranks = topology.gpu_count();
  const double batch = context.batch_per_gpu;
  const bool flow = options.network == NetworkModel::kFlow;

  // Durations that do not depend on the step.
  const DenseTimes dense = recsys_dense_times(model, cluster.gpu, batch);
  const double h2d_bw = cluster.host_link_bytes_per_s();
  const Time h2d = h2d_bw > 0 ? transfer_time(batch * model.input_bytes_per_example(), h2d_bw) : 0;
  const double dense_params = model.dense_parameters();
  // The optimizer reads and writes the dense state once.
  const Time dense_update =
      transfer_time(2 * model.dense_state_bytes(),
                    cluster.gpu.hbm_bandwidth_bytes_per_s * cluster.gpu.hbm_efficiency);
  // Dense gradient buckets, DDP-style: the backward of the top part (transformer, interaction,
  // top MLP) runs in reverse layer order in chunks of about equal parameter bytes, each chunk's
  // bucket all-reduced as soon as it is done; the bottom MLP's bucket after its backward. Without
  // overlap, one all-reduce of everything after the whole backward.
  const bool overlap = job.overlap_gradient_all_reduce;
  const double gradient_bytes = dtype_bytes(model.gradient_dtype);
  const std::vector<BackwardChunk> top_chunks =
      top_backward_chunks(model, cluster.gpu, batch, overlap ? job.gradient_buckets : 1);
  double bottom_params = 0.0;
  for (const Gemm& g : model.forward_gemms(1)) {
    if (g.layer.rfind("bottom_mlp", 0) == 0) bottom_params += g.parameters();
  }
  std::vector<double> bucket_bytes;
  if (overlap) {
    for (const BackwardChunk& c : top_chunks) bucket_bytes.push_back(c.parameters * gradient_bytes);
    bucket_bytes.push_back(bottom_params * gradient_bytes);
  } else {
    bucket_bytes.push_back(dense_params * gradient_bytes);
  }
  std::vector<std::vector<double>> grad_bytes(ranks, std::vector<double>(ranks, 0.0));
  for (int a = 0; a < ranks; ++a) {
    for (int b = 0; b < ranks; ++b) grad_bytes[a][b] = costs.embedding_bytes[b][a];
  }

  // Collective factories (flow or analytic), all over the same network.
  std::vector<std::unique_ptr<Collective>> collectives;
  Router& router = network.router();
  AnalyticCache picker_cache;  // the same bucket sizes every step
  auto all_reduce = [&](double bytes) -> Collective* {
    CollectiveRequest request;
    request.bytes = bytes;
    if (job.all_reduce_algorithm) request.algorithm = *job.all_reduce_algorithm;
    const PickedAlgorithm picked =
        job.all_reduce_algorithm ? pick_protocol(router, cluster, topology, request, &picker_cache)
                                 : pick_algorithm(router, cluster, topology,
                                                  CollectiveOp::kAllReduce, bytes, &picker_cache);
    request.algorithm = picked.algorithm;
    request.protocol = picked.protocol;
    if (flow) {
      collectives.push_back(make_flow_collective(sim, network, cluster, topology, request));
    } else {
      collectives.push_back(std::make_unique<AnalyticCollective>(sim, ranks, picked.analytic_time));
    }
    return collectives.back().get();
  };
  const Algorithm alltoall_algorithm = job.all_to_all_algorithm
                                           ? *job.all_to_all_algorithm
                                           : pick_alltoallv_algorithm(cluster, topology);
  auto alltoall = [&](const std::vector<std::vector<double>>& bytes) -> Collective* {
    if (flow) {
      collectives.push_back(
          make_alltoallv(sim, network, cluster, topology, bytes, alltoall_algorithm));
    } else {
      collectives.push_back(std::make_unique<AnalyticCollective>(
          sim, ranks, alltoallv_time(router, cluster, topology, bytes, alltoall_algorithm)));
    }
    return collectives.back().get();
  };
  // Replica all-reduce (2D): one ring per position in the group, over the groups.
  const int group = plan.group_size > 0 ? plan.group_size : ranks;
  const int groups = ranks / group;
  std::vector<std::vector<VertexId>> replica_vertices(group);
  for (int j = 0; j < group; ++j) {
    for (int g = 0; g < groups; ++g)
      replica_vertices[j].push_back(topology.gpu_vertices[g * group + j]);
  }
  auto replica_all_reduce = [&](int position) -> Collective* {
    const double bytes = costs.ranks[position].replica_sync_bytes;
    if (flow) {
      collectives.push_back(
          make_group_all_reduce(sim, network, cluster, replica_vertices[position], bytes));
    } else {
      collectives.push_back(std::make_unique<AnalyticCollective>(
          sim, groups, group_all_reduce_time(router, cluster, replica_vertices[position], bytes)));
    }
    return collectives.back().get();
  };

  auto trace = std::make_shared<StepTrace>();
  trace->gpus_per_node = cluster.gpus_per_node;
  TaskGraph& graph = trace->graph;
  const StreamId copy_stream = graph.add_stream("copy");
  const StreamId compute_stream = graph.add_stream("compute");
  const StreamId comm_stream = graph.add_stream("communication");
  const CategoryId input_cat = graph.add_category("input");
  const CategoryId compute_cat = graph.add_category("compute");
  const CategoryId comm_cat = graph.add_category("communication");
  const CategoryId sync_cat = graph.add_category("sync");

  // Collectives must be entered in the same order on every rank (as with NCCL on one stream):
  // each rank's communication tasks are chained in program order.
  std::vector<std::optional<TaskId>> last_comm(ranks);
  auto join_task = [&](const std::string& name, int rank, Collective* c, int participant) {
    const TaskId id = graph.add_task(name, rank, comm_stream, comm_cat,
                                     CustomAction{[c, participant](std::function<void()> done) {
                                       c->join(participant, std::move(done));
                                     }});
    if (last_comm[rank]) graph.add_dependency(*last_comm[rank], id);
    last_comm[rank] = id;
    return id;
  };

  std::vector<std::vector<TaskId>> step_end(options.steps);
  std::vector<std::vector<TaskId>> h2d_tasks(options.steps);
  std::vector<std::vector<TaskId>> compute_tasks(options.steps);
  std::vector<std::vector<CollectiveTasks>> step_collectives(options.steps);
  // H2D of step s+1 is issued when step s starts (one batch prefetched).
  std::vector<TaskId> step_start_prev(ranks);
  for (int s = 0; s < options.steps; ++s) {
    const std::string sfx = " #" + std::to_string(s);
    Collective* ids = alltoall(costs.id_bytes);
    Collective* fwd = alltoall(costs.embedding_bytes);
    Collective* bwd = alltoall(grad_bytes);
    std::vector<Collective*> dense_ar;
    for (const double b : bucket_bytes) dense_ar.push_back(b > 0 ? all_reduce(b) : nullptr);
    Collective* global_sync =
        costs.global_sync_bytes > 0 ? all_reduce(costs.global_sync_bytes) : nullptr;
    std::vector<Collective*> replicas(group, nullptr);
    if (groups > 1) {
      for (int j = 0; j < group; ++j) {
        if (costs.ranks[j].replica_sync_bytes > 0) replicas[j] = replica_all_reduce(j);
      }
    }
    std::vector<CollectiveTasks> tracked(3 + dense_ar.size() + 1 + group);
    for (int r = 0; r < ranks; ++r) {
      const RankLoad& load = costs.ranks[r];
      const TaskId start = graph.add_task("step start" + sfx, r, kNoStream, sync_cat, JoinAction{});
      if (s > 0) graph.add_dependency(step_end[s - 1][r], start);
      const TaskId copy =
          graph.add_task("h2d batch" + sfx, r, copy_stream, input_cat, DelayAction{h2d});
      if (s > 0) graph.add_dependency(step_start_prev[r], copy);
      h2d_tasks[s].push_back(copy);
      const TaskId ids_task = join_task("id all-to-all" + sfx, r, ids, r);
      graph.add_dependency(copy, ids_task);
      tracked[0].members.emplace_back(r, ids_task);
      const TaskId bottom_fwd = graph.add_task("bottom MLP forward" + sfx, r, compute_stream,
                                               compute_cat, DelayAction{dense.bottom_forward});
      graph.add_dependency(start, bottom_fwd);
      graph.add_dependency(copy, bottom_fwd);
      const TaskId lookup = graph.add_task("embedding lookup" + sfx, r, compute_stream, compute_cat,
                                           DelayAction{time_from_seconds(load.lookup_seconds)});
      graph.add_dependency(start, lookup);
      graph.add_dependency(ids_task, lookup);
      const TaskId fwd_task = join_task("embedding all-to-all" + sfx, r, fwd, r);
      graph.add_dependency(lookup, fwd_task);
      tracked[1].members.emplace_back(r, fwd_task);
      const TaskId top_fwd = graph.add_task("interaction and top forward" + sfx, r, compute_stream,
                                            compute_cat, DelayAction{dense.top_forward});
      graph.add_dependency(fwd_task, top_fwd);
      graph.add_dependency(bottom_fwd, top_fwd);
      // Top backward in chunks; with overlap, each chunk's bucket is all-reduced while the next
      // chunk computes. Program order: those buckets, the gradient all-to-all, the embedding
      // gradient syncs, then the last top bucket and the bottom MLP's.
      std::vector<TaskId> reduces;
      auto dense_all_reduce = [&](std::size_t k, TaskId after) {
        if (!dense_ar[k]) return;
        const TaskId ar = join_task(
            "dense all-reduce" +
                std::string(dense_ar.size() > 1 ? " bucket " + std::to_string(k) : "") + sfx,
            r, dense_ar[k], r);
        graph.add_dependency(after, ar);
        tracked[3 + k].members.emplace_back(r, ar);
        reduces.push_back(ar);
      };
      TaskId top_bwd = top_fwd;
      for (std::size_t k = 0; k < top_chunks.size(); ++k) {
        const TaskId chunk = graph.add_task(
            "interaction and top backward" +
                std::string(top_chunks.size() > 1 ? " part " + std::to_string(k) : "") + sfx,
            r, compute_stream, compute_cat, DelayAction{top_chunks[k].time});
        graph.add_dependency(top_bwd, chunk);
        top_bwd = chunk;
        compute_tasks[s].push_back(chunk);
        if (overlap && k + 1 < top_chunks.size()) dense_all_reduce(k, chunk);
      }
      const TaskId bwd_task = join_task("gradient all-to-all" + sfx, r, bwd, r);
      graph.add_dependency(top_bwd, bwd_task);
      tracked[2].members.emplace_back(r, bwd_task);
      const TaskId bottom_bwd = graph.add_task("bottom MLP backward" + sfx, r, compute_stream,
                                               compute_cat, DelayAction{2 * dense.bottom_forward});
      graph.add_dependency(top_bwd, bottom_bwd);
      // Embedding gradients: synchronised across replicas (2D) and for replicated rows, then
      // applied to the shards.
      std::vector<TaskId> syncs;
      if (replicas[r % group]) {
        const TaskId rs = join_task("replica all-reduce" + sfx, r, replicas[r % group], r / group);
        graph.add_dependency(bwd_task, rs);
        tracked[3 + dense_ar.size() + 1 + r % group].members.emplace_back(r, rs);
        syncs.push_back(rs);
      }
      if (global_sync) {
        const TaskId gs = join_task("replicated-rows all-reduce" + sfx, r, global_sync, r);
        graph.add_dependency(bwd_task, gs);
        tracked[3 + dense_ar.size()].members.emplace_back(r, gs);
        syncs.push_back(gs);
      }
      // The last top bucket and the bottom MLP's (with overlap), or everything (without).
      if (overlap) dense_all_reduce(top_chunks.size() - 1, top_bwd);
      dense_all_reduce(dense_ar.size() - 1, bottom_bwd);
      const TaskId update = graph.add_task("embedding update" + sfx, r, compute_stream, compute_cat,
                                           DelayAction{time_from_seconds(load.update_seconds)});
      graph.add_dependency(bwd_task, update);
      for (const TaskId t : syncs) graph.add_dependency(t, update);
      const TaskId dense_opt = graph.add_task("dense optimizer" + sfx, r, compute_stream,
                                              compute_cat, DelayAction{dense_update});
      graph.add_dependency(bottom_bwd, dense_opt);
      for (const TaskId t : reduces) graph.add_dependency(t, dense_opt);
      const TaskId end = graph.add_task("step end" + sfx, r, kNoStream, sync_cat, JoinAction{});
      graph.add_dependency(update, end);
      graph.add_dependency(dense_opt, end);
      step_end[s].push_back(end);
      step_start_prev[r] = start;
      for (const TaskId t : {bottom_fwd, lookup, top_fwd, bottom_bwd, update, dense_opt}) {
        compute_tasks[s].push_back(t);
      }
    }
    step_collectives[s] = std::move(tracked);
  }

  TaskGraphExecutor executor(sim, graph, &network);
  executor.start();
  sim.run();
  TRAINSIM_ASSERT(executor.finished(), "training steps did not finish (deadlock)");
  const auto& records = executor.records();

  std::vector<Time> end_of(options.steps, 0);
  for (int s = 0; s < options.steps; ++s) {
    for (const TaskId id : step_end[s]) end_of[s] = std::max(end_of[s], records[id].end);
  }
  StepSimulationResult result;
  const int measured = options.steps - options.warmup_steps;
  const Time first = options.warmup_steps == 0 ? 0 : end_of[options.warmup_steps - 1];
  result.step_time = (end_of.back() - first) / measured;

  std::vector<Time> busy(ranks, 0), waited(ranks, 0), input(ranks, 0), transfer(ranks, 0);
  for (int s = options.warmup_steps; s < options.steps; ++s) {
    for (std::size_t i = 0; i < compute_tasks[s].size(); ++i) {
      const TaskId id = compute_tasks[s][i];
      busy[graph.task(id).group] += records[id].end - records[id].start;
    }
    for (const CollectiveTasks& c : step_collectives[s]) {
      Time last = 0;
      for (const auto& [r, id] : c.members) last = std::max(last, records[id].start);
      for (const auto& [r, id] : c.members) {
        waited[r] += last - records[id].start;
        transfer[r] += records[id].end - last;
      }
    }
    // Input stall: the batch's copy finishing after the previous step ended.
    for (const TaskId id : h2d_tasks[s]) {
      const int r = graph.task(id).group;
      const Time previous_end = s > 0 ? records[step_end[s - 1][r]].end : 0;
      input[r] += std::max<Time>(0, records[id].end - previous_end);
    }
  }
  Time total_busy = 0, total_wait = 0, total_input = 0, total_transfer = 0;
  for (int r = 0; r < ranks; ++r) {
    total_busy += busy[r];
    total_transfer += transfer[r];
    total_wait += waited[r];
    total_input += input[r];
    if (busy[r] > busy[result.slowest_rank]) result.slowest_rank = r;
  }
  const Time per = static_cast<Time>(measured) * ranks;
  result.breakdown.compute = total_busy / per;
  result.communication_busy = total_transfer / per;
  result.breakdown.imbalance =
      std::min(total_wait / per, std::max<Time>(0, result.step_time - result.breakdown.compute));
  result.breakdown.input_stall = std::min(
      total_input / per,
      std::max<Time>(0, result.step_time - result.breakdown.compute - result.breakdown.imbalance));
  result.breakdown.exposed_communication =
      std::max<Time>(0, result.step_time - result.breakdown.compute - result.breakdown.imbalance -
                            result.breakdown.input_stall);
  result.slowest_rank_compute = busy[result.slowest_rank] / measured;
  result.events = sim.events_processed();
  if (options.keep_trace) {
    trace->records = records;
    result.trace = std::move(trace);
  }
  return result;
}

}  // namespace trainsim::models
