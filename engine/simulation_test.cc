#include "engine/simulation.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "engine/check.h"

namespace trainsim {
namespace {

TEST(SimulationTest, ClockFollowsEventsAndNeverGoesBackwards) {
  Simulation sim;
  std::vector<Time> seen;
  sim.schedule_at(5 * kMicrosecond, [&] {
    seen.push_back(sim.now());
    sim.schedule_in(kMicrosecond, [&] { seen.push_back(sim.now()); });
    sim.schedule_in(0, [&] { seen.push_back(sim.now()); });
  });
  sim.schedule_at(kMicrosecond, [&] { seen.push_back(sim.now()); });
  sim.run();
  EXPECT_EQ(seen, (std::vector<Time>{kMicrosecond, 5 * kMicrosecond, 5 * kMicrosecond,
                                     6 * kMicrosecond}));
  EXPECT_EQ(sim.events_processed(), 4u);
}

TEST(SimulationTest, SchedulingInThePastIsAnInternalError) {
  Simulation sim;
  sim.schedule_at(100, [&] { EXPECT_THROW(sim.schedule_at(99, [] {}), InternalError); });
  sim.run();
  EXPECT_THROW(sim.schedule_in(-1, [] {}), InternalError);
  const EventHandle h = sim.schedule_at(200, [] {});
  EXPECT_THROW(sim.reschedule(h, 50), InternalError);
}

TEST(SimulationTest, RunUntilStopsAtTheLimit) {
  Simulation sim;
  int fired = 0;
  sim.schedule_at(10, [&] { ++fired; });
  sim.schedule_at(20, [&] { ++fired; });
  EXPECT_TRUE(sim.run_until(15));
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(sim.now(), 15);
  EXPECT_FALSE(sim.run_until(20));
  EXPECT_EQ(fired, 2);
}

TEST(SimulationTest, StopEndsRunAfterCurrentEvent) {
  Simulation sim;
  int fired = 0;
  sim.schedule_at(1, [&] {
    ++fired;
    sim.stop();
  });
  sim.schedule_at(2, [&] { ++fired; });
  sim.run();
  EXPECT_EQ(fired, 1);
  sim.run();
  EXPECT_EQ(fired, 2);
}

TEST(SimulationTest, CancelAndRescheduleThroughSimulation) {
  Simulation sim;
  std::vector<int> order;
  const EventHandle a = sim.schedule_at(10, [&] { order.push_back(1); });
  const EventHandle b = sim.schedule_at(20, [&] { order.push_back(2); });
  sim.schedule_at(30, [&] { order.push_back(3); });
  EXPECT_TRUE(sim.reschedule(b, 40));
  EXPECT_TRUE(sim.cancel(a));
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{3, 2}));
  EXPECT_EQ(sim.now(), 40);
}

TEST(SimulationTest, RandomStreamsDependOnlyOnSeedAndStreamId) {
  Simulation one(42);
  Simulation two(42);
  // Different creation order of streams must not change any stream's draws.
  const auto a1 = one.rng(1)();
  const auto b1 = one.rng(2)();
  const auto b2 = two.rng(2)();
  const auto a2 = two.rng(1)();
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(b1, b2);
  EXPECT_NE(a1, b1);
  Simulation other_seed(43);
  EXPECT_NE(other_seed.rng(1)(), a1);
}

TEST(SimulationTest, TimesTheClockCannotHoldAreRangeErrors) {
  // The clock counts picoseconds in an int64: 9.2e6 s (106 days) at most. Negative, NaN or
  // larger durations are refused as bad input, naming what they measure when told.
  EXPECT_EQ(time_from_seconds(1.5e-9), 1500);
  EXPECT_EQ(time_from_seconds(kMaxSeconds), static_cast<Time>(9.2e18));
  EXPECT_THROW(time_from_seconds(-1e-12), TimeRangeError);
  EXPECT_THROW(time_from_seconds(std::nan("")), TimeRangeError);
  EXPECT_THROW(time_from_seconds(1e7), TimeRangeError);
  try {
    time_from_seconds(1e300, "a transfer");
    ADD_FAILURE();
  } catch (const TimeRangeError& e) {
    EXPECT_EQ(e.seconds(), 1e300);
    EXPECT_EQ(std::string(e.what()).rfind("a transfer: a simulated time of 1e+300 s is out of", 0),
              0u)
        << e.what();
  }
  // An event a long delay after a late instant would pass the clock's end.
  Simulation sim;
  sim.schedule_at(time_from_seconds(9e6), [] {});
  sim.run();
  EXPECT_THROW(sim.schedule_in(time_from_seconds(9e6), [] {}), TimeRangeError);
  EXPECT_EQ(time_after(1, 2), 3);
}

}  // namespace
}  // namespace trainsim
