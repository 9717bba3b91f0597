// Writes an executed task graph as Chrome trace-event JSON (opens in Perfetto or chrome://tracing):
// one process per task group, one thread per stream, one complete ("X") event per task with its
// args; and, given in the options, more slices (e.g. waits inside a task), flow arrows from one
// task to another, and counter tracks (e.g. a link's rate over time) in a process of their own.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "engine/task_graph.h"

namespace trainsim {

struct TraceSlice {
  std::int32_t group = 0;
  StreamId stream = 0;
  std::string name;
  Time start = 0, end = 0;
};
// An arrow from one task to another (Chrome flow events), e.g. a send to its receive.
struct TraceFlow {
  TaskId from = 0, to = 0;
  std::string name;
};
// A counter track: a value over time (a step function through the samples).
struct TraceCounter {
  std::string name;
  std::string unit;
  std::vector<std::pair<Time, double>> samples;
};

struct ChromeTraceOptions {
  // Name shown for a group (process); default "group N".
  std::function<std::string(std::int32_t group)> group_name;
  // Times are written relative to this origin.
  Time origin = 0;
  std::vector<TraceSlice> slices;
  std::vector<TraceFlow> flows;
  std::vector<TraceCounter> counters;
  std::string counters_name = "counters";  // the process holding the counter tracks
};

void write_chrome_trace(std::ostream& out, const TaskGraph& graph,
                        const std::vector<TaskRecord>& records,
                        const ChromeTraceOptions& options = {});

}  // namespace trainsim
