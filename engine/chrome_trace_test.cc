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

TEST(ChromeTraceTest, ArgsExtraSlicesArrowsAndCounters) {
  // fwd (0-2 us) on rank 0, bwd (2-5 us) on rank 1: an arrow leaves fwd's middle (1 us) and enters
  // bwd's (3.5 us); an extra slice and a counter of two samples go where they are given.
  TaskGraph g;
  const StreamId compute = g.add_stream("compute");
  const TaskId a = g.add_task("fwd", 0, compute, 0, DelayAction{2 * kMicrosecond});
  const TaskId b = g.add_task("bwd", 1, compute, 0, DelayAction{3 * kMicrosecond});
  g.add_dependency(a, b);
  g.add_arg(b, "bytes", "4096");
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  ChromeTraceOptions options;
  options.slices.push_back({1, compute, "waiting", 2 * kMicrosecond, 3 * kMicrosecond});
  options.flows.push_back({a, b, "send"});
  options.counters.push_back({"link", "%", {{0, 0.0}, {kMicrosecond, 50.0}}});
  std::ostringstream out;
  write_chrome_trace(out, g, exec.records(), options);
  const auto json = nlohmann::json::parse(out.str());
  int counters = 0;
  for (const auto& e : json["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "bwd") {
      EXPECT_EQ(e["args"]["bytes"], "4096");
    }
    if (e["ph"] == "X" && e["name"] == "waiting") {
      EXPECT_EQ(e["pid"], 1);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.0);
    }
    if (e["ph"] == "s") {
      EXPECT_EQ(e["pid"], 0);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.0);
    }
    if (e["ph"] == "f") {
      EXPECT_EQ(e["pid"], 1);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 3.5);
      EXPECT_EQ(e["bp"], "e");
    }
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["pid"], 2);  // a process after the groups'
    }
  }
  EXPECT_EQ(counters, 2);
}

}  // namespace
}  // namespace trainsim
