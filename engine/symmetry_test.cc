#include "engine/symmetry.h"

#include <gtest/gtest.h>

#include "engine/flow_network.h"

namespace trainsim {
namespace {

// Hosts a0, a1 on switch A and b0, b1 on switch B (40 GB/s, 10 ns per host link); A and B joined
// by one 50 GB/s, 100 ns link each way. `b1_latency` is b1's link latency.
struct TwoSwitches {
  Topology t;
  VertexId a0, a1, b0, b1;
  explicit TwoSwitches(Time b1_latency = 10 * kNanosecond) {
    const VertexId sa = t.add_vertex("A", true);
    const VertexId sb = t.add_vertex("B", true);
    t.add_duplex(sa, sb, 50e9, 100 * kNanosecond);
    a0 = t.add_vertex("a0", false);
    a1 = t.add_vertex("a1", false);
    b0 = t.add_vertex("b0", false);
    b1 = t.add_vertex("b1", false);
    t.add_duplex(a0, sa, 40e9, 10 * kNanosecond);
    t.add_duplex(a1, sa, 40e9, 10 * kNanosecond);
    t.add_duplex(b0, sb, 40e9, 10 * kNanosecond);
    t.add_duplex(b1, sb, 40e9, b1_latency);
  }
};

// When each flow of `routes` (all started at once, 1 GB each) arrives.
std::vector<Time> arrivals(Router& router, const std::vector<RouteId>& routes) {
  Simulation sim;
  FlowNetwork net(sim, std::shared_ptr<Router>(&router, [](Router*) {}));
  std::vector<Time> at(routes.size(), 0);
  for (std::size_t f = 0; f < routes.size(); ++f) {
    net.start(routes[f], 1e9, [&sim, &at, f] { at[f] = sim.now(); });
  }
  sim.run();
  return at;
}

TEST(ClassRoutesTest, AClassRouteLoadsTheSharedLinkAsAllItsFlowsDo) {
  // a0->b0 and a1->b1 (class 0) share A->B; b0->a0 and b1->a1 (class 1) share B->A. Each flow
  // gets 50 / 2 = 25 GB/s: 1 GB in 40 ms, after 10 + 100 + 10 ns of latency.
  TwoSwitches s;
  Router router(s.t);
  const std::vector<RouteId> routes = {router.route(s.a0, s.b0), router.route(s.a1, s.b1),
                                       router.route(s.b0, s.a0), router.route(s.b1, s.a1)};
  const std::vector<std::uint32_t> class_of = {0, 0, 1, 1};
  const std::vector<std::uint32_t> representative = {0, 2};
  const auto classes = class_routes(router, routes, class_of, representative);
  ASSERT_TRUE(classes.has_value());
  ASSERT_EQ(classes->size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const RouteId r = (*classes)[c];
    // The representative's three links, and the shared switch link a second time.
    EXPECT_EQ(router.links(r).size(), 4u);
    EXPECT_EQ(router.latency(r), 120 * kNanosecond);
    EXPECT_DOUBLE_EQ(router.bottleneck_bandwidth(r), 25e9);
  }
  const Time expected = 120 * kNanosecond + 40 * kMillisecond;
  for (const Time t : arrivals(router, routes)) EXPECT_EQ(t, expected);
  for (const Time t : arrivals(router, *classes)) EXPECT_EQ(t, expected);
}

TEST(ClassRoutesTest, FlowsAloneOnTheirLinksKeepTheirRoutes) {
  TwoSwitches s;
  Router router(s.t);
  // A ring a0 -> a1 -> b0 -> b1 -> a0 in two classes of alternate hops: no link is shared.
  const std::vector<RouteId> routes = {router.route(s.a0, s.a1), router.route(s.a1, s.b0),
                                       router.route(s.b0, s.b1), router.route(s.b1, s.a0)};
  const auto classes = class_routes(router, routes, std::vector<std::uint32_t>{0, 1, 0, 1},
                                    std::vector<std::uint32_t>{0, 1});
  ASSERT_TRUE(classes.has_value());
  EXPECT_EQ((*classes)[0], routes[0]);
  EXPECT_EQ((*classes)[1], routes[1]);
}

TEST(ClassRoutesTest, FlowsThatMeetOtherTrafficUnevenlyAreNotOneClass) {
  // a0->b0 shares a0's link with a0->a1, a1->b1 does not: at once a0->b0 gets 20 GB/s and
  // a1->b1 30 GB/s, so they cannot move as one class.
  TwoSwitches s;
  Router router(s.t);
  const std::vector<RouteId> routes = {router.route(s.a0, s.b0), router.route(s.a1, s.b1),
                                       router.route(s.a0, s.a1)};
  EXPECT_FALSE(class_routes(router, routes, std::vector<std::uint32_t>{0, 0, 1},
                            std::vector<std::uint32_t>{0, 2})
                   .has_value());
  const auto at = arrivals(router, routes);
  EXPECT_NE(at[0], at[1]);
}

TEST(ClassRoutesTest, FlowsWithOtherLatenciesAreNotOneClass) {
  TwoSwitches s(20 * kNanosecond);
  Router router(s.t);
  const std::vector<RouteId> routes = {router.route(s.a0, s.b0), router.route(s.a1, s.b1)};
  EXPECT_FALSE(
      class_routes(router, routes, std::vector<std::uint32_t>{0, 0}, std::vector<std::uint32_t>{0})
          .has_value());
}

TEST(ClassRoutesTest, AnExplicitLatencyMakesARouteOfItsOwn) {
  TwoSwitches s;
  Router router(s.t);
  const auto links = router.links(router.route(s.a0, s.b0));
  const std::vector<LinkId> copy(links.begin(), links.end());
  const RouteId summed = router.add_route(copy);
  EXPECT_EQ(router.latency(summed), 120 * kNanosecond);
  EXPECT_EQ(router.add_route(copy, 120 * kNanosecond), summed);
  const RouteId other = router.add_route(copy, 5 * kNanosecond);
  EXPECT_NE(other, summed);
  EXPECT_EQ(router.latency(other), 5 * kNanosecond);
  EXPECT_EQ(router.add_route(copy, 5 * kNanosecond), other);
}

}  // namespace
}  // namespace trainsim
