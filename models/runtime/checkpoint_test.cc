#include "models/runtime/checkpoint.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

constexpr double kMinute = 60.0;
constexpr double kHour = 3600.0;

TEST(CheckpointTest, DalyOptimumMatchesHisPublishedExamples) {
  // Daly (2006): checkpoint 5 min; optimum interval about 117 min at MTBF 24 h, 57 min at 6 h,
  // 9.1 min at 15 min.
  EXPECT_NEAR(daly_interval(5 * kMinute, 24 * kHour) / kMinute, 117.0, 0.5);
  EXPECT_NEAR(daly_interval(5 * kMinute, 6 * kHour) / kMinute, 57.0, 0.5);
  EXPECT_NEAR(daly_interval(5 * kMinute, 15 * kMinute) / kMinute, 9.1, 0.05);
  // Worked by hand at 24 h: sqrt(2 * 5 * 1440) = 120; x = 5 / 2880;
  // 120 * (1 + sqrt(x) / 3 + x / 9) - 5 = 116.6896 min.
  const double x = 5.0 / 2880.0;
  EXPECT_NEAR(daly_interval(5 * kMinute, 24 * kHour) / kMinute,
              120.0 * (1 + std::sqrt(x) / 3 + x / 9) - 5, 1e-9);
  // Young's first order: sqrt(2 delta M) = 120 min.
  EXPECT_NEAR(young_interval(5 * kMinute, 24 * kHour) / kMinute, 120.0, 1e-9);
  // A checkpoint longer than twice the MTBF: checkpoint every MTBF.
  EXPECT_DOUBLE_EQ(daly_interval(3 * kHour, 1 * kHour), 1 * kHour);
}

TEST(CheckpointTest, WallTimeRatioWithoutFailuresIsThePauseShare) {
  EXPECT_DOUBLE_EQ(daly_wall_time_ratio(100.0, 5.0, 60.0, 0.0), 1.05);
}

TEST(CheckpointTest, DalyOptimumMinimisesTheWallTime) {
  const double delta = 5 * kMinute, restart = 10 * kMinute, mtbf = 6 * kHour;
  const double best = daly_interval(delta, mtbf);
  const double at_best = daly_wall_time_ratio(best, delta, restart, mtbf);
  for (const double f : {0.5, 0.8, 0.95, 1.05, 1.25, 2.0}) {
    EXPECT_GT(daly_wall_time_ratio(best * f, delta, restart, mtbf), at_best) << f;
  }
  // Expanded for tau, delta, R small against M: (tau + delta) / tau (1 + (tau + delta) / 2M +
  // R / M), up to terms in 1/M^2.
  const double tau = 20.0, d = 1.0, r = 10.0, m = 1e5;
  EXPECT_NEAR(daly_wall_time_ratio(tau, d, r, m),
              (tau + d) / tau * (1 + (tau + d) / (2 * m) + r / m),
              1e-7);  // the 1/M^2 terms are about 2e-8 here
}

TEST(CheckpointTest, WallTimeRatioAgreesWithSimulatedFailures) {
  // Daly's example job (500 h of work, checkpoint 5 min, restart 10 min) at MTBF 6 h, run many
  // times with exponential failures that may strike during work, checkpoints and restarts.
  const double work = 500 * kHour, delta = 5 * kMinute, restart = 10 * kMinute, mtbf = 6 * kHour;
  const double tau = daly_interval(delta, mtbf);
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> failure(1.0 / mtbf);
  const int runs = 400;
  double total = 0.0;
  for (int run = 0; run < runs; ++run) {
    double wall = 0.0, done = 0.0;
    double next_failure = failure(rng);
    while (done < work) {
      const double segment = std::min(tau, work - done) + delta;
      if (wall + segment <= next_failure) {
        wall += segment;
        done += segment - delta;
        continue;
      }
      // Failure: the segment is lost; restart (which can itself be interrupted).
      wall = next_failure;
      next_failure = wall + failure(rng);
      while (wall + restart > next_failure) {
        wall = next_failure;
        next_failure = wall + failure(rng);
      }
      wall += restart;
    }
    total += wall;
  }
  const double simulated = total / runs / work;
  EXPECT_NEAR(daly_wall_time_ratio(tau, delta, restart, mtbf), simulated, 0.01 * simulated);
}

CheckpointInputs inputs() {
  CheckpointInputs in;
  in.checkpoint.configured = true;
  in.storage.write_bytes_per_s_per_node = 1e9;
  in.storage.read_bytes_per_s_per_node = 2e9;
  in.nodes = 4;
  in.gpus = 32;
  in.model_bytes = 64e9;
  in.device_to_host_bytes_per_s = 50e9;
  in.reliability.node_mtbf_seconds = 400 * kHour;
  in.reliability.restart_seconds = 5 * kMinute;
  return in;
}

TEST(CheckpointTest, SynchronousCheckpointPausesForCopyAndWrite) {
  CheckpointInputs in = inputs();
  in.checkpoint.interval_seconds = 30 * kMinute;
  const CheckpointCost c = checkpoint_cost(in);
  EXPECT_DOUBLE_EQ(c.bytes, 64e9);
  EXPECT_DOUBLE_EQ(c.write_seconds, 16.0);                     // 64 GB over 4 nodes at 1 GB/s
  EXPECT_DOUBLE_EQ(c.pause_seconds, 16.0 + 64e9 / 32 / 50e9);  // + each GPU's 2 GB copy
  EXPECT_DOUBLE_EQ(c.restore_seconds, 300.0 + 8.0);            // restart + read at 8 GB/s
  EXPECT_DOUBLE_EQ(c.cluster_mtbf_seconds, 100 * kHour);
  EXPECT_DOUBLE_EQ(c.interval_seconds, 30 * kMinute);
  EXPECT_NEAR(
      c.overhead,
      daly_wall_time_ratio(30 * kMinute, c.pause_seconds, c.restore_seconds, 100 * kHour) - 1,
      1e-15);
}

TEST(CheckpointTest, AsynchronousCheckpointPausesOnlyForTheCopy) {
  CheckpointInputs in = inputs();
  in.checkpoint.async = true;
  const CheckpointCost sync_cost = [&] {
    CheckpointInputs s = in;
    s.checkpoint.async = false;
    return checkpoint_cost(s);
  }();
  const CheckpointCost c = checkpoint_cost(in);
  EXPECT_DOUBLE_EQ(c.pause_seconds, 0.04);
  EXPECT_TRUE(c.optimal_interval);
  EXPECT_DOUBLE_EQ(c.interval_seconds, std::max(daly_interval(0.04, 100 * kHour), c.write_seconds));
  EXPECT_LT(c.overhead, sync_cost.overhead);
  // Shared filesystem: 4 nodes capped at 2 GB/s in all.
  in.storage.shared_write_bytes_per_s = 2e9;
  EXPECT_DOUBLE_EQ(checkpoint_cost(in).write_seconds, 32.0);
}

TEST(CheckpointTest, MoreNodesFailMoreOften) {
  CheckpointInputs in = inputs();
  const double four = checkpoint_cost(in).overhead;
  in.nodes = 64;
  in.gpus = 512;
  EXPECT_DOUBLE_EQ(checkpoint_cost(in).cluster_mtbf_seconds, 400 * kHour / 64);
  EXPECT_GT(checkpoint_cost(in).overhead, four);
}

TEST(CheckpointTest, ErrorsNameTheMissingSetting) {
  CheckpointInputs in = inputs();
  in.checkpoint.location = {"job.yaml", 7, 1, "checkpoint"};
  in.reliability.node_mtbf_seconds = 0;
  try {
    checkpoint_cost(in);
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("job.yaml:7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("node_mtbf"), std::string::npos) << e.what();
  }
  in = inputs();
  in.storage.write_bytes_per_s_per_node = 0;
  EXPECT_THROW(checkpoint_cost(in), ConfigError);
}

}  // namespace
}  // namespace trainsim::models
