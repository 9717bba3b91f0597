// Ring all-reduce against the closed form 2(P-1)(alpha + S/(P B)).
#include "models/collectives/ring_collective.h"

#include <gtest/gtest.h>

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

TEST(RingCollectiveTest, NodeRingsStartEachNodeAtTheChannelIndex) {
  const RingOrders rings = make_node_rings(2, 4, 2);
  EXPECT_EQ(rings[0], (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(rings[1], (std::vector<int>{1, 2, 3, 0, 5, 6, 7, 4}));
}

}  // namespace
}  // namespace trainsim::models
