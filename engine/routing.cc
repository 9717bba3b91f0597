#include "engine/routing.h"

#include <algorithm>
#include <limits>
#include <string>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "engine/check.h"
#include "engine/simulation.h"

namespace trainsim {

// For one source: hop distance to every vertex and, per vertex, the links that reach it on some
// minimum-hop path (its predecessors in the shortest-path DAG), stored compactly (CSR).
struct Router::ShortestPathDag {
  static constexpr std::int32_t kUnreached = -1;
  std::vector<std::int32_t> distance;
  std::vector<std::uint32_t> pred_begin;  // size V + 1
  std::vector<LinkId> pred_links;
};

namespace {

using Graph = Topology::Graph;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

// Keeps the out-edges of transit vertices and of the source only.
struct TransitFilter {
  const Topology* topology = nullptr;
  VertexId source = 0;
  bool operator()(const Edge& e) const {
    const auto from = static_cast<VertexId>(boost::source(e, topology->graph()));
    return from == source || topology->vertex(from).transit;
  }
};

using Filtered = boost::filtered_graph<Graph, TransitFilter>;

class DistanceRecorder : public boost::default_bfs_visitor {
 public:
  explicit DistanceRecorder(std::vector<std::int32_t>& distance) : distance_(distance) {}
  void tree_edge(const Edge& e, const Filtered& g) const {
    distance_[boost::target(e, g)] = distance_[boost::source(e, g)] + 1;
  }

 private:
  std::vector<std::int32_t>& distance_;
};

}  // namespace

Router::Router(const Topology& topology) : topology_(topology), dags_(topology.vertex_count()) {}

Router::~Router() = default;

const Router::ShortestPathDag& Router::dag_from(VertexId src) {
  TRAINSIM_ASSERT(src < dags_.size(), "route from an unknown vertex");
  if (dags_[src]) {
    // Used again: the last to be dropped.
    const auto at = std::find(dag_order_.begin(), dag_order_.end(), src);
    std::rotate(at, at + 1, dag_order_.end());
    return *dags_[src];
  }
  const std::size_t n = topology_.vertex_count();
  auto dag = std::make_unique<ShortestPathDag>();
  dag->distance.assign(n, ShortestPathDag::kUnreached);
  dag->distance[src] = 0;
  Filtered filtered(topology_.graph(), TransitFilter{&topology_, src});
  boost::breadth_first_search(filtered, src, boost::visitor(DistanceRecorder(dag->distance)));

  // A link u -> v is on some minimum-hop path iff u may forward (transit or the source) and
  // d(v) = d(u) + 1. Collect those per target vertex (counting sort; link ids ascend within a
  // vertex, so the hash picks the same path whatever order BFS visited them in).
  const auto& links = topology_.links();
  auto on_dag = [&](const Link& link) {
    const auto du = dag->distance[link.from];
    return du != ShortestPathDag::kUnreached && dag->distance[link.to] == du + 1 &&
           (link.from == src || topology_.vertex(link.from).transit);
  };
  dag->pred_begin.assign(n + 1, 0);
  for (const Link& link : links) {
    if (on_dag(link)) ++dag->pred_begin[link.to + 1];
  }
  for (std::size_t v = 0; v < n; ++v) dag->pred_begin[v + 1] += dag->pred_begin[v];
  dag->pred_links.resize(dag->pred_begin[n]);
  std::vector<std::uint32_t> fill(dag->pred_begin.begin(), dag->pred_begin.end() - 1);
  for (LinkId l = 0; l < links.size(); ++l) {
    if (on_dag(links[l])) dag->pred_links[fill[links[l].to]++] = l;
  }
  if (dag_order_.size() == kCachedSources) {
    dags_[dag_order_.front()].reset();
    dag_order_.erase(dag_order_.begin());
  }
  dag_order_.push_back(src);
  dags_[src] = std::move(dag);
  return *dags_[src];
}

RouteId Router::route(VertexId src, VertexId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  TRAINSIM_ASSERT(dst < topology_.vertex_count(), "route to an unknown vertex");

  const ShortestPathDag& dag = dag_from(src);
  if (dag.distance[dst] == ShortestPathDag::kUnreached) {
    throw RoutingError("no route from " + topology_.vertex(src).name + " to " +
                       topology_.vertex(dst).name);
  }
  const auto length = static_cast<std::uint32_t>(dag.distance[dst]);
  const std::uint64_t first = route_links_.size();
  route_links_.resize(first + length);
  Time latency = 0;
  double bottleneck = std::numeric_limits<double>::infinity();
  VertexId v = dst;
  for (std::uint32_t hop = length; hop > 0; --hop) {
    const std::uint32_t begin = dag.pred_begin[v];
    const std::uint32_t count = dag.pred_begin[v + 1] - begin;
    TRAINSIM_ASSERT(count > 0, "broken shortest-path DAG");
    const std::uint32_t pick =
        count == 1 ? 0 : static_cast<std::uint32_t>(mix64(key ^ mix64(hop)) % count);
    const LinkId link = dag.pred_links[begin + pick];
    route_links_[first + hop - 1] = link;
    latency += topology_.link(link).latency;
    bottleneck = std::min(bottleneck, topology_.link(link).bandwidth_bytes_per_s);
    v = topology_.link(link).from;
  }
  TRAINSIM_ASSERT(v == src, "route does not start at its source");
  const auto id = static_cast<RouteId>(routes_.size());
  routes_.push_back(RouteInfo{first, length, latency, bottleneck});
  cache_.emplace(key, id);
  return id;
}

RouteId Router::add_route(std::span<const LinkId> links) {
  std::uint64_t hash = mix64(links.size());
  for (const LinkId l : links) hash = mix64(hash ^ l);
  for (auto [it, end] = explicit_.equal_range(hash); it != end; ++it) {
    const auto existing = this->links(it->second);
    if (std::equal(existing.begin(), existing.end(), links.begin(), links.end())) return it->second;
  }
  const std::uint64_t first = route_links_.size();
  route_links_.insert(route_links_.end(), links.begin(), links.end());
  Time latency = 0;
  double bottleneck = std::numeric_limits<double>::infinity();
  std::vector<LinkId> sorted(links.begin(), links.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size();) {
    TRAINSIM_ASSERT(sorted[i] < topology_.link_count(), "route over an unknown link");
    std::size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    const Link& link = topology_.link(sorted[i]);
    latency += link.latency * static_cast<Time>(j - i);
    bottleneck = std::min(bottleneck, link.bandwidth_bytes_per_s / static_cast<double>(j - i));
    i = j;
  }
  const auto id = static_cast<RouteId>(routes_.size());
  routes_.push_back(
      RouteInfo{first, static_cast<std::uint32_t>(links.size()), latency, bottleneck});
  explicit_.emplace(hash, id);
  return id;
}

}  // namespace trainsim
