#include "engine/topology.h"

#include "engine/check.h"

namespace trainsim {

Topology::Topology(const Topology& other)
    : graph_(std::make_unique<Graph>()), route_by_destination_(other.route_by_destination_) {
  vertices_.reserve(other.vertices_.size());
  links_.reserve(other.links_.size());
  for (const Vertex& v : other.vertices_) add_vertex(v.name, v.transit);
  for (const Link& l : other.links_) {
    add_link(l.from, l.to, l.bandwidth_bytes_per_s, l.latency, l.label);
  }
}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) {
    *this = Topology(other);
  }
  return *this;
}

VertexId Topology::add_vertex(std::string name, bool transit) {
  const auto v = static_cast<VertexId>(boost::add_vertex(*graph_));
  TRAINSIM_ASSERT(v == vertices_.size(), "vertex ids out of step with the graph");
  vertices_.push_back(Vertex{std::move(name), transit});
  return v;
}

LinkId Topology::add_link(VertexId from, VertexId to, double bandwidth_bytes_per_s, Time latency,
                          std::string label) {
  TRAINSIM_ASSERT(from < vertices_.size() && to < vertices_.size(), "link to an unknown vertex");
  TRAINSIM_ASSERT(from != to, "self link");
  TRAINSIM_ASSERT(bandwidth_bytes_per_s > 0.0, "link bandwidth must be positive");
  TRAINSIM_ASSERT(latency >= 0, "link latency must be non-negative");
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{from, to, bandwidth_bytes_per_s, latency, std::move(label)});
  boost::add_edge(from, to, EdgeProperties{id}, *graph_);
  return id;
}

std::pair<LinkId, LinkId> Topology::add_duplex(VertexId a, VertexId b, double bandwidth_bytes_per_s,
                                               Time latency, const std::string& label) {
  const LinkId forward = add_link(a, b, bandwidth_bytes_per_s, latency, label);
  const LinkId backward = add_link(b, a, bandwidth_bytes_per_s, latency, label);
  return {forward, backward};
}

}  // namespace trainsim
