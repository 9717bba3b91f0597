// Turns a ClusterSpec and a node count into an engine Topology.
//
// Per node: one vertex per GPU (an endpoint), and either one NVSwitch vertex joined to every GPU
// by its NVLink, or PCIe switch vertices joined to their GPUs and to each other. Each NIC is two
// vertices, a send side (GPUs -> NIC -> network) and a receive side (network -> NIC -> GPUs), so
// traffic between GPUs of one node never loops through a NIC. Between nodes: every NIC on one
// non-blocking switch, or a two-level fat-tree whose leaves take `nodes_per_leaf` nodes (all of a
// node's NICs, or with rail optimisation NIC i of each node on rail leaf i) and connect to every
// spine with uplinks sized by the oversubscription ratio.
#pragma once

#include <optional>
#include <vector>

#include "engine/topology.h"
#include "models/spec/cluster_spec.h"

namespace trainsim::models {

struct ClusterTopology {
  Topology topology;
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<VertexId> gpu_vertices;       // by global rank = node * gpus_per_node + local index
  std::vector<VertexId> nvswitch_vertices;  // by node; empty for PCIe nodes
  // NICs, by node and index (index i is rail i on a rail-optimised fabric): the send side
  // (GPUs -> NIC -> network), the receive side, and the switch the NIC plugs into (none on a
  // single node).
  std::vector<std::vector<VertexId>> nic_send_vertices;
  std::vector<std::vector<VertexId>> nic_receive_vertices;
  std::vector<std::vector<VertexId>> nic_switch_vertices;
  std::vector<std::vector<int>> nics_of_gpu;  // by local GPU index: the NICs it sends through
  // By vertex: the node it belongs to (a GPU, a node's NVSwitch, PCIe switch or NIC), or -1. The
  // network's switches, added after the nodes, lie past its end: they belong to no node either.
  std::vector<int> node_of_vertex;

  int gpu_count() const { return nodes * gpus_per_node; }
  VertexId gpu(int node, int local) const { return gpu_vertices[node * gpus_per_node + local]; }
};

ClusterTopology build_cluster_topology(const ClusterSpec& spec, int nodes);

// Nodes [first_node, first_node + nodes) of `whole` as a cluster of their own (node 0 is
// `first_node`), on the same fabric: vertex and link ids are `whole`'s, so its router serves it.
ClusterTopology node_range(const ClusterTopology& whole, int first_node, int nodes);

// The link from `a` to `b`, which must exist.
LinkId link_between(const Topology& topology, VertexId a, VertexId b);
// The same, or none.
std::optional<LinkId> find_link(const Topology& topology, VertexId a, VertexId b);

}  // namespace trainsim::models
