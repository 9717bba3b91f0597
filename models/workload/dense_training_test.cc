// Data-parallel dense training steps on a small hand-computable cluster.
#include "models/workload/dense_training.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/scaling/scaling_study.h"
#include "models/spec/test_fixtures.h"
#include "models/workload/test_expectations.h"

namespace trainsim::models {
namespace {

// One node of 4 GPUs on an NVSwitch: 100 GB/s per GPU link. A ring all-reduce (Simple) costs NCCL's
// latency, 8.4 us + 6 steps x 3.4 us per NVLink step = 28.8 us, plus 2 (P-1)/P S / 100 GB/s.
// GPUs do 100 TFLOP/s BF16 at 50% efficiency.
ClusterSpec small_node() { return testing::small_node(4); }

// 1 GFLOP per example, batch 100: 100 GFLOP at 50 TFLOP/s = 2 ms; backward 75% = 1.5 ms.
DenseModelSpec small_model(double parameter_bytes, bool overlap, int buckets) {
  return testing::small_dense_model(parameter_bytes, overlap, buckets);
}

TEST(DenseTrainingTest, ComputeTimeIsFlopsOverAchievedRate) {
  EXPECT_EQ(dense_compute_time(small_model(1e6, false, 1), small_node().gpu), 2 * kMillisecond);
}

TEST(DenseTrainingTest, WithoutOverlapStepIsComputeThenAllReduce) {
  // All-reduce of 400 MB over P = 4: 28.8 us + 6 x 100 MB / 100 GB/s = 6.0288 ms.
  const auto r = simulate_dense_training(small_node(), small_model(400e6, false, 1), 1, {});
  const Time all_reduce = 28800 * kNanosecond + 6 * kMillisecond;
  EXPECT_EQ(r.step_time, 2 * kMillisecond + all_reduce);
  EXPECT_EQ(r.breakdown.compute, 2 * kMillisecond);
  EXPECT_EQ(r.breakdown.exposed_communication, all_reduce);
}

TEST(DenseTrainingTest, AGpuAtHalfSpeedHoldsBackEveryRank) {
  // GPU 2 at half speed: its 2 ms of compute take 4 ms, and the all-reduce (6.0288 ms, as above)
  // starts when it joins: step = 4 + 6.0288 ms. The other three wait 2 ms for it (imbalance).
  ClusterSpec c = small_node();
  c.stragglers.gpus = {{2, 2.0}};
  const auto r = simulate_dense_training(c, small_model(400e6, false, 1), 1, {});
  const Time all_reduce = 28800 * kNanosecond + 6 * kMillisecond;
  EXPECT_EQ(r.step_time, 4 * kMillisecond + all_reduce);
  EXPECT_EQ(r.slowest_rank, 2);
  EXPECT_EQ(r.slowest_rank_compute, 4 * kMillisecond);
  EXPECT_GT(r.breakdown.imbalance, 0);
  // A whole node at 1.5x: every rank computes 3 ms.
  c.stragglers.gpus.clear();
  c.stragglers.nodes = {{0, 1.5}};
  EXPECT_EQ(simulate_dense_training(c, small_model(400e6, false, 1), 1, {}).step_time,
            3 * kMillisecond + all_reduce);
}

TEST(DenseTrainingTest, DrawnSlowdownsGiveTheMaximumOfNDraws) {
  // Every GPU's slowdown drawn uniform in [1, 1.5] per run: the step waits for the slowest of
  // the 4, so compute is 2 ms x max of 4 draws, whose mean is 1 + 0.5 x 4/5 = 1.4 (the k-th
  // order statistic of n uniforms has mean k/(n+1)) and variance 0.5^2 x 4/(5^2 x 6). Over 4000
  // seeds the mean step must be within 3 standard errors of 2.8 ms + the all-reduce, and the
  // 95% interval of the runs must hold it.
  ClusterSpec c = small_node();
  c.stragglers.distribution = SlowdownDistribution::kUniform;
  c.stragglers.min = 1.0;
  c.stragglers.max = 1.5;
  const Time all_reduce = 28800 * kNanosecond + 6 * kMillisecond;
  constexpr std::uint64_t kRuns = 4000;
  std::vector<double> compute_ms;
  StepSimulationOptions options;
  for (std::uint64_t seed = 0; seed < kRuns; ++seed) {
    options.seed = seed;
    const auto r = simulate_dense_training(c, small_model(400e6, false, 1), 1, options);
    compute_ms.push_back(to_seconds(r.step_time - all_reduce) * 1e3);
  }
  const Interval i = confidence_interval_95(compute_ms);
  const double sd = 2.0 * 0.5 * std::sqrt(4.0 / (25.0 * 6.0));
  EXPECT_NEAR(i.mean, 2.8, 3 * sd / std::sqrt(1.0 * kRuns));
  EXPECT_LE(std::abs(i.mean - 2.8), i.half_width);
  // The interval is t(0.975, 3999) = 1.9606 sample standard errors wide, close to the closed
  // form's.
  EXPECT_NEAR(i.half_width, 1.9606 * sd / std::sqrt(1.0 * kRuns), 0.05 * i.half_width);
  // The same seed draws the same slowdowns.
  options.seed = 7;
  EXPECT_EQ(simulate_dense_training(c, small_model(400e6, false, 1), 1, options).step_time,
            all_reduce + time_from_seconds(compute_ms[7] * 1e-3));
}

TEST(DenseTrainingTest, ConfidenceIntervalIsStudentsT) {
  // {1, 2, 3, 4, 5}: mean 3, sample sd sqrt(2.5), t(0.975, 4) = 2.7764451: 1.9632432.
  const Interval i = confidence_interval_95({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(i.mean, 3.0);
  EXPECT_NEAR(i.half_width, 2.7764451 * std::sqrt(2.5) / std::sqrt(5.0), 1e-6);
  EXPECT_EQ(confidence_interval_95({4.0}).half_width, 0.0);
}

TEST(DenseTrainingTest, OverlappedBucketsQueueOnTheCommunicationStream) {
  // 4 buckets of 100 MB: each all-reduce is 28.8 us + 6 x 0.25 ms = 1.5288 ms. Backward pieces
  // are 0.375 ms; the first bucket is ready at 0.5 + 0.375 = 0.875 ms and the all-reduces then
  // run back to back: step = 0.875 + 4 x 1.5288 = 6.9902 ms.
  const auto r = simulate_dense_training(small_node(), small_model(400e6, true, 4), 1, {});
  const Time bucket = 28800 * kNanosecond + 6 * 250 * kMicrosecond;
  EXPECT_EQ(r.step_time, 875 * kMicrosecond + 4 * bucket);
  EXPECT_EQ(r.breakdown.compute, 2 * kMillisecond);
}

TEST(DenseTrainingTest, OverlapHidesAllButTheLastBucket) {
  // 40 MB in 4 buckets: each all-reduce 28.8 us + 6 x 25 us = 178.8 us, shorter than a 375 us
  // backward piece, so only the last bucket's all-reduce is exposed.
  const auto r = simulate_dense_training(small_node(), small_model(40e6, true, 4), 1, {});
  EXPECT_EQ(r.step_time, 2 * kMillisecond + 178800 * kNanosecond);
  EXPECT_EQ(r.breakdown.exposed_communication, 178800 * kNanosecond);
}

TEST(DenseTrainingTest, AJobsOverlapKeysReplaceTheModels) {
  // The model overlaps 4 buckets of 40 MB (step 2.1788 ms, above); a job that turns overlap off
  // makes it compute then one all-reduce of 40 MB: 28.8 us + 6 x 10 MB / 100 GB/s = 628.8 us.
  JobSpec job;
  job.overlap_gradient_all_reduce = false;
  const DenseModelSpec model = dense_model_for_job(small_model(40e6, true, 4), job);
  EXPECT_FALSE(model.overlap_all_reduce);
  EXPECT_EQ(simulate_dense_training(small_node(), model, 1, {}).step_time,
            2 * kMillisecond + 628800 * kNanosecond);
  // Buckets and the algorithm too; what the job leaves unset stays the model's.
  job.overlap_gradient_all_reduce.reset();
  job.gradient_buckets = 2;
  job.all_reduce_algorithm = Algorithm::kTree;
  const DenseModelSpec changed = dense_model_for_job(small_model(40e6, true, 4), job);
  EXPECT_TRUE(changed.overlap_all_reduce);
  EXPECT_EQ(changed.gradient_buckets, 2);
  EXPECT_EQ(changed.all_reduce_algorithm, Algorithm::kTree);
}

TEST(DenseTrainingTest, AnalyticNetworkAgreesWithFlowsWithoutContention) {
  StepSimulationOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  for (const bool overlap : {false, true}) {
    const DenseModelSpec model = small_model(400e6, overlap, 4);
    EXPECT_EQ(simulate_dense_training(small_node(), model, 1, {}).step_time,
              simulate_dense_training(small_node(), model, 1, analytic).step_time);
  }
}

TEST(DenseTrainingTest, TraceKeepsOneRecordPerTask) {
  StepSimulationOptions options;
  options.keep_trace = true;
  const auto r = simulate_dense_training(small_node(), small_model(40e6, true, 4), 1, options);
  ASSERT_NE(r.trace, nullptr);
  EXPECT_EQ(r.trace->records.size(), r.trace->graph.size());
  // Per rank and step: forward, 4 backward pieces, 4 all-reduces, a step end.
  EXPECT_EQ(r.trace->graph.size(), 3u * 4u * 10u);
}

TEST(DenseTrainingTest, NodeZerosRanksStandForEveryNodesWithTheSameResults) {
  // 4 nodes of small_node's GPUs, each GPU with a 25 GB/s NIC on one switch: every rank computes
  // the same and the all-reduce is over all 16, so node 0's 4 ranks stand for every node's.
  // Per rank and step: forward, 4 backward pieces, 4 all-reduces, a step end: 3 x 4 x 10 tasks
  // rather than 3 x 16 x 10, and each figure of the step is the whole run's.
  ClusterSpec cluster = small_node();
  cluster.nodes = 4;
  cluster.nic.count = 4;
  cluster.nic.link = LinkClassSpec{25e9, 2 * kMicrosecond, 1.0};
  cluster.nic.gpu_link = LinkClassSpec{1e15, 0, 1.0};
  cluster.nic.gpus = {{0}, {1}, {2}, {3}};
  cluster.network.topology = NetworkTopology::kSingleSwitch;
  for (const bool overlap : {false, true}) {
    const DenseModelSpec model = small_model(400e6, overlap, 4);
    StepSimulationOptions whole;
    whole.represent_nodes = false;
    whole.keep_trace = true;
    const auto every_rank = simulate_dense_training(cluster, model, 4, whole);
    const auto node_zero = simulate_dense_training(cluster, model, 4, {});
    EXPECT_EQ(every_rank.trace->graph.size(), 3u * 16u * (overlap ? 10u : 4u));
    testing::expect_same_steps(node_zero, every_rank);
    EXPECT_LT(node_zero.events, every_rank.events);
    // Without overlap the step is at least the 2 ms of compute and the ring's 2 x 15/16 of the
    // 400 MB through a node's four 25 GB/s NICs (7.5 ms).
    if (!overlap) {
      EXPECT_GT(every_rank.step_time, 2 * kMillisecond + transfer_time(2 * 15 * 400e6 / 16, 100e9));
    }
  }
}

}  // namespace
}  // namespace trainsim::models
