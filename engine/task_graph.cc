#include "engine/task_graph.h"

#include <algorithm>
#include <utility>

#include "engine/check.h"

namespace trainsim {

StreamId TaskGraph::add_stream(std::string name) {
  TRAINSIM_ASSERT(stream_names_.size() < kNoStream, "too many streams");
  stream_names_.push_back(std::move(name));
  return static_cast<StreamId>(stream_names_.size() - 1);
}

CategoryId TaskGraph::add_category(std::string name) {
  TRAINSIM_ASSERT(category_names_.size() < 0xffff, "too many categories");
  category_names_.push_back(std::move(name));
  return static_cast<CategoryId>(category_names_.size() - 1);
}

StreamId TaskGraph::stream(const std::string& name) {
  const auto it = std::find(stream_names_.begin(), stream_names_.end(), name);
  if (it != stream_names_.end()) return static_cast<StreamId>(it - stream_names_.begin());
  return add_stream(name);
}

CategoryId TaskGraph::category(const std::string& name) {
  const auto it = std::find(category_names_.begin(), category_names_.end(), name);
  if (it != category_names_.end()) return static_cast<CategoryId>(it - category_names_.begin());
  return add_category(name);
}

TaskId TaskGraph::add_task(std::string_view name, std::int32_t group, StreamId stream,
                           CategoryId category, TaskAction action) {
  TRAINSIM_ASSERT(stream == kNoStream || stream < stream_names_.size(), "unknown stream");
  TRAINSIM_ASSERT(category < category_names_.size() || category_names_.empty(), "unknown category");
  TRAINSIM_ASSERT(stream != kNoStream || std::holds_alternative<JoinAction>(action),
                  "only join tasks may have no stream");
  Task task;
  auto known = names_.find(name);
  if (known == names_.end()) known = names_.emplace(name).first;
  task.name = *known;
  task.group = group;
  task.stream = stream;
  task.category = category;
  task.action = std::move(action);
  tasks_.push_back(std::move(task));
  return static_cast<TaskId>(tasks_.size() - 1);
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  TRAINSIM_ASSERT(before < tasks_.size() && after < tasks_.size(), "dependency on unknown task");
  TRAINSIM_ASSERT(before < after, "dependencies must point forward (tasks in topological order)");
  tasks_[before].successors.push_back(after);
  ++tasks_[after].dependency_count;
}

TaskGraphExecutor::TaskGraphExecutor(Simulation& simulation, const TaskGraph& graph,
                                     FlowNetwork* network)
    : sim_(simulation), graph_(graph), network_(network), records_(graph.size()) {
  waiting_on_.reserve(graph.size());
  for (const Task& task : graph.tasks()) waiting_on_.push_back(task.dependency_count);
}

void TaskGraphExecutor::start() {
  for (TaskId id = 0; id < graph_.size(); ++id) {
    if (waiting_on_[id] == 0) make_ready(id);
  }
  drain();
}

Time TaskGraphExecutor::makespan_end() const {
  TRAINSIM_ASSERT(finished(), "makespan of an unfinished graph");
  Time end = 0;
  for (const TaskRecord& r : records_) end = std::max(end, r.end);
  return end;
}

FifoResource& TaskGraphExecutor::stream_server(std::int32_t group, StreamId stream) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(group)) << 16) | stream;
  auto it = servers_.find(key);
  if (it == servers_.end()) {
    it = servers_
             .emplace(key, std::make_unique<FifoResource>(
                               sim_, std::to_string(group) + "/" + graph_.stream_names()[stream]))
             .first;
  }
  return *it->second;
}

void TaskGraphExecutor::make_ready(TaskId id) {
  records_[id].ready = sim_.now();
  ready_.push_back(id);
}

void TaskGraphExecutor::drain() {
  if (draining_) return;
  draining_ = true;
  while (!ready_.empty()) {
    const TaskId id = ready_.front();
    ready_.pop_front();
    dispatch(id);
  }
  draining_ = false;
}

void TaskGraphExecutor::dispatch(TaskId id) {
  const Task& task = graph_.task(id);
  if (task.stream == kNoStream) {
    records_[id].start = sim_.now();
    finish(id);
    return;
  }
  stream_server(task.group, task.stream).submit([this, id](std::function<void()> release) {
    records_[id].start = sim_.now();
    run_action(id, [this, id, release = std::move(release)] {
      release();
      finish(id);
    });
  });
}

void TaskGraphExecutor::run_action(TaskId id, std::function<void()> done) {
  const Task& task = graph_.task(id);
  if (const auto* delay = std::get_if<DelayAction>(&task.action)) {
    sim_.schedule_in(delay->duration, std::move(done));
  } else if (const auto* transfer = std::get_if<TransferAction>(&task.action)) {
    TRAINSIM_ASSERT(network_ != nullptr, "transfer task without a flow network");
    network_->start(transfer->src, transfer->dst, transfer->bytes, std::move(done));
  } else if (const auto* custom = std::get_if<CustomAction>(&task.action)) {
    custom->start(std::move(done));
  } else {
    done();
  }
}

void TaskGraphExecutor::finish(TaskId id) {
  TRAINSIM_ASSERT(records_[id].end == TaskRecord::kNotYet, "task finished twice");
  records_[id].end = sim_.now();
  ++finished_count_;
  for (const TaskId next : graph_.task(id).successors) {
    if (--waiting_on_[next] == 0) make_ready(next);
  }
  drain();
  if (finished() && on_finished_) on_finished_();
}

}  // namespace trainsim
