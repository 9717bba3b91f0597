// TorchRec's planner estimate, worked by hand from its formulas on one small table.
#include "models/sharding/torchrec_estimator.h"

#include <cmath>

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

// One table of 1000 rows x 128 fp32 (512 B), 2 ids per sample, 100 samples per rank, 2 GPUs on
// one node; fp32 all-to-all; HBM 1 TB/s, 100 GB/s inside the node, 10 GB/s across.
struct OneTable {
  RecsysModelSpec model;
  ShardingContext context;
  TorchrecTopology topology{1e12, 1e11, 1e10};
  OneTable() {
    EmbeddingTableSpec t;
    t.name = "t";
    t.rows = 1000;
    t.dim = 128;
    t.pooling = 2;
    t.access = AccessDistribution::uniform(1000);
    model.name = "one";
    model.tables = {t};
    context.model = &model;
    context.world = 2;
    context.gpus_per_node = 2;
    context.batch_per_gpu = 100;
  }
  std::vector<TorchrecPerf> estimate(ShardingStrategy s, std::vector<int> ranks) const {
    return torchrec_estimate({"p", 2, {{s, std::move(ranks), 0}}}, context, topology);
  }
};

TEST(TorchrecEstimatorTest, TableWiseByHand) {
  // inputs 200, outputs 100, W 2. Forward: (200 x 2 x 8 ids + 200 x 2 x 128 x 4 rows + 100 x 2 x
  // 128 x 4 outputs) / 1e12 = 310,400 B -> 0.3104 us; comms 102,400 B / 1e11 = 1.024 us each way;
  // backward compute twice the forward's. Rank 1 holds nothing.
  const auto r = OneTable().estimate(ShardingStrategy::kTableWise, {0});
  EXPECT_DOUBLE_EQ(r[0].fwd_compute, 3.104e-7);
  EXPECT_DOUBLE_EQ(r[0].fwd_comms, 1.024e-6);
  EXPECT_DOUBLE_EQ(r[0].bwd_compute, 6.208e-7);
  EXPECT_DOUBLE_EQ(r[0].bwd_comms, 1.024e-6);
  EXPECT_DOUBLE_EQ(r[1].total(), 0.0);
  const OneTable c;
  EXPECT_DOUBLE_EQ(torchrec_rating({"p", 2, {{ShardingStrategy::kTableWise, {0}, 0}}}, c.context,
                                   c.topology),
                   2.9792e-6);
}

TEST(TorchrecEstimatorTest, RowWiseColumnWiseAndDataParallelByHand) {
  const OneTable c;
  // Row-wise: each shard half the ids, (1600 + 102,400 + 102,400) B -> 0.2064 us; the backward adds
  // the batched copy 102,400 x 2.455 / 1e12 = 0.251392 us.
  const auto rw = c.estimate(ShardingStrategy::kRowWise, {0, 1});
  EXPECT_DOUBLE_EQ(rw[1].fwd_compute, 2.064e-7);
  EXPECT_DOUBLE_EQ(rw[1].bwd_compute, 2 * 2.064e-7 + 2.51392e-7);
  EXPECT_DOUBLE_EQ(rw[1].fwd_comms, 1.024e-6);
  // Column-wise: shards of 64 columns pay x1.15: (3200 + 102,400 + 51,200) x 1.15 B -> 0.18032 us,
  // comms 51,200 B -> 0.512 us.
  const auto cw = c.estimate(ShardingStrategy::kColumnWise, {0, 1});
  EXPECT_DOUBLE_EQ(cw[0].fwd_compute, 1.8032e-7);
  EXPECT_DOUBLE_EQ(cw[0].fwd_comms, 5.12e-7);
  // Data-parallel: local lookups (1600 + 102,400 + 51,200) B -> 0.1552 us; the 512,000 B table
  // all-reduced at 10 GB/s x 2 GPUs (n = 1) = 25.6 us, and its elementwise optimizer 512,000 x
  // 9.22 / 1e12 = 4.72064 us.
  const auto dp = c.estimate(ShardingStrategy::kDataParallel, {0, 1});
  EXPECT_DOUBLE_EQ(dp[0].fwd_compute, 1.552e-7);
  EXPECT_DOUBLE_EQ(dp[0].fwd_comms, 0.0);
  EXPECT_DOUBLE_EQ(dp[0].bwd_comms, 2.56e-5);
  EXPECT_DOUBLE_EQ(dp[0].bwd_compute, 2 * 1.552e-7 + 4.72064e-6);
}

TEST(TorchrecEstimatorTest, TablesInHostMemoryAtTheBandwidthBlendByHand) {
  // The table-wise case above (310,400 B of forward bytes) with the host link at 10 GB/s.
  OneTable c;
  c.topology.hbm_to_ddr_bytes_per_s = 1e10;
  // FUSED_UVM: HBM_TO_DDR / 10 = 1 GB/s: 310.4 us forward, twice that backward.
  c.model.tables[0].storage = EmbeddingStorage::kUvm;
  const auto uvm = c.estimate(ShardingStrategy::kTableWise, {0});
  EXPECT_DOUBLE_EQ(uvm[0].fwd_compute, 3.104e-4);
  EXPECT_DOUBLE_EQ(uvm[0].bwd_compute, 6.208e-4);
  EXPECT_DOUBLE_EQ(uvm[0].prefetch, 0.0);
  // FUSED_UVM_CACHING at load factor 0.2: (0.2 x 1e12 + 0.8 x 1e10) / 10 = 20.8 GB/s, and the
  // prefetch of the missed rows: 400 uniform lookups over 1000 rows hit 1000 (1 - 0.999^400)
  // distinct rows, of which a 200-row LRU cache misses 0.8 (1 - 200/1000), 512 B each over
  // 10 GB/s.
  c.model.tables[0].storage = EmbeddingStorage::kUvmCaching;
  c.model.tables[0].cache_load_factor = 0.2;
  const auto cached = c.estimate(ShardingStrategy::kTableWise, {0});
  EXPECT_DOUBLE_EQ(cached[0].fwd_compute, 310400 / 2.08e10);
  EXPECT_NEAR(cached[0].prefetch, 0.8 * 1000 * (1 - std::pow(0.999, 400)) * 512 / 1e10, 1e-12);
  EXPECT_DOUBLE_EQ(cached[0].total(), cached[0].fwd_compute + cached[0].fwd_comms +
                                          cached[0].bwd_compute + cached[0].bwd_comms +
                                          cached[0].prefetch);
}

}  // namespace
}  // namespace trainsim::models
