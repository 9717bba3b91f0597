#include "engine/routing.h"

#include <set>

#include <gtest/gtest.h>

namespace trainsim {
namespace {

// Two leaves joined through two spines: every leaf-to-leaf route has two equal-cost paths.
struct TwoSpine {
  Topology t;
  std::vector<VertexId> hosts_a, hosts_b;
  VertexId leaf_a, leaf_b, spine0, spine1;
  TwoSpine() {
    leaf_a = t.add_vertex("leaf_a", true);
    leaf_b = t.add_vertex("leaf_b", true);
    spine0 = t.add_vertex("spine0", true);
    spine1 = t.add_vertex("spine1", true);
    for (VertexId spine : {spine0, spine1}) {
      t.add_duplex(leaf_a, spine, 10e9, 100);
      t.add_duplex(leaf_b, spine, 10e9, 100);
    }
    for (int i = 0; i < 32; ++i) {
      hosts_a.push_back(t.add_vertex("a" + std::to_string(i), false));
      t.add_duplex(hosts_a.back(), leaf_a, 40e9, 10);
      hosts_b.push_back(t.add_vertex("b" + std::to_string(i), false));
      t.add_duplex(hosts_b.back(), leaf_b, 25e9, 10);
    }
  }
};

TEST(RouterTest, MinimumHopRouteWithSummedLatencyAndBottleneck) {
  TwoSpine s;
  Router router(s.t);
  const RouteId r = router.route(s.hosts_a[0], s.hosts_b[0]);
  const auto links = router.links(r);
  ASSERT_EQ(links.size(), 4u);  // host -> leaf -> spine -> leaf -> host
  EXPECT_EQ(s.t.link(links[0]).from, s.hosts_a[0]);
  EXPECT_EQ(s.t.link(links[3]).to, s.hosts_b[0]);
  for (std::size_t i = 1; i < links.size(); ++i) {
    EXPECT_EQ(s.t.link(links[i - 1]).to, s.t.link(links[i]).from);
  }
  EXPECT_EQ(router.latency(r), 10 + 100 + 100 + 10);
  EXPECT_DOUBLE_EQ(router.bottleneck_bandwidth(r), 10e9);
  EXPECT_EQ(router.route(s.hosts_a[0], s.hosts_b[0]), r);  // cached
}

TEST(RouterTest, PairsSpreadOverEqualCostPaths) {
  TwoSpine s;
  Router router(s.t);
  std::set<VertexId> spines_used;
  int via_spine0 = 0;
  for (VertexId a : s.hosts_a) {
    for (VertexId b : s.hosts_b) {
      const auto links = router.links(router.route(a, b));
      const VertexId spine = s.t.link(links[1]).to;
      spines_used.insert(spine);
      if (spine == s.spine0) ++via_spine0;
    }
  }
  EXPECT_EQ(spines_used.size(), 2u);
  // 1024 pairs hashed over two paths: expect close to half on each.
  EXPECT_GT(via_spine0, 400);
  EXPECT_LT(via_spine0, 624);
}

TEST(RouterTest, NeverRoutesThroughEndpoints) {
  // a - h - b where h is an endpoint (not transit): no route from a to b.
  Topology t;
  const VertexId a = t.add_vertex("a", false);
  const VertexId h = t.add_vertex("h", false);
  const VertexId b = t.add_vertex("b", false);
  t.add_duplex(a, h, 1e9, 0);
  t.add_duplex(h, b, 1e9, 0);
  Router router(t);
  EXPECT_THROW(router.route(a, b), RoutingError);
  EXPECT_EQ(router.links(router.route(a, h)).size(), 1u);
  // A longer path through a switch is taken instead of the shorter one through the endpoint.
  const VertexId sw = t.add_vertex("sw", true);
  t.add_duplex(a, sw, 1e9, 0);
  const VertexId sw2 = t.add_vertex("sw2", true);
  t.add_duplex(sw, sw2, 1e9, 0);
  t.add_duplex(sw2, b, 1e9, 0);
  Router router2(t);
  EXPECT_EQ(router2.links(router2.route(a, b)).size(), 3u);
}

TEST(RouterTest, RouteToSelfIsEmpty) {
  Topology t;
  const VertexId a = t.add_vertex("a", false);
  Router router(t);
  const RouteId r = router.route(a, a);
  EXPECT_TRUE(router.links(r).empty());
  EXPECT_EQ(router.latency(r), 0);
}

}  // namespace
}  // namespace trainsim
