// Flow-level network: expectations are worked out by hand from latency + bytes / bandwidth and
// from the definition of max-min fairness.
#include "engine/flow_network.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

constexpr double kGBps = 1e9;  // bytes per second

// A chain of vertices v0 - v1 - ... joined by one directed link per hop (forward only).
struct Chain {
  Topology topology;
  std::vector<VertexId> v;
  Chain(const std::vector<double>& bandwidths, const std::vector<Time>& latencies) {
    for (std::size_t i = 0; i <= bandwidths.size(); ++i) {
      v.push_back(topology.add_vertex("v" + std::to_string(i), /*transit=*/true));
    }
    for (std::size_t i = 0; i < bandwidths.size(); ++i) {
      topology.add_link(v[i], v[i + 1], bandwidths[i], latencies[i]);
    }
  }
};

TEST(FlowNetworkTest, LoneFlowTakesLatencyPlusBytesOverBottleneck) {
  // Route: 100 GB/s with 1 us, then 50 GB/s with 2 us. 1 GB at the 50 GB/s bottleneck is 20 ms.
  Chain chain({100 * kGBps, 50 * kGBps}, {kMicrosecond, 2 * kMicrosecond});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  Time done = -1;
  net.start(chain.v[0], chain.v[2], 1e9, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done, 3 * kMicrosecond + 20 * kMillisecond);
  const RouteId route = net.router().route(chain.v[0], chain.v[2]);
  EXPECT_EQ(net.uncontended_time(route, 1e9), done);
}

TEST(FlowNetworkTest, NetworksSharingARouterComputeEachRouteOnce) {
  // Two simulations of one topology (as an estimate and the run it sets up): the second finds the
  // first's route, and its flow still takes 3 us + 1 GB / 50 GB/s = 20.003 ms.
  Chain chain({100 * kGBps, 50 * kGBps}, {kMicrosecond, 2 * kMicrosecond});
  auto router = std::make_shared<Router>(chain.topology);
  for (int run = 0; run < 2; ++run) {
    Simulation sim;
    FlowNetwork net(sim, router);
    Time done = -1;
    net.start(chain.v[0], chain.v[2], 1e9, [&] { done = sim.now(); });
    sim.run();
    EXPECT_EQ(done, 3 * kMicrosecond + 20 * kMillisecond);
    EXPECT_EQ(&net.router(), router.get());
    EXPECT_EQ(router->route_count(), 1u);
  }
}

TEST(FlowNetworkTest, TheFlowObserverSeesEachFlowTakeAndLeaveItsRoute) {
  // One 1 GB/s link with 1 us of latency. A (1 MB) starts at 0: it takes bandwidth at once and
  // its last byte leaves at 1 ms. With latency first (SimGrid's model) B (1 MB) waits 1 us before
  // it takes bandwidth, and leaves at 1 ms + 1 us.
  Chain chain({1 * kGBps}, {kMicrosecond});
  for (const bool latency_first : {false, true}) {
    Simulation sim;
    FlowNetwork net(sim, chain.topology);
    net.set_latency_first(latency_first);
    std::vector<std::tuple<Time, RouteId, double, bool>> seen;
    net.set_flow_observer([&](RouteId route, double bytes, bool begins) {
      seen.emplace_back(sim.now(), route, bytes, begins);
    });
    net.start(chain.v[0], chain.v[1], 1e6, [] {});
    sim.run();
    const RouteId route = net.router().route(chain.v[0], chain.v[1]);
    const Time begin = latency_first ? kMicrosecond : 0;
    ASSERT_EQ(seen.size(), 2u) << latency_first;
    EXPECT_EQ(seen[0], std::make_tuple(begin, route, 1e6, true)) << latency_first;
    EXPECT_EQ(seen[1], std::make_tuple(begin + kMillisecond, route, 0.0, false)) << latency_first;
  }
}

TEST(FlowNetworkTest, BetweenQuantumSolvesANewFlowTakesOnlyTheFreeBandwidth) {
  // One 10 GB/s link, solve quantum 1 ms. A (20 MB) starts at 0 and has the link: 2 ms alone.
  // B (5 MB) starts at 0.5 ms: the link is full, so B waits (rate 0) until the solve at 1 ms,
  // and no instant sees more than 10 GB/s. From 1 ms both get 5 GB/s: A has 10 MB left, B 5 MB,
  // so B is done at 2 ms; A's freed bandwidth waits for the boundary (2 ms, the same instant),
  // then A has 5 MB left at 10 GB/s: done at 2.5 ms. Exact max-min (quantum 0) gives B 5 GB/s
  // from 0.5 ms: B done at 1.5 ms, A at 2.5 ms (25 MB in all at 10 GB/s).
  Chain chain({10 * kGBps}, {0});
  for (const Time quantum : {kMillisecond, Time{0}}) {
    Simulation sim;
    FlowNetwork net(sim, chain.topology);
    net.set_solve_quantum(quantum);
    Time a_done = -1, b_done = -1;
    net.start(chain.v[0], chain.v[1], 20e6, [&] { a_done = sim.now(); });
    FlowId b = 0;
    sim.schedule_at(kMillisecond / 2, [&] {
      b = net.start(chain.v[0], chain.v[1], 5e6, [&] { b_done = sim.now(); });
    });
    double b_rate_before_solve = -1;
    sim.schedule_at(kMillisecond * 3 / 4, [&] { b_rate_before_solve = net.rate(b); });
    sim.run();
    if (quantum > 0) {
      EXPECT_EQ(b_rate_before_solve, 0.0);
      EXPECT_EQ(b_done, 2 * kMillisecond);
    } else {
      EXPECT_DOUBLE_EQ(b_rate_before_solve, 5 * kGBps);
      EXPECT_EQ(b_done, 3 * kMillisecond / 2);
    }
    EXPECT_EQ(a_done, 5 * kMillisecond / 2);
  }
}

TEST(FlowNetworkTest, BandwidthFreedBetweenSolvesGoesToTheNextFlowOnly) {
  // One 10 GB/s link, quantum 1 ms. A (2 MB) and B (20 MB) start at 0: 5 GB/s each; A is done at
  // 0.4 ms. C (1 MB) starts at 0.6 ms and takes the 5 GB/s A freed (B keeps its 5 until the
  // solve at 1 ms): C done at 0.8 ms. At 1 ms B has 15 MB left and the link alone: done at
  // 2.5 ms.
  Chain chain({10 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  net.set_solve_quantum(kMillisecond);
  Time b_done = -1, c_done = -1;
  net.start(chain.v[0], chain.v[1], 2e6, [] {});
  net.start(chain.v[0], chain.v[1], 20e6, [&] { b_done = sim.now(); });
  sim.schedule_at(kMillisecond * 6 / 10,
                  [&] { net.start(chain.v[0], chain.v[1], 1e6, [&] { c_done = sim.now(); }); });
  sim.run();
  EXPECT_EQ(c_done, kMillisecond * 8 / 10);
  EXPECT_EQ(b_done, kMillisecond * 5 / 2);
}

TEST(FlowNetworkTest, ALinkEmptiedBetweenSolvesIsFreeForTheNextFlow) {
  // Two links, 10 GB/s (v0 -> v1) and 4 GB/s (v1 -> v2), quantum 1 ms. A (1 MB) starts on the
  // first at 0.2 ms with all of it and is done at 0.3 ms, leaving the link empty; B (4 MB) starts
  // on the second at 0.5 ms: 4 GB/s, done at 1.5 ms. The solve at 1 ms sees both links (each
  // flow alone on its route). C (1 MB) starts on the first link at 1.2 ms and finds its 10 GB/s
  // free: done at 1.3 ms.
  Chain chain({10 * kGBps, 4 * kGBps}, {0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  net.set_solve_quantum(kMillisecond);
  Time a_done = -1, b_done = -1, c_done = -1;
  sim.schedule_at(kMillisecond / 5,
                  [&] { net.start(chain.v[0], chain.v[1], 1e6, [&] { a_done = sim.now(); }); });
  sim.schedule_at(kMillisecond / 2,
                  [&] { net.start(chain.v[1], chain.v[2], 4e6, [&] { b_done = sim.now(); }); });
  sim.schedule_at(kMillisecond * 6 / 5,
                  [&] { net.start(chain.v[0], chain.v[1], 1e6, [&] { c_done = sim.now(); }); });
  sim.run();
  EXPECT_EQ(a_done, kMillisecond * 3 / 10);
  EXPECT_EQ(b_done, kMillisecond * 3 / 2);
  EXPECT_EQ(c_done, kMillisecond * 13 / 10);
}

TEST(FlowNetworkTest, ExplicitRouteLoadsALinkOncePerAppearance) {
  // Links a (100 GB/s, 1 us) and b (60 GB/s, 2 us). Route a, b, a: link a carries the flow twice,
  // so its share is 100 / 2 = 50 GB/s, below b's 60. 1 GB takes 20 ms at 50 GB/s; the route's
  // latency counts a twice: 1 + 2 + 1 = 4 us.
  Chain chain({100 * kGBps, 60 * kGBps}, {kMicrosecond, 2 * kMicrosecond});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const std::vector<LinkId> links = {0, 1, 0};
  const RouteId route = net.router().add_route(links);
  EXPECT_EQ(net.router().latency(route), 4 * kMicrosecond);
  EXPECT_DOUBLE_EQ(net.router().bottleneck_bandwidth(route), 50 * kGBps);
  EXPECT_TRUE(net.router().repeats(route));
  const auto crossings = net.router().crossings(route);
  const std::vector<std::pair<LinkId, std::uint32_t>> expected = {{0, 2}, {1, 1}};
  EXPECT_TRUE(std::equal(crossings.begin(), crossings.end(), expected.begin(), expected.end()));
  EXPECT_FALSE(net.router().repeats(net.router().route(chain.v[0], chain.v[2])));
  Time done = -1;
  net.start(route, 1e9, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done, 4 * kMicrosecond + 20 * kMillisecond);
  EXPECT_EQ(net.uncontended_time(route, 1e9), done);
}

TEST(FlowNetworkTest, AFlowCrossingALinkTwiceCountsTwiceInTheFairShare) {
  // One 90 GB/s link; flow A crosses it twice, flow B once. Max-min on rates with 2 rA + rB <= 90:
  // rA = rB = 30 GB/s. B (0.3 GB) ends at 10 ms; A then has the link to itself at 45 GB/s, with
  // 0.9 - 0.3 = 0.6 GB left: 13.33 ms more.
  Chain chain({90 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const std::vector<LinkId> twice = {0, 0};
  const RouteId route = net.router().add_route(twice);
  Time a_done = -1;
  Time b_done = -1;
  const FlowId a = net.start(route, 0.9e9, [&] { a_done = sim.now(); });
  const FlowId b = net.start(chain.v[0], chain.v[1], 0.3e9, [&] { b_done = sim.now(); });
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(a), 30 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(b), 30 * kGBps);
  sim.run();
  EXPECT_EQ(b_done, 10 * kMillisecond);
  EXPECT_EQ(a_done, 10 * kMillisecond + transfer_time(0.6e9, 45 * kGBps));
  // Slot bookkeeping with repeated links: flows that cross the link twice and once, finishing in
  // every order, leave it empty.
  for (int i = 0; i < 3; ++i) net.start(route, 1e6 * (i + 1), [] {});
  for (int i = 0; i < 3; ++i) net.start(chain.v[0], chain.v[1], 2e6 * (3 - i), [] {});
  sim.run();
  EXPECT_EQ(net.active_flow_count(), 0u);
}

TEST(FlowNetworkTest, BetweenQuantumSolvesAFlowCrossingALinkTwiceTakesHalfOfWhatIsFree) {
  // One 10 GB/s link, quantum 1 ms. A (capped at 4 GB/s, 10 MB) starts at 0 alone: 4 GB/s. B
  // crosses the link twice and starts at 0.2 ms: 6 GB/s are free, and B loads the link twice, so
  // it takes 3 GB/s (the link then carries 4 + 2 x 3 = 10 GB/s, never more). The solve at 1 ms
  // gives max-min: rA + 2 rB <= 10 with A's cap 4 above the level 10/3, so both get 10/3 GB/s.
  // B (3 MB) has 3 - 0.8 x 3 = 0.6 MB left: 0.18 ms more, done at 1.18 ms.
  Chain chain({10 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  net.set_solve_quantum(kMillisecond);
  double most = 0.0;
  net.set_link_observer([&](LinkId, Time, double rate) { most = std::max(most, rate); });
  const std::vector<LinkId> twice = {0, 0};
  const RouteId route = net.router().add_route(twice);
  net.start(
      chain.v[0], chain.v[1], 10e6, [] {}, {}, 4 * kGBps);
  FlowId b = 0;
  Time b_done = -1;
  sim.schedule_at(kMillisecond / 5,
                  [&] { b = net.start(route, 3e6, [&] { b_done = sim.now(); }); });
  double before_solve = -1, after_solve = -1;
  sim.schedule_at(kMillisecond / 2, [&] { before_solve = net.rate(b); });
  sim.schedule_at(kMillisecond * 11 / 10, [&] { after_solve = net.rate(b); });
  sim.run();
  EXPECT_DOUBLE_EQ(before_solve, 3 * kGBps);
  EXPECT_DOUBLE_EQ(after_solve, 10 * kGBps / 3);
  EXPECT_NEAR(static_cast<double>(b_done), static_cast<double>(kMillisecond * 118 / 100),
              static_cast<double>(kNanosecond));
  EXPECT_LE(most, 10 * kGBps * (1 + 1e-12));
}

// A sender behind a 10 GB/s link to a switch that reaches two receivers over links of
// `receiver_bandwidth` each.
struct Fan {
  Topology topology;
  LinkId up, to_first, to_second;
  VertexId sender, fan, first, second;
  explicit Fan(double receiver_bandwidth) {
    sender = topology.add_vertex("s", true);
    fan = topology.add_vertex("x", true);
    first = topology.add_vertex("r1", true);
    second = topology.add_vertex("r2", true);
    up = topology.add_link(sender, fan, 10 * kGBps, 0);
    to_first = topology.add_link(fan, first, receiver_bandwidth, 0);
    to_second = topology.add_link(fan, second, receiver_bandwidth, 0);
  }
};

TEST(FlowNetworkTest, ABundleMovesAsItsMembersAndSaysWhenTheyWouldDriftApart) {
  // A bundle of two 10 MB flows s -> r1 and s -> r2, which share the sender's 10 GB/s link: one
  // flow on route (up, to r1, up, to r2) at the rate of each, 5 GB/s, done at 2 ms like the two
  // flows run apart. Receivers' links of 6 GB/s leave them so (5 < 6), and no member is held
  // elsewhere.
  for (const bool bundled : {false, true}) {
    const Fan fan(6 * kGBps);
    Simulation sim;
    FlowNetwork net(sim, fan.topology);
    int apart = 0;
    net.set_on_bundle_apart([&] { ++apart; });
    std::vector<Time> done;
    if (bundled) {
      const std::vector<LinkId> links = {fan.up, fan.to_first, fan.up, fan.to_second};
      const auto shared =
          std::make_shared<const FlowNetwork::BundleLinks>(FlowNetwork::BundleLinks{{fan.up}, {}});
      net.start_bundle(net.router().add_route(links), 10e6, shared,
                       [&] { done.push_back(sim.now()); });
    } else {
      for (const VertexId to : {fan.first, fan.second}) {
        net.start(fan.sender, to, 10e6, [&] { done.push_back(sim.now()); });
      }
    }
    sim.run();
    for (const Time t : done) EXPECT_EQ(t, 2 * kMillisecond);
    EXPECT_EQ(done.size(), bundled ? 1u : 2u);
    EXPECT_EQ(apart, 0);
    EXPECT_FALSE(net.bundle_apart());
  }
  // Another flow on r2's link (x -> r2): that link's share is 6 / 2 = 3 GB/s, below the sender
  // link's 10 / 2, so it would hold the member to r2 at 3 GB/s and let the one to r1 take 7: the
  // members drift apart, and the network says so (once).
  const Fan fan(6 * kGBps);
  Simulation sim;
  FlowNetwork net(sim, fan.topology);
  int apart = 0;
  net.set_on_bundle_apart([&] { ++apart; });
  const std::vector<LinkId> links = {fan.up, fan.to_first, fan.up, fan.to_second};
  const auto shared =
      std::make_shared<const FlowNetwork::BundleLinks>(FlowNetwork::BundleLinks{{fan.up}, {}});
  net.start(fan.fan, fan.second, 10e6, [] {});
  const FlowId bundle = net.start_bundle(net.router().add_route(links), 10e6, shared, [] {});
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(bundle), 3 * kGBps);
  sim.run();
  EXPECT_EQ(apart, 1);
  EXPECT_TRUE(net.bundle_apart());
}

TEST(FlowNetworkTest, ABundleHeldAtItsMembersOwnLinksStaysWholeWhileOnlyBundlesCrossThem) {
  // Two members on links of their own (s1 -> r1 and s2 -> r2, 10 GB/s each), counterparts of
  // each other. Two bundles of such members, 10 MB each: each link carries both bundles, so each
  // member gets 5 GB/s, held alike on both links: done at 2 ms, and the network says nothing. A
  // flow of its own on s1's link (20 MB) holds the members there at 10 / 3 GB/s while s2's link
  // would give its members 5: the network says they could drift apart.
  for (const bool own_flow : {false, true}) {
    Topology topology;
    const VertexId s1 = topology.add_vertex("s1", true), r1 = topology.add_vertex("r1", true);
    const VertexId s2 = topology.add_vertex("s2", true), r2 = topology.add_vertex("r2", true);
    const LinkId p1 = topology.add_link(s1, r1, 10 * kGBps, 0);
    const LinkId p2 = topology.add_link(s2, r2, 10 * kGBps, 0);
    Simulation sim;
    FlowNetwork net(sim, topology);
    int apart = 0;
    net.set_on_bundle_apart([&] { ++apart; });
    const std::vector<LinkId> links = {p1, p2};
    const auto held =
        std::make_shared<const FlowNetwork::BundleLinks>(FlowNetwork::BundleLinks{{}, {p1, p2}});
    std::vector<Time> done;
    FlowId bundle = 0;
    for (int b = 0; b < 2; ++b) {
      bundle = net.start_bundle(net.router().add_route(links), 10e6, held,
                                [&] { done.push_back(sim.now()); });
    }
    if (own_flow) net.start(s1, r1, 20e6, [] {});
    sim.run_until(1);
    EXPECT_DOUBLE_EQ(net.rate(bundle), own_flow ? 10 * kGBps / 3 : 5 * kGBps);
    sim.run();
    EXPECT_EQ(apart, own_flow ? 1 : 0);
    if (!own_flow) {
      EXPECT_EQ(done, (std::vector<Time>(2, 2 * kMillisecond)));
    }
  }
}

TEST(FlowNetworkTest, TwoFlowsOnOneLinkGetHalfEach) {
  Chain chain({100 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  std::vector<Time> done;
  const FlowId a = net.start(chain.v[0], chain.v[1], 1e9, [&] { done.push_back(sim.now()); });
  const FlowId b = net.start(chain.v[0], chain.v[1], 1e9, [&] { done.push_back(sim.now()); });
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(a), 50 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(b), 50 * kGBps);
  sim.run();
  // 1 GB at 50 GB/s: 20 ms each, finishing together.
  EXPECT_EQ(done, (std::vector<Time>{20 * kMillisecond, 20 * kMillisecond}));
}

TEST(FlowNetworkTest, LongFlowAcrossLinksEachSharedWithAShortFlow) {
  // Links L1..L3 of 10, 20 and 30 GB/s in a chain. A long flow crosses all three; each link also
  // carries one short flow. L1 has the smallest fair share (10/2 = 5), so the long flow and the
  // short flow of L1 get 5; the short flows of L2 and L3 get what is left: 20-5 = 15, 30-5 = 25.
  Chain chain({10 * kGBps, 20 * kGBps, 30 * kGBps}, {0, 0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const auto& v = chain.v;
  const FlowId long_flow = net.start(v[0], v[3], 1e12, {});
  const FlowId s1 = net.start(v[0], v[1], 1e12, {});
  const FlowId s2 = net.start(v[1], v[2], 1e12, {});
  const FlowId s3 = net.start(v[2], v[3], 1e12, {});
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(long_flow), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(s1), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(s2), 15 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(s3), 25 * kGBps);
}

TEST(FlowNetworkTest, LinksCarryingTheSameFlowsShareThemAtTheNarrowest) {
  // L1 (60 GB/s), L2 (40) and L3 (40) carry the same two flows, as a PCIe link, a NIC and the
  // switch port behind it do. The filling leaves L1 and L3 out (L2 binds first); each flow still
  // gets 40 / 2 = 20 GB/s, every link is charged 40, and 1 GB takes 50 ms.
  Chain chain({60 * kGBps, 40 * kGBps, 40 * kGBps}, {0, 0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  std::vector<std::tuple<LinkId, Time, double>> charged;
  net.set_link_observer(
      [&](LinkId l, Time t, double allocated) { charged.emplace_back(l, t, allocated); });
  std::vector<Time> done;
  const FlowId a = net.start(chain.v[0], chain.v[3], 1e9, [&] { done.push_back(sim.now()); });
  const FlowId b = net.start(chain.v[0], chain.v[3], 1e9, [&] { done.push_back(sim.now()); });
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(a), 20 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(b), 20 * kGBps);
  for (LinkId l = 0; l < 3; ++l) {
    EXPECT_TRUE(std::find(charged.begin(), charged.end(),
                          std::make_tuple(l, Time{0}, 40 * kGBps)) != charged.end())
        << "link " << l;
  }
  sim.run();
  EXPECT_EQ(done, (std::vector<Time>{50 * kMillisecond, 50 * kMillisecond}));
}

TEST(FlowNetworkTest, AWiderLinkWithAsManyButOtherFlowsStillBinds) {
  // L1 (40 GB/s) carries A and B, L2 (30 GB/s) carries A and C: as many flows, not the same
  // ones, so L1 is no copy of L2 and binds too. L2's share is 15 (A and C); B gets what A leaves
  // of L1, 40 - 15 = 25. B's 1 GB is done at 40 ms; A and C then have 0.4 GB left at 15 GB/s each
  // (L2 is still the bottleneck): done at 40 + 26.67 ms.
  Chain chain({40 * kGBps, 30 * kGBps}, {0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const auto& v = chain.v;
  Time a_done = -1, b_done = -1, c_done = -1;
  const FlowId a = net.start(v[0], v[2], 1e9, [&] { a_done = sim.now(); });
  const FlowId b = net.start(v[0], v[1], 1e9, [&] { b_done = sim.now(); });
  const FlowId c = net.start(v[1], v[2], 1e9, [&] { c_done = sim.now(); });
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(a), 15 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(b), 25 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(c), 15 * kGBps);
  sim.run();
  EXPECT_EQ(b_done, 40 * kMillisecond);
  const Time rest = time_from_seconds(0.4e9 / (15 * kGBps));
  EXPECT_NEAR(a_done, 40 * kMillisecond + rest, 1);
  EXPECT_NEAR(c_done, 40 * kMillisecond + rest, 1);
}

TEST(FlowNetworkTest, FlowAloneOnANarrowLinkIsBottleneckedThere) {
  // Flow f crosses L1 (10 GB/s, only f) then L2 (100 GB/s, shared with g). f's fair share on L2
  // would be 50, but L1 caps it at 10; g gets the remaining 90.
  Chain chain({10 * kGBps, 100 * kGBps}, {0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const FlowId f = net.start(chain.v[0], chain.v[2], 1e12, {});
  const FlowId g = net.start(chain.v[1], chain.v[2], 1e12, {});
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(f), 10 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(g), 90 * kGBps);
}

TEST(FlowNetworkTest, RateCapsActLikePrivateLinks) {
  // On a 100 GB/s link: a flow capped at 20 GB/s gets 20, the uncapped one the other 80. A lone
  // capped flow gets its cap; a cap above the fair share does not bind (two at 50).
  Chain chain({100 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const FlowId capped = net.start(chain.v[0], chain.v[1], 1e12, {}, {}, 20 * kGBps);
  const FlowId free = net.start(chain.v[0], chain.v[1], 1e12, {});
  sim.run_until(1);
  EXPECT_DOUBLE_EQ(net.rate(capped), 20 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(free), 80 * kGBps);

  Simulation sim2;
  FlowNetwork net2(sim2, chain.topology);
  Time done = -1;
  net2.start(
      chain.v[0], chain.v[1], 1e9, [&] { done = sim2.now(); }, {}, 10 * kGBps);
  const FlowId a = net2.start(chain.v[0], chain.v[1], 1e12, {}, {}, 70 * kGBps);
  const FlowId b = net2.start(chain.v[0], chain.v[1], 1e12, {}, {}, 70 * kGBps);
  sim2.run_until(1);
  EXPECT_DOUBLE_EQ(net2.rate(a), 45 * kGBps);  // (100 - 10) / 2, below their 70 cap
  EXPECT_DOUBLE_EQ(net2.rate(b), 45 * kGBps);
  sim2.run_until(200 * kMillisecond);
  EXPECT_EQ(done, 100 * kMillisecond);  // 1 GB at its 10 GB/s cap
}

TEST(FlowNetworkTest, TextbookEqualCapacitiesGiveHalfToEveryFlow) {
  // Bertsekas & Gallager's example: with equal capacities C the long flow and each short flow
  // are all bottlenecked at C/2.
  Chain chain({8 * kGBps, 8 * kGBps, 8 * kGBps}, {0, 0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const auto& v = chain.v;
  std::vector<FlowId> ids = {net.start(v[0], v[3], 1e12, {}), net.start(v[0], v[1], 1e12, {}),
                             net.start(v[1], v[2], 1e12, {}), net.start(v[2], v[3], 1e12, {})};
  sim.run_until(1);
  for (const FlowId id : ids) EXPECT_DOUBLE_EQ(net.rate(id), 4 * kGBps);
}

TEST(FlowNetworkTest, CompletionMovesEarlierWhenAnotherFlowFinishes) {
  // 1 GB and 3 GB share 100 GB/s: both at 50 until the small one ends at 20 ms; the big one has
  // 2 GB left, now at 100 GB/s: 20 ms more, done at 40 ms (not the 60 ms it was first due).
  Chain chain({100 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  Time small_done = -1;
  Time big_done = -1;
  net.start(chain.v[0], chain.v[1], 1e9, [&] { small_done = sim.now(); });
  net.start(chain.v[0], chain.v[1], 3e9, [&] { big_done = sim.now(); });
  sim.run();
  EXPECT_EQ(small_done, 20 * kMillisecond);
  EXPECT_EQ(big_done, 40 * kMillisecond);
}

TEST(FlowNetworkTest, FlowsFinishingOneByOneFreeTheirShareToTheRest) {
  // Five flows of 10..50 GB on one 50 GB/s link, the 50 GB one capped at 12 GB/s. Until 1 s all
  // get 10 (the cap does not bind). Then 10, 20, 30, 40 GB are left: the capped flow gets 12, the
  // others (50 - 12) / 3 = 38/3, so the 10 GB flow ends at 1 + 30/38 = 34/19 s; then two flows at
  // (50 - 12) / 2 = 19 with 10 and 20 GB left: the first ends 10/19 s later (44/19 s); the last
  // uncapped one, 10 GB left, gets 38: 10/38 s later (49/19 s). The capped flow runs at 12 from
  // 1 s on with 40 GB left: done at 1 + 40/12 = 13/3 s. The solve at 1 s reuses the first
  // solve's compact copy (one flow of five gone); the later ones, with two or more gone, make a
  // new one.
  Chain chain({50 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  std::vector<double> done(5, -1);
  for (int i = 0; i < 5; ++i) {
    net.start(
        chain.v[0], chain.v[1], (i + 1) * 10 * kGBps, [&, i] { done[i] = to_seconds(sim.now()); },
        {}, i == 4 ? 12 * kGBps : FlowNetwork::kUncapped);
  }
  sim.run();
  EXPECT_NEAR(done[0], 1.0, 1e-9);
  EXPECT_NEAR(done[1], 34.0 / 19.0, 1e-9);
  EXPECT_NEAR(done[2], 44.0 / 19.0, 1e-9);
  EXPECT_NEAR(done[3], 49.0 / 19.0, 1e-9);
  EXPECT_NEAR(done[4], 13.0 / 3.0, 1e-9);
  EXPECT_EQ(net.counters().compact_reuses, 1u);
}

TEST(FlowNetworkTest, AFinishedFlowsIdReusedElsewhereLeavesItsOldLinkAlone) {
  // Links L1 and L2 of 100 GB/s in a chain. A (3 GB) and B (1 GB) share L1 at 50 GB/s; B ends at
  // 20 ms with A 2 GB short. Then C (1 GB, on L2 alone: B's id, reused) and D (1 GB, on L1 with
  // A) start: C at 100 GB/s ends at 30 ms; A and D at 50 GB/s each, D ends at 40 ms with A 1 GB
  // short, which alone at 100 GB/s ends at 50 ms. B's entry stays on L1's list, finished, while
  // C runs under its id on L2. (Rates come from each flow's route, so a stale entry taken for
  // live would only make L1's search reach C; the times check that C is rated on L2 alone and
  // that A and D share L1 two ways.)
  Chain chain({100 * kGBps, 100 * kGBps}, {0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const auto& v = chain.v;
  std::vector<Time> done(4, -1);
  FlowId c = 0;
  net.start(v[0], v[1], 3e9, [&] { done[0] = sim.now(); });
  const FlowId b = net.start(v[0], v[1], 1e9, [&] {
    done[1] = sim.now();
    c = net.start(v[1], v[2], 1e9, [&] { done[2] = sim.now(); });
    net.start(v[0], v[1], 1e9, [&] { done[3] = sim.now(); });
  });
  sim.run();
  EXPECT_EQ(c, b);
  EXPECT_EQ(done, (std::vector<Time>{50 * kMillisecond, 20 * kMillisecond, 30 * kMillisecond,
                                     40 * kMillisecond}));
}

TEST(FlowNetworkTest, CompletionMovesLaterWhenAFlowJoins) {
  // 2 GB alone at 100 GB/s is due at 20 ms. At 10 ms a 1 GB flow joins: the first has 1 GB
  // left, both now get 50 GB/s and both finish 20 ms later, at 30 ms.
  Chain chain({100 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  std::vector<Time> done(2, -1);
  net.start(chain.v[0], chain.v[1], 2e9, [&] { done[0] = sim.now(); });
  sim.schedule_at(10 * kMillisecond,
                  [&] { net.start(chain.v[0], chain.v[1], 1e9, [&] { done[1] = sim.now(); }); });
  sim.run();
  EXPECT_EQ(done[0], 30 * kMillisecond);
  EXPECT_EQ(done[1], 30 * kMillisecond);
}

TEST(FlowNetworkTest, LatencyIsPaidOnceAfterTransmission) {
  // Flow A (1 MB) starts alone on a 100 GB/s link with 5 us latency; flow B (1 GB) joins at 5 us.
  // A sends 0.5 MB alone in 5 us, then the last 0.5 MB at 50 GB/s in 10 us: transmitted at
  // 15 us, arrived at 15 + 5 = 20 us.
  Chain chain({100 * kGBps}, {5 * kMicrosecond});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  Time arrived = -1;
  Time transmitted = -1;
  net.start(
      chain.v[0], chain.v[1], 1e6, [&] { arrived = sim.now(); }, [&] { transmitted = sim.now(); });
  sim.schedule_at(5 * kMicrosecond, [&] { net.start(chain.v[0], chain.v[1], 1e9, {}); });
  sim.run();
  EXPECT_EQ(transmitted, 15 * kMicrosecond);
  EXPECT_EQ(arrived, 20 * kMicrosecond);
}

TEST(FlowNetworkTest, ZeroByteFlowOnlyPaysLatency) {
  Chain chain({100 * kGBps, 100 * kGBps}, {kMicrosecond, 3 * kMicrosecond});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  Time done = -1;
  net.start(chain.v[0], chain.v[2], 0.0, [&] { done = sim.now(); });
  sim.run();
  EXPECT_EQ(done, 4 * kMicrosecond);
}

TEST(FlowNetworkTest, ResolvesOnlyTheComponentThatChanged) {
  // Two separate links. A flow on link 1 must keep its rate (no re-rating) when flows come and go
  // on link 2.
  Topology topology;
  const VertexId a = topology.add_vertex("a", false);
  const VertexId b = topology.add_vertex("b", false);
  const VertexId c = topology.add_vertex("c", false);
  const VertexId d = topology.add_vertex("d", false);
  topology.add_link(a, b, 10 * kGBps, 0);
  topology.add_link(c, d, 10 * kGBps, 0);
  Simulation sim;
  FlowNetwork net(sim, topology);
  Time long_done = -1;
  // 10 GB at 10 GB/s: 1 s, alone on its link, so rated as it starts (no solve).
  net.start(a, b, 1e10, [&] { long_done = sim.now(); });
  sim.run_until(1);
  EXPECT_EQ(net.counters().solves, 0u);
  EXPECT_EQ(net.counters().flows_rerated, 0u);
  for (int i = 0; i < 5; ++i) {
    sim.schedule_at((i + 1) * kMillisecond, [&] {
      net.start(c, d, 1e6, {});
      net.start(c, d, 1e6, {});
    });
  }
  sim.run();
  // Each pair shares link 2: one solve rating both (5 GB/s each, finishing together); the long
  // flow was never re-rated and ends at 1 s.
  EXPECT_EQ(net.counters().solves, 5u);
  EXPECT_EQ(net.counters().flows_rerated, 10u);
  EXPECT_EQ(long_done, kSecond);
}

TEST(FlowNetworkTest, AComponentsTimesDoNotDependOnOtherTraffic) {
  // Flows on links a-b and b-c (capped, unequal, starting apart) finish at the same picosecond
  // whether or not a larger, separate set of flows on d-e comes and goes meanwhile (which makes
  // the solver re-solve every active flow instead of searching for the component).
  // By hand for flow 0 (0.1 GB on a-b from 0): alone at 10 GB/s to 3 ms (0.07 GB left); then
  // beside flow 1 (a-c, capped at 3 GB/s) at 7 GB/s; from 6 ms flow 2 (b-c) takes 4 of b-c's 7
  // (flow 1 keeps its cap), flow 0 still 7 (0.049 GB left, 0.028 GB at 9 ms); from 9 ms flow 3
  // (a-c) shares b-c three ways (7/3 each, below flow 1's cap), leaving flow 0 10 - 14/3 = 16/3
  // GB/s on a-b: 0.028 GB / (16/3 GB/s) = 5.25 ms, done at 14.25 ms.
  Topology topology;
  const VertexId a = topology.add_vertex("a", true);
  const VertexId b = topology.add_vertex("b", true);
  const VertexId c = topology.add_vertex("c", true);
  const VertexId d = topology.add_vertex("d", true);
  const VertexId e = topology.add_vertex("e", true);
  topology.add_link(a, b, 10 * kGBps, 0);
  topology.add_link(b, c, 7 * kGBps, 0);
  topology.add_link(d, e, 30 * kGBps, 0);
  auto run = [&](bool other_traffic) {
    Simulation sim;
    FlowNetwork net(sim, topology);
    std::vector<Time> done(4, -1);
    const std::vector<std::pair<VertexId, VertexId>> ends = {{a, b}, {a, c}, {b, c}, {a, c}};
    for (int i = 0; i < 4; ++i) {
      sim.schedule_at(i * 3 * kMillisecond, [&, i] {
        net.start(
            ends[i].first, ends[i].second, 1e8 * (i + 1), [&, i] { done[i] = sim.now(); }, {},
            i == 1 ? 3 * kGBps : FlowNetwork::kUncapped);
      });
    }
    if (other_traffic) {
      for (int i = 0; i < 40; ++i) {
        sim.schedule_at(i * 700 * kMicrosecond, [&, i] { net.start(d, e, 3e7 * (1 + i % 7), {}); });
      }
    }
    sim.run();
    return done;
  };
  const std::vector<Time> alone = run(false);
  EXPECT_NEAR(static_cast<double>(alone[0]), 14.25 * kMillisecond, 1.0 * kNanosecond);
  EXPECT_EQ(run(true), alone);
  for (const Time t : alone) EXPECT_GT(t, 0);
}

TEST(FlowNetworkTest, FlowsStartingApartFromTheLastComponentAreSearchedForAgain) {
  // Two flows A (on L1) are solved together: their component is every active flow. Two flows B
  // on L2 and two C on L3 start later, apart from A: the next solve searches from their links
  // and solves those four, not A with them (as a ring's next step would be, every link on its
  // own). 2 + 4 flows solved. (A flow alone on its links is rated without a solve; each link
  // here carries two.)
  Chain chain({10 * kGBps, 10 * kGBps, 10 * kGBps}, {0, 0, 0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  const auto& v = chain.v;
  net.start(v[0], v[1], 1e9, {});
  net.start(v[0], v[1], 1e9, {});
  sim.schedule_at(kMillisecond, [&] {
    for (int i = 0; i < 2; ++i) {
      net.start(v[1], v[2], 1e9, {});
      net.start(v[2], v[3], 1e9, {});
    }
  });
  sim.run();
  EXPECT_EQ(net.counters().solves, 2u);
  EXPECT_EQ(net.counters().flows_solved, 6u);
}

TEST(FlowNetworkTest, SimultaneousChangesAreSolvedOnce) {
  Chain chain({100 * kGBps}, {0});
  Simulation sim;
  FlowNetwork net(sim, chain.topology);
  for (int i = 0; i < 100; ++i) net.start(chain.v[0], chain.v[1], 1e9, {});
  sim.run();
  // One solve when all start; all finish together, leaving nothing to solve after.
  EXPECT_EQ(net.counters().solves, 1u);
  EXPECT_EQ(net.counters().flows_completed, 100u);
  EXPECT_EQ(sim.now(), 1 * kSecond);  // 100 GB over 100 GB/s
}

// A star of six endpoints around a hub, each with a link to it and one back of 1..10 GB/s drawn
// from `rng`.
struct RandomStar {
  static constexpr int kEndpoints = 6;
  Topology topology;
  std::vector<VertexId> ends;
  explicit RandomStar(std::mt19937_64& rng) {
    const VertexId hub = topology.add_vertex("hub", true);
    for (int i = 0; i < kEndpoints; ++i) {
      ends.push_back(topology.add_vertex("e" + std::to_string(i), false));
      topology.add_link(ends.back(), hub, static_cast<double>(1 + rng() % 10) * kGBps, 0);
      topology.add_link(hub, ends.back(), static_cast<double>(1 + rng() % 10) * kGBps, 0);
    }
  }
};

// The definition of a max-min fair allocation, for `flows` (transmitting): no link over its
// capacity, and every flow at its cap (`caps` by flow id; none when empty) or with a saturated
// link on which no flow gets more than it.
void expect_max_min(const FlowNetwork& net, const Topology& topology,
                    const std::vector<FlowId>& flows, const std::vector<double>& caps,
                    const std::string& context) {
  std::vector<double> load(topology.link_count(), 0.0);
  std::vector<double> max_rate(topology.link_count(), 0.0);
  for (const FlowId id : flows) {
    for (const LinkId l : net.shared_router()->links(net.route_of(id))) {
      load[l] += net.rate(id);
      max_rate[l] = std::max(max_rate[l], net.rate(id));
    }
  }
  for (LinkId l = 0; l < topology.link_count(); ++l) {
    EXPECT_LE(load[l], topology.link(l).bandwidth_bytes_per_s * (1 + 1e-12)) << context;
  }
  for (const FlowId id : flows) {
    bool held = !caps.empty() && net.rate(id) >= caps[id] * (1 - 1e-12);
    for (const LinkId l : net.shared_router()->links(net.route_of(id))) {
      const double capacity = topology.link(l).bandwidth_bytes_per_s;
      if (load[l] >= capacity * (1 - 1e-12) && net.rate(id) >= max_rate[l] * (1 - 1e-12)) {
        held = true;
      }
    }
    EXPECT_TRUE(held) << context << " flow " << id;
  }
}

TEST(FlowNetworkTest, AFlowLeavingLinksWithCapacityToSpareChangesNoRateAndNeedsNoSolve) {
  // Senders s1, s2 reach receivers r1, r2 through a hub: s1's and s2's links 100 GB/s, r1's and
  // r2's 10 GB/s. A (10 GB, s1 -> r1) has r1's link alone: 10 GB/s. B and C (20 GB each, s1 -> r2
  // and s2 -> r2) share r2's link: 5 GB/s each. s1's link carries 15 of its 100 GB/s.
  // A leaves at 1 s, from s1's link (not full: no rate there is held by it) and r1's (now
  // empty): nothing is solved again, and B and C keep 5 GB/s to 4 s. One solve in all (when the
  // three start).
  Topology topology;
  const VertexId hub = topology.add_vertex("hub", true);
  std::vector<VertexId> v;
  for (const char* name : {"s1", "s2", "r1", "r2"}) v.push_back(topology.add_vertex(name, false));
  topology.add_link(v[0], hub, 100 * kGBps, 0);
  topology.add_link(v[1], hub, 100 * kGBps, 0);
  topology.add_link(hub, v[2], 10 * kGBps, 0);
  topology.add_link(hub, v[3], 10 * kGBps, 0);
  Simulation sim;
  FlowNetwork net(sim, topology);
  std::vector<Time> done(3, -1);
  net.start(v[0], v[2], 1e10, [&] { done[0] = sim.now(); });
  net.start(v[0], v[3], 2e10, [&] { done[1] = sim.now(); });
  net.start(v[1], v[3], 2e10, [&] { done[2] = sim.now(); });
  sim.run();
  EXPECT_EQ(done, (std::vector<Time>{kSecond, 4 * kSecond, 4 * kSecond}));
  EXPECT_EQ(net.counters().solves, 1u);

  // With s1's link at 8 GB/s it is full: A and B get 4 GB/s each (its share, below r2's 5), C
  // the 6 GB/s left on r2's link. A leaves at 2.5 s (B has 10 GB left, C 5 GB): B and C share
  // r2's link at 5 GB/s, C done at 3.5 s; B, alone, takes s1's 8 GB/s for its last 5 GB:
  // 0.625 s more, 4.125 s. Solves: at the start, when A leaves, when C leaves.
  Topology narrow;
  const VertexId h = narrow.add_vertex("hub", true);
  std::vector<VertexId> w;
  for (const char* name : {"s1", "s2", "r1", "r2"}) w.push_back(narrow.add_vertex(name, false));
  narrow.add_link(w[0], h, 8 * kGBps, 0);
  narrow.add_link(w[1], h, 100 * kGBps, 0);
  narrow.add_link(h, w[2], 10 * kGBps, 0);
  narrow.add_link(h, w[3], 10 * kGBps, 0);
  Simulation sim2;
  FlowNetwork net2(sim2, narrow);
  std::fill(done.begin(), done.end(), -1);
  net2.start(w[0], w[2], 1e10, [&] { done[0] = sim2.now(); });
  net2.start(w[0], w[3], 2e10, [&] { done[1] = sim2.now(); });
  net2.start(w[1], w[3], 2e10, [&] { done[2] = sim2.now(); });
  sim2.run();
  EXPECT_EQ(done,
            (std::vector<Time>{2500 * kMillisecond, 4125 * kMillisecond, 3500 * kMillisecond}));
  EXPECT_EQ(net2.counters().solves, 3u);
}

// A hub with endpoints e0, e1, ...: each endpoint's link to the hub and back, of the given
// bandwidths.
struct Hub {
  Topology topology;
  std::vector<VertexId> e;
  Hub(const std::vector<double>& up, const std::vector<double>& down) {
    const VertexId hub = topology.add_vertex("hub", true);
    for (std::size_t i = 0; i < up.size(); ++i) {
      e.push_back(topology.add_vertex("e" + std::to_string(i), false));
      topology.add_link(e.back(), hub, up[i], 0);
      topology.add_link(hub, e.back(), down[i], 0);
    }
  }
};

TEST(FlowNetworkTest, AFlowOutsideThePartAboveItsNewShareJoinsIt) {
  // X (1 GB, e0 -> e1) and Y (4.4 GB, e2 -> e1) share e1's 10 GB/s link: 5 GB/s each; V
  // (2.6 GB, e2 -> e3) takes the 7 GB/s Y leaves on e2's 12 GB/s link. Two flows B (e4 -> e3)
  // share e4's 4 GB/s link and meet V on e3's (11 of 100 GB/s). X leaves at 0.2 s: only the
  // flows of the link it frees are solved again (Y), on what the others leave: 12 - 7 = 5 GB/s
  // on e2's link, so Y would stay at 5, below V there. V joins; the two share e2's link at
  // 6 GB/s each (the full solve's answer), the B keep 2 GB/s. V's last 1.2 GB take 0.2 s more:
  // 0.4 s. Y's last 2.2 GB then go at e1's 10 GB/s: 0.62 s. Solves: the start (all five
  // flows, none with a rate yet: a full filling), X's finish (Y and V), V's (Y alone: the B,
  // apart from it now, keep their rates).
  Hub hub({100 * kGBps, 100 * kGBps, 12 * kGBps, 100 * kGBps, 4 * kGBps},
          {100 * kGBps, 10 * kGBps, 100 * kGBps, 100 * kGBps, 100 * kGBps});
  const auto& e = hub.e;
  Simulation sim;
  FlowNetwork net(sim, hub.topology);
  std::vector<Time> done(3, -1);
  net.start(e[0], e[1], 1e9, [&] { done[0] = sim.now(); });
  const FlowId y = net.start(e[2], e[1], 4.4e9, [&] { done[1] = sim.now(); });
  const FlowId v = net.start(e[2], e[3], 2.6e9, [&] { done[2] = sim.now(); });
  const FlowId b = net.start(e[4], e[3], 1e10, {});
  net.start(e[4], e[3], 1e10, {});
  sim.run_until(300 * kMillisecond);
  EXPECT_DOUBLE_EQ(net.rate(y), 6 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(v), 6 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(b), 2 * kGBps);
  sim.run_until(kSecond);
  EXPECT_EQ(done[0], 200 * kMillisecond);
  EXPECT_NEAR(static_cast<double>(done[2]), 400.0 * kMillisecond, 2.0);
  EXPECT_NEAR(static_cast<double>(done[1]), 620.0 * kMillisecond, 2.0);
  EXPECT_EQ(net.counters().solves, 3u);
  EXPECT_EQ(net.counters().local_solves, 2u);
  EXPECT_EQ(net.counters().flows_solved, 5u + 2u + 1u);
}

TEST(FlowNetworkTest, AFlowHeldAtALinkThePartLeavesNotFullJoinsIt) {
  // Y (e2 -> e1) and H (e0 -> e1) share e1's 10 GB/s link at 5 GB/s; four flows B (e0 -> e4)
  // share e4's 8 GB/s link at 2 GB/s and meet H on e0's link (13 of 100 GB/s). At 0.1 s N
  // (e2 -> e3) joins Y on e2's 6 GB/s link: the flows of N's links (Y, N) are solved again, at
  // 3 GB/s each. e1's link then carries 5 + 3 of its 10 GB/s: H, held there, joins and takes the
  // 7 GB/s left. The B keep their 2 GB/s and are not solved again: 3 of the 7 flows are.
  Hub hub({100 * kGBps, 100 * kGBps, 6 * kGBps, 100 * kGBps, 100 * kGBps},
          {100 * kGBps, 10 * kGBps, 100 * kGBps, 100 * kGBps, 8 * kGBps});
  const auto& e = hub.e;
  Simulation sim;
  FlowNetwork net(sim, hub.topology);
  const FlowId y = net.start(e[2], e[1], 1e10, {});
  const FlowId h = net.start(e[0], e[1], 1e10, {});
  std::vector<FlowId> b;
  for (int k = 0; k < 4; ++k) b.push_back(net.start(e[0], e[4], 1e10, {}));
  FlowId n = 0;
  sim.schedule_at(100 * kMillisecond, [&] { n = net.start(e[2], e[3], 1e10, {}); });
  sim.run_until(50 * kMillisecond);
  EXPECT_DOUBLE_EQ(net.rate(y), 5 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(h), 5 * kGBps);
  sim.run_until(200 * kMillisecond);
  EXPECT_DOUBLE_EQ(net.rate(y), 3 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(n), 3 * kGBps);
  EXPECT_DOUBLE_EQ(net.rate(h), 7 * kGBps);
  for (const FlowId id : b) EXPECT_DOUBLE_EQ(net.rate(id), 2 * kGBps);
  EXPECT_EQ(net.counters().solves, 2u);
  EXPECT_EQ(net.counters().local_solves, 1u);
  EXPECT_EQ(net.counters().flows_solved, 6u + 3u);
}

TEST(FlowNetworkTest, AComponentsCopyServesAgainWhileItsFlowsOnlyFinish) {
  // Link 1 (10 GB/s) carries ten flows of 1..10 GB from 1 ms; link 2, apart, two long ones from
  // 0. Link 1 stays full until the last of the ten leaves: 55 GB take 5.5 s, so the last leaves
  // at 5.501 s; the first (1 GB at 1 GB/s) at 1.001 s, the second (1 GB left at 10/9 GB/s) 0.9 s
  // later. Each finish re-solves link 1's component (link 2's is never touched). Its compact copy
  // (made when the ten started: not every active flow) serves again while fewer than a quarter
  // of its flows have finished: copies of 10, 7, 5, 3, 2 flows; reused after the 1st, 2nd, 4th
  // and 6th finish. Solves: link 2's start, link 1's start, and the first nine finishes.
  Topology topology;
  std::vector<VertexId> v;
  for (int i = 0; i < 4; ++i) v.push_back(topology.add_vertex("v" + std::to_string(i), false));
  topology.add_link(v[0], v[1], 10 * kGBps, 0);
  topology.add_link(v[2], v[3], 10 * kGBps, 0);
  Simulation sim;
  FlowNetwork net(sim, topology);
  net.start(v[2], v[3], 1e12, {});
  net.start(v[2], v[3], 1e12, {});
  std::vector<Time> done(10, -1);
  sim.schedule_at(kMillisecond, [&] {
    for (int k = 0; k < 10; ++k) {
      net.start(v[0], v[1], 1e9 * (k + 1), [&, k] { done[k] = sim.now(); });
    }
  });
  sim.run_until(10 * kSecond);
  EXPECT_EQ(done[0], 1001 * kMillisecond);
  EXPECT_NEAR(static_cast<double>(done[1]), 1901.0 * kMillisecond, 1.0);
  EXPECT_NEAR(static_cast<double>(done[9]), 5501.0 * kMillisecond, 1.0);
  EXPECT_EQ(net.counters().solves, 11u);
  EXPECT_EQ(net.counters().compact_reuses, 4u);
}

TEST(FlowNetworkTest, SaysWhenItsSolvesHaveChangedMoreRatesThanTheLimit) {
  // Ten flows of 1..10 GB on one 10 GB/s link: the start gives 10 rates (1 GB/s each), the first
  // finish (1 s) changes the other 9 (to 10/9 GB/s), the second (1.9 s) 8: 10, 19, 27 changes.
  // A limit of 20 is passed at 1.9 s; one of 10 + 5 per simulated second (15 at 1 s) at 1 s.
  // The network carries on after it says so, once.
  for (const auto& [first, per_second, at] :
       {std::tuple{20.0, 0.0, 1900 * kMillisecond}, std::tuple{10.0, 5.0, 1000 * kMillisecond}}) {
    Chain chain({10 * kGBps}, {0});
    Simulation sim;
    FlowNetwork net(sim, chain.topology);
    std::vector<Time> said;
    net.set_rate_change_limit(first, per_second, [&] { said.push_back(sim.now()); });
    for (int k = 0; k < 10; ++k) net.start(chain.v[0], chain.v[1], 1e9 * (k + 1), {});
    sim.run();
    ASSERT_EQ(said.size(), 1u) << first;
    EXPECT_NEAR(static_cast<double>(said[0]), static_cast<double>(at), 1.0) << first;
    EXPECT_EQ(net.counters().flows_rerated, 55u);  // 10 + 9 + ... + 1
    EXPECT_NEAR(static_cast<double>(sim.now()), 5.5 * kSecond, 1.0);
  }
}

TEST(FlowNetworkTest, RatesStayMaxMinAsFlowsComeAndGo) {
  // Random flows (some capped) start at random times over a star of random links and finish as
  // their bytes run out. Every 2 ms, the flows still transmitting must have a max-min fair
  // allocation: no link over its capacity, and every flow at its cap or with a saturated link
  // on which no flow gets more than it. This holds only if every finish that frees bandwidth
  // some flow can take is solved again.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    const RandomStar star(rng);
    const Topology& topology = star.topology;
    const std::vector<VertexId>& ends = star.ends;
    const int endpoints = RandomStar::kEndpoints;
    Simulation sim;
    FlowNetwork net(sim, topology);
    std::vector<FlowId> live;  // transmitting
    std::vector<double> caps;  // by flow id
    for (int f = 0; f < 40; ++f) {
      const auto src = static_cast<int>(rng() % endpoints);
      const auto dst = (src + 1 + static_cast<int>(rng() % (endpoints - 1))) % endpoints;
      const double bytes = static_cast<double>(1 + rng() % 50) * 1e7;
      const double cap =
          rng() % 4 == 0 ? static_cast<double>(1 + rng() % 3) * kGBps : FlowNetwork::kUncapped;
      const Time at = static_cast<Time>(rng() % 40) * kMillisecond;
      sim.schedule_at(at, [&, src, dst, bytes, cap] {
        auto id = std::make_shared<FlowId>();
        *id = net.start(
            ends[src], ends[dst], bytes, [] {},
            [&, id] { live.erase(std::find(live.begin(), live.end(), *id)); }, cap);
        live.push_back(*id);
        if (caps.size() <= *id) caps.resize(*id + 1);
        caps[*id] = cap;
      });
    }
    int checks = 0;
    for (Time t = kMillisecond / 2; t < 400 * kMillisecond; t += 2 * kMillisecond) {
      sim.run_until(t);
      if (live.empty()) continue;
      ++checks;
      expect_max_min(net, topology, live, caps,
                     "trial " + std::to_string(trial) + " at " + std::to_string(t));
    }
    EXPECT_GT(checks, 5) << trial;
  }
}

TEST(FlowNetworkTest, RandomNetworksSatisfyMaxMinConditions) {
  // For random flows over a star of links: every link is within capacity, and every flow has a
  // bottleneck link that is saturated and on which no flow gets more than it (the definition of
  // a max-min fair allocation).
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const RandomStar star(rng);
    const Topology& topology = star.topology;
    const std::vector<VertexId>& ends = star.ends;
    const int endpoints = RandomStar::kEndpoints;
    Simulation sim;
    FlowNetwork net(sim, topology);
    std::vector<FlowId> ids;
    for (int f = 0; f < 15; ++f) {
      const auto src = static_cast<int>(rng() % endpoints);
      const auto dst = (src + 1 + static_cast<int>(rng() % (endpoints - 1))) % endpoints;
      ids.push_back(net.start(ends[src], ends[dst], 1e15, {}));
    }
    sim.run_until(1);
    expect_max_min(net, topology, ids, {}, "trial " + std::to_string(trial));
  }
}

}  // namespace
}  // namespace trainsim
