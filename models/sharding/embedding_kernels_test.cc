// Table-batched embedding kernel costs: bytes and times worked by hand from FBGEMM's accounting.
#include "models/sharding/embedding_kernels.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/sharding/sharding_plan.h"

namespace trainsim::models {
namespace {

GpuSpec gpu() {
  GpuSpec g;
  g.model = "G";
  g.peak_flops_per_s[Dtype::kBf16] = 1e15;
  g.hbm_bandwidth_bytes_per_s = 1e12;
  g.hbm_capacity_bytes = 80e9;
  g.embedding_efficiency = 0.5;
  g.embedding_backward_efficiency = 0.25;
  g.kernel_launch_latency = 2 * kMicrosecond;
  return g;
}

// 1000 lookups into 800 distinct rows of 128 fp32 (512 B), pooled into 100 fp32 vectors, with
// full Adagrad (4 B of state per element: 512 B per row).
EmbeddingKernelWork work() {
  EmbeddingKernelWork w;
  w.lookups = 1000;
  w.outputs = 100;
  w.unique_rows = 800;
  w.row_bytes = 512;
  w.output_bytes = 512;
  w.state_bytes = 512;
  return w;
}

TEST(EmbeddingKernelsTest, BytesFollowFbgemmsAccountingPlusIdsAndOptimizerState) {
  // Forward: outputs 100 x 512 + rows 1000 x 512 + ids 1000 x 8 = 571,200 B.
  EXPECT_DOUBLE_EQ(tbe_forward_bytes(work()), 571200);
  // Backward: twice FBGEMM's 563,200 + state read and written for 800 rows, 2 x 800 x 512.
  EXPECT_DOUBLE_EQ(tbe_backward_bytes(work()), 1126400 + 819200);
}

TEST(EmbeddingKernelsTest, TimesAreBytesAtTheAchievedFractionsForTheRowLength) {
  const GpuSpec g = gpu();
  EXPECT_DOUBLE_EQ(tbe_forward_seconds(work(), g), 571200 / (1e12 * 0.5));
  EXPECT_DOUBLE_EQ(tbe_backward_seconds(work(), g), 1945600 / (1e12 * 0.25));
  // Rows of 512 B with half efficiency at 512 B: each fraction halves, each time doubles.
  GpuSpec short_rows = g;
  short_rows.embedding_half_row_bytes = 512;
  EXPECT_DOUBLE_EQ(tbe_forward_seconds(work(), short_rows), 2 * 571200 / (1e12 * 0.5));
  EXPECT_DOUBLE_EQ(tbe_backward_seconds(work(), short_rows), 2 * 1945600 / (1e12 * 0.25));
}

TEST(EmbeddingKernelsTest, AShardsCostsAreItsKernelsPlusOneLaunchEach) {
  // One table of 1000 uniform rows, dim 128 fp32, one id per sample, SGD, on one GPU; batch 10:
  // 10 lookups, 10 pooled outputs, 1000 (1 - 0.999^10) distinct rows.
  RecsysModelSpec m;
  m.name = "one";
  EmbeddingTableSpec t;
  t.name = "t";
  t.rows = 1000;
  t.dim = 128;
  t.pooling = 1;
  t.access = AccessDistribution::uniform(1000);
  m.tables.push_back(t);
  ShardingContext c;
  c.model = &m;
  c.world = 1;
  c.gpus_per_node = 1;
  c.batch_per_gpu = 10;
  c.gpu = gpu();
  const ShardingPlan plan{"tw", 1, {{ShardingStrategy::kTableWise, {0}, 0}}};
  const RankLoad l = compute_shard_costs(plan, c).ranks[0];
  const double unique = 1000 * (1 - std::pow(0.999, 10));
  EXPECT_NEAR(l.unique_rows, unique, 1e-9);
  const double forward = 10 * 512 + 10 * 512 + 10 * 8;  // outputs, rows, ids
  EXPECT_DOUBLE_EQ(l.lookup_bytes, forward);
  EXPECT_NEAR(l.lookup_seconds, forward / 5e11 + 2e-6, 1e-15);
  const double backward = 2 * (10 * 512 + 10 * 512);  // SGD keeps no state
  EXPECT_NEAR(l.update_bytes, backward, 1e-9);
  EXPECT_NEAR(l.update_seconds, backward / 2.5e11 + 2e-6, 1e-15);
}

TEST(EmbeddingKernelsTest, ShortRowsAreReadAsAWarpsWorthAndPayTheWidthPenalty) {
  const GpuSpec g = gpu();
  // Rows of 64 fp32 (256 B): read as they are, x1.15.
  EmbeddingKernelWork w = work();
  w.row_bytes = 256;
  w.output_bytes = 256;
  w.state_bytes = 256;
  EXPECT_DOUBLE_EQ(tbe_width_penalty(w), 1.15);
  EXPECT_DOUBLE_EQ(tbe_forward_seconds(w, g), 1.15 * (25600 + 256000 + 8000) / 5e11);
  // Rows of 8 fp32 (32 B) are read as 32 elements (128 B), x1.75; FBGEMM's byte count stays.
  w.row_bytes = 32;
  w.output_bytes = 32;
  w.state_bytes = 0;
  EXPECT_DOUBLE_EQ(tbe_forward_bytes(w), 3200 + 32000 + 8000);
  EXPECT_DOUBLE_EQ(tbe_forward_seconds(w, g), 1.75 * (3200 + 128000 + 8000) / 5e11);
  EXPECT_DOUBLE_EQ(tbe_backward_seconds(w, g), 1.75 * 2 * (3200 + 128000) / 2.5e11);
  // A measured row curve replaces the rule: FBGEMM's bytes at the curve's fraction, 0.5 x 32 /
  // (32 + 32) = 0.25 for 32 B rows with half efficiency at 32 B.
  GpuSpec measured = g;
  measured.embedding_half_row_bytes = 32;
  EXPECT_DOUBLE_EQ(tbe_forward_seconds(w, measured), (3200 + 32000 + 8000) / 2.5e11);
  // fp16 rows of 128 elements (256 B) fill the warp: no penalty.
  w.element_bytes = 2;
  w.row_bytes = 256;
  EXPECT_DOUBLE_EQ(tbe_row_elements(w), 128);
  EXPECT_DOUBLE_EQ(tbe_width_penalty(w), 1.0);
}

}  // namespace
}  // namespace trainsim::models
