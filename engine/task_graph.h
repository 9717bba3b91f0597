// A task graph and its executor. Tasks belong to a group (e.g. one simulated device) and, unless
// they are joins, to a named stream of that group. Each (group, stream) pair is a FIFO server:
// its tasks run one at a time in the order they become ready, like work on one CUDA stream. A task
// becomes ready when all its dependencies have finished. Actions:
//   Delay     holds the stream for a fixed duration
//   Transfer  a flow from one vertex to another on the FlowNetwork
//   Custom    a callback that starts arbitrary work and calls `done` when it finishes
//   Join      no work; finishes as soon as it is ready (takes no stream)
// The executor records, per task, when it became ready, started and ended.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "engine/fifo_resource.h"
#include "engine/flow_network.h"
#include "engine/huge_page_allocator.h"
#include "engine/simulation.h"
#include "engine/topology.h"

namespace trainsim {

using TaskId = std::uint32_t;
using StreamId = std::uint16_t;
using CategoryId = std::uint16_t;
inline constexpr StreamId kNoStream = 0xffff;

struct DelayAction {
  Time duration = 0;
};
struct TransferAction {
  VertexId src = 0;
  VertexId dst = 0;
  double bytes = 0.0;
};
struct CustomAction {
  std::function<void(std::function<void()> done)> start;
};
struct JoinAction {};
using TaskAction = std::variant<DelayAction, TransferAction, CustomAction, JoinAction>;

struct Task {
  std::string_view name;  // kept once per distinct name by its graph
  std::int32_t group = 0;
  StreamId stream = kNoStream;
  CategoryId category = 0;
  TaskAction action;
  std::vector<TaskId> successors;
  std::uint32_t dependency_count = 0;
  // What a trace shows of it beyond its name and times (key, value), e.g. bytes and peers.
  std::vector<std::pair<std::string, std::string>> args;
};

class TaskGraph {
 public:
  TaskGraph() = default;
  // Tasks refer to the graph's own copies of their names: a graph moves but is not copied.
  TaskGraph(const TaskGraph&) = delete;
  TaskGraph& operator=(const TaskGraph&) = delete;
  TaskGraph(TaskGraph&&) = default;
  TaskGraph& operator=(TaskGraph&&) = default;

  StreamId add_stream(std::string name);
  CategoryId add_category(std::string name);
  // Returns the stream/category with this name, adding it if new.
  StreamId stream(const std::string& name);
  CategoryId category(const std::string& name);

  TaskId add_task(std::string_view name, std::int32_t group, StreamId stream, CategoryId category,
                  TaskAction action);
  void add_dependency(TaskId before, TaskId after);
  void add_arg(TaskId id, std::string key, std::string value) {
    tasks_[id].args.emplace_back(std::move(key), std::move(value));
  }

  std::size_t size() const { return tasks_.size(); }
  const Task& task(TaskId id) const { return tasks_[id]; }
  const BigVector<Task>& tasks() const { return tasks_; }
  const std::vector<std::string>& stream_names() const { return stream_names_; }
  const std::vector<std::string>& category_names() const { return category_names_; }

 private:
  // Names hash as the strings they hold, found by a view without making a string.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // A training step's graph has a few dozen distinct names over millions of tasks (one per
  // rank and step): each is kept once, and the tasks in huge pages.
  BigVector<Task> tasks_;
  std::unordered_set<std::string, NameHash, std::equal_to<>> names_;
  std::vector<std::string> stream_names_;
  std::vector<std::string> category_names_;
};

struct TaskRecord {
  static constexpr Time kNotYet = -1;
  Time ready = kNotYet;
  Time start = kNotYet;
  Time end = kNotYet;
};

class TaskGraphExecutor {
 public:
  // `network` may be null if the graph has no Transfer tasks. All references must outlive the
  // simulation's run.
  TaskGraphExecutor(Simulation& simulation, const TaskGraph& graph, FlowNetwork* network);

  // Makes every task without dependencies ready at the current time.
  void start();
  bool finished() const { return finished_count_ == graph_.size(); }
  std::size_t finished_count() const { return finished_count_; }
  const std::vector<TaskRecord>& records() const { return records_; }
  // Called when the last task finishes (e.g. to stop a simulation that has endless background
  // work besides the graph).
  void set_on_finished(std::function<void()> on_finished) { on_finished_ = std::move(on_finished); }
  // Latest end time over all tasks; requires finished().
  Time makespan_end() const;

 private:
  FifoResource& stream_server(std::int32_t group, StreamId stream);
  void make_ready(TaskId id);
  void drain();
  void dispatch(TaskId id);
  void run_action(TaskId id, std::function<void()> done);
  void finish(TaskId id);

  Simulation& sim_;
  const TaskGraph& graph_;
  FlowNetwork* network_;
  std::vector<TaskRecord> records_;
  std::vector<std::uint32_t> waiting_on_;
  std::map<std::uint64_t, std::unique_ptr<FifoResource>> servers_;
  std::deque<TaskId> ready_;
  bool draining_ = false;
  std::size_t finished_count_ = 0;
  std::function<void()> on_finished_;
};

}  // namespace trainsim
