// Routes between vertices of a Topology: minimum-hop paths found by breadth-first search on the
// Boost graph, never passing through a non-transit vertex. Where several minimum-hop paths exist,
// each (source, destination) pair takes one of them chosen by a hash of the pair, which spreads
// pairs over equal-cost paths the way ECMP does. Routes are computed once and cached; the BFS
// results behind them are kept for the 64 sources used most recently only, so memory stays linear
// in the number of routes asked for.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "engine/huge_page_allocator.h"
#include "engine/topology.h"

namespace trainsim {

using RouteId = std::uint32_t;

class RoutingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Router {
 public:
  explicit Router(const Topology& topology);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The route from src to dst; throws RoutingError if dst cannot be reached. src == dst gives the
  // empty route.
  RouteId route(VertexId src, VertexId dst);

  // A route given link by link (not looked up; the same list twice gives the same id): consecutive
  // links need not meet, and
  // a link may appear several times. A flow on it loads each link once per appearance, the way a
  // pipelined ring or tree channel, whose every hop carries the same rate, loads the links its
  // hops share. Latency is the sum over appearances, the bottleneck the smallest
  // bandwidth / appearances.
  RouteId add_route(std::span<const LinkId> links);

  std::span<const LinkId> links(RouteId id) const {
    const RouteInfo& info = routes_[id];
    return {route_links_.data() + info.first, info.length};
  }
  // Sum of the latencies of the route's links.
  Time latency(RouteId id) const { return routes_[id].latency; }
  // Smallest link bandwidth on the route (infinity for the empty route).
  double bottleneck_bandwidth(RouteId id) const { return routes_[id].bottleneck_bytes_per_s; }
  std::size_t route_count() const { return routes_.size(); }
  const Topology& topology() const { return topology_; }

 private:
  struct ShortestPathDag;
  struct RouteInfo {
    std::uint64_t first;
    std::uint32_t length;
    Time latency;
    double bottleneck_bytes_per_s;
  };

  const ShortestPathDag& dag_from(VertexId src);

  static constexpr std::size_t kCachedSources = 64;

  const Topology& topology_;
  std::vector<std::unique_ptr<ShortestPathDag>> dags_;  // by source vertex; most are empty
  std::vector<VertexId> dag_order_;  // sources with a DAG, least recently used first
  std::unordered_map<std::uint64_t, RouteId> cache_;
  std::unordered_multimap<std::uint64_t, RouteId> explicit_;  // by hash of the link list
  BigVector<RouteInfo> routes_;
  BigVector<LinkId> route_links_;
};

}  // namespace trainsim
