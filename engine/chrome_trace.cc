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
    for (const auto& [key, value] : task.args) event["args"][key] = value;
    emit(event);
  }
  for (const TraceSlice& slice : options.slices) {
    emit({{"name", slice.name},
          {"ph", "X"},
          {"pid", slice.group},
          {"tid", slice.stream},
          {"ts", trace_us(slice.start, options.origin)},
          {"dur", to_microseconds(slice.end - slice.start)}});
  }
  // Each arrow leaves the middle of its first task and enters the middle of its second.
  std::uint64_t flow_id = 0;
  for (const TraceFlow& flow : options.flows) {
    const TaskRecord& a = records[flow.from];
    const TaskRecord& b = records[flow.to];
    if (a.end == TaskRecord::kNotYet || b.end == TaskRecord::kNotYet) continue;
    const Task& from = graph.task(flow.from);
    const Task& to = graph.task(flow.to);
    ++flow_id;
    emit({{"name", flow.name},
          {"cat", "flow"},
          {"ph", "s"},
          {"id", flow_id},
          {"pid", from.group},
          {"tid", from.stream},
          {"ts", trace_us(a.start + (a.end - a.start) / 2, options.origin)}});
    emit({{"name", flow.name},
          {"cat", "flow"},
          {"ph", "f"},
          {"bp", "e"},
          {"id", flow_id},
          {"pid", to.group},
          {"tid", to.stream},
          {"ts", trace_us(b.start + (b.end - b.start) / 2, options.origin)}});
  }
  if (!options.counters.empty()) {
    const std::int32_t pid = groups.empty() ? 0 : *groups.rbegin() + 1;
    emit({{"name", "process_name"},
          {"ph", "M"},
          {"pid", pid},
          {"args", {{"name", options.counters_name}}}});
    for (const TraceCounter& counter : options.counters) {
      for (const auto& [t, value] : counter.samples) {
        emit({{"name", counter.name},
              {"ph", "C"},
              {"pid", pid},
              {"ts", trace_us(t, options.origin)},
              {"args", {{counter.unit, value}}}});
      }
    }
  }
  out << "\n]}\n";
}

}  // namespace trainsim
