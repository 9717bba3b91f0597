// Recommender training steps: a step worked out by hand on one GPU, skew showing up as load
// imbalance (and leaving with hot-row replication), DDP-style gradient buckets, determinism, and
// flows agreeing with the analytic network where nothing contends.
#include "models/workload/recsys_training.h"

#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "models/spec/test_fixtures.h"
#include "models/workload/plan_search.h"
#include "models/workload/test_expectations.h"

#include "models/config/cluster_config.h"
#include "models/config/recsys_config.h"

namespace trainsim::models {
namespace {

const std::string kSourceDir = TRAINSIM_SOURCE_DIR;

// `gpus` GPUs of 100 TFLOP/s BF16 at 50%, 1 TB/s HBM at full efficiency for streams; embedding
// kernels at 50% forward and 25% backward, 1 us to launch each; host copies at `h2d` B/s.
ClusterSpec small_gpus(int gpus, double h2d) {
  ClusterSpec c = testing::small_node(gpus);
  c.gpu.embedding_efficiency = 0.5;
  c.gpu.embedding_backward_efficiency = 0.25;
  c.gpu.kernel_launch_latency = kMicrosecond;
  c.gpu.host_to_device_bytes_per_s = h2d;
  return c;
}

// One of them, copies at 2 GB/s.
ClusterSpec one_gpu() { return small_gpus(1, 2e9); }

// One table of 1000 rows x 8 fp32, 2 uniform ids per sample; a top layer of 1000 on the 8
// pooled values; SGD.
RecsysModelSpec tiny_model() {
  RecsysModelSpec m;
  m.name = "tiny";
  EmbeddingTableSpec t;
  t.name = "t";
  t.rows = 1000;
  t.dim = 8;
  t.pooling = 2;
  t.access = AccessDistribution::uniform(1000);
  m.tables = {t};
  m.interaction = InteractionKind::kConcat;
  m.top_mlp = {1000};
  return m;
}

ClusterSpec dgx_h100() { return load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml"); }

RecsysModelSpec dlrm_dcnv2() {
  return std::get<RecsysModelSpec>(load_model_spec(kSourceDir + "/configs/models/dlrm-dcnv2.yaml"));
}

JobSpec job(double batch, const std::string& sharding = "table_wise") {
  JobSpec j;
  j.name = "j";
  j.batch_per_gpu = batch;
  j.sharding = sharding;
  return j;
}

TEST(RecsysTrainingTest, OneGpuStepByHand) {
  // Batch 1000. Top layer: 2 x 1000 x 1000 x 8 = 16 MFLOP at 50 TFLOP/s = 320 ns forward, 640 ns
  // backward. Embedding forward: 1000 pooled fp32 vectors of 32 B, 2000 rows of 8 elements read
  // as 32 (128 B), 2000 ids of 8 B = 304 KB at 0.5 TB/s = 608 ns, x1.75 for rows under 64
  // elements = 1064 ns, + 1 us launch. Backward: twice the 288 KB of outputs and rows (SGD keeps no
  // state) = 576 KB at 0.25 TB/s = 2304 ns, x1.75 = 4032 ns, + 1 us launch. Dense SGD: 9000
  // parameters x 2 x 4 B = 72 ns. Nothing to communicate; the next batch's copy (1000 x 20 B at
  // 2 GB/s = 10 us) is prefetched, but the step waits for it: 8128 ns of work, 10 us between
  // batches.
  const auto r = simulate_recsys_training(one_gpu(), tiny_model(), job(1000), 1, {});
  const double work_ns = 320 + 640 + (1064 + 1000) + (4032 + 1000) + 72;
  EXPECT_NEAR(to_seconds(r.breakdown.compute) * 1e9, work_ns, 0.01);
  EXPECT_NEAR(to_seconds(r.step_time) * 1e9, 10000, 0.01);
  EXPECT_NEAR(to_seconds(r.breakdown.input_stall) * 1e9, 10000 - work_ns, 0.01);
  EXPECT_EQ(r.breakdown.imbalance, 0);
}

TEST(RecsysTrainingTest, OneGpuEvaluationStepIsTheForwardPassByHand) {
  // The step above without its backward, embedding update and optimizer: the top layer's 320 ns
  // forward and the lookup's 1064 ns + 1 us launch, 2384 ns of work; the batch copy (10 us)
  // still paces the steps.
  RecsysStepDetails details;
  simulate_recsys_training(one_gpu(), tiny_model(), job(1000), 1, {}, &details);
  const auto r =
      simulate_recsys_evaluation(one_gpu(), tiny_model(), job(1000), 1, 1000, details.plan, {});
  EXPECT_NEAR(to_seconds(r.breakdown.compute) * 1e9, 320 + 1064 + 1000, 0.01);
  EXPECT_NEAR(to_seconds(r.step_time) * 1e9, 10000, 0.01);
  // Twice the batch: twice the GEMM and the bytes looked up, one launch; the copy 20 us.
  const auto twice =
      simulate_recsys_evaluation(one_gpu(), tiny_model(), job(1000), 1, 2000, details.plan, {});
  EXPECT_NEAR(to_seconds(twice.breakdown.compute) * 1e9, 640 + 2128 + 1000, 0.01);
  EXPECT_NEAR(to_seconds(twice.step_time) * 1e9, 20000, 0.01);
}

TEST(RecsysTrainingTest, PlannersMoveATableTwiceTheHbmToHostMemoryBehindACache) {
  // The one-GPU step above with a table of 1e6 rows (32 MB) on a GPU of 16 MB: the model is twice
  // the cluster's HBM. The planners may use 0.9 of it (14.4 MB); the dense network (9000 SGD
  // parameters, 36 KB) and the top layer's bf16 activations (1000 x 1000 x 2 B = 2 MB) leave
  // 12.36 MB, so the table cannot stay in HBM. In host memory behind a cache of 0.2 of its rows
  // (6.4 MB) it fits; its 2000 uniform ids hit 1e6 (1 - (1 - 1e-6)^2000) = 1998.0 distinct
  // rows, of which a uniform LRU cache misses 1 - 0.2 = 0.8, copied in (32 B each, 51.2 KB) over
  // the 2 GB/s host link before the lookup (25.6 us), and as many evicted rows written back the
  // other way at once. SGD keeps no state in host memory. In host memory alone every lookup
  // would read its row over the link (2000 x 32 B = 32 us forward, as much backward): the
  // planners take the cache.
  ClusterSpec cluster = one_gpu();
  cluster.gpu.hbm_capacity_bytes = 16e6;
  RecsysModelSpec model = tiny_model();
  model.tables[0].rows = 1e6;
  model.tables[0].access = AccessDistribution::uniform(1e6);
  const double unique = 1e6 * (1 - std::pow(1 - 1e-6, 2000));
  const double copied = unique * 0.8 * 32;
  // As in the step by hand: 8128 ns of work, now with the copy.
  const double work_ns = 8128 + copied / 2e9 * 1e9;
  for (const std::string strategy : {"greedy", "torchrec"}) {
    SCOPED_TRACE(strategy);
    const JobSpec j = job(1000, strategy);
    const ShardingContext context = recsys_context(cluster, model, j, 1);
    const ShardingPlan plan = resolve_sharding(j, context);
    ASSERT_TRUE(plan.tables[0].storage.has_value());
    EXPECT_EQ(*plan.tables[0].storage, EmbeddingStorage::kUvmCaching);
    const ShardCosts costs = compute_shard_costs(plan, context);
    const RankLoad& gpu = costs.ranks[0];
    EXPECT_DOUBLE_EQ(gpu.parameter_bytes, 0.2 * 32e6);  // 25.6 MB of HBM saved
    EXPECT_DOUBLE_EQ(gpu.host_bytes, 32e6);
    EXPECT_NEAR(gpu.host_link_bytes, 2 * copied, 1e-4);
    const auto r = simulate_recsys_training(cluster, model, j, 1, {});
    EXPECT_NEAR(to_seconds(r.breakdown.compute) * 1e9, work_ns, 0.01);
    // The work (33.7 us) outlasts the next batch's 10 us copy: the step is the work.
    EXPECT_NEAR(to_seconds(r.step_time) * 1e9, work_ns, 0.01);
  }
  // A uniform plan does not move tables: it only says that it does not fit.
  EXPECT_THROW(simulate_recsys_training(cluster, model, job(1000, "table_wise"), 1, {}),
               ConfigError);
  // With HBM for the table (64 MB) it stays there, and the step is the one by hand.
  cluster.gpu.hbm_capacity_bytes = 64e6;
  const JobSpec j = job(1000, "torchrec");
  EXPECT_FALSE(resolve_sharding(j, recsys_context(cluster, model, j, 1)).tables[0].storage);
  EXPECT_NEAR(
      to_seconds(simulate_recsys_training(cluster, model, j, 1, {}).breakdown.compute) * 1e9, 8128,
      0.01);
}

// A DGX H100 node and a model with one large Zipf(1.2) table row-wise over its 8 GPUs.
struct SkewCase {
  ClusterSpec cluster = dgx_h100();
  RecsysModelSpec model;
  SkewCase(AccessDistribution access) {
    EmbeddingTableSpec t;
    t.name = "big";
    t.rows = 1e7;
    t.dim = 128;
    t.pooling = 64;
    t.access = access;
    model.name = "skew";
    model.tables = {t};
    model.dense_features = 16;
    model.bottom_mlp = {128};
    model.interaction = InteractionKind::kConcat;
    model.top_mlp = {256, 1};
  }
  StepSimulationResult run(double hot_rows) const {
    JobSpec j = job(4096, "row_wise");
    j.hot_rows = hot_rows;
    return simulate_recsys_training(cluster, model, j, 1, {});
  }
};

TEST(RecsysTrainingTest, SkewShowsUpAsImbalanceAndHotRowsRemoveIt) {
  const SkewCase skewed(AccessDistribution::zipf(1e7, 1.2));
  const SkewCase flat(AccessDistribution::uniform(1e7));
  const auto skewed_step = skewed.run(0);
  const auto flat_step = flat.run(0);
  const auto replicated = skewed.run(1e4);
  // The GPU holding the hottest row (a fifth of all lookups) is the slowest; the others wait for
  // it in the embedding all-to-all.
  EXPECT_EQ(skewed_step.slowest_rank,
            AccessDistribution::shard_of(1, 8, ShardingContext{}.hash_salt));
  EXPECT_GT(skewed_step.breakdown.imbalance, skewed_step.step_time / 20);
  EXPECT_LT(flat_step.breakdown.imbalance, flat_step.step_time / 1000);
  // Replicating the 10,000 hottest rows balances the lookups (their gradients are all-reduced
  // instead, which here costs about what it saves); what is left is the cold rows' hashed shards
  // (0.2% of the step).
  EXPECT_LT(replicated.breakdown.imbalance, replicated.step_time / 200);
}

TEST(RecsysTrainingTest, ReplicatedRowsWorkBesideTheShardedExchange) {
  // The 10,000 hottest rows replicated: their lookup needs no id all-to-all and runs on the
  // compute stream while the sharded rows' pooled vectors are exchanged; the sharded update
  // starts as soon as the gradient all-to-all ends, and only the replicated rows' update waits
  // for their gradients, all-reduced in the dense gradients' last bucket (HugeCTR's
  // data-parallel stream and grouped all-reduce, TorchRec's DDP and dense optimizer).
  const SkewCase skewed(AccessDistribution::zipf(1e7, 1.2));
  JobSpec j = job(4096, "row_wise");
  j.hot_rows = 1e4;
  StepSimulationOptions options;
  options.keep_trace = true;
  options.network = NetworkModel::kAnalytic;
  const auto r = simulate_recsys_training(skewed.cluster, skewed.model, j, 1, options);
  std::map<std::string, TaskRecord> step;  // rank 0's tasks of step 1
  TaskRecord last_bucket;
  int buckets = 0;
  for (TaskId id = 0; id < r.trace->graph.size(); ++id) {
    const auto& task = r.trace->graph.task(id);
    const std::string_view n = task.name;
    if (task.group != 0 || n.size() < 3 || n.substr(n.size() - 3) != " #1") continue;
    const std::string name(n.substr(0, n.size() - 3));
    step[name] = r.trace->records[id];
    if (name.rfind("dense all-reduce", 0) == 0) {
      ++buckets;
      if (r.trace->records[id].end > last_bucket.end) last_bucket = r.trace->records[id];
    }
  }
  for (const char* name :
       {"embedding lookup", "replicated embedding lookup", "embedding all-to-all",
        "interaction and top forward", "gradient all-to-all", "embedding update",
        "replicated embedding update"}) {
    ASSERT_TRUE(step.count(name)) << name;
  }
  ASSERT_EQ(buckets, 2);  // the top part's and the bottom MLP's, no all-reduce of their own
  EXPECT_EQ(step["embedding all-to-all"].start, step["embedding lookup"].end);
  EXPECT_EQ(step["replicated embedding lookup"].start, step["embedding lookup"].end);
  EXPECT_EQ(step["interaction and top forward"].start,
            std::max(step["embedding all-to-all"].end, step["replicated embedding lookup"].end));
  EXPECT_EQ(step["embedding update"].start, step["gradient all-to-all"].end);
  EXPECT_LT(step["embedding update"].start, last_bucket.end);
  EXPECT_EQ(step["replicated embedding update"].start,
            std::max(last_bucket.end, step["embedding update"].end));
}

TEST(RecsysTrainingTest, OneAllReducePerGradientBucket) {
  SkewCase c(AccessDistribution::uniform(1e7));
  c.model.top_mlp = {512, 512, 512, 512};  // backward chunks: [3, 2], [1], [0] by parameters
  StepSimulationOptions options;
  options.keep_trace = true;
  for (const int buckets : {1, 3}) {
    JobSpec j = job(4096, "row_wise");
    j.gradient_buckets = buckets;
    const auto r = simulate_recsys_training(c.cluster, c.model, j, 1, options);
    int all_reduces = 0;
    for (TaskId id = 0; id < r.trace->graph.size(); ++id) {
      const auto& task = r.trace->graph.task(id);
      if (task.group == 0 && task.name.rfind("dense all-reduce", 0) == 0 &&
          task.name.find("#0") != std::string::npos) {
        ++all_reduces;
      }
    }
    // `buckets` for the top part's backward chunks, plus the bottom MLP's.
    EXPECT_EQ(all_reduces, buckets + 1) << buckets;
  }
}

TEST(RecsysTrainingTest, SameInputsSameResult) {
  const ClusterSpec cluster = dgx_h100();
  const RecsysModelSpec model = dlrm_dcnv2();
  const JobSpec j = job(8192, "greedy");
  const auto a = simulate_recsys_training(cluster, model, j, 2, {});
  const auto b = simulate_recsys_training(cluster, model, j, 2, {});
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.breakdown.exposed_communication, b.breakdown.exposed_communication);
  EXPECT_EQ(a.breakdown.imbalance, b.breakdown.imbalance);
  EXPECT_EQ(a.events, b.events);
}

TEST(RecsysTrainingTest, FlowsAgreeWithTheAnalyticNetworkInsideANode) {
  // One node: every collective has the NVSwitch to itself (they run one at a time), so the flow
  // model and the analytic model should agree closely.
  const ClusterSpec cluster = dgx_h100();
  const RecsysModelSpec model = dlrm_dcnv2();
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  const JobSpec j = job(8192, "greedy");
  const auto flow = simulate_recsys_training(cluster, model, j, 1, {});
  const auto fast = simulate_recsys_training(cluster, model, j, 1, analytic);
  EXPECT_NEAR(to_seconds(flow.step_time), to_seconds(fast.step_time),
              0.03 * to_seconds(fast.step_time));
}

TEST(RecsysTrainingTest, GreedyPlanIsAtLeastAsFastAsEverySingleStrategy) {
  // DLRM-DCNv2 on 2 DGX H100 nodes: the planner, costing lookups, skew and all-to-all bytes per
  // GPU, mixes strategies per table (small tables replicated, large ones split inside a node);
  // no plan that uses one strategy for every table should beat it by more than 0.3% (the planner
  // balances its own estimate of each GPU's cost, not the simulated step, which overlaps the next
  // batch's id all-to-all; with derived multi-hot ids the tables are nearly uniform and
  // column-wise everywhere comes within 0.2% of it; `sharding: best` ranks by the simulation).
  const ClusterSpec cluster = dgx_h100();
  const RecsysModelSpec model = dlrm_dcnv2();
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  const JobSpec greedy = job(8192, "greedy");
  const ShardingContext context = recsys_context(cluster, model, greedy, 2);
  const Time planned = simulate_recsys_training(cluster, model, greedy, 2, analytic).step_time;
  int compared = 0;
  for (const ShardingStrategy s : all_strategies()) {
    const ShardingPlan plan = uniform_plan(s, context);
    const ShardCosts costs = compute_shard_costs(plan, context);
    if (!memory_overflows(costs, cluster.gpu).empty()) continue;
    const Time t =
        simulate_recsys_training(cluster, model, greedy, 2, analytic, nullptr, &plan).step_time;
    EXPECT_LE(to_seconds(planned), to_seconds(t) * 1.003) << strategy_name(s);
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

TEST(RecsysTrainingTest, AsyncWeightGradientsHideTheGradientAllToAll) {
  // DLRM-DCNv2 on one DGX H100 node: the same work, but the gradient all-to-all leaves after the
  // data gradients (half the top backward) instead of the whole top backward, so less of it is
  // exposed and the step is shorter.
  const ClusterSpec cluster = dgx_h100();
  const RecsysModelSpec model = dlrm_dcnv2();
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  JobSpec sync = job(6912, "greedy");
  JobSpec async = sync;
  async.async_weight_gradients = true;
  const auto a = simulate_recsys_training(cluster, model, sync, 1, analytic);
  const auto b = simulate_recsys_training(cluster, model, async, 1, analytic);
  EXPECT_EQ(a.breakdown.compute, b.breakdown.compute);
  const int gradients = static_cast<int>(StepCollective::kGradientAllToAll);
  EXPECT_LT(b.breakdown.stall_by_collective[gradients], a.breakdown.stall_by_collective[gradients]);
  EXPECT_LT(b.step_time, a.step_time);
}

// Sharding `best`: the fastest fitting candidate of the ranking, at each node count.
TEST(PlanSearchTest, BestIsTheFastestFittingCandidate) {
  const SkewCase c(AccessDistribution::zipf(1e7, 1.2));
  const JobSpec j = job(4096, "best");
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  for (const int nodes : {1, 2}) {
    const auto ranked =
        rank_sharding_plans(c.cluster, c.model, j, nodes, plan_ranking_options(analytic));
    // Table-wise, row-wise, column-wise, data-parallel (and table-row-wise, table-column-wise
    // and grid across nodes), greedy, HugeCTR's and TorchRec's: 7 over all GPUs; on 2 nodes 10
    // over all GPUs and 7 per node (2D).
    EXPECT_EQ(ranked.size(), nodes == 1 ? 7u : 17u) << nodes;
    for (std::size_t i = 1; i < ranked.size(); ++i) {
      if (ranked[i].fits) {
        EXPECT_TRUE(ranked[i - 1].fits);
        EXPECT_LE(ranked[i - 1].step_time, ranked[i].step_time);
      }
    }
    const ShardingPlan best = job_plan(c.cluster, c.model, j, nodes, analytic);
    // The job runs that plan: the same step as simulating it by name.
    EXPECT_EQ(
        simulate_recsys_training(c.cluster, c.model, j, nodes, analytic).step_time,
        simulate_recsys_training(c.cluster, c.model, j, nodes, analytic, nullptr, &best).step_time);
  }
  // A planner cannot resolve it alone.
  EXPECT_THROW(resolve_sharding(j, recsys_context(c.cluster, c.model, j, 1)), ConfigError);
}

// Two GPUs, the one table on GPU 0, copies that take no time: GPU 1 sends its ids to GPU 0
// before the lookup. Without prefetching, the next batch's id all-to-all queues on the
// communication stream behind this step's gradient all-to-all and all-reduce; prefetched, it runs
// on its own stream during the step, so every lookup starts with its step and the step shortens
// by the part of the id all-to-all that the step's own tail did not already cover.
TEST(RecsysTrainingTest, PrefetchedIdsTakeTheirAllToAllOffTheStep) {
  const ClusterSpec c = small_gpus(2, 1e18);
  StepSimulationOptions options;
  options.network = NetworkModel::kAnalytic;
  options.keep_trace = true;
  JobSpec sequential = job(1000);
  sequential.prefetch_ids = false;
  const auto before = simulate_recsys_training(c, tiny_model(), sequential, 1, options);
  const auto after = simulate_recsys_training(c, tiny_model(), job(1000), 1, options);
  auto record = [](const StepSimulationResult& r, const std::string& name, int rank) {
    for (std::size_t i = 0; i < r.trace->graph.size(); ++i) {
      const auto& t = r.trace->graph.task(i);
      if (t.name == name && t.group == rank) return std::make_pair(i, r.trace->records[i]);
    }
    throw std::runtime_error("no task " + name);
  };
  const auto [before_ids, ids] = record(before, "id all-to-all #2", 1);
  const Time ids_time = ids.end - ids.start;
  ASSERT_GT(ids_time, 0);
  EXPECT_GT(before.step_time, after.step_time);
  EXPECT_LE(before.step_time - after.step_time, ids_time);
  for (const int rank : {0, 1}) {
    EXPECT_EQ(record(after, "embedding lookup #2", rank).second.start,
              record(after, "step start #2", rank).second.start)
        << rank;
  }
  // Its ids travel on a stream of their own.
  const auto [index, prefetched] = record(after, "id all-to-all #2", 1);
  const auto& graph = after.trace->graph;
  EXPECT_EQ(graph.stream_names()[graph.task(index).stream], "prefetch");
}

// Under CUDA graphs the step pays no launch: the one-GPU step above without its two 1 us
// embedding-kernel launches (8128 - 2000 = 6128 ns of work).
TEST(RecsysTrainingTest, CudaGraphsRemoveTheLaunchCost) {
  JobSpec graphs = job(1000);
  graphs.cuda_graphs = true;
  const auto r = simulate_recsys_training(one_gpu(), tiny_model(), graphs, 1, {});
  EXPECT_NEAR(to_seconds(r.breakdown.compute) * 1e9, 8128 - 2000, 0.01);
}

TEST(RecsysTrainingTest, TablesThatDoNotFitInHbmRunFromHostMemory) {
  // DLRM-DCNv2 (about 105 GB of rows, as many of Adagrad state) on one DGX H100 node whose GPUs
  // had 16 GB each: in HBM no plan fits; with every table in host memory behind a cache of 0.2 of
  // its rows it runs, its lookups slower by the rows copied over the host link.
  ClusterSpec cluster = dgx_h100();
  cluster.gpu.hbm_capacity_bytes = 16e9;
  const RecsysModelSpec model = dlrm_dcnv2();
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  JobSpec j = job(8192, "row_wise");
  EXPECT_THROW(simulate_recsys_training(cluster, model, j, 1, analytic), ConfigError);
  j.storage = EmbeddingStorage::kUvmCaching;
  const ShardingContext context = recsys_context(cluster, model, j, 1);
  ASSERT_NE(context.model, &model);  // the job's deployment of the model
  EXPECT_EQ(context.model->tables[0].storage, EmbeddingStorage::kUvmCaching);
  EXPECT_DOUBLE_EQ(context.model->tables[0].cache_load_factor, 0.2);
  const ShardCosts costs = compute_shard_costs(resolve_sharding(j, context), context);
  EXPECT_TRUE(memory_overflows(costs, cluster.gpu).empty());
  EXPECT_GT(costs.ranks[0].host_bytes, 25e9);  // an eighth of the 210 GB per GPU
  const Time cached = simulate_recsys_training(cluster, model, j, 1, analytic).step_time;
  // The node's 2 TB of system memory holds the 210 GB; 100 GB would not.
  EXPECT_DOUBLE_EQ(cluster.host.memory_bytes, 2e12);
  ClusterSpec small_host = cluster;
  small_host.host.memory_bytes = 100e9;
  EXPECT_EQ(memory_overflows(costs, small_host).size(), 1u);
  EXPECT_THROW(simulate_recsys_training(small_host, model, j, 1, analytic), ConfigError);
  // A table the job lists keeps its own storage: one table back in HBM.
  PlannedTable listed;
  listed.table = model.tables[0].name;
  listed.strategy = ShardingStrategy::kRowWise;
  listed.storage = EmbeddingStorage::kHbm;
  j.plan.push_back(listed);
  EXPECT_EQ(recsys_context(cluster, model, j, 1).model->tables[0].storage, EmbeddingStorage::kHbm);
  cluster.gpu.hbm_capacity_bytes = 80e9;
  j = job(8192, "row_wise");
  const Time in_hbm = simulate_recsys_training(cluster, model, j, 1, analytic).step_time;
  EXPECT_GT(to_seconds(cached), to_seconds(in_hbm) * 1.05);
}

TEST(RecsysTrainingTest, NodesThatRepeatRunAsNodeZerosRanksWithEveryRanksResults) {
  // DLRM-DCNv2's tables column-wise within each node of 8 H100s (2D: a replica per node, synced
  // across the nodes), on 4 nodes: every node does what node 0 does, so node 0's 8 ranks stand
  // for all 32, every flow still runs, and each figure of the step is the whole run's.
  JobSpec j = job(1024, "column_wise");
  j.group = ShardingGroup::node();
  StepSimulationOptions whole;
  whole.represent_nodes = false;
  const StepSimulationResult every_rank =
      simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), j, 4, whole);
  const StepSimulationResult node_zero =
      simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), j, 4, StepSimulationOptions{});
  testing::expect_same_steps(node_zero, every_rank);
  // A quarter of the ranks' tasks: fewer events, not a quarter (the flows are all there).
  EXPECT_LT(node_zero.events, every_rank.events);
  // Tables placed whole on single GPUs (table-wise) differ from node to node: every rank runs.
  const JobSpec table_wise = job(1024, "table_wise");
  const StepSimulationResult tw_whole =
      simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), table_wise, 4, whole);
  const StepSimulationResult tw =
      simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), table_wise, 4, StepSimulationOptions{});
  testing::expect_same_steps(tw, tw_whole);
  EXPECT_EQ(tw.events, tw_whole.events);
}

TEST(RecsysTrainingTest, NodesWithoutAShardRunAsOneNodesRanksWithEveryRanksResults) {
  // DLRM-DCNv2's first four tables placed whole (table-wise) on 8 DGX H100 nodes: the nodes that
  // hold no table do the same (dense work, ids out, pooled vectors in), so the first of them
  // stands for those that also see the fabric as it does (StepRunnerTest), the nodes holding
  // tables for themselves; every figure of the step is the whole run's.
  RecsysModelSpec m = dlrm_dcnv2();
  m.tables.resize(4);
  const JobSpec j = job(1024, "table_wise");
  StepSimulationOptions whole;
  whole.represent_nodes = false;
  const StepSimulationResult every_rank = simulate_recsys_training(dgx_h100(), m, j, 8, whole);
  const StepSimulationResult classes =
      simulate_recsys_training(dgx_h100(), m, j, 8, StepSimulationOptions{});
  testing::expect_same_steps(classes, every_rank);
  EXPECT_LT(classes.events, every_rank.events);
  EXPECT_GT(classes.breakdown.imbalance, 0);  // the tables' owners are the slow ranks
}

TEST(RecsysTrainingTest, TwoDGroupsExchangeOnTheirNodesCommunicator) {
  // DLRM-DCNv2 column-wise inside each node of 8 H100s (2D, a group per node): every node looks up
  // and exchanges the same bytes inside itself, on its own communicator as TorchRec's sharding
  // group does, so its all-to-alls take at 2 and 4 nodes exactly what they take on one node (on
  // the world's communicator NCCL would start every round inside a node on one channel); only
  // the replica all-reduce across the nodes grows.
  JobSpec j = job(1024, "column_wise");
  j.group = ShardingGroup::node();
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  const StepSimulationResult first =
      simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), j, 1, analytic);
  const StepBreakdown& one = first.breakdown;
  const auto embeddings = static_cast<int>(StepCollective::kEmbeddingAllToAll);
  const auto gradients = static_cast<int>(StepCollective::kGradientAllToAll);
  ASSERT_GT(one.stall_by_collective[embeddings], 0);
  for (const int nodes : {2, 4}) {
    const StepSimulationResult r =
        simulate_recsys_training(dgx_h100(), dlrm_dcnv2(), j, nodes, analytic);
    EXPECT_EQ(r.breakdown.stall_by_collective[embeddings], one.stall_by_collective[embeddings])
        << nodes;
    EXPECT_EQ(r.breakdown.stall_by_collective[gradients], one.stall_by_collective[gradients])
        << nodes;
  }
}

}  // namespace
}  // namespace trainsim::models
