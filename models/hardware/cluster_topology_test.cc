#include "models/hardware/cluster_topology.h"

#include <gtest/gtest.h>

#include "engine/routing.h"
#include "models/config/cluster_config.h"

namespace trainsim::models {
namespace {

const std::string kSourceDir = TRAINSIM_SOURCE_DIR;

std::vector<std::string> route_labels(Router& router, const Topology& t, VertexId a, VertexId b) {
  std::vector<std::string> labels;
  for (const LinkId l : router.links(router.route(a, b))) labels.push_back(t.link(l).label);
  return labels;
}

TEST(ClusterTopologyTest, DgxH100RoutesOverNvlinkInsideAndNicsAcross) {
  const ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  const ClusterTopology ct = build_cluster_topology(spec, 2);
  EXPECT_EQ(ct.gpu_count(), 16);
  Router router(ct.topology);
  EXPECT_EQ(route_labels(router, ct.topology, ct.gpu(0, 0), ct.gpu(0, 5)),
            (std::vector<std::string>{"nvlink", "nvlink"}));
  // Same rail: GPU 3 of both nodes share rail leaf 3.
  EXPECT_EQ(route_labels(router, ct.topology, ct.gpu(0, 3), ct.gpu(1, 3)),
            (std::vector<std::string>{"gpu-nic", "nic", "nic", "gpu-nic"}));
  // Across rails the route climbs to a spine.
  EXPECT_EQ(
      route_labels(router, ct.topology, ct.gpu(0, 3), ct.gpu(1, 4)),
      (std::vector<std::string>{"gpu-nic", "nic", "leaf-spine", "leaf-spine", "nic", "gpu-nic"}));
  // NVLink carries line rate x efficiency per direction; a GPU-to-GPU route crosses two links.
  const RouteId r = router.route(ct.gpu(0, 0), ct.gpu(0, 1));
  EXPECT_DOUBLE_EQ(router.bottleneck_bandwidth(r), 450e9 * spec.intra_node.gpu_link.efficiency);
  EXPECT_EQ(router.latency(r), 2 * spec.intra_node.gpu_link.latency);
}

TEST(ClusterTopologyTest, ANodeRangeIsTheSameFabricNumberedFromItsFirstNode) {
  // Nodes 2-3 of a 4-node DGX H100 fabric: node 0 of the range is node 2, with the same vertex
  // and link ids, so one router serves both.
  const ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  const ClusterTopology whole = build_cluster_topology(spec, 4);
  const ClusterTopology range = node_range(whole, 2, 2);
  EXPECT_EQ(range.nodes, 2);
  EXPECT_EQ(range.gpus_per_node, 8);
  EXPECT_EQ(range.gpu_count(), 16);
  for (int n = 0; n < 2; ++n) {
    for (int g = 0; g < 8; ++g) EXPECT_EQ(range.gpu(n, g), whole.gpu(n + 2, g));
    EXPECT_EQ(range.nvswitch_vertices[n], whole.nvswitch_vertices[n + 2]);
    EXPECT_EQ(range.nic_send_vertices[n], whole.nic_send_vertices[n + 2]);
    EXPECT_EQ(range.nic_receive_vertices[n], whole.nic_receive_vertices[n + 2]);
    EXPECT_EQ(range.nic_switch_vertices[n], whole.nic_switch_vertices[n + 2]);
  }
  EXPECT_EQ(range.topology.link_count(), whole.topology.link_count());
  Router router(whole.topology);
  EXPECT_EQ(route_labels(router, range.topology, range.gpu(0, 3), range.gpu(1, 3)),
            (std::vector<std::string>{"gpu-nic", "nic", "nic", "gpu-nic"}));
}

TEST(ClusterTopologyTest, PcieServerCrossesSocketsAndSharesNics) {
  const ClusterSpec spec =
      load_cluster_spec(kSourceDir + "/configs/clusters/pcie-8gpu-2x100g.yaml");
  const ClusterTopology ct = build_cluster_topology(spec, 2);
  Router router(ct.topology);
  EXPECT_EQ(route_labels(router, ct.topology, ct.gpu(0, 0), ct.gpu(0, 3)),
            (std::vector<std::string>{"pcie", "pcie"}));
  EXPECT_EQ(route_labels(router, ct.topology, ct.gpu(0, 0), ct.gpu(0, 5)),
            (std::vector<std::string>{"pcie", "pcie-switch", "pcie"}));
  // GPU 2 uses NIC 0, GPU 6 of the other node NIC 1; one top-of-rack switch between.
  const auto links = router.links(router.route(ct.gpu(0, 2), ct.gpu(1, 6)));
  ASSERT_EQ(links.size(), 4u);
  EXPECT_EQ(ct.topology.vertex(ct.topology.link(links[0]).to).name, "n0/nic0.tx");
  EXPECT_EQ(ct.topology.vertex(ct.topology.link(links[3]).from).name, "n1/nic1.rx");
  EXPECT_DOUBLE_EQ(router.bottleneck_bandwidth(router.route(ct.gpu(0, 2), ct.gpu(1, 6))),
                   12.5e9 * 0.96);
}

TEST(ClusterTopologyTest, FatTreeUplinksFollowOversubscription) {
  ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  spec.network.rail_optimized = false;
  spec.network.nodes_per_leaf = 2;
  spec.network.spines = 4;
  spec.network.oversubscription = 2.0;
  const ClusterTopology ct = build_cluster_topology(spec, 4);
  // A leaf takes 2 nodes x 8 NICs = 16 ports of 50 GB/s x efficiency; half of that goes up,
  // over 4 spines: 16 x 50 x efficiency / (2 x 4) per leaf-spine link.
  int uplinks = 0;
  for (const Link& l : ct.topology.links()) {
    if (l.label == "leaf-spine") {
      ++uplinks;
      EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 16 * 50e9 * spec.nic.link.efficiency / 8);
    }
  }
  EXPECT_EQ(uplinks, 2 /*leaves*/ * 4 /*spines*/ * 2 /*directions*/);
}

TEST(ClusterTopologyTest, StragglersSlowANicAndFailAnUplink) {
  ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  spec.network.rail_optimized = false;
  spec.network.nodes_per_leaf = 2;
  spec.network.spines = 4;
  spec.stragglers.nics = {{1, 3, 0.25}};              // node 1's NIC 3 at a quarter of its rate
  spec.stragglers.failed_uplinks = {{0, 2}, {1, 0}};  // leaf 0 - spine 2, leaf 1 - spine 0
  const ClusterTopology ct = build_cluster_topology(spec, 4);
  const double nic = 50e9 * spec.nic.link.efficiency;
  int slow = 0;
  for (const Link& l : ct.topology.links()) {
    if (l.label != "nic") continue;
    const bool node1_nic3 = ct.topology.vertex(l.from).name == "n1/nic3.tx" ||
                            ct.topology.vertex(l.to).name == "n1/nic3.rx";
    EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, node1_nic3 ? nic / 4 : nic);
    slow += node1_nic3;
  }
  EXPECT_EQ(slow, 2);  // both directions
  // 2 leaves x 4 spines, less the two failed, in both directions.
  int uplinks = 0;
  for (const Link& l : ct.topology.links()) {
    if (l.label != "leaf-spine") continue;
    ++uplinks;
    const std::string a = ct.topology.vertex(l.from).name;
    const std::string b = ct.topology.vertex(l.to).name;
    for (const auto& [leaf, spine] : {std::pair{"leaf0", "spine2"}, std::pair{"leaf1", "spine0"}}) {
      EXPECT_FALSE((a == leaf && b == spine) || (a == spine && b == leaf)) << a << " " << b;
    }
  }
  EXPECT_EQ(uplinks, (2 * 4 - 2) * 2);
  // Traffic between the leaves still flows, through spine 1 or 3.
  Router router(ct.topology);
  EXPECT_EQ(route_labels(router, ct.topology, ct.gpu(0, 0), ct.gpu(2, 0)).size(), 6u);
}

TEST(ClusterTopologyTest, SingleNodeHasNoNetwork) {
  const ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-a100.yaml");
  const ClusterTopology ct = build_cluster_topology(spec, 1);
  for (const Link& l : ct.topology.links()) {
    EXPECT_NE(l.label, "nic");
    EXPECT_NE(l.label, "leaf-spine");
  }
}

}  // namespace
}  // namespace trainsim::models
