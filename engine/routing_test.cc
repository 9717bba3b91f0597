#include "engine/routing.h"

#include <deque>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "engine/simulation.h"

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

TEST(RouterTest, RoutingByDestinationTakesTheDestinationsPortModuloTheSpines) {
  // leaf_b's links out: to spine0, to spine1, then to b0..b31 (ports 2..33). Routing by
  // destination, b_i is reached through spine (i + 2) mod 2 = i mod 2 from every source, the
  // way D-mod-k fills the forwarding tables; asked in either order, the same routes.
  TwoSpine s;
  s.t.set_route_by_destination(true);
  for (const bool sources_first : {true, false}) {
    Router router(s.t);
    for (std::size_t j = 0; j < s.hosts_b.size(); ++j) {
      for (std::size_t i = 0; i < s.hosts_a.size(); ++i) {
        const VertexId a = s.hosts_a[sources_first ? j : i];
        const VertexId b = s.hosts_b[sources_first ? i : j];
        const std::size_t index = sources_first ? i : j;
        const auto links = router.links(router.route(a, b));
        EXPECT_EQ(s.t.link(links[1]).to, index % 2 == 0 ? s.spine0 : s.spine1);
        // And back: a_k is reached through spine k mod 2 from every b.
        const auto back = router.links(router.route(b, a));
        const std::size_t k = sources_first ? j : i;
        EXPECT_EQ(s.t.link(back[1]).to, k % 2 == 0 ? s.spine0 : s.spine1);
      }
    }
  }
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

// The route a breadth-first search from the source alone gives (every vertex's hop count, then
// the walk back from the destination picking among the links from one hop nearer by the pair's
// hash, in link id order): what Router's bidirectional search must reproduce link for link.
std::vector<LinkId> reference_route(const Topology& t, VertexId src, VertexId dst) {
  std::vector<int> hops(t.vertex_count(), -1);
  hops[src] = 0;
  std::deque<VertexId> queue = {src};
  while (!queue.empty()) {
    const VertexId v = queue.front();
    queue.pop_front();
    if (v != src && !t.vertex(v).transit) continue;  // endpoints do not forward
    for (LinkId l = 0; l < t.link_count(); ++l) {
      if (t.link(l).from == v && hops[t.link(l).to] < 0) {
        hops[t.link(l).to] = hops[v] + 1;
        queue.push_back(t.link(l).to);
      }
    }
  }
  if (hops[dst] < 0) return {LinkId(-1)};
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  std::vector<LinkId> route(hops[dst]);
  VertexId v = dst;
  for (int hop = hops[dst]; hop > 0; --hop) {
    std::vector<LinkId> nearer;
    for (LinkId l = 0; l < t.link_count(); ++l) {
      const VertexId u = t.link(l).from;
      if (t.link(l).to == v && hops[u] == hop - 1 && (u == src || t.vertex(u).transit)) {
        nearer.push_back(l);
      }
    }
    const std::size_t pick = nearer.size() == 1 ? 0 : mix64(key ^ mix64(hop)) % nearer.size();
    route[hop - 1] = nearer[pick];
    v = t.link(nearer[pick]).from;
  }
  return route;
}

TEST(RouterTest, BidirectionalSearchGivesTheRoutesOfAFullSearch) {
  // Random fabrics: switches joined at random (some links one-way, some doubled), endpoints on
  // one or two switches; every ordered pair of vertices, endpoints and switches, routed both
  // ways and compared link for link (unreachable pairs must throw). Asked destination by
  // destination, every route is a pairwise search; source by source, once a source's pairwise
  // searches have followed as many links as the fabric has, its other routes come from one full
  // search from it, and the walk back reuses the choices it kept at each vertex for that source:
  // both must give the reference routes.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    Topology t;
    const int switches = 2 + static_cast<int>(rng() % 14);
    const int hosts = 1 + static_cast<int>(rng() % 20);
    for (int i = 0; i < switches; ++i) t.add_vertex("s" + std::to_string(i), true);
    for (int i = 0; i < hosts; ++i) t.add_vertex("h" + std::to_string(i), false);
    const int links = switches + static_cast<int>(rng() % (2 * switches));
    for (int i = 0; i < links; ++i) {
      const auto a = static_cast<VertexId>(rng() % switches);
      const auto b = static_cast<VertexId>(rng() % switches);
      if (a == b) continue;
      if (rng() % 4 == 0) {
        t.add_link(a, b, 1e9, 1);
      } else {
        t.add_duplex(a, b, 1e9, 1);
      }
    }
    for (int i = 0; i < hosts; ++i) {
      const auto h = static_cast<VertexId>(switches + i);
      t.add_duplex(h, static_cast<VertexId>(rng() % switches), 1e9, 1);
      if (rng() % 2) t.add_duplex(h, static_cast<VertexId>(rng() % switches), 1e9, 1);
      if (i > 0 && rng() % 5 == 0) t.add_duplex(h, h - 1, 1e9, 1);  // endpoint to endpoint
    }
    const auto n = static_cast<VertexId>(t.vertex_count());
    for (const bool by_source : {false, true}) {
      Router router(t);
      for (VertexId i = 0; i < n * n; ++i) {
        const VertexId a = by_source ? i / n : i % n;
        const VertexId b = by_source ? i % n : i / n;
        const std::vector<LinkId> expected =
            a == b ? std::vector<LinkId>{} : reference_route(t, a, b);
        if (expected == std::vector<LinkId>{LinkId(-1)}) {
          EXPECT_THROW(router.route(a, b), RoutingError);
          continue;
        }
        const auto links = router.links(router.route(a, b));
        EXPECT_EQ(std::vector<LinkId>(links.begin(), links.end()), expected)
            << "trial " << trial << ", " << a << " -> " << b << (by_source ? " by source" : "");
      }
    }
  }
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
