#include "engine/chrome_trace.h"

#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace trainsim {
namespace {

TEST(ChromeTraceTest, WritesOneCompleteEventPerTaskWithNamedTracks) {
  TaskGraph g;
  const StreamId compute = g.add_stream("compute");
  const CategoryId cat = g.add_category("compute");
  const TaskId a = g.add_task("fwd", 0, compute, cat, DelayAction{2 * kMicrosecond});
  const TaskId b = g.add_task("bwd", 1, compute, cat, DelayAction{3 * kMicrosecond});
  g.add_dependency(a, b);
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  std::ostringstream out;
  ChromeTraceOptions options;
  options.group_name = [](std::int32_t group) { return "rank " + std::to_string(group); };
  write_chrome_trace(out, g, exec.records(), options);

  const auto json = nlohmann::json::parse(out.str());
  int complete = 0;
  bool named_process = false;
  bool named_thread = false;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      if (e["name"] == "bwd") {
        EXPECT_EQ(e["pid"], 1);
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3.0);
        EXPECT_EQ(e["cat"], "compute");
      }
    } else if (e["name"] == "process_name" && e["args"]["name"] == "rank 1") {
      named_process = true;
    } else if (e["name"] == "thread_name" && e["args"]["name"] == "compute") {
      named_thread = true;
    }
  }
  EXPECT_EQ(complete, 2);
  EXPECT_TRUE(named_process);
  EXPECT_TRUE(named_thread);
}

}  // namespace
}  // namespace trainsim
