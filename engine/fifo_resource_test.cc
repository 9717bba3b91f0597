#include "engine/fifo_resource.h"

#include <vector>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(FifoResourceTest, ServesJobsOneAtATimeInArrivalOrder) {
  Simulation sim;
  FifoResource stream(sim, "compute");
  std::vector<std::pair<int, Time>> done;
  stream.submit_duration(10, [&] { done.emplace_back(1, sim.now()); });
  stream.submit_duration(5, [&] { done.emplace_back(2, sim.now()); });
  sim.schedule_at(3, [&] { stream.submit_duration(1, [&] { done.emplace_back(3, sim.now()); }); });
  sim.run();
  // Job 1 runs 0-10, job 2 10-15, job 3 (arrived at 3) 15-16.
  EXPECT_EQ(done, (std::vector<std::pair<int, Time>>{{1, 10}, {2, 15}, {3, 16}}));
  EXPECT_EQ(stream.busy_time(), 16);
  EXPECT_EQ(stream.jobs_completed(), 3u);
}

TEST(FifoResourceTest, WorkTakesAmountOverRate) {
  Simulation sim;
  FifoResource gpu(sim, "gpu", 1e12);  // 1 TFLOP/s
  Time done = -1;
  gpu.submit_work(5e9, [&] { done = sim.now(); });  // 5 GFLOP: 5 ms
  sim.run();
  EXPECT_EQ(done, 5 * kMillisecond);
}

TEST(FifoResourceTest, IdleGapsAreNotBusyTime) {
  Simulation sim;
  FifoResource stream(sim, "copy");
  stream.submit_duration(10, {});
  sim.schedule_at(100, [&] { stream.submit_duration(7, {}); });
  sim.run();
  EXPECT_EQ(sim.now(), 107);
  EXPECT_EQ(stream.busy_time(), 17);
}

TEST(FifoResourceTest, CustomJobHoldsServerUntilDone) {
  Simulation sim;
  FifoResource stream(sim, "comm");
  Time second_started = -1;
  stream.submit([&](FifoResource::Done done) { sim.schedule_in(42, std::move(done)); });
  stream.submit([&](FifoResource::Done done) {
    second_started = sim.now();
    done();
  });
  sim.run();
  EXPECT_EQ(second_started, 42);
}

}  // namespace
}  // namespace trainsim
