#include "models/scaling/scaling_study.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "models/spec/test_fixtures.h"

namespace trainsim::models {
namespace {

ScalingPoint point(int nodes, double throughput) {
  ScalingPoint p;
  p.nodes = nodes;
  p.throughput = throughput;
  return p;
}

TEST(ScalingStudyTest, SpeedupAndEfficiencyFollowTheDefinitions) {
  // The measurement note's examples: 4 nodes at 3.9x is 97.5% efficient, 8 nodes at 7.5x is
  // 93.75%, 4 nodes at 1.21x is 30.25%.
  std::vector<ScalingPoint> points = {point(1, 1000.0), point(4, 3900.0), point(8, 7500.0)};
  fill_speedup_and_efficiency(points);
  EXPECT_DOUBLE_EQ(points[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(points[1].speedup, 3.9);
  EXPECT_DOUBLE_EQ(points[1].efficiency, 0.975);
  EXPECT_DOUBLE_EQ(points[2].efficiency, 0.9375);
  std::vector<ScalingPoint> poor = {point(1, 100.0), point(4, 121.0)};
  fill_speedup_and_efficiency(poor);
  EXPECT_DOUBLE_EQ(poor[1].efficiency, 0.3025);
}

TEST(ScalingStudyTest, BaselineIsTheSmallestNodeCount) {
  std::vector<ScalingPoint> points = {point(2, 200.0), point(8, 700.0)};
  fill_speedup_and_efficiency(points);
  EXPECT_DOUBLE_EQ(points[1].speedup, 3.5);
  EXPECT_DOUBLE_EQ(points[1].efficiency, 3.5 / 4.0);
}

// Nodes of one GPU each behind one NIC on a single switch: a ring hop crosses GPU->NIC (1 us,
// 40 GB/s), NIC->switch and switch->NIC (4 us, 25 GB/s each), NIC->GPU: alpha = 10 us, B = 25 GB/s.
ClusterSpec one_gpu_nodes() {
  ClusterSpec c;
  c.name = "tiny";
  c.nodes = 8;
  c.gpus_per_node = 1;
  c.gpu.model = "G";
  c.gpu.peak_flops_per_s[Dtype::kBf16] = 100e12;
  c.gpu.gemm_efficiency = 1.0;
  c.gpu.hbm_bandwidth_bytes_per_s = 1e12;
  c.gpu.hbm_capacity_bytes = 1e10;
  c.intra_node.gpu_link = LinkClassSpec{100e9, kMicrosecond, 1.0};
  c.nic.count = 1;
  c.nic.link = LinkClassSpec{25e9, 4 * kMicrosecond, 1.0};
  c.nic.gpu_link = LinkClassSpec{40e9, kMicrosecond, 1.0};
  c.nic.gpus = {{0}};
  c.network.topology = NetworkTopology::kSingleSwitch;
  return c;
}

// 1 GFLOP per example and 100 MB of gradients in one ring all-reduce; 500 examples per GPU are
// 500 GFLOP at 100 TFLOP/s: 5 ms.
DenseModelSpec ring_model(double batch_per_gpu = 500) {
  DenseModelSpec m;
  m.name = "m";
  m.flops_per_example = 1e9;
  m.batch_per_gpu = batch_per_gpu;
  m.parameter_bytes = 100e6;
  m.compute_dtype = Dtype::kBf16;
  m.all_reduce_algorithm = Algorithm::kRing;
  return m;
}

TEST(ScalingStudyTest, WeakScalingOverRingAllReduce) {
  const DenseModelSpec m = ring_model();
  const ScalingStudy study = run_scaling_study(one_gpu_nodes(), m, {4, 1, 2, 4}, {});
  ASSERT_EQ(study.points.size(), 3u);
  const double bytes = 100e6;
  for (const ScalingPoint& p : study.points) {
    const int n = p.nodes;
    // Ring all-reduce of one GPU per node: every one of the 2 (n-1) steps crosses the network,
    // at NCCL's 14 us each (Simple) after its 8.4 us base, x1.4 once the message fills the
    // channels; the bandwidth term 2 (n-1)/n S over the 25 GB/s NIC.
    const Time latency = time_from_seconds((8.4 + 2 * (n - 1) * 14.0) * 1.4 * 1e-6);
    const Time all_reduce = n == 1 ? 0 : latency + transfer_time(2.0 * (n - 1) / n * bytes, 25e9);
    EXPECT_EQ(p.step_time, 5 * kMillisecond + all_reduce) << n << " nodes";
    EXPECT_DOUBLE_EQ(p.global_batch, 500.0 * n);
    EXPECT_DOUBLE_EQ(p.throughput, 500.0 * n / to_seconds(p.step_time));
  }
  EXPECT_EQ(study.points[0].nodes, 1);
  EXPECT_DOUBLE_EQ(study.points[2].efficiency, study.points[2].speedup / 4.0);
  EXPECT_LT(study.points[2].efficiency, 1.0);
}

TEST(ScalingStudyTest, NodeCountsInParallelGiveTheSameStudy) {
  // The ring all-reduce study above on 1, 2, 4 and 8 nodes, two at a time and on every core (15
  // nodes: all fit beside the largest): each point is still 5 ms of compute plus the ring's
  // alpha-beta time, and every node count is reported done once.
  const DenseModelSpec m = ring_model();
  for (const int threads : {2, 0}) {
    ScalingStudyOptions options;
    options.threads = threads;
    std::vector<int> reported;
    std::size_t last_done = 0;
    options.on_point = [&](std::size_t done, std::size_t total, int nodes) {
      EXPECT_EQ(total, 4u);
      EXPECT_EQ(done, last_done + 1);  // one call at a time, counting up
      last_done = done;
      reported.push_back(nodes);
    };
    const ScalingStudy study = run_scaling_study(one_gpu_nodes(), m, {8, 1, 4, 2}, options);
    ASSERT_EQ(study.points.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      const ScalingPoint& p = study.points[i];
      const int n = 1 << i;
      EXPECT_EQ(p.nodes, n);
      const Time latency = time_from_seconds((8.4 + 2 * (n - 1) * 14.0) * 1.4 * 1e-6);
      const Time all_reduce = n == 1 ? 0 : latency + transfer_time(2.0 * (n - 1) / n * 100e6, 25e9);
      EXPECT_EQ(p.step_time, 5 * kMillisecond + all_reduce) << n << " nodes, " << threads;
      EXPECT_DOUBLE_EQ(p.speedup, p.throughput / study.points[0].throughput);
    }
    std::sort(reported.begin(), reported.end());
    EXPECT_EQ(reported, (std::vector<int>{1, 2, 4, 8}));
  }
  // 6, 7 and 8 nodes on three threads (on a machine with three cores or more): 8 and 7 run
  // together (15 of at most 16 nodes at once), 6 waits for one of them; the study is the
  // one-thread study.
  ScalingStudyOptions three;
  three.threads = 3;
  const ScalingStudy gated = run_scaling_study(one_gpu_nodes(), m, {6, 7, 8}, three);
  const ScalingStudy alone = run_scaling_study(one_gpu_nodes(), m, {6, 7, 8}, {});
  ASSERT_EQ(gated.points.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(gated.points[i].nodes, 6 + static_cast<int>(i));
    EXPECT_EQ(gated.points[i].step_time, alone.points[i].step_time);
    EXPECT_EQ(gated.points[i].speedup, alone.points[i].speedup);
  }
}

TEST(ScalingStudyTest, BackgroundTrafficTakesItsShareOfTheNics) {
  // As above at 2 nodes, with another tenant sending 5 GB/s from node 0 to node 1: on node 0's
  // NIC (25 GB/s out) and node 1's (25 GB/s in) max-min gives the steady flow its 5 GB/s (below
  // an even share whatever the ring's channel count, at most 3 here) and the ring the other
  // 20 GB/s, so the 100 MB take 5 ms instead of 4. Traffic among nodes the run does not have
  // (2 and 3 at 2 nodes) changes nothing.
  const DenseModelSpec m = ring_model();
  ClusterSpec c = one_gpu_nodes();
  c.background_traffic = {{0, 0, 1, 1, 5e9}, {2, 2, 3, 3, 20e9}};
  const Time latency = time_from_seconds((8.4 + 2 * 14.0) * 1.4 * 1e-6);
  const ScalingStudy study = run_scaling_study(c, m, {2}, {});
  EXPECT_EQ(study.points[0].step_time, 5 * kMillisecond + latency + transfer_time(100e6, 20e9));
  c.background_traffic = {{2, 2, 3, 3, 20e9}};
  EXPECT_EQ(run_scaling_study(c, m, {2}, {}).points[0].step_time,
            5 * kMillisecond + latency + transfer_time(100e6, 25e9));
}

TEST(ScalingStudyTest, AutoQuantumIsExactUnlessTheExactRunChangesTooManyRates) {
  // The 2-node ring above beside two background flows that fill node 0's NIC (15 GB/s each
  // asked of its 25): under a coarse quantum (10% of the step) each ring step's flow waits for
  // the next solve to get its share, so the step moves. "auto" with room for every rate change
  // is the exact run. With no room it goes on under its quantum after its first solve, at 0 s,
  // which gives the two background flows 12.5 GB/s each either way: from there on it is the
  // quantum's run.
  const DenseModelSpec m = ring_model();
  ClusterSpec c = one_gpu_nodes();
  c.background_traffic = {{0, 0, 1, 1, 15e9}, {0, 0, 1, 1, 15e9}};
  auto point = [&](SolveQuantum quantum) {
    ScalingStudyOptions options;
    options.simulation.solve_quantum = quantum;
    return run_scaling_study(c, m, {2}, options).points[0];
  };
  const Time exact = point(Time{0}).step_time;
  const Time coarse = point(StepShare{100'000}).step_time;
  ASSERT_NE(exact, coarse);
  const ScalingPoint room = point(ExactOrShare{1'000'000'000, StepShare{100'000}});
  EXPECT_EQ(room.step_time, exact);
  EXPECT_FALSE(room.quantum_from.has_value());
  const ScalingPoint none = point(ExactOrShare{0, StepShare{100'000}});
  EXPECT_EQ(none.step_time, coarse);
  EXPECT_EQ(none.quantum_from, Time{0});
}

TEST(ScalingStudyTest, ADenseJobsOverlapKeysApply) {
  // The model overlaps its gradient all-reduce in 4 buckets; the job turns overlap off, so each
  // step is the 5 ms of compute, then the whole 100 MB all-reduce (as above, at 2 nodes: NCCL's
  // (8.4 + 2 x 14) us x 1.4 and 100 MB over the 25 GB/s NIC).
  DenseModelSpec m = ring_model(1);
  m.overlap_all_reduce = true;
  m.gradient_buckets = 4;
  JobSpec job;
  job.batch_per_gpu = 500;
  job.overlap_gradient_all_reduce = false;
  const ScalingStudy study = run_scaling_study(one_gpu_nodes(), Workload{m, job}, {2}, {});
  ASSERT_EQ(study.points.size(), 1u);
  const Time latency = time_from_seconds((8.4 + 2 * 14.0) * 1.4 * 1e-6);
  EXPECT_EQ(study.points[0].step_time, 5 * kMillisecond + latency + transfer_time(100e6, 25e9));
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

// One GPU of 100 TFLOP/s at 50% GEMM efficiency; a dense model of 1 GFLOP per example, a quarter
// of it forward, batch 100: a training step is 1e11 / 5e13 = 2 ms (one GPU: no all-reduce).
Workload evaluated_model(double every_examples) {
  DenseModelSpec m;
  m.name = "m";
  m.flops_per_example = 1e9;
  m.backward_flops_fraction = 0.75;
  m.parameter_bytes = 1e6;
  m.batch_per_gpu = 100;
  m.dataset.bytes_per_example = 100;
  JobSpec job;
  job.name = "j";
  job.batch_per_gpu = 100;
  job.evaluation.configured = true;
  job.evaluation.every = every_examples;
  job.evaluation.every_in_epochs = false;
  job.evaluation.examples = 1000;
  job.evaluation.global_batch = 400;
  return Workload{m, job};
}

ClusterSpec one_gpu_node() { return testing::small_node(1); }

TEST(ScalingStudyTest, EvaluationIsForwardStepsSpreadOverTheTrainingStepsBetween) {
  // An evaluation step of 400 examples is the forward quarter of 4e11 FLOP at 5e13 FLOP/s: 2 ms;
  // 1000 examples take ceil(1000 / 400) = 3 steps, 6 ms. Every 1000 training examples (10 steps
  // of 100) that is 0.6 ms a step: 2.6 ms, 38,461.5 examples/s; training alone 50,000.
  const ScalingPoint p =
      simulate_point(one_gpu_node(), evaluated_model(1000), 1, 100, StepSimulationOptions{});
  ASSERT_TRUE(p.evaluation.has_value());
  EXPECT_EQ(p.evaluation->step_time, 2 * kMillisecond);
  EXPECT_DOUBLE_EQ(p.evaluation->steps, 3.0);
  EXPECT_DOUBLE_EQ(p.evaluation->seconds, 6e-3);
  EXPECT_DOUBLE_EQ(p.evaluation->steps_between, 10.0);
  EXPECT_EQ(p.breakdown.evaluation, 600 * kMicrosecond);
  EXPECT_EQ(p.step_time, 2600 * kMicrosecond);
  EXPECT_NEAR(p.throughput, 100 / 2.6e-3, 1e-6);
  EXPECT_NEAR(p.training_throughput, 50000.0, 1e-6);
}

TEST(ScalingStudyTest, AnEvaluationStepWaitsForItsReadFromStorage) {
  // Its 400 examples of 100 B read at 10 MB/s take 4 ms, longer than the 2 ms forward pass: an
  // evaluation is 12 ms, 1.2 ms per training step.
  ClusterSpec c = one_gpu_node();
  c.storage.read_bytes_per_s_per_node = 10e6;
  const ScalingPoint p = simulate_point(c, evaluated_model(1000), 1, 100, StepSimulationOptions{});
  EXPECT_EQ(p.evaluation->read_time, 4 * kMillisecond);
  EXPECT_EQ(p.evaluation->step_time, 4 * kMillisecond);
  EXPECT_EQ(p.breakdown.evaluation, 1200 * kMicrosecond);
}

TEST(ScalingStudyTest, AnIntervalInEpochsNeedsTheDatasetSize) {
  Workload w = evaluated_model(0.5);
  w.job->evaluation.every_in_epochs = true;
  EXPECT_THROW(simulate_point(one_gpu_node(), w, 1, 100, StepSimulationOptions{}), ConfigError);
  // Half an epoch of 2000 examples is 10 steps of 100, as above.
  std::get<DenseModelSpec>(w.model).dataset.examples = 2000;
  const ScalingPoint p = simulate_point(one_gpu_node(), w, 1, 100, StepSimulationOptions{});
  EXPECT_DOUBLE_EQ(p.evaluation->steps_between, 10.0);
}

}  // namespace
}  // namespace trainsim::models
