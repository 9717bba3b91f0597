#include "engine/parallel.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(RunSideBySideTest, OneThreadRunsFirstThenSecondHere) {
  std::vector<int> order;
  const auto here = std::this_thread::get_id();
  bool same_thread = true;
  run_side_by_side(
      1,
      [&] {
        order.push_back(1);
        same_thread = same_thread && std::this_thread::get_id() == here;
      },
      [&] {
        order.push_back(2);
        same_thread = same_thread && std::this_thread::get_id() == here;
      });
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_TRUE(same_thread);
}

TEST(RunSideBySideTest, BothRunAndTheirErrorsComeBackFirstsFirst) {
  int a = 0, b = 0;
  run_side_by_side(
      2, [&] { a = 3; }, [&] { b = 4; });
  EXPECT_EQ(a + b, 7);
  auto message = [](int threads, bool first_throws, bool second_throws) {
    try {
      run_side_by_side(
          threads,
          [&] {
            if (first_throws) throw std::runtime_error("first");
          },
          [&] {
            if (second_throws) throw std::runtime_error("second");
          });
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("none");
  };
  for (const int threads : {1, 2}) {
    EXPECT_EQ(message(threads, true, true), "first") << threads;
    EXPECT_EQ(message(threads, true, false), "first") << threads;
    EXPECT_EQ(message(threads, false, true), "second") << threads;
    EXPECT_EQ(message(threads, false, false), "none") << threads;
  }
}

TEST(RunSideBySideTest, InsideAParallelLoopEveryPairRuns) {
  // Each iteration's pair may go on the loop's other thread or wait for its own; all 2 x 16 run.
  std::atomic<int> runs{0};
  std::vector<int> sums(16, 0);
  parallel_for_index(sums.size(), 2, [&](std::size_t i) {
    int x = 0, y = 0;
    run_side_by_side(
        2,
        [&] {
          x = static_cast<int>(i);
          ++runs;
        },
        [&] {
          y = 100;
          ++runs;
        });
    sums[i] = x + y;
  });
  EXPECT_EQ(runs.load(), 32);
  for (std::size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(sums[i], 100 + static_cast<int>(i));
}

}  // namespace
}  // namespace trainsim
