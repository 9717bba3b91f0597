// Ring all-reduce against the closed form 2(P-1)(alpha + S/(P B)).
#include "models/collectives/ring_collective.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "models/config/cluster_config.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {
namespace {

// P endpoints on one switch; every endpoint has its own up and down link of bandwidth B and
// latency alpha/2, so a ring hop costs alpha + bytes / B when uncontended.
struct Star {
  Topology topology;
  std::vector<VertexId> endpoints;
  Star(int p, double bandwidth, Time half_alpha) {
    const VertexId hub = topology.add_vertex("switch", true);
    for (int i = 0; i < p; ++i) {
      endpoints.push_back(topology.add_vertex("gpu" + std::to_string(i), false));
      topology.add_duplex(endpoints.back(), hub, bandwidth, half_alpha);
    }
  }
};

Time run_ring(Star& star, const RingOrders& rings, double bytes, Time late_join = 0) {
  Simulation sim;
  FlowNetwork net(sim, star.topology);
  const int p = static_cast<int>(star.endpoints.size());
  RingCollective ring(sim, net, star.endpoints, rings,
                      ring_all_reduce_schedule(bytes, p, static_cast<int>(rings.size())));
  int finished = 0;
  for (int i = 0; i < p; ++i) {
    const Time join_at = i == p - 1 ? late_join : 0;
    sim.schedule_at(join_at, [&ring, &finished, i] { ring.join(i, [&finished] { ++finished; }); });
  }
  sim.run();
  EXPECT_EQ(finished, p);
  return sim.now();
}

RingOrders identity_ring(int p) {
  RingOrders rings(1);
  for (int i = 0; i < p; ++i) rings[0].push_back(i);
  return rings;
}

TEST(RingCollectiveTest, MatchesClosedFormOnUncontendedFabric) {
  // P = 8, S = 800 MB, B = 100 GB/s, alpha = 2 us: chunk S/P = 100 MB takes 1 ms per step;
  // 2(P-1) = 14 steps of (2 us + 1 ms).
  Star star(8, 100e9, kMicrosecond);
  const Time expected = 14 * (2 * kMicrosecond + kMillisecond);
  EXPECT_EQ(run_ring(star, identity_ring(8), 800e6), expected);
}

TEST(RingCollectiveTest, ClosedFormHoldsForOtherSizes) {
  for (const int p : {2, 3, 5, 16}) {
    Star star(p, 50e9, 500 * kNanosecond);
    const double bytes = 64e6;
    const Time step = kMicrosecond + transfer_time(bytes / p, 50e9);
    EXPECT_EQ(run_ring(star, identity_ring(p), bytes), 2 * (p - 1) * step) << "P=" << p;
  }
}

TEST(RingCollectiveTest, ChannelsSharingLinksGiveTheSameTime) {
  // Four channels over the same endpoints: each link carries four flows of S/(4P), each at B/4,
  // which is again S/(P B) per step.
  Star star(8, 100e9, kMicrosecond);
  RingOrders rings;
  for (int c = 0; c < 4; ++c) {
    rings.emplace_back();
    for (int i = 0; i < 8; ++i) rings.back().push_back((i + c) % 8);
  }
  EXPECT_EQ(run_ring(star, rings, 800e6), 14 * (2 * kMicrosecond + kMillisecond));
}

TEST(RingCollectiveTest, AnalyticFormAgreesWithFlowsWhenUncontended) {
  for (const int p : {2, 4, 8}) {
    Star star(p, 37e9, 700 * kNanosecond);
    RingOrders rings = make_node_rings(1, p, 2);
    Router router(star.topology);
    EXPECT_EQ(ring_collective_time(router, star.endpoints, rings,
                                   ring_all_reduce_schedule(123456789.0, p, 2)),
              run_ring(star, rings, 123456789.0))
        << "P=" << p;
  }
}

TEST(RingCollectiveTest, LateParticipantDelaysEveryone) {
  // The last participant joins 5 ms late; nothing of step 0 can complete the ring before it
  // sends, so the whole operation shifts by 5 ms.
  Star star(4, 100e9, kMicrosecond);
  const Time alone = run_ring(star, identity_ring(4), 400e6);
  EXPECT_EQ(run_ring(star, identity_ring(4), 400e6, 5 * kMillisecond), alone + 5 * kMillisecond);
}

TEST(RingCollectiveTest, SingleParticipantFinishesImmediately) {
  Star star(1, 100e9, kMicrosecond);
  EXPECT_EQ(run_ring(star, identity_ring(1), 1e9), 0);
}

TEST(RingCollectiveTest, RendezvousSendsWaitForDelivery) {
  // Three endpoints on a star (each route: two links of 700 ns), 50 GB/s: every step takes
  // latency + chunk / B whether or not a send waits for delivery, 2(P-1)(1.4 us + S/(P B)); the
  // analytic form gives the same to the picosecond.
  const int p = 3;
  Star star(p, 50e9, 700 * kNanosecond);
  const RingOrders rings = identity_ring(p);
  RingSchedule schedule = ring_all_reduce_schedule(3e8, p, 1);
  schedule.rendezvous = true;
  Simulation sim;
  FlowNetwork net(sim, star.topology);
  RingCollective ring(sim, net, star.endpoints, rings, schedule);
  int done = 0;
  for (int i = 0; i < p; ++i) ring.join(i, [&done] { ++done; });
  sim.run();
  EXPECT_EQ(done, p);
  const Time step = 1400 * kNanosecond + transfer_time(1e8, 50e9);
  EXPECT_EQ(sim.now(), 2 * (p - 1) * step);
  Router router(star.topology);
  EXPECT_EQ(ring_collective_time(router, star.endpoints, rings, schedule), sim.now());
}

// `nodes` x `gpus_per_node` GPUs: each node's GPUs joined pairwise by NVLink (400 GB/s, 300 ns),
// and every `gpus_per_nic` GPUs of a node sharing a NIC (PCIe, 64 GB/s, 100 ns) with a 50 GB/s,
// 1 us port on one fabric switch. `slow_node`'s NICs, if any, have 25 GB/s ports.
struct Nodes {
  Topology topology;
  std::vector<VertexId> gpus;
  Nodes(int nodes, int gpus_per_node, int gpus_per_nic, int slow_node = -1) {
    const VertexId fabric = topology.add_vertex("fabric", true);
    for (int n = 0; n < nodes; ++n) {
      VertexId nic = 0;
      for (int g = 0; g < gpus_per_node; ++g) {
        gpus.push_back(topology.add_vertex("gpu", false));
        for (int h = 0; h < g; ++h) {
          topology.add_duplex(gpus[n * gpus_per_node + h], gpus.back(), 400e9, 300 * kNanosecond);
        }
        if (g % gpus_per_nic == 0) {
          nic = topology.add_vertex("nic", true);
          topology.add_duplex(nic, fabric, n == slow_node ? 25e9 : 50e9, kMicrosecond);
        }
        topology.add_duplex(gpus.back(), nic, 64e9, 100 * kNanosecond);
      }
    }
  }
};

struct RingRun {
  std::vector<Time> finish;  // per participant
  int simulated_positions = 0;
  std::uint64_t flows = 0;
};

RingRun run_ring_on(const Topology& topology, const std::vector<VertexId>& gpus,
                    const RingOrders& rings, RingSchedule schedule, bool alone,
                    Time software_latency = 0) {
  Simulation sim;
  FlowNetwork net(sim, topology);
  const int p = static_cast<int>(gpus.size());
  RingCollective ring(sim, net, gpus, rings, schedule, software_latency);
  RingRun run;
  run.finish.assign(p, -1);
  ring.join_all(
      p, [&sim, &run](int i) { run.finish[i] = sim.now(); }, alone);
  sim.run();
  run.simulated_positions = ring.simulated_positions();
  run.flows = net.counters().flows_started;
  return run;
}

RingRun run_nodes_ring(const Nodes& nodes, const RingOrders& rings, RingSchedule schedule,
                       bool alone, Time software_latency = 0) {
  return run_ring_on(nodes.topology, nodes.gpus, rings, schedule, alone, software_latency);
}

TEST(RingCollectiveTest, ASymmetricRingRunsOneNodeOfPositionsWithTheSameTimes) {
  // 4 nodes x 4 GPUs, 1 and 2 channels, a NIC per GPU or per two GPUs (two channels' flows then
  // meet on a NIC's port): the ring repeats every node, so 4 positions per channel stand for 16,
  // and every participant finishes at the picosecond the whole ring gives.
  for (const int per_nic : {1, 2}) {
    for (const int channels : {1, 2}) {
      const Nodes nodes(4, 4, per_nic);
      const RingOrders rings = make_node_rings(4, 4, channels);
      const RingSchedule schedule = ring_all_reduce_schedule(96e6, 16, channels);
      const RingRun whole = run_nodes_ring(nodes, rings, schedule, false);
      const RingRun reduced = run_nodes_ring(nodes, rings, schedule, true);
      EXPECT_EQ(whole.simulated_positions, 16);
      EXPECT_EQ(reduced.simulated_positions, 4);
      EXPECT_EQ(whole.flows, static_cast<std::uint64_t>(channels * 16 * 30));
      EXPECT_EQ(reduced.flows, static_cast<std::uint64_t>(channels * 4 * 30));
      EXPECT_EQ(reduced.finish, whole.finish)
          << per_nic << " GPUs per NIC, " << channels << " channels";
      for (const Time t : whole.finish) EXPECT_GT(t, 0);
    }
  }
}

TEST(RingCollectiveTest, TheReducedRingMeetsTheClosedForm) {
  // 2 nodes x 2 GPUs, a NIC per GPU. The NIC hop (GPU -> NIC -> fabric -> NIC -> GPU: 100 + 1000
  // + 1000 + 100 ns = 2.2 us, 50 GB/s) takes 2 ms per chunk of S/P = 100 MB, the NVLink hop
  // 0.25 ms. Each NIC hop's sender has the next chunk long before its own last one has left, so
  // it sends its 2(P-1) = 6 chunks back to back: the last arrives at 6 x 2 ms + 2.2 us.
  const Nodes nodes(2, 2, 1);
  const RingSchedule schedule = ring_all_reduce_schedule(400e6, 4, 1);
  const RingRun reduced = run_nodes_ring(nodes, make_node_rings(2, 2, 1), schedule, true);
  EXPECT_EQ(reduced.simulated_positions, 2);
  const Time expected = 6 * transfer_time(100e6, 50e9) + 2200 * kNanosecond;
  EXPECT_EQ(*std::max_element(reduced.finish.begin(), reduced.finish.end()), expected);
}

TEST(RingCollectiveTest, RendezvousAndSoftwareLatencyReduceToo) {
  const Nodes nodes(4, 2, 1);
  RingSchedule schedule = ring_all_reduce_schedule(32e6, 8, 1);
  schedule.rendezvous = true;
  const RingOrders rings = make_node_rings(4, 2, 1);
  const RingRun whole = run_nodes_ring(nodes, rings, schedule, false, 3 * kMicrosecond);
  const RingRun reduced = run_nodes_ring(nodes, rings, schedule, true, 3 * kMicrosecond);
  EXPECT_EQ(reduced.simulated_positions, 2);
  EXPECT_EQ(reduced.finish, whole.finish);
}

TEST(RingCollectiveTest, ARingOnANetworkWithASolveQuantumRunsWhole) {
  const Nodes nodes(4, 2, 1);
  Simulation sim;
  FlowNetwork net(sim, nodes.topology);
  net.set_solve_quantum(kMicrosecond);
  RingCollective ring(sim, net, nodes.gpus, make_node_rings(4, 2, 1),
                      ring_all_reduce_schedule(32e6, 8, 1));
  int done = 0;
  ring.join_all(
      8, [&done](int) { ++done; }, /*alone=*/true);
  sim.run();
  EXPECT_EQ(done, 8);
  EXPECT_EQ(ring.simulated_positions(), 8);
}

TEST(RingCollectiveTest, ARingThatDoesNotRepeatRunsWhole) {
  // Node 2's NIC port is half as fast: no node count short of all of them repeats.
  const Nodes nodes(4, 2, 1, 2);
  const RingOrders rings = make_node_rings(4, 2, 1);
  const RingSchedule schedule = ring_all_reduce_schedule(32e6, 8, 1);
  const RingRun whole = run_nodes_ring(nodes, rings, schedule, false);
  const RingRun asked = run_nodes_ring(nodes, rings, schedule, true);
  EXPECT_EQ(asked.simulated_positions, 8);
  EXPECT_EQ(asked.flows, whole.flows);
  EXPECT_EQ(asked.finish, whole.finish);
  // A ring whose hops go NVLink, NIC, NIC, NVLink, NIC, NIC, NVLink, NIC repeats at no period
  // short of 8 either.
  const Nodes even(4, 2, 1);
  const RingOrders scrambled = {{0, 1, 2, 4, 5, 3, 6, 7}};
  EXPECT_EQ(run_nodes_ring(even, scrambled, schedule, true).simulated_positions, 8);
  EXPECT_EQ(run_nodes_ring(even, scrambled, schedule, true).finish,
            run_nodes_ring(even, scrambled, schedule, false).finish);
}

TEST(RingCollectiveTest, OnTheDgxFabricTheRingRepeatsWhenRoutedByDestination) {
  // 64 DGX H100 nodes: two leaves per rail, 4 spines. Each node's last GPU sends to the next
  // node's first, rail 7 to rail 0, across a spine. Routed by destination, the 32 hops into a
  // rail-0 leaf take its 4 spines in turn by port, 8 each, and every hop is alike: one node's
  // 8 positions stand for 512. Hashed per pair (ECMP), some spine links carry more of them than
  // others, and the ring runs whole.
  ClusterSpec spec =
      load_cluster_spec(std::string(TRAINSIM_SOURCE_DIR) + "/configs/clusters/dgx-h100.yaml");
  const RingOrders rings = make_node_rings(64, 8, 1);
  const RingSchedule schedule = ring_all_reduce_schedule(64e6, 512, 1);
  spec.network.routing = NetworkRouting::kDestination;
  const ClusterTopology by_destination = build_cluster_topology(spec, 64);
  const RingRun whole =
      run_ring_on(by_destination.topology, by_destination.gpu_vertices, rings, schedule, false);
  const RingRun reduced =
      run_ring_on(by_destination.topology, by_destination.gpu_vertices, rings, schedule, true);
  EXPECT_EQ(reduced.simulated_positions, 8);
  EXPECT_EQ(reduced.finish, whole.finish);
  spec.network.routing = NetworkRouting::kEcmp;
  const ClusterTopology hashed = build_cluster_topology(spec, 64);
  const RingRun ecmp = run_ring_on(hashed.topology, hashed.gpu_vertices, rings, schedule, true);
  EXPECT_EQ(ecmp.simulated_positions, 512);
  // Where two hops share a spine link they share its bandwidth: the ring is slower.
  EXPECT_GT(ecmp.finish[0], whole.finish[0]);
}

TEST(RingCollectiveTest, NodeRingsStartEachNodeAtTheChannelIndex) {
  const RingOrders rings = make_node_rings(2, 4, 2);
  EXPECT_EQ(rings[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(rings[1], (std::vector<int>{1, 2, 3, 0, 5, 6, 7, 4}));
}

}  // namespace
}  // namespace trainsim::models
