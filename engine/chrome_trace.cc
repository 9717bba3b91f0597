#include "engine/chrome_trace.h"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/check.h"

namespace trainsim {

namespace {

double trace_us(Time t, Time origin) { return to_microseconds(t - origin); }

}  // namespace

void write_chrome_trace(std::ostream& out, const TaskGraph& graph,
                        const std::vector<TaskRecord>& records, const ChromeTraceOptions& options) {
  TRAINSIM_ASSERT(records.size() == graph.size(), "records do not match the graph");
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const nlohmann::json& event) {
    if (!first) out << ",\n";
    first = false;
    out << event.dump();
  };

  std::set<std::pair<std::int32_t, StreamId>> tracks;
  std::set<std::int32_t> groups;
  for (const Task& task : graph.tasks()) {
    groups.insert(task.group);
    if (task.stream != kNoStream) tracks.emplace(task.group, task.stream);
  }
  for (const std::int32_t group : groups) {
    const std::string name =
        options.group_name ? options.group_name(group) : "group " + std::to_string(group);
    emit({{"name", "process_name"}, {"ph", "M"}, {"pid", group}, {"args", {{"name", name}}}});
    emit({{"name", "process_sort_index"},
          {"ph", "M"},
          {"pid", group},
          {"args", {{"sort_index", group}}}});
  }
  for (const auto& [group, stream] : tracks) {
    emit({{"name", "thread_name"},
          {"ph", "M"},
          {"pid", group},
          {"tid", stream},
          {"args", {{"name", graph.stream_names()[stream]}}}});
  }
  for (TaskId id = 0; id < graph.size(); ++id) {
    const Task& task = graph.task(id);
    const TaskRecord& r = records[id];
    if (task.stream == kNoStream || r.end == TaskRecord::kNotYet) continue;
    nlohmann::json event = {{"name", task.name},
                            {"ph", "X"},
                            {"pid", task.group},
                            {"tid", task.stream},
                            {"ts", trace_us(r.start, options.origin)},
                            {"dur", to_microseconds(r.end - r.start)}};
    if (task.category < graph.category_names().size()) {
      event["cat"] = graph.category_names()[task.category];
    }
    event["args"] = {{"ready_us", trace_us(r.ready, options.origin)}};
    emit(event);
  }
  out << "\n]}\n";
}

}  // namespace trainsim
