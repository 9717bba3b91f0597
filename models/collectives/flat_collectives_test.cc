// The flat all-to-all run for one message per class of messages that move as one, against the
// whole exchange.
#include "models/collectives/flat_collectives.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

// `nodes` x 4 GPUs, NVSwitch ports of 450 GB/s and 0.5 us, a 50 GB/s, 1 us NIC per GPU, on an
// ideal crossbar, or (`nodes_per_leaf` > 0) on leaves of that many nodes with one uplink each
// of 1600/2 GB/s.
ClusterSpec platform(int nodes, int nodes_per_leaf = 0) {
  ClusterSpec c;
  c.name = "flat";
  c.nodes = nodes;
  c.gpus_per_node = 4;
  c.gpu.model = "G";
  c.intra_node.gpu_link = LinkClassSpec{450e9, 500 * kNanosecond, 1.0};
  c.nic.count = 4;
  c.nic.link = LinkClassSpec{50e9, kMicrosecond, 1.0};
  c.nic.gpu_link = LinkClassSpec{1e18, 0, 1.0};
  for (int g = 0; g < 4; ++g) c.nic.gpus.push_back({g});
  if (nodes_per_leaf > 0) {
    c.network.topology = NetworkTopology::kFatTree;
    c.network.nodes_per_leaf = nodes_per_leaf;
    c.network.spines = 1;
    c.network.oversubscription = 2;
    c.network.switch_latency = kMicrosecond;
  }
  return c;
}

struct ExchangeRun {
  std::vector<Time> finish;
  std::uint64_t flows = 0;
};

ExchangeRun run_all_to_all(const ClusterSpec& spec, const ByteMatrix& bytes, bool alone) {
  const ClusterTopology topology = build_cluster_topology(spec, spec.nodes);
  Simulation sim;
  FlowNetwork network(sim, topology.topology);
  auto op = make_flat_alltoallv(sim, network, topology, bytes);
  const int p = topology.gpu_count();
  ExchangeRun run;
  run.finish.assign(p, -1);
  op->join_all(
      p, [&sim, &run](int r) { run.finish[r] = sim.now(); }, alone);
  sim.run();
  run.flows = network.counters().flows_started;
  return run;
}

// bytes / P from every rank to every other, times `factor[rank]` for the sender.
ByteMatrix exchange(int p, double bytes, const std::vector<double>& factor = {}) {
  ByteMatrix m(p);
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      if (a != b) m.add(a, b, bytes / p * (factor.empty() ? 1.0 : factor[a]));
    }
  }
  m.consolidate();
  return m;
}

TEST(FlatAllToAllTest, AUniformExchangeRunsOneMessagePerClassWithTheSameTimes) {
  // 4 nodes x 4 GPUs on a crossbar: the 240 messages fall into 12 classes within a node (sender
  // and receiver local ranks) and 16 between nodes; 28 messages stand for them all.
  const ClusterSpec spec = platform(4);
  const ByteMatrix bytes = exchange(16, 64e6);
  const ExchangeRun whole = run_all_to_all(spec, bytes, false);
  const ExchangeRun reduced = run_all_to_all(spec, bytes, true);
  EXPECT_EQ(whole.flows, 240u);
  EXPECT_EQ(reduced.flows, 28u);
  EXPECT_EQ(reduced.finish, whole.finish);
  // Each NIC sends and receives 12 of its GPU's messages of 4 MB at 50 GB/s, 0.96 ms, and the
  // last arrives a route latency (1 + 1 us) later.
  for (const Time t : whole.finish) {
    EXPECT_EQ(t, transfer_time(12 * 4e6, 50e9) + 2 * kMicrosecond);
  }
}

TEST(FlatAllToAllTest, HotGpusAndLeavesDefineTheirOwnClasses) {
  // Local rank 0 of every node sends 4 times as much: every node is still of one kind.
  const std::vector<double> hot_local = {4, 1, 1, 1, 4, 1, 1, 1, 4, 1, 1, 1, 4, 1, 1, 1};
  const ByteMatrix hot = exchange(16, 64e6, hot_local);
  const ExchangeRun whole = run_all_to_all(platform(4), hot, false);
  const ExchangeRun reduced = run_all_to_all(platform(4), hot, true);
  EXPECT_EQ(reduced.flows, 28u);
  EXPECT_EQ(reduced.finish, whole.finish);
  // Only rank 0 sends 4 times as much: its node is of a kind of its own. Classes: 12 within the
  // hot node, 12 within the others, 16 each from the hot node, to it, and between two others.
  std::vector<double> factor(16, 1.0);
  factor[0] = 4;
  const ByteMatrix one_hot = exchange(16, 64e6, factor);
  const ExchangeRun one_whole = run_all_to_all(platform(4), one_hot, false);
  const ExchangeRun one_reduced = run_all_to_all(platform(4), one_hot, true);
  EXPECT_EQ(one_reduced.flows, 72u);
  EXPECT_EQ(one_reduced.finish, one_whole.finish);
  // Every NIC message starts at 50 GB/s / 12: the hot GPU's 12 messages of 16 MB across its NIC
  // take 3.84 ms; a GPU of its node, which gets its 16 MB over NVLink, is done with its 4 MB
  // messages at 0.96 ms (each plus 2 us of route latency).
  EXPECT_EQ(one_whole.finish[0], transfer_time(12 * 16e6, 50e9) + 2 * kMicrosecond);
  EXPECT_EQ(one_whole.finish[1], transfer_time(12 * 4e6, 50e9) + 2 * kMicrosecond);
  // Leaves of 2 nodes behind oversubscribed uplinks: messages between leaves take longer routes
  // than those within one, and are classes of their own (12 + 16 + 16).
  const ByteMatrix even = exchange(16, 64e6);
  const ExchangeRun leaves_whole = run_all_to_all(platform(4, 2), even, false);
  const ExchangeRun leaves_reduced = run_all_to_all(platform(4, 2), even, true);
  EXPECT_EQ(leaves_reduced.flows, 44u);
  EXPECT_EQ(leaves_reduced.finish, leaves_whole.finish);
  // The uplinks bind: each leaf's 8 GPUs send 8 x 8 messages of 4 MB across at 200 GB/s
  // (1.28 ms), against 0.96 ms for each NIC on the crossbar.
  EXPECT_GT(leaves_whole.finish[0], run_all_to_all(platform(4), even, false).finish[0]);
}

TEST(FlatAllToAllTest, AnExchangeWithoutClassesRunsWhole) {
  // Every pair carries its own number of bytes: no two messages can stand for each other.
  ByteMatrix uneven(16);
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a != b) uneven.add(a, b, 1e6 * (1 + a * 16 + b));
    }
  }
  uneven.consolidate();
  const ExchangeRun whole = run_all_to_all(platform(4), uneven, false);
  const ExchangeRun asked = run_all_to_all(platform(4), uneven, true);
  EXPECT_EQ(asked.flows, 240u);
  EXPECT_EQ(asked.finish, whole.finish);
}

}  // namespace
}  // namespace trainsim::models
