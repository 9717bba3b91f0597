// A network topology: vertices (endpoints and switches) joined by directed links, each with a
// bandwidth per direction and a latency, stored as a Boost.Graph adjacency list. Knows nothing of
// what the vertices are; the builders in models/ give them meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "engine/units.h"

namespace trainsim {

using VertexId = std::uint32_t;
using LinkId = std::uint32_t;

struct Vertex {
  std::string name;
  // Whether routes may pass through this vertex. Endpoints (that only send and receive) are not
  // transit vertices; switches are.
  bool transit = false;
};

struct Link {
  VertexId from = 0;
  VertexId to = 0;
  double bandwidth_bytes_per_s = 0.0;
  Time latency = 0;
  std::string label;  // link class, e.g. for reports ("nvlink", "nic")
};

class Topology {
 public:
  struct EdgeProperties {
    LinkId link;
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      boost::no_property, EdgeProperties>;

  Topology() : graph_(std::make_unique<Graph>()) {}
  // A copy has the same vertex and link ids (the graph rebuilt link by link, in id order).
  Topology(const Topology& other);
  Topology& operator=(const Topology& other);
  Topology(Topology&& other) noexcept = default;
  Topology& operator=(Topology&& other) noexcept = default;

  VertexId add_vertex(std::string name, bool transit);
  // A directed link. Bandwidth must be positive and latency non-negative.
  LinkId add_link(VertexId from, VertexId to, double bandwidth_bytes_per_s, Time latency,
                  std::string label = {});
  // Two directed links, one per direction, with the same figures. Returns (a->b, b->a).
  std::pair<LinkId, LinkId> add_duplex(VertexId a, VertexId b, double bandwidth_bytes_per_s,
                                       Time latency, const std::string& label = {});

  // How switches pick among equal-cost paths (engine/routing.h): by a hash of the (source,
  // destination) pair, as Ethernet's ECMP does (the default), or by destination alone, as
  // InfiniBand's forwarding tables do (filled per destination by the subnet manager): every
  // source then reaches a destination the same way, and the destinations below a switch take
  // its equal-cost links in turn by their port numbers (D-mod-k).
  void set_route_by_destination(bool on) { route_by_destination_ = on; }
  bool route_by_destination() const { return route_by_destination_; }

  std::size_t vertex_count() const { return vertices_.size(); }
  std::size_t link_count() const { return links_.size(); }
  const Vertex& vertex(VertexId id) const { return vertices_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  const std::vector<Link>& links() const { return links_; }
  const Graph& graph() const { return *graph_; }

 private:
  std::unique_ptr<Graph> graph_;  // never copied or moved itself (its copy warns spuriously)
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  bool route_by_destination_ = false;
};

}  // namespace trainsim
