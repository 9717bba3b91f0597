#include "engine/task_graph.h"

#include <gtest/gtest.h>

namespace trainsim {
namespace {

TEST(TaskGraphTest, DependenciesAndStreamsOrderTasks) {
  TaskGraph g;
  const StreamId compute = g.add_stream("compute");
  const StreamId comm = g.add_stream("comm");
  const CategoryId cat = g.add_category("work");
  // a (10) -> b (20) on compute; c (15) on comm depends on a; d joins b and c.
  const TaskId a = g.add_task("a", 0, compute, cat, DelayAction{10});
  const TaskId b = g.add_task("b", 0, compute, cat, DelayAction{20});
  const TaskId c = g.add_task("c", 0, comm, cat, DelayAction{15});
  const TaskId d = g.add_task("d", 0, kNoStream, cat, JoinAction{});
  g.add_dependency(a, b);
  g.add_dependency(a, c);
  g.add_dependency(b, d);
  g.add_dependency(c, d);
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  ASSERT_TRUE(exec.finished());
  const auto& r = exec.records();
  EXPECT_EQ(r[a].start, 0);
  EXPECT_EQ(r[a].end, 10);
  EXPECT_EQ(r[b].start, 10);
  EXPECT_EQ(r[b].end, 30);
  EXPECT_EQ(r[c].start, 10);  // different stream: overlaps b
  EXPECT_EQ(r[c].end, 25);
  EXPECT_EQ(r[d].end, 30);
  EXPECT_EQ(exec.makespan_end(), 30);
}

TEST(TaskGraphTest, TasksOnOneStreamSerialiseInReadyOrder) {
  TaskGraph g;
  const StreamId s = g.add_stream("compute");
  const CategoryId cat = g.add_category("work");
  const TaskId x = g.add_task("x", 0, s, cat, DelayAction{7});
  const TaskId y = g.add_task("y", 0, s, cat, DelayAction{5});
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  EXPECT_EQ(exec.records()[x].start, 0);
  EXPECT_EQ(exec.records()[y].ready, 0);
  EXPECT_EQ(exec.records()[y].start, 7);  // waited for the stream
  EXPECT_EQ(exec.records()[y].end, 12);
}

TEST(TaskGraphTest, GroupsHaveIndependentStreams) {
  TaskGraph g;
  const StreamId s = g.add_stream("compute");
  const CategoryId cat = g.add_category("work");
  g.add_task("x", 0, s, cat, DelayAction{7});
  g.add_task("y", 1, s, cat, DelayAction{5});
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  EXPECT_EQ(exec.records()[1].start, 0);
  EXPECT_EQ(exec.makespan_end(), 7);
}

TEST(TaskGraphTest, TransferRunsAsAFlow) {
  Topology t;
  const VertexId a = t.add_vertex("a", false);
  const VertexId b = t.add_vertex("b", false);
  t.add_link(a, b, 1e9, kMicrosecond);
  TaskGraph g;
  const StreamId s = g.add_stream("comm");
  const CategoryId cat = g.add_category("comm");
  const TaskId first = g.add_task("send", 0, s, cat, TransferAction{a, b, 1e6});
  const TaskId second = g.add_task("send2", 0, s, cat, TransferAction{a, b, 1e6});
  g.add_dependency(first, second);
  Simulation sim;
  FlowNetwork net(sim, t);
  TaskGraphExecutor exec(sim, g, &net);
  exec.start();
  sim.run();
  // Each: 1 us latency + 1 MB / 1 GB/s = 1 ms.
  EXPECT_EQ(exec.records()[first].end, kMicrosecond + kMillisecond);
  EXPECT_EQ(exec.records()[second].end, 2 * (kMicrosecond + kMillisecond));
}

TEST(TaskGraphTest, CustomActionCallsDone) {
  TaskGraph g;
  const StreamId s = g.add_stream("comm");
  const CategoryId cat = g.add_category("comm");
  Simulation sim;
  g.add_task("custom", 3, s, cat, CustomAction{[&](std::function<void()> done) {
               sim.schedule_in(99, std::move(done));
             }});
  const TaskId after = g.add_task("after", 3, s, cat, DelayAction{1});
  g.add_dependency(0, after);
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  EXPECT_EQ(exec.records()[after].end, 100);
}

TEST(TaskGraphTest, LongChainsOfJoinsDoNotRecurse) {
  TaskGraph g;
  const CategoryId cat = g.add_category("sync");
  TaskId prev = g.add_task("j0", 0, kNoStream, cat, JoinAction{});
  for (int i = 1; i < 200000; ++i) {
    const TaskId next = g.add_task("j", 0, kNoStream, cat, JoinAction{});
    g.add_dependency(prev, next);
    prev = next;
  }
  Simulation sim;
  TaskGraphExecutor exec(sim, g, nullptr);
  exec.start();
  sim.run();
  EXPECT_TRUE(exec.finished());
}

}  // namespace
}  // namespace trainsim
