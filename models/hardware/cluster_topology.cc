#include "models/hardware/cluster_topology.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "engine/check.h"

namespace trainsim::models {

namespace {

std::string node_prefix(int node) { return "n" + std::to_string(node) + "/"; }

void add_link_class(Topology& t, VertexId a, VertexId b, const LinkClassSpec& link,
                    const std::string& label) {
  t.add_duplex(a, b, link.effective_bandwidth(), link.latency, label);
}

struct NicVertices {
  VertexId send;
  VertexId receive;
};

}  // namespace

ClusterTopology build_cluster_topology(const ClusterSpec& spec, int nodes) {
  TRAINSIM_ASSERT(nodes >= 1, "at least one node");
  TRAINSIM_ASSERT(spec.gpus_per_node >= 1, "at least one GPU per node");
  ClusterTopology out;
  out.nodes = nodes;
  out.gpus_per_node = spec.gpus_per_node;
  Topology& t = out.topology;
  t.set_route_by_destination(spec.network.routing == NetworkRouting::kDestination);
  const int gpus = spec.gpus_per_node;

  // nics[node][i]
  std::vector<std::vector<NicVertices>> nics(nodes);
  out.nics_of_gpu.assign(gpus, {});
  for (int i = 0; i < spec.nic.count; ++i) {
    for (const int g : spec.nic.gpus[i]) out.nics_of_gpu[g].push_back(i);
  }
  for (int n = 0; n < nodes; ++n) {
    const std::string prefix = node_prefix(n);
    const std::size_t first_vertex = t.vertex_count();
    // (Every vertex this iteration adds is node n's: see the end of the loop.)
    std::vector<VertexId> local;
    for (int g = 0; g < gpus; ++g) {
      local.push_back(t.add_vertex(prefix + "gpu" + std::to_string(g), /*transit=*/false));
      out.gpu_vertices.push_back(local.back());
    }
    if (spec.intra_node.fabric == IntraNodeFabric::kNvSwitch) {
      const VertexId nvswitch = t.add_vertex(prefix + "nvswitch", true);
      out.nvswitch_vertices.push_back(nvswitch);
      for (const VertexId g : local)
        add_link_class(t, g, nvswitch, spec.intra_node.gpu_link, "nvlink");
    } else {
      const int switches = spec.intra_node.pcie_switches;
      std::vector<VertexId> sw;
      for (int s = 0; s < switches; ++s) {
        sw.push_back(t.add_vertex(prefix + "pcie" + std::to_string(s), true));
      }
      for (int g = 0; g < gpus; ++g) {
        add_link_class(t, local[g], sw[g * switches / gpus], spec.intra_node.gpu_link, "pcie");
      }
      for (int a = 0; a < switches; ++a) {
        for (int b = a + 1; b < switches; ++b) {
          add_link_class(t, sw[a], sw[b], spec.intra_node.switch_link, "pcie-switch");
        }
      }
    }
    for (int i = 0; i < spec.nic.count; ++i) {
      const std::string nic = prefix + "nic" + std::to_string(i);
      NicVertices v{t.add_vertex(nic + ".tx", true), t.add_vertex(nic + ".rx", true)};
      for (const int g : spec.nic.gpus[i]) {
        t.add_link(local[g], v.send, spec.nic.gpu_link.effective_bandwidth(),
                   spec.nic.gpu_link.latency, "gpu-nic");
        t.add_link(v.receive, local[g], spec.nic.gpu_link.effective_bandwidth(),
                   spec.nic.gpu_link.latency, "gpu-nic");
      }
      nics[n].push_back(v);
    }
    out.node_of_vertex.resize(t.vertex_count(), -1);
    std::fill(out.node_of_vertex.begin() + static_cast<std::ptrdiff_t>(first_vertex),
              out.node_of_vertex.end(), n);
  }
  out.nic_send_vertices.resize(nodes);
  out.nic_receive_vertices.resize(nodes);
  out.nic_switch_vertices.assign(nodes, std::vector<VertexId>(spec.nic.count, 0));
  for (int n = 0; n < nodes; ++n) {
    for (const NicVertices& v : nics[n]) {
      out.nic_send_vertices[n].push_back(v.send);
      out.nic_receive_vertices[n].push_back(v.receive);
    }
  }
  if (nodes == 1 || spec.nic.count == 0) return out;

  const LinkClassSpec& wire = spec.nic.link;
  auto attach = [&](int node, int index, VertexId sw) {
    const NicVertices& nic = nics[node][index];
    double bandwidth = wire.effective_bandwidth();
    for (const SlowNic& slow : spec.stragglers.nics) {
      if (slow.node == node && slow.nic == index) bandwidth *= slow.fraction;
    }
    t.add_link(nic.send, sw, bandwidth, wire.latency, "nic");
    t.add_link(sw, nic.receive, bandwidth, wire.latency, "nic");
    out.nic_switch_vertices[node][index] = sw;
  };

  const NetworkSpec& net = spec.network;
  if (net.topology == NetworkTopology::kSingleSwitch) {
    const VertexId core = t.add_vertex("switch", true);
    for (int n = 0; n < nodes; ++n) {
      for (int i = 0; i < spec.nic.count; ++i) attach(n, i, core);
    }
    return out;
  }

  // Fat-tree. A leaf serves `nodes_per_leaf` nodes: one NIC each when rail-optimised (one leaf per
  // rail per group), else all their NICs. Uplink capacity = downlink capacity / oversubscription,
  // split evenly over the spines.
  const int groups = (nodes + net.nodes_per_leaf - 1) / net.nodes_per_leaf;
  const int rails = net.rail_optimized ? spec.nic.count : 1;
  const int ports_down = net.nodes_per_leaf * (net.rail_optimized ? 1 : spec.nic.count);
  const double uplink_bw =
      ports_down * wire.effective_bandwidth() / (net.oversubscription * net.spines);
  std::vector<VertexId> spines;
  for (int s = 0; s < net.spines; ++s)
    spines.push_back(t.add_vertex("spine" + std::to_string(s), true));
  for (int group = 0; group < groups; ++group) {
    for (int rail = 0; rail < rails; ++rail) {
      const VertexId leaf =
          t.add_vertex("leaf" + std::to_string(group) +
                           (net.rail_optimized ? "/rail" + std::to_string(rail) : ""),
                       true);
      const int leaf_index = group * rails + rail;
      for (int s = 0; s < net.spines; ++s) {
        const bool failed = std::any_of(
            spec.stragglers.failed_uplinks.begin(), spec.stragglers.failed_uplinks.end(),
            [&](const FailedUplink& u) { return u.leaf == leaf_index && u.spine == s; });
        if (!failed) t.add_duplex(leaf, spines[s], uplink_bw, net.switch_latency, "leaf-spine");
      }
      for (int n = group * net.nodes_per_leaf;
           n < std::min(nodes, (group + 1) * net.nodes_per_leaf); ++n) {
        for (int i = 0; i < spec.nic.count; ++i) {
          if (!net.rail_optimized || i == rail) attach(n, i, leaf);
        }
      }
    }
  }
  return out;
}

ClusterTopology node_range(const ClusterTopology& whole, int first_node, int nodes) {
  TRAINSIM_ASSERT(first_node >= 0 && nodes >= 1 && first_node + nodes <= whole.nodes,
                  "a node range inside the cluster");
  ClusterTopology out;
  out.topology = whole.topology;
  out.nodes = nodes;
  out.gpus_per_node = whole.gpus_per_node;
  const auto gpus = whole.gpu_vertices.begin() + first_node * whole.gpus_per_node;
  out.gpu_vertices.assign(gpus, gpus + nodes * whole.gpus_per_node);
  auto by_node = [&](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    if (static_cast<int>(v.size()) < first_node + nodes) return V{};
    return V(v.begin() + first_node, v.begin() + first_node + nodes);
  };
  out.nvswitch_vertices = by_node(whole.nvswitch_vertices);
  out.nic_send_vertices = by_node(whole.nic_send_vertices);
  out.nic_receive_vertices = by_node(whole.nic_receive_vertices);
  out.nic_switch_vertices = by_node(whole.nic_switch_vertices);
  out.nics_of_gpu = whole.nics_of_gpu;
  out.node_of_vertex.assign(whole.node_of_vertex.size(), -1);
  for (std::size_t v = 0; v < whole.node_of_vertex.size(); ++v) {
    const int n = whole.node_of_vertex[v];
    if (n >= first_node && n < first_node + nodes) out.node_of_vertex[v] = n - first_node;
  }
  return out;
}

std::optional<LinkId> find_link(const Topology& topology, VertexId a, VertexId b) {
  const auto& g = topology.graph();
  for (auto [it, end] = boost::out_edges(a, g); it != end; ++it) {
    if (boost::target(*it, g) == b) return g[*it].link;
  }
  return std::nullopt;
}

LinkId link_between(const Topology& topology, VertexId a, VertexId b) {
  const auto link = find_link(topology, a, b);
  TRAINSIM_ASSERT(link.has_value(), "no link between the two vertices");
  return *link;
}

}  // namespace trainsim::models
