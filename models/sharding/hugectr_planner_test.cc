// HugeCTR's planner against the plan NVIDIA's planner printed for MLPerf DLRM-DCNv2 on one node of
// 8 A100 80 GB (mlcommons/training_results_v3.0 Dell/results/XE9680x8A100-SXM-80GB/dlrm_dcnv2/
// result_0.txt: SHARDING_PLAN auto, MEM_COMM_BW_RATIO 7, no data-parallel tables).
#include "models/sharding/hugectr_planner.h"

#include <gtest/gtest.h>

#include "models/config/recsys_config.h"

namespace trainsim::models {
namespace {

RecsysModelSpec dlrm() {
  return std::get<RecsysModelSpec>(
      load_model_spec(std::string(TRAINSIM_SOURCE_DIR) + "/configs/models/dlrm-dcnv2.yaml"));
}

// `world` GPUs of 80 GB, 8 to a node.
ShardingContext context(const RecsysModelSpec& model, int world, double batch) {
  ShardingContext c;
  c.model = &model;
  c.world = world;
  c.gpus_per_node = 8;
  c.batch_per_gpu = batch;
  c.gpu.hbm_capacity_bytes = 80e9;
  return c;
}

TEST(HugectrPlannerTest, ReproducesThePrintedMlperfPlanOnOneNode) {
  const RecsysModelSpec model = dlrm();
  const ShardingContext c = context(model, 8, 6912);
  HugectrPlannerOptions o;
  o.comm_cost_ratio = 7.0 / 4;  // MEM_COMM_BW_RATIO 7 over mem_comm_work_ratio 8/2
  const ShardingPlan plan = hugectr_plan(c, 0, 0, o);
  // The printed plan, per GPU: [21,6,17] [20,0] [20,1,25] [20,3,7] [20,18,2] [19,4,23,10,8]
  // [22,9,13,12,24] [14,11,15,16,5]: hotness 29 28 28 28 27 25 25 24, table 20 (100 ids) split
  // over GPUs 1-4. Ties among the one-id tables fall by the order of HugeCTR's sort, which this
  // planner (stable, by table) does not reproduce; every other table is where it printed it.
  const std::vector<std::vector<int>> printed = {{21, 6, 17},         {20, 0},
                                                 {20, 1, 25},         {20, 3, 7},
                                                 {20, 18, 2},         {19, 4, 23, 10, 8},
                                                 {22, 9, 13, 12, 24}, {14, 11, 15, 16, 5}};
  std::vector<double> hotness(8, 0.0);
  std::vector<int> count(8, 0);
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const TablePlacement& p = plan.tables[t];
    for (const int g : p.ranks) {
      hotness[g] += model.tables[t].pooling / static_cast<double>(p.ranks.size());
      ++count[g];
    }
    if (model.tables[t].pooling == 1) continue;
    std::vector<int> where;
    for (int g = 0; g < 8; ++g) {
      for (const int printed_table : printed[g]) {
        if (printed_table == static_cast<int>(t)) where.push_back(g);
      }
    }
    EXPECT_EQ(p.ranks, where) << "table " << t;
  }
  EXPECT_EQ(plan.tables[20].strategy, ShardingStrategy::kRowWise);
  EXPECT_EQ(plan.tables[21].strategy, ShardingStrategy::kTableWise);
  EXPECT_EQ(hotness, (std::vector<double>{29, 28, 28, 28, 27, 25, 25, 24}));
  EXPECT_EQ(count, (std::vector<int>{3, 2, 3, 3, 3, 5, 5, 5}));
}

TEST(HugectrPlannerTest, SmallTablesGoDataParallelBelowTheThreshold) {
  // v3.1's multi-node threshold, 0.0125 GB: tables under 12,207 rows of 1 KiB (13 of the 26 plus
  // the 11,938-row one: 14) are replicated.
  const RecsysModelSpec model = dlrm();
  const ShardingContext c = context(model, 8, 1056);
  HugectrPlannerOptions o;
  o.comm_cost_ratio = 67.0 / 4;
  o.data_parallel_below_bytes = 0.0125e9;
  const ShardingPlan plan = hugectr_plan(c, 0, 0, o);
  int replicated = 0;
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const bool dp = plan.tables[t].strategy == ShardingStrategy::kDataParallel;
    replicated += dp;
    EXPECT_EQ(dp, model.tables[t].rows < 12207) << t;
  }
  EXPECT_EQ(replicated, 14);
}

TEST(HugectrPlannerTest, AcrossNodesItPlansPerNodeAndSplitsEachTableOverANodesGpus) {
  // hier_auto on 2 nodes of 8: the buckets are the nodes (memory 8 x 60 GB each); every
  // model-parallel table is held by whole nodes, row-split over their GPUs (table-row-wise:
  // partial sums are reduced inside each node first, then sent on the requesters' rails).
  const RecsysModelSpec model = dlrm();
  const ShardingContext c = context(model, 16, 1056);
  HugectrPlannerOptions o;
  o.hierarchical = true;
  o.comm_cost_ratio = 67.0 / 4;
  o.data_parallel_below_bytes = 0.0125e9;
  const ShardingPlan plan = hugectr_plan(c, 0, 0, o);
  std::vector<double> node_hotness(2, 0.0);
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const TablePlacement& p = plan.tables[t];
    if (p.strategy == ShardingStrategy::kDataParallel) continue;
    ASSERT_EQ(p.ranks.size() % 8, 0u) << t;
    for (std::size_t k = 0; k < p.ranks.size(); ++k) {
      EXPECT_EQ(p.ranks[k] % 8, static_cast<int>(k % 8)) << t;  // whole nodes, in GPU order
    }
    const int nodes = static_cast<int>(p.ranks.size()) / 8;
    EXPECT_EQ(p.strategy, ShardingStrategy::kTableRowWise);
    for (std::size_t k = 0; k < p.ranks.size(); k += 8) {
      node_hotness[p.ranks[k] / 8] += model.tables[t].pooling / nodes;
    }
  }
  // Every id of the model-parallel tables is served once: 214 per sample less the 32 of the 14
  // replicated tables.
  EXPECT_DOUBLE_EQ(node_hotness[0] + node_hotness[1], 182);
  EXPECT_GT(node_hotness[0], 0);
  EXPECT_GT(node_hotness[1], 0);
}

}  // namespace
}  // namespace trainsim::models
