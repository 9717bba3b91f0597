// Expectations the workload tests share (test code only).
#pragma once

#include <gtest/gtest.h>

#include "models/workload/dense_training.h"

namespace trainsim::models::testing {

// Every measured figure of two simulations of one step, to the picosecond (not the events
// processed, which depend on how much was simulated).
inline void expect_same_steps(const StepSimulationResult& a, const StepSimulationResult& b) {
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.breakdown.compute, b.breakdown.compute);
  EXPECT_EQ(a.breakdown.exposed_communication, b.breakdown.exposed_communication);
  EXPECT_EQ(a.breakdown.stall_by_collective, b.breakdown.stall_by_collective);
  EXPECT_EQ(a.breakdown.imbalance, b.breakdown.imbalance);
  EXPECT_EQ(a.breakdown.input_stall, b.breakdown.input_stall);
  EXPECT_EQ(a.slowest_rank, b.slowest_rank);
  EXPECT_EQ(a.slowest_rank_compute, b.slowest_rank_compute);
  EXPECT_EQ(a.communication_busy, b.communication_busy);
}

}  // namespace trainsim::models::testing
