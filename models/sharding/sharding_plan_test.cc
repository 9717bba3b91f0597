// Sharding costs on small models whose numbers can be worked out by hand.
#include "models/sharding/sharding_plan.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/spec/config_error.h"

namespace trainsim::models {
namespace {

GpuSpec gpu(double hbm_bytes = 80e9) {
  GpuSpec g;
  g.model = "G";
  g.peak_flops_per_s[Dtype::kBf16] = 1e15;
  g.hbm_bandwidth_bytes_per_s = 2e12;
  g.hbm_capacity_bytes = hbm_bytes;
  return g;
}

// Two tables of 1000 rows, dim 8, 2 ids per sample; no dense network.
RecsysModelSpec small_model(const AccessDistribution& access) {
  RecsysModelSpec m;
  m.name = "small";
  for (int i = 0; i < 2; ++i) {
    EmbeddingTableSpec t;
    t.name = "t" + std::to_string(i);
    t.rows = 1000;
    t.dim = 8;
    t.pooling = 2;
    t.access = access;
    m.tables.push_back(t);
  }
  return m;
}

ShardingContext context(const RecsysModelSpec& m, int world, int gpus_per_node = 4) {
  ShardingContext c;
  c.model = &m;
  c.world = world;
  c.gpus_per_node = gpus_per_node;
  c.batch_per_gpu = 100;
  c.gpu = gpu();
  return c;
}

TEST(ShardingPlanTest, TableWiseAllToAllBytes) {
  // Table 0 on GPU 1, table 1 on GPU 2, 4 GPUs, batch 100: every GPU sends each owner 100 x 2
  // ids of 8 bytes (1600 B) and gets back 100 pooled vectors of 8 fp32 (3200 B).
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingPlan plan{
      "tw", 4, {{ShardingStrategy::kTableWise, {1}, 0}, {ShardingStrategy::kTableWise, {2}, 0}}};
  const ShardCosts c = compute_shard_costs(plan, context(m, 4));
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(c.id_bytes(r, 1), 1600);
    EXPECT_DOUBLE_EQ(c.id_bytes(r, 2), 1600);
    EXPECT_DOUBLE_EQ(c.id_bytes(r, 0), 0);
    EXPECT_DOUBLE_EQ(c.embedding_bytes(1, r), 3200);
    EXPECT_DOUBLE_EQ(c.embedding_bytes(2, r), 3200);
  }
  // The owner serves all 4 x 100 x 2 = 800 lookups of its table; the others none.
  EXPECT_DOUBLE_EQ(c.ranks[1].lookups, 800);
  EXPECT_DOUBLE_EQ(c.ranks[0].lookups, 0);
  // Distinct rows: 800 uniform draws over 1000 rows hit 1000 (1 - (1 - 1/1000)^800).
  EXPECT_NEAR(c.ranks[1].unique_rows, 1000 * (1 - std::pow(1 - 1e-3, 800)), 1e-6);
  // Memory: the whole table (1000 x 8 x 4 bytes) on its owner.
  EXPECT_DOUBLE_EQ(c.ranks[1].parameter_bytes, 32000);
  // No table-row-wise table: no partial sums, and no matrix kept for them.
  EXPECT_TRUE(c.partial_bytes.empty());
  // A GPU's all-to-all buffers: what it sends and what it receives, its own part in both. GPU 0
  // sends 2 x 1600 B of ids and receives 2 x 3200 B of vectors; GPU 1 sends 2 x 1600 B of ids
  // (one part its own) and 4 x 3200 B of vectors, and receives 4 x 1600 B and 2 x 3200 B.
  EXPECT_DOUBLE_EQ(c.ranks[0].buffer_bytes, 2 * 1600 + 2 * 3200);
  EXPECT_DOUBLE_EQ(c.ranks[1].buffer_bytes, 2 * 1600 + 4 * 3200 + 4 * 1600 + 2 * 3200);
}

TEST(ShardingPlanTest, RowWiseAllToAllBytesFollowTheHashedRows) {
  // Row-wise over 4 GPUs: GPU s holds the rows hashed to it; a GPU sends it its ids for those
  // rows (share = rows of s / 1000 under uniform access) and gets a partial sum for every sample.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 4);
  const ShardingPlan plan = uniform_plan(ShardingStrategy::kRowWise, ctx);
  const ShardCosts c = compute_shard_costs(plan, ctx);
  for (int s = 0; s < 4; ++s) {
    double share = 0.0;  // both tables: count the rows each hash salt sends to s
    for (int ti = 0; ti < 2; ++ti) {
      int rows = 0;
      for (int k = 1; k <= 1000; ++k)
        rows += AccessDistribution::shard_of(k, 4, ctx.hash_salt + ti) == s;
      share += rows / 1000.0;
    }
    for (int r = 0; r < 4; ++r) {
      EXPECT_NEAR(c.id_bytes(r, s), 100 * 2 * 8 * share, 1e-9);
      EXPECT_DOUBLE_EQ(c.embedding_bytes(s, r), 2 * 3200);  // both tables, full width each
    }
  }
}

TEST(ShardingPlanTest, SequenceTablesReturnOnlyTheRowsEachShardOwns) {
  // A sequence table (4 ids per sample, not pooled) row-wise over 4 GPUs: shard s returns the
  // row of every id it owns, 100 x 4 x share_s rows of 8 fp32, not a vector per sample.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  m.tables.resize(1);
  m.tables[0].pooling = 4;
  m.tables[0].sequence = true;
  ShardingContext ctx = context(m, 4);
  const ShardCosts c = compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx), ctx);
  double total = 0.0;
  for (int s = 0; s < 4; ++s) {
    int rows = 0;
    for (int k = 1; k <= 1000; ++k) rows += AccessDistribution::shard_of(k, 4, ctx.hash_salt) == s;
    for (int r = 0; r < 4; ++r) {
      EXPECT_NEAR(c.embedding_bytes(s, r), 100 * 4 * (rows / 1000.0) * 8 * 4, 1e-9);
      total += c.embedding_bytes(s, r);
    }
  }
  EXPECT_NEAR(total, 4 * 100 * 4 * 8 * 4, 1e-6);  // every looked-up row once
}

TEST(ShardingPlanTest, ColumnWiseShardsReturnTheirColumnsForEverySample) {
  // Both tables column-wise over 2 GPUs (dim 8 = 2 x 4): each shard returns 100 vectors of 4
  // fp32 (1600 B) per table to every GPU, and holds half of every row.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 4);
  ShardingPlan plan{
      "cw",
      4,
      {{ShardingStrategy::kColumnWise, {0, 1}, 0}, {ShardingStrategy::kColumnWise, {0, 1}, 0}}};
  const ShardCosts c = compute_shard_costs(plan, ctx);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(c.embedding_bytes(0, r), 2 * 1600);
    EXPECT_DOUBLE_EQ(c.embedding_bytes(1, r), 2 * 1600);
    EXPECT_DOUBLE_EQ(c.embedding_bytes(2, r), 0);
  }
  EXPECT_DOUBLE_EQ(c.ranks[0].parameter_bytes, 2 * 1000 * 4 * 4);
  EXPECT_DOUBLE_EQ(c.imbalance(), 2.0);  // GPUs 2 and 3 serve nothing: max 2x the mean
}

TEST(ShardingPlanTest, EachGpusBuffersAreWhatItSendsAndReceivesPeerByPeer) {
  // 2 nodes of 4 GPUs, four tables under a Zipf law (uneven shares): table-wise on GPU 5,
  // row-wise over GPUs listed out of order (7, 2, 4, 1), table-row-wise over node 1 listed
  // backwards, column-wise over GPUs 6 and 3. A GPU's all-to-all buffers hold, peer by peer
  // (itself included), the ids it sends and gets, the vectors it sends and gets and the partial
  // sums it sends and gets: the same sum, term for term, as the matrices give it here.
  RecsysModelSpec m = small_model(AccessDistribution::zipf(1000, 1.1));
  m.tables.push_back(m.tables[0]);
  m.tables.push_back(m.tables[1]);
  m.tables[2].name = "t2";
  m.tables[3].name = "t3";
  const ShardingContext ctx = context(m, 8, 4);
  const ShardingPlan plan{"mixed",
                          8,
                          {{ShardingStrategy::kTableWise, {5}, 0},
                           {ShardingStrategy::kRowWise, {7, 2, 4, 1}, 0},
                           {ShardingStrategy::kTableRowWise, {7, 6, 5, 4}, 0},
                           {ShardingStrategy::kColumnWise, {6, 3}, 0}}};
  const ShardCosts c = compute_shard_costs(plan, ctx);
  ASSERT_EQ(c.partial_bytes.size(), 8);
  for (int r = 0; r < 8; ++r) {
    double buffer = 0;
    for (int o = 0; o < 8; ++o) {
      double bytes =
          c.id_bytes(r, o) + c.id_bytes(o, r) + c.embedding_bytes(r, o) + c.embedding_bytes(o, r);
      bytes = bytes + c.partial_bytes(r, o) + c.partial_bytes(o, r);
      buffer += bytes;
    }
    EXPECT_GT(buffer, 0) << r;
    EXPECT_EQ(c.ranks[r].buffer_bytes, buffer) << r;
  }
  // Every requester sends GPU 5 at least its ids of table 0 (100 x 2 ids of 8 B) and gets at
  // least 100 vectors of 8 fp32 back (GPU 5 also holds a table-row-wise shard).
  for (int r = 0; r < 8; ++r) {
    if (r == 5) continue;
    EXPECT_GE(c.id_bytes(r, 5), 1600) << r;
    EXPECT_GE(c.embedding_bytes(5, r), 3200) << r;
  }
}

TEST(ShardingPlanTest, TableRowWiseReducesInsideEachNodeThenSendsOnTheRails) {
  // 2 nodes of 2 GPUs, batch 100, dim 8 fp32 (a pooled vector is 32 B, a batch's 3200 B).
  // Table 0 row-wise over node 0 (GPUs 0, 1); table 1 over both nodes.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 4, 2);
  ShardingPlan one{"twrw",
                   4,
                   {{ShardingStrategy::kTableRowWise, {0, 1}, 0},
                    {ShardingStrategy::kDataParallel, {0, 1, 2, 3}, 0}}};
  const ShardCosts c = compute_shard_costs(one, ctx);
  // Each shard holds a partial sum for all 400 samples. GPU 0 reduces the samples of rail 0
  // (GPUs 0 and 2), GPU 1 those of rail 1: shard 0 sends GPU 1 its partials for GPUs 1 and 3
  // (2 x 3200 B), and the other way round; nothing else moves inside a node.
  EXPECT_DOUBLE_EQ(c.partial_bytes(0, 1), 6400);
  EXPECT_DOUBLE_EQ(c.partial_bytes(1, 0), 6400);
  EXPECT_DOUBLE_EQ(c.partial_bytes(2, 3) + c.partial_bytes(3, 2), 0);
  // Then each reducer sends one vector per sample to the requester on its rail in node 1.
  EXPECT_DOUBLE_EQ(c.embedding_bytes(0, 2), 3200);
  EXPECT_DOUBLE_EQ(c.embedding_bytes(1, 3), 3200);
  EXPECT_DOUBLE_EQ(c.embedding_bytes(0, 3) + c.embedding_bytes(1, 2), 0);  // off the rails
  EXPECT_DOUBLE_EQ(c.embedding_bytes(0, 1) + c.embedding_bytes(1, 0), 0);  // reduced already
  // Every GPU still sends each shard the ids hashed to it (share = its rows / 1000).
  int rows0 = 0;
  for (int k = 1; k <= 1000; ++k) rows0 += AccessDistribution::shard_of(k, 2, ctx.hash_salt) == 0;
  EXPECT_NEAR(c.id_bytes(3, 0), 100 * 2 * 8 * rows0 / 1000.0, 1e-9);

  // Over both nodes: each node reduces its own shards' partial sums (6400 B each way inside
  // it) and every GPU gets one partial sum per sample from the other node, on its rail; it adds
  // the two.
  ShardingPlan both{"twrw",
                    4,
                    {{ShardingStrategy::kTableRowWise, {0, 1, 2, 3}, 0},
                     {ShardingStrategy::kDataParallel, {0, 1, 2, 3}, 0}}};
  const ShardCosts d = compute_shard_costs(both, ctx);
  for (const auto& [a, b] : {std::pair{0, 1}, {1, 0}, {2, 3}, {3, 2}}) {
    EXPECT_DOUBLE_EQ(d.partial_bytes(a, b), 6400) << a << b;
    EXPECT_DOUBLE_EQ(d.embedding_bytes(a, (a + 2) % 4), 3200) << a;
    EXPECT_DOUBLE_EQ(d.embedding_bytes(a, b), 0) << a << b;
  }
  // The forward exchange a GPU sends: ids to the 3 other shards, 6400 B of partial sums inside
  // the node, 3200 B across.
  double ids = 0;
  for (int b = 0; b < 4; ++b) ids += b == 0 ? 0 : d.id_bytes(0, b);
  EXPECT_NEAR(d.ranks[0].sent_local + d.ranks[0].sent_remote, ids + 6400 + 3200, 1e-9);
}

TEST(ShardingPlanTest, GridShardsAColumnBlockPerNodeRowWiseInside) {
  // TorchRec's grid sharding of table 0 over both nodes of 2 x 2 GPUs (dim 8 fp32, batch 100):
  // columns 0-3 on node 0, 4-7 on node 1, each block's rows hashed over its node's two GPUs. A
  // block's vector is 4 x 4 = 16 B. Inside node 0, GPU 0 sends GPU 1 its partial sums for the
  // requesters of rail 1 (GPUs 1 and 3): 2 x 100 x 16 B; each node's reducer then sends the
  // requester on its rail in the other node 100 x 16 B. Every GPU holds half the rows of half
  // the columns.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 4, 2);
  ShardingPlan grid{"grid",
                    4,
                    {{ShardingStrategy::kGridShard, {0, 1, 2, 3}, 0},
                     {ShardingStrategy::kDataParallel, {0, 1, 2, 3}, 0}}};
  const ShardCosts c = compute_shard_costs(grid, ctx);
  for (const auto& [a, b] : {std::pair{0, 1}, {1, 0}, {2, 3}, {3, 2}}) {
    EXPECT_DOUBLE_EQ(c.partial_bytes(a, b), 3200) << a << b;
    EXPECT_DOUBLE_EQ(c.embedding_bytes(a, (a + 2) % 4), 1600) << a;
    EXPECT_DOUBLE_EQ(c.embedding_bytes(a, b), 0) << a << b;
  }
  // Table 1 is data-parallel (1000 x 8 x 4 B everywhere); table 0's shard: 500 rows x 16 B.
  for (int r = 0; r < 4; ++r) EXPECT_DOUBLE_EQ(c.ranks[r].parameter_bytes, 32000 + 500 * 16) << r;
  // Table-column-wise is column-wise kept on one node's GPUs: 4 columns (16 B) per sample each.
  ShardingPlan twcw{"twcw",
                    4,
                    {{ShardingStrategy::kTableColumnWise, {0, 1}, 0},
                     {ShardingStrategy::kDataParallel, {0, 1, 2, 3}, 0}}};
  const ShardCosts d = compute_shard_costs(twcw, ctx);
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(d.embedding_bytes(0, r), 1600) << r;
    EXPECT_DOUBLE_EQ(d.embedding_bytes(1, r), 1600) << r;
  }
  // A grid over 3 nodes of a table whose dim 8 is not a multiple of 3 is refused.
  ShardingContext six = context(m, 6, 2);
  ShardingPlan bad{"bad",
                   6,
                   {{ShardingStrategy::kGridShard, {0, 1, 2, 3, 4, 5}, 0},
                    {ShardingStrategy::kDataParallel, {0, 1, 2, 3, 4, 5}, 0}}};
  EXPECT_THROW(compute_shard_costs(bad, six), ConfigError);
}

TEST(ShardingPlanTest, GreedyPlannerSplitsASkewedHeavyTableWithoutTheHotShard) {
  // One heavy Zipf(1.2) table and four light ones on 4 GPUs. Row-wise by hash leaves the shard
  // with the hottest row overloaded; the planner, costing each split with its skew, picks one
  // that is not (column-wise: every shard sees every lookup, for a quarter of the width; rows of
  // 512 elements, so a quarter is still a full warp's 128).
  RecsysModelSpec m = small_model(AccessDistribution::zipf(1e6, 1.2));
  m.tables.resize(5, m.tables[0]);
  m.tables[0].rows = 1e6;
  m.tables[0].pooling = 64;
  m.tables[0].dim = 512;
  for (int i = 1; i < 5; ++i) m.tables[i].name = "t" + std::to_string(i);
  ShardingContext ctx = context(m, 4);
  const ShardCosts row_wise =
      compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx), ctx);
  const ShardingPlan greedy = greedy_plan(ctx);
  EXPECT_EQ(greedy.tables[0].strategy, ShardingStrategy::kColumnWise);
  const ShardCosts planned = compute_shard_costs(greedy, ctx);
  auto peak = [](const ShardCosts& c) {
    double most = 0.0;
    for (const RankLoad& r : c.ranks) most = std::max(most, embedding_seconds(r));
    return most;
  };
  EXPECT_LT(peak(planned), peak(row_wise));
}

TEST(ShardingPlanTest, RowWiseOnASkewedTableIsImbalancedAndHotRowsFixIt) {
  // Zipf(1.2) over 1e6 rows, row-wise over 64 GPUs: the hottest row alone is p_max of all
  // lookups, so the shard holding it gets at least 64 p_max times the mean.
  RecsysModelSpec skewed = small_model(AccessDistribution::zipf(1e6, 1.2));
  skewed.tables.resize(1);  // the bound is per table
  skewed.tables[0].rows = 1e6;
  ShardingContext ctx = context(skewed, 64, 8);
  const ShardCosts rw = compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx), ctx);
  const double p_max = skewed.tables[0].access.max_probability();
  EXPECT_GE(rw.imbalance(), 64 * p_max);
  EXPECT_GT(rw.imbalance(), 2.0);
  // Uniform access: balanced.
  RecsysModelSpec flat = small_model(AccessDistribution::uniform(1e6));
  for (auto& t : flat.tables) t.rows = 1e6;
  ShardingContext flat_ctx = context(flat, 64, 8);
  EXPECT_LT(
      compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, flat_ctx), flat_ctx).imbalance(),
      1.05);
  // Replicating the 10,000 hottest rows keeps their lookups local and balances the rest.
  const ShardCosts hot =
      compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx, 0, 1e4), ctx);
  EXPECT_LT(hot.imbalance(), 1.1);
  EXPECT_GT(hot.global_sync_bytes, 0);  // hot rows' gradients are all-reduced instead
}

TEST(ShardingPlanTest, TwoDKeepsAllToAllInsideGroupsAndSyncsReplicas) {
  // 8 GPUs as 2 nodes of 4. Without 2D, half the row-wise all-to-all crosses nodes; with groups
  // of one node none does, and the replicas all-reduce their shards' gradients instead.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 8, 4);
  const ShardCosts flat = compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx), ctx);
  const ShardCosts two_d =
      compute_shard_costs(uniform_plan(ShardingStrategy::kRowWise, ctx, 4), ctx);
  auto cross_node = [](const ShardCosts& c) {
    double bytes = 0.0;
    for (int a = 0; a < 8; ++a) {
      for (int b = 0; b < 8; ++b) {
        if (a / 4 != b / 4) bytes += c.id_bytes(a, b) + c.embedding_bytes(a, b);
      }
    }
    return bytes;
  };
  EXPECT_GT(cross_node(flat), 0);
  EXPECT_DOUBLE_EQ(cross_node(two_d), 0);
  for (const RankLoad& r : flat.ranks) EXPECT_DOUBLE_EQ(r.replica_sync_bytes, 0);
  for (const RankLoad& r : two_d.ranks) EXPECT_GT(r.replica_sync_bytes, 0);
  EXPECT_EQ(two_d.groups, 2);
}

TEST(ShardingPlanTest, TwoDTableRowWiseKeepsEachGroupsPartialSumsInItsBlock) {
  // 8 GPUs as 4 nodes of 2, groups of 4 GPUs (2 nodes); table-row-wise puts table 0 on the first
  // node of each group and table 1 on the second. As in a group of its own
  // (TableRowWiseReducesInsideEachNodeThenSendsOnTheRails), each shard holds partial sums for the
  // group's 400 samples and each GPU of the node reduces the 200 of its rail: 200 x 8 x 4 B =
  // 6400 B from every shard of the node to every GPU of it (its own part included). Both groups
  // do the same inside their own nodes; nothing moves between nodes or groups.
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 8, 2);
  const ShardCosts c =
      compute_shard_costs(uniform_plan(ShardingStrategy::kTableRowWise, ctx, 4), ctx);
  EXPECT_EQ(c.groups, 2);
  ASSERT_EQ(c.partial_bytes.size(), 8);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      EXPECT_DOUBLE_EQ(c.partial_bytes(a, b), a / 2 == b / 2 ? 6400 : 0) << a << " " << b;
    }
  }
}

TEST(ShardingPlanTest, MemoryOverflowNamesTheGpuAndTheShortfall) {
  // One table of 1e9 rows x 128 fp32 (512 GB) table-wise on one GPU of 80 GB.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1e9));
  m.tables.resize(1);
  m.tables[0].rows = 1e9;
  m.tables[0].dim = 128;
  ShardingContext ctx = context(m, 4);
  ShardingPlan plan{"tw", 4, {{ShardingStrategy::kTableWise, {3}, 0}}};
  const auto overflows = memory_overflows(compute_shard_costs(plan, ctx), ctx.gpu);
  ASSERT_EQ(overflows.size(), 1u);
  EXPECT_NE(overflows[0].find("GPU 3 needs 512.0 GB"), std::string::npos) << overflows[0];
  EXPECT_NE(overflows[0].find("432.0 GB short"), std::string::npos) << overflows[0];
}

TEST(ShardingPlanTest, PlansNamingAMissingGpuAreRejected) {
  const RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingPlan plan{
      "bad", 4, {{ShardingStrategy::kTableWise, {7}, 0}, {ShardingStrategy::kTableWise, {0}, 0}}};
  EXPECT_THROW(compute_shard_costs(plan, context(m, 4)), ConfigError);
}

TEST(ShardingPlanTest, GreedyPlannerReplicatesSmallTablesWhenCommunicationCosts) {
  // Two nodes of 4 GPUs, a 16-row table looked up 8 times per sample. Placed on one GPU it sends
  // every GPU 100 pooled vectors of 32 bytes every step (4 GPUs across nodes); split, every
  // shard does; replicated, only its 16 x 8 x 4 = 512 bytes of gradients are all-reduced.
  // Without bandwidths the planner does not cost communication and never replicates.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(16));
  m.tables.resize(1);
  m.tables[0].rows = 16;
  m.tables[0].pooling = 8;
  ShardingContext ctx = context(m, 8, 4);
  EXPECT_NE(greedy_plan(ctx).tables[0].strategy, ShardingStrategy::kDataParallel);
  ctx.local_bytes_per_s = 100e9;
  ctx.network_bytes_per_s = 25e9;
  const ShardingPlan plan = greedy_plan(ctx);
  EXPECT_EQ(plan.tables[0].strategy, ShardingStrategy::kDataParallel);
  EXPECT_EQ(plan.tables[0].ranks.size(), 8u);
}

TEST(ShardingPlanTest, GreedyPlannerBalancesTableWiseTables) {
  // Eight equal tables on four GPUs: two per GPU.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  m.tables.resize(8, m.tables[0]);
  for (int i = 0; i < 8; ++i) m.tables[i].name = "t" + std::to_string(i);
  ShardingContext ctx = context(m, 4);
  const ShardingPlan plan = greedy_plan(ctx);
  std::vector<int> per_gpu(4, 0);
  for (const auto& p : plan.tables) {
    ASSERT_EQ(p.strategy, ShardingStrategy::kTableWise);
    ++per_gpu[p.ranks[0]];
  }
  EXPECT_EQ(per_gpu, (std::vector<int>{2, 2, 2, 2}));
  // Same inputs, same plan and costs.
  const ShardCosts a = compute_shard_costs(plan, ctx);
  const ShardCosts b = compute_shard_costs(greedy_plan(ctx), ctx);
  EXPECT_EQ(a.id_bytes, b.id_bytes);
}

TEST(ShardingPlanTest, GreedyPlannerFillsEveryNodeInTurn) {
  // Eight equal tables on 3 nodes of 2 GPUs (no bandwidths: only lookups count, and a table
  // costs its owner alone). Largest first, each goes to the first GPU with the least load: GPUs
  // 0..5 in order, then 0 and 1 again.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  m.tables.resize(8, m.tables[0]);
  for (int i = 0; i < 8; ++i) m.tables[i].name = "t" + std::to_string(i);
  const ShardingPlan plan = greedy_plan(context(m, 6, 2));
  std::vector<int> owners;
  for (const auto& p : plan.tables) {
    ASSERT_EQ(p.strategy, ShardingStrategy::kTableWise);
    owners.push_back(p.ranks[0]);
  }
  EXPECT_EQ(owners, (std::vector<int>{0, 1, 2, 3, 4, 5, 0, 1}));
}

TEST(ShardingPlanTest, TorchrecPlannerLeavesAHotTableAloneAndPacksTheOthers) {
  // Two GPUs of one node at 100 GB/s; four tables of 1e7 rows x 128, one looked up 6 times per
  // sample, three twice, 1e5 samples per GPU: costs h (just under 3c: more repeats to dedup) and
  // c, each with a launch L (microseconds against c's tenths of a millisecond), and the same
  // exchange X on both GPUs for every whole table (its owner sends, the other receives). The
  // partitioner, largest first, puts the hot table on GPU 0 (h + L), then the three others on
  // GPU 1, the less loaded each time (c + L, 2c + 2L < h + L, 3c + 3L): rating 3c + 3L + 4X.
  // Row-wise for the hot table (h/2 + L on each GPU, the three others then two and one) rates
  // about h/2 + 2c + 3L + 4X, worse; row-wise for a cold one likewise; data-parallel pays the
  // all-reduce of a 5 GB table (0.1 s): the greedy proposer keeps every table whole.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1e7));
  m.tables.resize(4, m.tables[0]);
  for (int i = 0; i < 4; ++i) {
    m.tables[i].name = "t" + std::to_string(i);
    m.tables[i].rows = 1e7;
    m.tables[i].dim = 128;
  }
  m.tables[0].pooling = 6;
  ShardingContext ctx = context(m, 2);
  ctx.batch_per_gpu = 1e5;
  ctx.local_bytes_per_s = 100e9;
  const ShardingPlan plan = torchrec_plan(ctx);
  EXPECT_EQ(plan.name, "torchrec");
  for (const TablePlacement& p : plan.tables) EXPECT_EQ(p.strategy, ShardingStrategy::kTableWise);
  EXPECT_EQ(plan.tables[0].ranks, (std::vector<int>{0}));
  for (int t = 1; t < 4; ++t) EXPECT_EQ(plan.tables[t].ranks, (std::vector<int>{1})) << t;
}

TEST(ShardingPlanTest, TorchrecPlannerCountsTheAllToAllBuffersAgainstHbm) {
  // Two tables of 1000 rows x 8 fp32 (32,000 B each) on two GPUs, batch 100, 2 ids per sample:
  // TorchRec's planner puts one whole on each GPU. Each GPU then also holds the all-to-all
  // buffers: 200 ids of 8 B (1,600 B) and 100 pooled vectors of 32 B (3,200 B) for each pair of
  // GPUs, its own pair in both its send and its receive buffer: 2 x 4,800 + 2 x 4,800 = 19,200 B,
  // 51,200 B with its table. With exactly that much left (0.9 of HBM, less the fixed bytes) the
  // plan stays; with 200 B less it no longer fits, though the tables alone would.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  ShardingContext ctx = context(m, 2);
  ctx.local_bytes_per_s = 100e9;
  const double fixed = m.dense_state_bytes() + ctx.batch_per_gpu * m.activation_bytes_per_example();
  ctx.gpu.hbm_capacity_bytes = (fixed + 51200) / 0.9;
  const ShardingPlan plan = torchrec_plan(ctx);
  for (const TablePlacement& p : plan.tables) EXPECT_EQ(p.strategy, ShardingStrategy::kTableWise);
  EXPECT_NE(plan.tables[0].ranks, plan.tables[1].ranks);
  for (const RankLoad& l : compute_shard_costs(plan, ctx).ranks) {
    EXPECT_DOUBLE_EQ(l.parameter_bytes, 32000);
    EXPECT_DOUBLE_EQ(l.buffer_bytes, 19200);
  }
  ctx.gpu.hbm_capacity_bytes = (fixed + 51000) / 0.9;
  const ShardingPlan tight = torchrec_plan(ctx);
  EXPECT_FALSE(tight.tables[0].strategy == ShardingStrategy::kTableWise &&
               tight.tables[1].strategy == ShardingStrategy::kTableWise);
}

TEST(ShardingPlanTest, TorchrecPlannerSplitsATableNoGpuCanHold) {
  // 1e8 rows x 256 fp32 with its optimizer state is more than 0.9 x 80 GB on one GPU: the
  // table-wise option never fits, so the plan shards it: column-wise in two blocks of 128 columns
  // on two different GPUs, or row-wise over the four.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1e8));
  m.tables.resize(1);
  m.tables[0].rows = 1e8;
  m.tables[0].dim = 256;
  const ShardingContext ctx = context(m, 4);
  const ShardingPlan plan = torchrec_plan(ctx);
  const TablePlacement& p = plan.tables[0];
  ASSERT_NE(p.strategy, ShardingStrategy::kTableWise);
  if (p.strategy == ShardingStrategy::kColumnWise) {
    ASSERT_EQ(p.ranks.size(), 2u);
    EXPECT_NE(p.ranks[0], p.ranks[1]);
  }
  EXPECT_TRUE(memory_overflows(compute_shard_costs(plan, ctx), ctx.gpu).empty());
}

TEST(ShardingPlanTest, TablesInHostMemoryReadTheirRowsOverTheHostLink) {
  // Table 0 on GPU 1, table 1 on GPU 2 of 4 (batch 100, 2 ids per sample: 800 lookups of 32-byte
  // rows each, 1000 (1 - 0.999^800) = 550.8 distinct), Adagrad state 8 x 4 = 32 B per row, a
  // host link of 1 MB/s (so the host link sets every time). Each kernel also pays its launch.
  RecsysModelSpec m = small_model(AccessDistribution::uniform(1000));
  m.embedding_optimizer = {OptimizerKind::kAdagrad, 4};
  ShardingContext ctx = context(m, 4);
  ctx.host_link_bytes_per_s = 1e6;
  const double launch = to_seconds(ctx.gpu.kernel_launch_latency);
  const double unique = 1000 * (1 - std::pow(1 - 1e-3, 800));
  const ShardingPlan plan{
      "tw", 4, {{ShardingStrategy::kTableWise, {1}, 0}, {ShardingStrategy::kTableWise, {2}, 0}}};
  // uvm: the forward reads 800 x 32 B over the link, the backward reads and writes each distinct
  // row and its state (550.8 x 64 B each way, at once).
  m.tables[0].storage = EmbeddingStorage::kUvm;
  // uvm_caching, 0.2 of the rows cached: uniform ids miss 0.8 of the distinct rows, copied in
  // (550.8 x 0.8 x 32 B) before the lookup; the state stays on the host (550.8 x 32 B each way).
  m.tables[1].storage = EmbeddingStorage::kUvmCaching;
  m.tables[1].cache_load_factor = 0.2;
  const ShardCosts c = compute_shard_costs(plan, ctx);
  const RankLoad& uvm = c.ranks[1];
  EXPECT_NEAR(uvm.lookup_seconds, launch + 800 * 32 / 1e6, 1e-12);
  EXPECT_NEAR(uvm.update_seconds, launch + unique * 64 / 1e6, 1e-9);
  EXPECT_DOUBLE_EQ(uvm.parameter_bytes, 0);  // nothing in HBM
  EXPECT_DOUBLE_EQ(uvm.optimizer_bytes, 0);
  EXPECT_DOUBLE_EQ(uvm.host_bytes, 1000 * 64);
  const RankLoad& cached = c.ranks[2];
  // Its forward: the copy, then the kernel on HBM (as the same table in HBM runs it).
  m.tables[1].storage = EmbeddingStorage::kHbm;
  const RankLoad in_hbm = compute_shard_costs(plan, ctx).ranks[2];
  EXPECT_NEAR(cached.lookup_seconds, in_hbm.lookup_seconds + unique * 0.8 * 32 / 1e6, 1e-9);
  EXPECT_NEAR(cached.update_seconds, launch + unique * 32 / 1e6, 1e-9);
  EXPECT_DOUBLE_EQ(cached.parameter_bytes, 0.2 * 1000 * 32);  // the cache
  EXPECT_DOUBLE_EQ(cached.optimizer_bytes, 0);
  EXPECT_DOUBLE_EQ(cached.host_bytes, 1000 * 64);
  // Without a host link there is nowhere to read them from.
  ctx.host_link_bytes_per_s = 0;
  m.tables[1].storage = EmbeddingStorage::kUvmCaching;
  EXPECT_THROW(compute_shard_costs(plan, ctx), ConfigError);
}

}  // namespace
}  // namespace trainsim::models
