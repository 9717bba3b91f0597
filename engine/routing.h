// Routes between vertices of a Topology: minimum-hop paths that never pass through a non-transit
// vertex. Where several minimum-hop paths exist, each (source, destination) pair takes one of them
// chosen by a hash of the pair, which spreads pairs over equal-cost paths the way ECMP does:
// walking back from the destination, each hop picks among the links that reach its vertex from one
// hop nearer the source (in link id order). On a topology that routes by destination
// (Topology::route_by_destination) the pick depends on the destination alone: at the first vertex
// with a choice, the destination's index is the position, among that vertex's links out, of the
// link the route leaves it by (its port towards the destination; 0 at the destination itself),
// and each vertex with c choices takes (index / product of the earlier vertices' c) mod c, so the
// ports of a switch take the equal-cost links in turn (D-mod-k, as InfiniBand's fat-tree routing
// fills its forwarding tables). Routes are computed once and cached.
//
// A route is found by a bidirectional breadth-first search: levels grow from the source along
// links and from the destination against them (each time the side with fewer links to follow),
// until they meet. On a fat tree they meet at the spines after a few hops, so a route costs about
// the fan-out of the vertices near its ends, not the size of the fabric (a search from the source
// alone visits every vertex). The hop counts found are exact, so the route is the one a full search
// from the source would give. When many routes from one source are asked for in a row (an
// all-to-all's routes, sender by sender), one full search from it serves the rest of them: each
// is then only the walk back from its destination.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
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
  // hops share. Latency is the sum over appearances unless `latency` is given (a route that
  // stands for a class of flows, whose load is not where its bytes travel), the bottleneck the
  // smallest bandwidth / appearances.
  RouteId add_route(std::span<const LinkId> links, std::optional<Time> latency = std::nullopt);

  std::span<const LinkId> links(RouteId id) const {
    const RouteInfo& info = routes_[id];
    return {route_links_.data() + info.first, info.length};
  }
  // Sum of the latencies of the route's links.
  Time latency(RouteId id) const { return routes_[id].latency; }
  // Smallest link bandwidth on the route (infinity for the empty route); on a route that crosses
  // a link several times, that link's bandwidth over its appearances counts.
  double bottleneck_bandwidth(RouteId id) const { return routes_[id].bottleneck_bytes_per_s; }
  // Whether the route crosses some link more than once (only a route given by add_route can).
  bool repeats(RouteId id) const { return routes_[id].repeats; }
  // A route that repeats: each link it crosses and how many times, in the order the links first
  // appear on it.
  std::span<const std::pair<LinkId, std::uint32_t>> crossings(RouteId id) const;
  std::size_t route_count() const { return routes_.size(); }
  const Topology& topology() const { return topology_; }

 private:
  struct RouteInfo {
    std::uint64_t first;
    std::uint32_t length;
    bool repeats;
    Time latency;
    double bottleneck_bytes_per_s;
  };
  // A vertex's links out of it and into it, in link id order (compressed rows by vertex).
  struct Adjacency {
    std::vector<std::uint32_t> begin;  // size V + 1
    std::vector<LinkId> links;
    std::vector<VertexId> far;  // each link's other end (so searches skip the link records)
  };

  // Hops from `src` to `dst` by the bidirectional search, leaving the exact hop count from the
  // source of every vertex the walk back from `dst` may ask about; -1 if unreachable.
  int search(VertexId src, VertexId dst);
  // Whether `v` is `hops` hops from the source, as the last search found.
  bool at_hops(VertexId v, int hops) const;
  // The full search from `src` (tree_src_): every vertex's hops from it over transit vertices.
  void grow_tree(VertexId src);
  // Whether `v` is `hops` hops from tree_src_ and a route may pass through it.
  bool tree_at_hops(VertexId v, int hops) const {
    return tree_stamp_[v] == tree_search_ && tree_hops_[v] == hops &&
           (transit_[v] || v == tree_src_);
  }

  const Topology& topology_;
  bool by_destination_;
  // The crossings of the routes that repeat, one run each (crossings_at_: route -> first).
  std::vector<std::pair<LinkId, std::uint32_t>> crossings_;
  std::vector<std::uint32_t> appearances_;  // add_route's count by link (zero between calls)
  std::unordered_map<RouteId, std::pair<std::size_t, std::size_t>> crossings_at_;
  std::vector<char> transit_;
  Adjacency out_, in_;
  // Scratch of the search, valid where the stamp equals search_: hops from the source (forward),
  // to the destination (backward), and for vertices past the meeting level, hops from the source
  // through the meeting level.
  std::uint32_t search_ = 0;
  std::vector<std::uint32_t> forward_stamp_, backward_stamp_, beyond_stamp_;
  std::vector<std::int32_t> forward_hops_, backward_hops_, beyond_hops_;
  std::vector<VertexId> frontier_, next_, level_;
  // The walk back's choices at a vertex (in_ positions) depend on the source alone: its links
  // in from vertices one hop nearer the source. They are kept for the run's source (valid where
  // choice_stamp_ equals choice_run_: choice_count_ of them from choice_first_ in
  // choice_links_), so a spine's or leaf's links in are scanned once per source, not per route.
  std::uint32_t choice_run_ = 0;
  std::vector<std::uint32_t> choice_stamp_, choice_first_, choice_count_;
  std::vector<std::uint32_t> choice_links_;
  std::vector<VertexId> backward_list_;        // the last search's backward levels, in order
  std::vector<std::uint32_t> backward_first_;  // where each starts in backward_list_
  int met_forward_ = 0;                        // forward levels searched when the searches met
  // Routes computed in a row from one source (run_src_), and the full search of tree_src_ (valid
  // where tree_stamp_ equals tree_search_; no source before the first).
  static constexpr VertexId kNoSource = std::numeric_limits<VertexId>::max();
  VertexId run_src_ = kNoSource;
  std::uint64_t run_work_ = 0;   // links the pairwise searches of the run followed
  std::uint64_t tree_work_ = 0;  // links the last full search followed (set to all at first)
  VertexId tree_src_ = kNoSource;
  std::uint32_t tree_search_ = 0;
  std::vector<std::uint32_t> tree_stamp_;
  std::vector<std::int32_t> tree_hops_;
  std::unordered_map<std::uint64_t, RouteId> cache_;
  std::unordered_multimap<std::uint64_t, RouteId> explicit_;  // by hash of the link list
  BigVector<RouteInfo> routes_;
  BigVector<LinkId> route_links_;
};

}  // namespace trainsim
