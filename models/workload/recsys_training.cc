#include "models/workload/recsys_training.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "engine/check.h"
#include "models/workload/plan_search.h"
#include "models/workload/step_runner.h"

namespace trainsim::models {

namespace {

constexpr const char* kEmbeddingTime =
    "a GPU's embedding lookups or updates (the tables' rows over cluster.gpu.hbm_bandwidth, or "
    "the host link for tables in host memory)";

Time gemm_time(const Gemm& g, const GpuSpec& gpu, Dtype dtype) {
  const double peak = gpu.peak_flops_per_s.at(dtype);
  return time_from_seconds(g.flops() / (peak * gpu.gemm_efficiency_at(g.flops())),
                           "a GEMM of the dense network (its layer sizes over "
                           "cluster.gpu.peak_flops)");
}

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
  // Where the job keeps each table's rows (the job's storage, or a listed table's own).
  auto storage_of = [&job](const std::string& table) {
    for (const PlannedTable& p : job.plan) {
      if (p.table == table && p.storage) return *p.storage;
    }
    return job.storage;
  };
  bool deployed = false;
  for (const EmbeddingTableSpec& t : model.tables) {
    deployed = deployed || storage_of(t.name) != t.storage ||
               (storage_of(t.name) == EmbeddingStorage::kUvmCaching &&
                job.cache_load_factor != t.cache_load_factor);
  }
  if (deployed) {
    auto copy = std::make_shared<RecsysModelSpec>(model);
    for (EmbeddingTableSpec& t : copy->tables) {
      t.storage = storage_of(t.name);
      t.cache_load_factor = job.cache_load_factor;
    }
    c.deployed_model = copy;
    c.model = copy.get();
  }
  c.host_link_bytes_per_s = cluster.host_link_bytes_per_s();
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

namespace {

// Throws ConfigError (at the job's sharding) if the plan does not fit in HBM (or host memory).
void check_plan_fits(const JobSpec& job, const ShardingPlan& plan, const ShardCosts& costs,
                     const ClusterSpec& cluster, int nodes) {
  const auto overflows = memory_overflows(costs, cluster);
  if (!overflows.empty()) {
    std::string message = "the sharding plan '" + plan.name + "' does not fit on " +
                          std::to_string(nodes) + " node(s): " + overflows.front();
    if (overflows.size() > 1)
      message += " (and " + std::to_string(overflows.size() - 1) + " more GPUs)";
    // Host memory helps a GPU whose tables would make room.
    const double hbm = cluster.gpu.hbm_capacity_bytes;
    const bool tables_help =
        std::any_of(costs.ranks.begin(), costs.ranks.end(), [&](const auto& l) {
          return l.memory_bytes() > hbm &&
                 l.parameter_bytes + l.optimizer_bytes >= l.memory_bytes() - hbm;
        });
    if (tables_help && job.sharding != "greedy" && job.sharding != "torchrec") {
      message +=
          "; strategies greedy and torchrec move tables to host memory when no plan fits "
          "in HBM, or set sharding.storage";
    }
    throw ConfigError(job.sharding_location.file.empty()
                          ? SourceLocation{job.source_file, 0, 0, "sharding"}
                          : job.sharding_location,
                      message);
  }
}

// What every step of the recommender repeats: durations and bytes that do not change.
struct RecsysStep {
  DenseTimes dense;
  Time h2d = 0;              // the batch's host-to-device copy
  Time dense_update = 0;     // the dense optimizer reads and writes the dense state once
  bool overlap = false;      // dense gradient buckets all-reduced during backward
  bool async_wgrad = false;  // weight gradients after the data gradients, off the critical path
  std::vector<BackwardChunk> top_chunks;
  std::vector<double> bucket_bytes;  // dense gradient all-reduce per bucket
  // Table-row-wise partial sums: reduced inside nodes before the embedding all-to-all, and
  // their gradients gathered back to the shards after the gradient all-to-all.
  bool partials = false;
  Algorithm all_to_all_algorithm = Algorithm::kDirect;
  int group = 1, groups = 1;                         // 2D sharding: GPUs per group, replicas
  // 2D sharding with groups inside nodes: the lookups' all-to-alls run on each group's own
  // communicator (TorchRec's sharding process group), of one node here; NCCL's rounds on the
  // world's would put a rank's every peer of its node on one channel.
  bool group_exchanges = false;
  std::vector<std::vector<VertexId>> replica_rings;  // per group position, over the groups
};

RecsysStep recsys_step(const StepRunner& runner, const RecsysModelSpec& model, const JobSpec& job,
                       const ShardingPlan& plan, const ShardCosts& costs, double batch) {
  const ClusterSpec& cluster = runner.cluster();
  const int ranks = runner.ranks();
  RecsysStep st;
  st.dense = recsys_dense_times(model, cluster.gpu, batch);
  const double h2d_bw = cluster.host_link_bytes_per_s();
  st.h2d = h2d_bw > 0 ? transfer_time(batch * model.input_bytes_per_example(), h2d_bw) : 0;
  st.dense_update =
      transfer_time(2 * model.dense_state_bytes(),
                    cluster.gpu.hbm_bandwidth_bytes_per_s * cluster.gpu.hbm_efficiency);
  // Dense gradient buckets, DDP-style: the backward of the top part (transformer, interaction,
  // top MLP) runs in reverse layer order in chunks of about equal parameter bytes, each chunk's
  // bucket all-reduced as soon as it is done; the bottom MLP's bucket after its backward. Without
  // overlap, one all-reduce of everything after the whole backward.
  st.overlap = job.overlaps_gradient_all_reduce();
  st.async_wgrad = job.async_weight_gradients;
  const double gradient_bytes = dtype_bytes(model.gradient_dtype);
  st.top_chunks =
      top_backward_chunks(model, cluster.gpu, batch, st.overlap ? job.gradient_bucket_count() : 1);
  double bottom_params = 0.0;
  for (const Gemm& g : model.forward_gemms(1)) {
    if (g.layer.rfind("bottom_mlp", 0) == 0) bottom_params += g.parameters();
  }
  if (st.overlap) {
    for (const BackwardChunk& c : st.top_chunks) {
      st.bucket_bytes.push_back(c.parameters * gradient_bytes);
    }
    st.bucket_bytes.push_back(bottom_params * gradient_bytes);
  } else {
    st.bucket_bytes.push_back(model.dense_parameters() * gradient_bytes);
  }
  // Replicated rows (data-parallel tables, hot-row copies) are all-reduced with the dense
  // gradients, in the last bucket (TorchRec: DDP holds the data-parallel tables with the dense
  // parameters; HugeCTR: one grouped all-reduce after the data-parallel embedding's local
  // reduce).
  st.bucket_bytes.back() += costs.global_sync_bytes;
  st.partials = !costs.partial_bytes.empty() && costs.partial_bytes.entries() > 0;
  st.all_to_all_algorithm = job.all_to_all_algorithm
                                ? *job.all_to_all_algorithm
                                : pick_alltoallv_algorithm(cluster, runner.topology());
  st.group = plan.group_size > 0 ? plan.group_size : ranks;
  st.groups = ranks / st.group;
  const int node_gpus = std::max(1, cluster.gpus_per_node);
  st.group_exchanges = st.groups > 1 && st.group <= node_gpus && node_gpus % st.group == 0;
  st.replica_rings.resize(st.group);
  for (int j = 0; j < st.group; ++j) {
    for (int g = 0; g < st.groups; ++g) {
      st.replica_rings[j].push_back(runner.topology().gpu_vertices[g * st.group + j]);
    }
  }
  return st;
}

// Whether every node does what node 0 does: each rank's lookups, updates and replica bytes those
// of its counterpart on node 0, every exchange's bytes repeating node after node, and the 2D
// replicas' groups within nodes (so that a node's counterpart in a replica ring is a place on).
bool repeats_node_after_node(const ShardCosts& costs, const RecsysStep& st, int g) {
  if (st.groups > 1 && g % st.group != 0) return false;
  const auto& ranks = costs.ranks;
  for (std::size_t r = g; r < ranks.size(); ++r) {
    const RankLoad& a = ranks[r];
    const RankLoad& b = ranks[r % g];
    if (a.lookup_seconds != b.lookup_seconds || a.update_seconds != b.update_seconds ||
        a.replicated_lookup_seconds != b.replicated_lookup_seconds ||
        a.replicated_update_seconds != b.replicated_update_seconds ||
        a.replica_sync_bytes != b.replica_sync_bytes) {
      return false;
    }
  }
  return costs.id_bytes.repeats_every(g) && costs.embedding_bytes.repeats_every(g) &&
         (!st.partials || costs.partial_bytes.repeats_every(g));
}

// Whether exchanging nodes a and b (each rank of one with the rank at the same place on the
// other) leaves the exchange `m` (with `mt` its transpose) as it is: each of their ranks sends
// and receives what its counterpart does, with the two nodes' places swapped.
bool swap_leaves(const ByteMatrix& m, const ByteMatrix& mt, int g, int a, int b) {
  const int ranks = m.size();
  const int lo = std::min(a, b) * g, hi = std::max(a, b) * g;
  // Whether `p` and `q` hold the same pairs, the receivers of p moved by `shift`.
  auto same = [](std::span<const ByteMatrix::Entry> p, std::span<const ByteMatrix::Entry> q,
                 int shift) {
    return std::equal(p.begin(), p.end(), q.begin(), q.end(),
                      [shift](const ByteMatrix::Entry& x, const ByteMatrix::Entry& y) {
                        return x.to + shift == y.to && x.bytes == y.bytes;
                      });
  };
  for (const ByteMatrix* x : {&m, &mt}) {
    for (int i = 0; i < g; ++i) {
      const int ra = a * g + i, rb = b * g + i;
      // Receivers on neither node alike; those on one node as those on the other.
      if (!same(x->row(ra, 0, lo), x->row(rb, 0, lo), 0) ||
          !same(x->row(ra, lo + g, hi), x->row(rb, lo + g, hi), 0) ||
          !same(x->row(ra, hi + g, ranks), x->row(rb, hi + g, ranks), 0) ||
          !same(x->row(ra, lo, lo + g), x->row(rb, hi, hi + g), hi - lo) ||
          !same(x->row(ra, hi, hi + g), x->row(rb, lo, lo + g), lo - hi)) {
        return false;
      }
    }
  }
  return true;
}

// Classes of nodes that do the same (a skewed plan's nodes without a shard; each node with one
// is a class of its own): per node, the first node of its class, whose ranks stand for its own
// (empty when the classes are many, or with 2D replicas). Two nodes are of a class when their
// ranks, place by place, look up and update as much, and swapping the two nodes leaves every
// exchange as it is; such swaps compose, so every node of a class can stand for any other.
std::vector<int> node_representatives(const ShardCosts& costs, const RecsysStep& st, int g) {
  const int nodes = static_cast<int>(costs.ranks.size()) / g;
  if (st.groups > 1 || nodes < 2) return {};
  // Each exchange with its transpose, made when two nodes of one load are first compared.
  std::vector<std::pair<const ByteMatrix*, ByteMatrix>> exchanges;
  auto exchanged = [&]() -> const auto& {
    if (exchanges.empty()) {
      exchanges.emplace_back(&costs.id_bytes, costs.id_bytes.transposed());
      exchanges.emplace_back(&costs.embedding_bytes, costs.embedding_bytes.transposed());
      if (st.partials) {
        exchanges.emplace_back(&costs.partial_bytes, costs.partial_bytes.transposed());
      }
    }
    return exchanges;
  };
  // A node is compared with the first few classes of its loads (nodes of one load that no swap
  // relates are rare: each extra class costs a comparison per node).
  constexpr std::size_t kTried = 4;
  std::map<std::vector<double>, std::vector<int>> classes_by_load;
  std::vector<int> representative(static_cast<std::size_t>(nodes));
  int classes = 0;
  for (int n = 0; n < nodes; ++n) {
    representative[n] = n;
    std::vector<double> load;
    bool holds_shard = false;
    for (int i = 0; i < g; ++i) {
      const RankLoad& l = costs.ranks[static_cast<std::size_t>(n * g + i)];
      load.insert(load.end(), {l.lookup_seconds, l.update_seconds, l.replicated_lookup_seconds,
                               l.replicated_update_seconds, l.replica_sync_bytes});
      holds_shard |= l.lookup_seconds > l.replicated_lookup_seconds ||
                     l.update_seconds > l.replicated_update_seconds;
    }
    // A node holding a shard is simulated itself: the whole cluster's ids come to it, and how
    // the fabric spreads them (ECMP's hash over the spines) sets such nodes apart.
    if (holds_shard) {
      ++classes;
      continue;
    }
    std::vector<int>& candidates = classes_by_load[load];
    for (std::size_t k = 0; k < std::min(candidates.size(), kTried); ++k) {
      const int c = candidates[k];
      const auto& all = exchanged();
      const bool same = std::all_of(all.begin(), all.end(), [&](const auto& e) {
        return swap_leaves(*e.first, e.second, g, c, n);
      });
      if (same) {
        representative[n] = c;
        break;
      }
    }
    if (representative[n] == n) {
      candidates.push_back(n);
      ++classes;
    }
  }
  // Worth it when the classes are few: checking the fabric costs a route per node and class.
  constexpr int kMostClasses = 64;
  if (classes > std::min(kMostClasses, nodes / 2)) return {};
  return representative;
}

// Has the runner simulate one node per class of nodes that do the same (node 0's ranks for
// every node's when the job repeats node after node), where it can.
void represent_node_classes(StepRunner& runner, const ShardCosts& costs, const RecsysStep& st) {
  const int g = runner.topology().gpus_per_node;
  if (repeats_node_after_node(costs, st, g)) {
    runner.represent_nodes();
    return;
  }
  // Found once for the runs that share the plans (the estimate and the flow run).
  const std::shared_ptr<AllToAllPlans>& shared = runner.shared_plans();
  std::vector<int> representative;
  if (shared && shared->workload_classes) {
    representative = *shared->workload_classes;
  } else {
    representative = node_representatives(costs, st, g);
    if (shared) shared->workload_classes = representative;
  }
  if (!representative.empty()) runner.represent_nodes(std::move(representative));
}

// The collectives of one step.
struct StepCollectives {
  Collective* ids = nullptr;         // id all-to-all
  Collective* embeddings = nullptr;  // pooled-embedding all-to-all (forward)
  Collective* gradients = nullptr;   // embedding-gradient all-to-all (backward)
  // Table-row-wise: partial sums reduced in the node before `embeddings`, their gradients
  // gathered back after `gradients` (null: none).
  Collective* partials = nullptr;
  Collective* partial_gradients = nullptr;
  std::vector<Collective*> dense;     // per dense gradient bucket (null: no bytes)
  std::vector<Collective*> replicas;  // per group position (2D; null: none)
};

// `ids`: the step's id all-to-all when an earlier step made it (prefetched), else made here.
StepCollectives step_collectives(StepRunner& runner, const RecsysStep& st, const JobSpec& job,
                                 const ShardCosts& costs, Collective* ids) {
  StepCollectives c;
  c.ids =
      ids ? ids : runner.all_to_all(costs.id_bytes, st.all_to_all_algorithm, st.group_exchanges);
  c.embeddings =
      runner.all_to_all(costs.embedding_bytes, st.all_to_all_algorithm, st.group_exchanges);
  // The gradients go back the way the embeddings came, as many bytes.
  c.gradients = runner.all_to_all(ByteMatrixView(costs.embedding_bytes, /*transposed=*/true),
                                  st.all_to_all_algorithm, st.group_exchanges);
  if (st.partials) {
    c.partials = runner.all_to_all(costs.partial_bytes, st.all_to_all_algorithm, /*per_node=*/true);
    c.partial_gradients =
        runner.all_to_all(ByteMatrixView(costs.partial_bytes, /*transposed=*/true),
                          st.all_to_all_algorithm, /*per_node=*/true);
  }
  auto all_reduce = [&](double bytes) {
    return runner.all_reduce(bytes, runner.pick_all_reduce(bytes, job.all_reduce_algorithm));
  };
  for (const double b : st.bucket_bytes) c.dense.push_back(b > 0 ? all_reduce(b) : nullptr);
  c.replicas.assign(st.group, nullptr);
  if (st.groups > 1) {
    for (int j = 0; j < st.group; ++j) {
      const double bytes = costs.ranks[j].replica_sync_bytes;
      if (bytes > 0) c.replicas[j] = runner.group_all_reduce(st.replica_rings[j], bytes);
    }
  }
  return c;
}

// A batch's copy and id all-to-all, issued during the step before its own (the next batch's
// sparse input distribution on a prefetch stream).
struct Prefetched {
  TaskId copy, ids;
};

// The forward pass of one rank's step `s`: the batch's copy (issued when step s - 1 started: one
// batch prefetched) and id all-to-all (or those of `prefetched`), the bottom MLP, the lookup, the
// pooled-embedding all-to-all and the top part. `kind` prefixes the step's start and copy ("",
// "eval ").
struct ForwardTasks {
  TaskId start, bottom, top;
};
ForwardTasks add_rank_forward(StepRunner& runner, const RecsysStep& st, Collective* ids_all_to_all,
                              Collective* partials, Collective* embeddings_all_to_all,
                              const RankLoad& load, int s, int r,
                              std::optional<TaskId> previous_start, const std::string& kind,
                              const std::optional<Prefetched>& prefetched = std::nullopt) {
  const std::string sfx = " #" + std::to_string(s);
  ForwardTasks f;
  f.start = runner.sync(kind + "step start" + sfx, r);
  if (s > 0) runner.depend(runner.step_end(s - 1, r), f.start);
  TaskId copy = 0, ids = 0;
  if (prefetched) {
    copy = prefetched->copy;
    ids = prefetched->ids;
  } else {
    copy = runner.input_copy("h2d " + kind + "batch" + sfx, r, st.h2d);
    if (previous_start) runner.depend(*previous_start, copy);
    ids = runner.join("id all-to-all" + sfx, r, ids_all_to_all, r, StepCollective::kIdAllToAll);
    runner.depend(copy, ids);
  }
  f.bottom = runner.compute("bottom MLP forward" + sfx, r, st.dense.bottom_forward);
  runner.depend(f.start, f.bottom);
  runner.depend(copy, f.bottom);
  // The sharded tables' lookup needs the id all-to-all; the replicated rows' (data-parallel
  // tables, hot-row copies) only the batch, and runs while the pooled embeddings are exchanged.
  const TaskId lookup = runner.compute(
      "embedding lookup" + sfx, r,
      time_from_seconds(load.lookup_seconds - load.replicated_lookup_seconds, kEmbeddingTime));
  runner.depend(f.start, lookup);
  runner.depend(ids, lookup);
  std::optional<TaskId> replicated;
  if (load.replicated_lookup_seconds > 0) {
    replicated = runner.compute("replicated embedding lookup" + sfx, r,
                                time_from_seconds(load.replicated_lookup_seconds, kEmbeddingTime));
    runner.depend(f.start, *replicated);
    runner.depend(copy, *replicated);
  }
  TaskId looked_up = lookup;
  if (partials) {
    looked_up = runner.join("embedding partial-sum reduce" + sfx, r, partials, r,
                            StepCollective::kEmbeddingAllToAll);
    runner.depend(lookup, looked_up);
  }
  const TaskId fwd = runner.join("embedding all-to-all" + sfx, r, embeddings_all_to_all, r,
                                 StepCollective::kEmbeddingAllToAll);
  runner.depend(looked_up, fwd);
  f.top = runner.compute("interaction and top forward" + sfx, r, st.dense.top_forward);
  runner.depend(fwd, f.top);
  runner.depend(f.bottom, f.top);
  if (replicated) runner.depend(*replicated, f.top);
  return f;
}

// One rank's tasks of step `s`. `previous_start`: the rank's start of step s - 1 (the batch of
// step s is copied when step s - 1 starts: one batch prefetched); `prefetched`: this batch's copy
// and id all-to-all if step s - 1 issued them; `next_ids`: the next batch's id all-to-all to
// issue now (on the prefetch stream, after that batch's copy), or null. Returns this step's
// start, and what it prefetched.
std::pair<TaskId, std::optional<Prefetched>> add_rank_step(
    StepRunner& runner, const RecsysStep& st, const StepCollectives& c, const RankLoad& load, int s,
    int r, std::optional<TaskId> previous_start, const std::optional<Prefetched>& prefetched,
    Collective* next_ids) {
  const std::string sfx = " #" + std::to_string(s);
  const ForwardTasks forward = add_rank_forward(runner, st, c.ids, c.partials, c.embeddings, load,
                                                s, r, previous_start, "", prefetched);
  const TaskId start = forward.start;
  std::optional<Prefetched> next;
  if (next_ids) {
    const std::string next_sfx = " #" + std::to_string(s + 1);
    Prefetched p;
    p.copy = runner.input_copy("h2d batch" + next_sfx, r, st.h2d, s + 1);
    runner.depend(start, p.copy);
    p.ids = runner.join("id all-to-all" + next_sfx, r, next_ids, r, StepCollective::kIdAllToAll,
                        s + 1, /*prefetch=*/true);
    runner.depend(p.copy, p.ids);
    next = p;
  }
  const TaskId top_fwd = forward.top;
  // Top backward in chunks; with overlap, each chunk's bucket is all-reduced while the next chunk
  // computes. Program order: those buckets, the gradient all-to-all, the embedding gradient
  // syncs, then the last top bucket and the bottom MLP's.
  std::vector<TaskId> reduces;
  auto dense_all_reduce = [&](std::size_t k, TaskId after) {
    if (!c.dense[k]) return;
    const std::string bucket = c.dense.size() > 1 ? " bucket " + std::to_string(k) : "";
    const TaskId ar = runner.join("dense all-reduce" + bucket + sfx, r, c.dense[k], r);
    runner.depend(after, ar);
    reduces.push_back(ar);
  };
  // Backward of each layer: data gradient and weight gradient, each about the forward's FLOPs.
  // With async weight gradients the data gradients run first, down to the interaction, and the
  // gradient all-to-all leaves then; the weight gradients follow, chunk by chunk (their buckets
  // all-reduced as they finish). Otherwise each chunk computes both.
  TaskId top_bwd = top_fwd;
  if (st.async_wgrad) {
    Time data = 0;
    for (const BackwardChunk& chunk : st.top_chunks) data += chunk.time / 2;
    top_bwd = runner.compute("interaction and top data gradients" + sfx, r, data);
    runner.depend(top_fwd, top_bwd);
  }
  // The comm stream runs in program order: with async weight gradients the gradient all-to-all
  // goes before the buckets of the weight gradients.
  // Table-row-wise: the gradients then gathered to every shard of the node.
  const auto gradient_exchange = [&](TaskId after) {
    TaskId t = runner.join("gradient all-to-all" + sfx, r, c.gradients, r,
                           StepCollective::kGradientAllToAll);
    runner.depend(after, t);
    if (c.partial_gradients) {
      const TaskId gather = runner.join("embedding gradient gather" + sfx, r, c.partial_gradients,
                                        r, StepCollective::kGradientAllToAll);
      runner.depend(t, gather);
      t = gather;
    }
    return t;
  };
  std::optional<TaskId> bwd_early;
  if (st.async_wgrad) bwd_early = gradient_exchange(top_bwd);
  for (std::size_t k = 0; k < st.top_chunks.size(); ++k) {
    const std::string part = st.top_chunks.size() > 1 ? " part " + std::to_string(k) : "";
    const Time time =
        st.async_wgrad ? st.top_chunks[k].time - st.top_chunks[k].time / 2 : st.top_chunks[k].time;
    const TaskId chunk = runner.compute(
        (st.async_wgrad ? "interaction and top weight gradients" : "interaction and top backward") +
            part + sfx,
        r, time);
    runner.depend(top_bwd, chunk);
    top_bwd = chunk;
    if (st.overlap && k + 1 < st.top_chunks.size()) dense_all_reduce(k, chunk);
  }
  TaskId bwd = bwd_early ? *bwd_early : TaskId{};
  if (!bwd_early) bwd = gradient_exchange(top_bwd);
  const TaskId bottom_bwd =
      runner.compute("bottom MLP backward" + sfx, r, 2 * st.dense.bottom_forward);
  runner.depend(top_bwd, bottom_bwd);
  // Embedding gradients: the shards' synchronised across replicas (2D), then applied; the
  // replicated rows' all-reduced with the dense gradients' last bucket, then applied (on their
  // own: the shards' update does not wait for them).
  std::optional<TaskId> replica_sync;
  if (Collective* replica = c.replicas[r % st.group]) {
    replica_sync = runner.join("replica all-reduce" + sfx, r, replica, r / st.group,
                               StepCollective::kEmbeddingSync);
    runner.depend(bwd, *replica_sync);
  }
  // The last top bucket and the bottom MLP's (with overlap), or everything (without).
  if (st.overlap) dense_all_reduce(st.top_chunks.size() - 1, top_bwd);
  dense_all_reduce(c.dense.size() - 1, bottom_bwd);
  const TaskId update = runner.compute(
      "embedding update" + sfx, r,
      time_from_seconds(load.update_seconds - load.replicated_update_seconds, kEmbeddingTime));
  runner.depend(bwd, update);
  // The dense backward goes first (the bottom MLP's is short), so its gradients' all-reduce runs
  // while the embeddings are updated rather than after.
  runner.depend(bottom_bwd, update);
  if (replica_sync) runner.depend(*replica_sync, update);
  std::optional<TaskId> replicated_update;
  if (load.replicated_update_seconds > 0) {
    replicated_update =
        runner.compute("replicated embedding update" + sfx, r,
                       time_from_seconds(load.replicated_update_seconds, kEmbeddingTime));
    runner.depend(bwd, *replicated_update);
    if (!reduces.empty()) runner.depend(reduces.back(), *replicated_update);
  }
  const TaskId dense_opt = runner.compute("dense optimizer" + sfx, r, st.dense_update);
  runner.depend(bottom_bwd, dense_opt);
  for (const TaskId t : reduces) runner.depend(t, dense_opt);
  const TaskId end = runner.end_step("step end" + sfx, r);
  runner.depend(update, end);
  if (replicated_update) runner.depend(*replicated_update, end);
  runner.depend(dense_opt, end);
  return {start, next};
}

}  // namespace

// A step replayed as a CUDA graph pays no host launch cost for its kernels (the table-batched
// embedding calls) or its collectives.
ClusterSpec launched_on(const ClusterSpec& cluster, const JobSpec& job) {
  ClusterSpec c = cluster;
  if (job.cuda_graphs) {
    c.gpu.kernel_launch_latency = 0;
    c.collectives.launch_latency = 0;
  }
  return c;
}

StepSimulationResult simulate_recsys_evaluation(const ClusterSpec& given_cluster,
                                                const RecsysModelSpec& model, const JobSpec& job,
                                                int nodes, double batch_per_gpu,
                                                const ShardingPlan& plan,
                                                const StepSimulationOptions& options) {
  const ClusterSpec cluster = launched_on(given_cluster, job);
  JobSpec eval = job;
  eval.global_batch.reset();
  eval.batch_per_gpu = batch_per_gpu;
  const ShardingContext context = recsys_context(cluster, model, eval, nodes);
  const ShardCosts costs = compute_shard_costs(plan, context);
  {
    StepRunner runner(cluster, nodes, options, /*input_copies=*/true);
    const RecsysStep st = recsys_step(runner, model, eval, plan, costs, context.batch_per_gpu);
    represent_node_classes(runner, costs, st);
    std::vector<std::optional<TaskId>> previous_start(runner.ranks());
    for (int s = 0; s < runner.steps(); ++s) {
      runner.begin_step(s);
      Collective* ids =
          runner.all_to_all(costs.id_bytes, st.all_to_all_algorithm, st.group_exchanges);
      Collective* partials =
          !st.partials
              ? nullptr
              : runner.all_to_all(costs.partial_bytes, st.all_to_all_algorithm, /*per_node=*/true);
      Collective* embeddings =
          runner.all_to_all(costs.embedding_bytes, st.all_to_all_algorithm, st.group_exchanges);
      for (const int r : runner.simulated()) {
        const ForwardTasks f = add_rank_forward(runner, st, ids, partials, embeddings,
                                                costs.ranks[r], s, r, previous_start[r], "eval ");
        previous_start[r] = f.start;
        runner.depend(f.top, runner.end_step("eval step end #" + std::to_string(s), r));
      }
    }
    StepSimulationResult result = runner.run();
    if (!runner.symmetry_broken()) return result;
  }  // (its memory freed before every rank's run)
  StepSimulationOptions whole = options;
  whole.represent_nodes = false;
  return simulate_recsys_evaluation(given_cluster, model, job, nodes, batch_per_gpu, plan, whole);
}

RecsysStepDetails plan_recsys_training(const ClusterSpec& given_cluster,
                                       const RecsysModelSpec& model, const JobSpec& job, int nodes,
                                       const StepSimulationOptions& options,
                                       const ShardingPlan* given) {
  const ClusterSpec cluster = launched_on(given_cluster, job);
  const ShardingContext context = recsys_context(cluster, model, job, nodes);
  ShardingPlan plan = given ? *given : job_plan(cluster, model, job, nodes, options);
  ShardCosts costs = compute_shard_costs(plan, context);
  check_plan_fits(job, plan, costs, cluster, nodes);
  return {std::move(plan), std::move(costs), context.batch_per_gpu};
}

void add_recsys_training(StepRunner& runner, const RecsysModelSpec& model, const JobSpec& job,
                         const RecsysStepDetails& details) {
  const ShardCosts& costs = details.costs;
  const RecsysStep st = recsys_step(runner, model, job, details.plan, costs, details.batch_per_gpu);
  represent_node_classes(runner, costs, st);
  std::vector<std::optional<TaskId>> previous_start(runner.ranks());
  std::vector<std::optional<Prefetched>> prefetched(runner.ranks());
  Collective* ids = nullptr;  // this step's id all-to-all, when the previous step issued it
  for (int s = 0; s < runner.steps(); ++s) {
    runner.begin_step(s);
    const StepCollectives c = step_collectives(runner, st, job, costs, ids);
    Collective* next_ids =
        job.prefetch_ids && s + 1 < runner.steps()
            ? runner.all_to_all(costs.id_bytes, st.all_to_all_algorithm, st.group_exchanges)
            : nullptr;
    for (const int r : runner.simulated()) {
      auto [start, next] = add_rank_step(runner, st, c, costs.ranks[r], s, r, previous_start[r],
                                         prefetched[r], next_ids);
      previous_start[r] = start;
      prefetched[r] = next;
    }
    ids = next_ids;
  }
}

StepSimulationResult simulate_recsys_training(const ClusterSpec& given_cluster,
                                              const RecsysModelSpec& model, const JobSpec& job,
                                              int nodes, const StepSimulationOptions& options,
                                              RecsysStepDetails* details,
                                              const ShardingPlan* given) {
  const RecsysStepDetails planned =
      plan_recsys_training(given_cluster, model, job, nodes, options, given);
  if (details) *details = planned;
  return simulate_recsys_training(given_cluster, model, job, nodes, options, planned);
}

StepSimulationResult simulate_recsys_training(const ClusterSpec& given_cluster,
                                              const RecsysModelSpec& model, const JobSpec& job,
                                              int nodes, const StepSimulationOptions& options,
                                              const RecsysStepDetails& planned) {
  const ClusterSpec cluster = launched_on(given_cluster, job);
  {
    StepRunner runner(cluster, nodes, options, /*input_copies=*/true);
    add_recsys_training(runner, model, job, planned);
    StepSimulationResult result = runner.run();
    if (!runner.symmetry_broken()) return result;
  }  // (its memory freed before every rank's run)
  StepSimulationOptions whole = options;
  whole.represent_nodes = false;
  StepRunner every_rank(cluster, nodes, whole, /*input_copies=*/true);
  add_recsys_training(every_rank, model, job, planned);
  return every_rank.run();
}

}  // namespace trainsim::models
