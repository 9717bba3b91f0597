// Writes an executed task graph as Chrome trace-event JSON (opens in Perfetto or chrome://tracing):
// one process per task group, one thread per stream, one complete ("X") event per task.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "engine/task_graph.h"

namespace trainsim {

struct ChromeTraceOptions {
  // Name shown for a group (process); default "group N".
  std::function<std::string(std::int32_t group)> group_name;
  // Times are written relative to this origin.
  Time origin = 0;
};

void write_chrome_trace(std::ostream& out, const TaskGraph& graph,
                        const std::vector<TaskRecord>& records,
                        const ChromeTraceOptions& options = {});

}  // namespace trainsim
