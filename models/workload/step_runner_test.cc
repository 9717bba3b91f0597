// The communication stall's split by collective, worked by hand.
#include "models/workload/step_runner.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(StepRunnerTest, ACollectivesExposedTimeIsWhatComputeDoesNotCover) {
  // Compute on [0, 10) and [15, 30); a transfer on [5, 40) is exposed on [10, 15) and [30, 40).
  const std::vector<std::pair<Time, Time>> compute = {{0, 10}, {15, 30}};
  EXPECT_EQ(time_not_covered(compute, 5, 40), 15);
  EXPECT_EQ(time_not_covered(compute, 0, 10), 0);
  EXPECT_EQ(time_not_covered(compute, 10, 15), 5);
  EXPECT_EQ(time_not_covered(compute, 31, 33), 2);
  EXPECT_EQ(time_not_covered({}, 3, 7), 4);
}

TEST(StepRunnerTest, TheStallSplitsInProportionAndAddsUp) {
  // 100 split 1 : 3 over two collectives (ids and dense): 25 and 75; 10 over 1 : 1 : 1 gives
  // 3, 3 and the remainder 4 to the last.
  std::array<Time, kStepCollectives> w{};
  w[static_cast<int>(StepCollective::kIdAllToAll)] = 1;
  w[static_cast<int>(StepCollective::kDenseAllReduce)] = 3;
  const auto parts = split_in_proportion(100, w);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kIdAllToAll)], 25);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kDenseAllReduce)], 75);
  EXPECT_EQ(parts[static_cast<int>(StepCollective::kGradientAllToAll)], 0);
  const auto thirds = split_in_proportion(10, {1, 1, 1, 0, 0});
  EXPECT_EQ(thirds[0], 3);
  EXPECT_EQ(thirds[1], 3);
  EXPECT_EQ(thirds[2], 4);
  EXPECT_EQ(split_in_proportion(10, {})[0], 0);  // nothing exposed to attribute
}

}  // namespace
}  // namespace trainsim::models
