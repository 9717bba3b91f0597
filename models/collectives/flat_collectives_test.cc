// The flat all-to-all run for one message per class of messages that move as one, against the
// whole exchange.
#include "models/collectives/flat_collectives.h"

#include <string>

#include <gtest/gtest.h>

#include "models/config/cluster_config.h"

namespace trainsim::models {
namespace {

// SimGrid's reference platform as shipped (validation/simgrid): 8 GPUs per node, NVSwitch ports of
// 450 GB/s and 0.5 us, a 50 GB/s, 1 us NIC per GPU, every transfer waiting its route latency
// first; on an ideal crossbar, or on leaves of 4 nodes with one uplink each of 1600/2 GB/s.
ClusterSpec platform(const std::string& fabric, int nodes) {
  ClusterSpec spec = load_cluster_spec(std::string(TRAINSIM_SOURCE_DIR) + "/validation/simgrid/" +
                                       fabric + ".yaml");
  spec.nodes = nodes;
  return spec;
}

struct ExchangeRun {
  std::vector<Time> finish;
  std::uint64_t flows = 0;
};

ExchangeRun run_all_to_all(const ClusterSpec& spec, const ByteMatrix& bytes, bool alone) {
  const ClusterTopology topology = build_cluster_topology(spec, spec.nodes);
  Simulation sim;
  FlowNetwork network(sim, topology.topology);
  network.set_latency_first(spec.network.latency_first);
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
  // 2 nodes x 8 GPUs on the crossbar: the 240 messages fall into 56 classes within a node
  // (sender and receiver local ranks) and 64 between the nodes; 120 messages stand for them all.
  const ClusterSpec spec = platform("crossbar", 2);
  const ByteMatrix bytes = exchange(16, 64e6);
  const ExchangeRun whole = run_all_to_all(spec, bytes, false);
  const ExchangeRun reduced = run_all_to_all(spec, bytes, true);
  EXPECT_EQ(whole.flows, 240u);
  EXPECT_EQ(reduced.flows, 120u);
  EXPECT_EQ(reduced.finish, whole.finish);
  // Each NIC sends and receives 8 of its GPU's messages of 4 MB at 50 GB/s, 0.64 ms, after the
  // route latency (1 + 1 us).
  for (const Time t : whole.finish) {
    EXPECT_EQ(t, 2 * kMicrosecond + transfer_time(8 * 4e6, 50e9));
  }
}

TEST(FlatAllToAllTest, HotGpusAndLeavesDefineTheirOwnClasses) {
  // Local rank 0 of every node sends 4 times as much: every node is still of one kind.
  std::vector<double> hot_local(16, 1.0);
  hot_local[0] = hot_local[8] = 4;
  const ByteMatrix hot = exchange(16, 64e6, hot_local);
  const ExchangeRun whole = run_all_to_all(platform("crossbar", 2), hot, false);
  const ExchangeRun reduced = run_all_to_all(platform("crossbar", 2), hot, true);
  EXPECT_EQ(reduced.flows, 120u);
  EXPECT_EQ(reduced.finish, whole.finish);
  // 3 nodes, only rank 0 sends 4 times as much: its node is of a kind of its own. Classes: 56
  // within the hot node, 56 within the others, 64 each from the hot node, to it, and between two
  // others: 304 messages for 552.
  std::vector<double> factor(24, 1.0);
  factor[0] = 4;
  const ByteMatrix one_hot = exchange(24, 96e6, factor);
  const ExchangeRun one_whole = run_all_to_all(platform("crossbar", 3), one_hot, false);
  const ExchangeRun one_reduced = run_all_to_all(platform("crossbar", 3), one_hot, true);
  EXPECT_EQ(one_whole.flows, 552u);
  EXPECT_EQ(one_reduced.flows, 304u);
  EXPECT_EQ(one_reduced.finish, one_whole.finish);
  // Every NIC carries 16 messages, each at 50 GB/s / 16 at first: the hot GPU's 16 MB messages
  // take 5.12 ms; a GPU of its node, which gets its 16 MB over NVLink, is done with its 4 MB
  // messages at 1.28 ms (each after 2 us of route latency).
  EXPECT_EQ(one_whole.finish[0], 2 * kMicrosecond + transfer_time(16 * 16e6, 50e9));
  EXPECT_EQ(one_whole.finish[1], 2 * kMicrosecond + transfer_time(16 * 4e6, 50e9));
  // 8 nodes on leaves of 4: messages between leaves take longer routes than those within one,
  // and are classes of their own (56 + 64 + 64 for 4,032).
  const ByteMatrix even = exchange(64, 256e6);
  const ExchangeRun leaves_whole = run_all_to_all(platform("fattree", 8), even, false);
  const ExchangeRun leaves_reduced = run_all_to_all(platform("fattree", 8), even, true);
  EXPECT_EQ(leaves_reduced.flows, 184u);
  EXPECT_EQ(leaves_reduced.finish, leaves_whole.finish);
  // The uplinks bind: each leaf sends 32 x 32 messages of 4 MB across its 800 GB/s uplink, each
  // at 800 / 1024 GB/s from the start (a NIC's other 24 messages share what is left of its 50
  // GB/s and finish first), 5.12 ms after the 4 us of an inter-leaf route (two NIC links and two
  // uplink hops); on the crossbar each NIC carries 56 x 4 MB at 50 GB/s, 4.48 ms after 2 us.
  EXPECT_EQ(leaves_whole.finish[0], 4 * kMicrosecond + transfer_time(4e6, 800e9 / 1024));
  EXPECT_EQ(run_all_to_all(platform("crossbar", 8), even, false).finish[0],
            2 * kMicrosecond + transfer_time(56 * 4e6, 50e9));
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
  const ExchangeRun whole = run_all_to_all(platform("crossbar", 2), uneven, false);
  const ExchangeRun asked = run_all_to_all(platform("crossbar", 2), uneven, true);
  EXPECT_EQ(asked.flows, 240u);
  EXPECT_EQ(asked.finish, whole.finish);
}

}  // namespace
}  // namespace trainsim::models
