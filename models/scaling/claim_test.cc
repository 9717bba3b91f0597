#include "models/scaling/claim.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(ClaimTest, TheMeasurementNotesExamples) {
  // 4 nodes at 3.9x: 97.5%; 4 nodes at 1.21x: 30.25%; 8 nodes at 7.5x: 93.75%.
  EXPECT_DOUBLE_EQ((ScalingClaim{1, 4, 3.9}.efficiency()), 0.975);
  EXPECT_DOUBLE_EQ((ScalingClaim{1, 4, 1.21}.efficiency()), 0.3025);
  EXPECT_DOUBLE_EQ((ScalingClaim{1, 8, 7.5}.efficiency()), 0.9375);
  EXPECT_DOUBLE_EQ((ScalingClaim{2, 8, 3.0}.ideal()), 4.0);
}

TEST(ClaimTest, ThroughputAndTimeToQualityDiverge) {
  // Run A: 100k examples/s, target in 10 h; run B: 200k examples/s, 8 h. B has 2x the
  // throughput but reaches the target only 1.25x sooner: it needed 1.6x the examples.
  const RunComparison c = compare_runs({100e3, 10 * 3600.0, {}}, {200e3, 8 * 3600.0, {}});
  EXPECT_DOUBLE_EQ(c.throughput_ratio, 2.0);
  EXPECT_DOUBLE_EQ(c.time_to_quality_ratio, 1.25);
  EXPECT_DOUBLE_EQ(c.examples_ratio, 1.6);
  EXPECT_FALSE(c.fit);
  // With their global batches (A 64k, B 128k): 3.6e9 and 5.76e9 examples fit
  // E = E_min (1 + B / B_noise) with slope 2.16e9 / 65536 and E_min = 3.6e9 - 2.16e9 = 1.44e9.
  const RunComparison f =
      compare_runs({100e3, 10 * 3600.0, 65536.0}, {200e3, 8 * 3600.0, 131072.0});
  ASSERT_TRUE(f.fit);
  EXPECT_NEAR(f.fit->min_examples, 1.44e9, 1e-3);
  EXPECT_NEAR(f.fit->critical_batch, 1.44e9 / (2.16e9 / 65536), 1e-6);
}

TEST(ClaimTest, Verdicts) {
  // Predicted 3.6x, bound 3.8x on 4 nodes, 10% tolerance.
  EXPECT_EQ(judge_claim(3.7, 3.6, 3.8, 4.0, 0.1), Verdict::kPlausible);
  EXPECT_EQ(judge_claim(3.3, 3.6, 3.8, 4.0, 0.1), Verdict::kPlausible);
  EXPECT_EQ(judge_claim(3.2, 3.6, 3.8, 4.0, 0.1), Verdict::kPessimistic);
  EXPECT_EQ(judge_claim(4.2, 3.6, 3.8, 4.0, 0.1), Verdict::kOptimistic);  // beyond linear
  EXPECT_EQ(judge_claim(3.0, 2.0, 2.5, 4.0, 0.1), Verdict::kOptimistic);  // beyond the bound
}

}  // namespace
}  // namespace trainsim::models
