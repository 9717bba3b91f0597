// Every (operation, algorithm) pair: flow form against analytic form, and both against closed
// forms worked out by hand for uncontended fabrics.
#include "models/collectives/algorithms.h"

#include <gtest/gtest.h>

#include "models/collectives/collective_plan.h"

namespace trainsim::models {
namespace {

// `nodes` nodes of `gpus` GPUs on an NVSwitch (NVLink B_nvl each way, latency l_nvl per link),
// one NIC per GPU on a single switch (B_nic, l_nic per NIC link; GPU-NIC links free and fast).
ClusterSpec cluster(int gpus) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = 16;
  c.gpus_per_node = gpus;
  c.gpu.model = "G";
  c.gpu.peak_flops_per_s[Dtype::kBf16] = 1e15;
  c.gpu.hbm_bandwidth_bytes_per_s = 1e12;
  c.gpu.hbm_capacity_bytes = 1e10;
  c.intra_node.gpu_link = LinkClassSpec{100e9, kMicrosecond, 1.0};
  c.intra_node.nvls = true;
  c.nic.count = gpus;
  c.nic.link = LinkClassSpec{25e9, 2 * kMicrosecond, 1.0};
  c.nic.gpu_link = LinkClassSpec{1e15, 0, 1.0};
  for (int g = 0; g < gpus; ++g) c.nic.gpus.push_back({g});
  c.network.topology = NetworkTopology::kSingleSwitch;
  return c;
}

Time flow_time(const ClusterSpec& spec, int nodes, const CollectiveRequest& request) {
  Simulation sim;
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  FlowNetwork network(sim, topology.topology);
  auto collective = make_flow_collective(sim, network, spec, topology, request);
  int done = 0;
  for (int r = 0; r < topology.gpu_count(); ++r) collective->join(r, [&done] { ++done; });
  sim.run();
  EXPECT_EQ(done, topology.gpu_count());
  return sim.now();
}

Time analytic_time(const ClusterSpec& spec, int nodes, const CollectiveRequest& request) {
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  Router router(topology.topology);
  return analytic_collective_time(router, spec, topology, request);
}

TEST(AlgorithmsTest, FlowAndAnalyticFormsAgreeWithoutContention) {
  struct Case {
    CollectiveOp op;
    Algorithm algorithm;
    int nodes;
    int gpus;
  };
  const Case cases[] = {
      {CollectiveOp::kAllReduce, Algorithm::kRing, 1, 4},
      {CollectiveOp::kAllReduce, Algorithm::kRing, 4, 1},
      {CollectiveOp::kAllGather, Algorithm::kRing, 1, 8},
      {CollectiveOp::kReduceScatter, Algorithm::kRing, 3, 1},
      {CollectiveOp::kBroadcast, Algorithm::kRing, 1, 4},
      {CollectiveOp::kReduce, Algorithm::kRing, 5, 1},
      {CollectiveOp::kAllReduce, Algorithm::kNvls, 1, 8},
      {CollectiveOp::kAllReduce, Algorithm::kHierarchical, 2, 4},
      {CollectiveOp::kAllToAll, Algorithm::kDirect, 1, 8},
      {CollectiveOp::kAllToAll, Algorithm::kDirect, 4, 1},
      {CollectiveOp::kAllToAll, Algorithm::kTwoD, 2, 4},
      {CollectiveOp::kSendRecv, Algorithm::kP2p, 1, 8},
      {CollectiveOp::kSendRecv, Algorithm::kP2p, 4, 1},
  };
  for (const Case& c : cases) {
    const ClusterSpec spec = cluster(c.gpus);
    for (const double bytes : {8.0, 1e6, 3.3e8}) {
      const CollectiveRequest request{c.op, c.algorithm, bytes};
      EXPECT_EQ(flow_time(spec, c.nodes, request), analytic_time(spec, c.nodes, request))
          << collective_name(c.op) << "/" << algorithm_name(c.algorithm) << " " << c.nodes << "x"
          << c.gpus << " " << bytes << " B";
    }
  }
}

TEST(AlgorithmsTest, TreeFlowAndAnalyticAgreeClosely) {
  // The two trees' up and down traffic share links at slightly shifted times; the analytic form
  // assumes full overlap, so agreement is close but not exact.
  const ClusterSpec spec = cluster(2);
  for (const double bytes : {1e6, 3.3e8}) {
    const CollectiveRequest request{CollectiveOp::kAllReduce, Algorithm::kTree, bytes};
    const double flow = static_cast<double>(flow_time(spec, 4, request));
    const double analytic = static_cast<double>(analytic_time(spec, 4, request));
    EXPECT_NEAR(flow / analytic, 1.0, 0.05) << bytes;
  }
}

TEST(AlgorithmsTest, DirectAllToAllClosedForm) {
  // P GPUs on one NVSwitch: each sends S/P to P-1 peers, sharing its 100 GB/s NVLink P-1 ways:
  // T = 2 l_nvl + (P-1) S / (P B).
  const ClusterSpec spec = cluster(8);
  const double s = 8e8;
  EXPECT_EQ(flow_time(spec, 1, {CollectiveOp::kAllToAll, Algorithm::kDirect, s}),
            2 * kMicrosecond + transfer_time(s / 8, 100e9 / 7));
}

TEST(AlgorithmsTest, AllToAllvThroughTheDestinationsRail) {
  // 2 nodes x 2 GPUs, 1 MB between every pair. Through the peer on the destination's rail (PXN),
  // GPU 0 sends GPU 1 its own 1 MB plus the 1 MB bound for GPU 3 (which leaves node 0 from GPU
  // 1), and GPU 2 its own 1 MB plus GPU 1's 1 MB bound for GPU 2: 2 MB on each of the 8 flows
  // (4 inside nodes, 4 between same-rail GPUs), none between GPUs of different rails and nodes.
  const ClusterSpec spec = cluster(2);
  const ClusterTopology topology = build_cluster_topology(spec, 2);
  const std::vector<std::vector<double>> bytes(4, std::vector<double>(4, 1e6));
  EXPECT_EQ(pick_alltoallv_algorithm(spec, topology), Algorithm::kTwoD);
  const auto plan = alltoallv_plan(spec, topology, bytes, Algorithm::kTwoD);
  ASSERT_EQ(plan->size(), 8u);
  for (TransferId id = 0; id < plan->size(); ++id) {
    const PlanTransfer& t = plan->transfer(id);
    EXPECT_DOUBLE_EQ(t.bytes, 2e6);
    EXPECT_TRUE(t.sender / 2 == t.receiver / 2 || t.sender % 2 == t.receiver % 2)
        << t.sender << " -> " << t.receiver;
  }
  // Each NIC carries 2 MB each way at 25 GB/s: 80 us, plus the 2 x 2 us NIC latencies. The
  // NVLink legs (2 MB at 100 GB/s, 20 us) run alongside.
  Router router(topology.topology);
  EXPECT_EQ(alltoallv_time(router, spec, topology, bytes, Algorithm::kTwoD),
            80 * kMicrosecond + 4 * kMicrosecond);
  // Direct: 12 flows of 1 MB; each NIC carries 2 MB each way as well.
  EXPECT_EQ(alltoallv_plan(spec, topology, bytes)->size(), 12u);
}

TEST(AlgorithmsTest, SendRecvAndChannelRampClosedForm) {
  // One NIC hop between nodes: 2 x 2 us latency and 25 GB/s. With channels of 5 GB/s added per
  // 64 MiB: 32 MiB uses 1 channel (5 GB/s), 128 MiB 2 (10 GB/s), 1 GiB caps at the NIC.
  ClusterSpec spec = cluster(1);
  AlgorithmTuning p2p;
  p2p.channel_bandwidth = 5e9;
  p2p.bytes_per_channel = 64.0 * 1024 * 1024;
  p2p.max_channels = 8;
  spec.collectives.at(Algorithm::kP2p) = p2p;
  const double mib = 1024.0 * 1024;
  auto t = [&](double bytes) {
    return flow_time(spec, 2, {CollectiveOp::kSendRecv, Algorithm::kP2p, bytes});
  };
  EXPECT_EQ(t(32 * mib), 4 * kMicrosecond + transfer_time(32 * mib, 5e9));
  EXPECT_EQ(t(128 * mib), 4 * kMicrosecond + transfer_time(128 * mib, 10e9));
  EXPECT_EQ(t(1024 * mib), 4 * kMicrosecond + transfer_time(1024 * mib, 25e9));
}

TEST(AlgorithmsTest, PipelinedBroadcastClosedForm) {
  // Chain of P = 4 over NVSwitch hops (alpha = 2 us, B = 100 GB/s) in chunks of c = 512 KiB:
  // T = alpha + (P-2)(c/B + alpha) + S/B, i.e. pipeline fill plus the stream.
  ClusterSpec spec = cluster(4);
  spec.nic.count = 1;  // one channel
  spec.nic.gpus = {{0, 1, 2, 3}};
  const double s = 1e9;
  const double c = spec.collectives.pipeline_chunk_bytes;
  const Time alpha = 2 * kMicrosecond;
  const Time expected = alpha + 2 * (transfer_time(c, 100e9) + alpha) + transfer_time(s, 100e9);
  const Time got = flow_time(spec, 1, {CollectiveOp::kBroadcast, Algorithm::kRing, s});
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(expected), 10.0);
}

TEST(AlgorithmsTest, NvlsMovesTheBufferUpAndDownOnce) {
  // Up S, down S on separate directions, pipelined: T = 2 l_nvl + S/B + c/B (the last chunk).
  const ClusterSpec spec = cluster(8);
  const double s = 1e9;
  const double c = spec.collectives.pipeline_chunk_bytes;
  const Time got = flow_time(spec, 1, {CollectiveOp::kAllReduce, Algorithm::kNvls, s});
  const Time expected = 2 * kMicrosecond + transfer_time(s, 100e9) + transfer_time(c, 100e9);
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(expected), 10.0);
}

TEST(AlgorithmsTest, SoftwareLatencyAndEfficiencyApply) {
  // Ring all-reduce over 4 nodes x 1 GPU: 6 steps of (2 x 2 us + S/4 / (25 GB/s x eff)) plus the
  // software latency once.
  ClusterSpec spec = cluster(1);
  AlgorithmTuning ring;
  ring.software_latency = 10 * kMicrosecond;
  ring.efficiency = 0.8;
  spec.collectives.at(Algorithm::kRing) = ring;
  const double s = 4e8;
  const Time expected =
      10 * kMicrosecond + 6 * (4 * kMicrosecond + transfer_time(s / 4 / 0.8, 25e9));
  EXPECT_EQ(flow_time(spec, 4, {CollectiveOp::kAllReduce, Algorithm::kRing, s}), expected);
  EXPECT_EQ(analytic_time(spec, 4, {CollectiveOp::kAllReduce, Algorithm::kRing, s}), expected);
}

TEST(AlgorithmsTest, PickerTakesTheFastestApplicableAlgorithm) {
  ClusterSpec spec = cluster(8);
  AlgorithmTuning nvls;
  nvls.software_latency = 100 * kMicrosecond;  // slow to start, fast to stream
  spec.collectives.at(Algorithm::kNvls) = nvls;
  const ClusterTopology topology = build_cluster_topology(spec, 1);
  Router router(topology.topology);
  EXPECT_EQ(pick_algorithm(router, spec, topology, CollectiveOp::kAllReduce, 1e3).algorithm,
            Algorithm::kRing);
  const auto large = pick_algorithm(router, spec, topology, CollectiveOp::kAllReduce, 1e10);
  EXPECT_EQ(large.algorithm, Algorithm::kNvls);
  EXPECT_EQ(large.analytic_time,
            analytic_collective_time(router, spec, topology,
                                     {CollectiveOp::kAllReduce, Algorithm::kNvls, 1e10}));
  for (const Algorithm a : applicable_algorithms(CollectiveOp::kAllReduce, spec, 1)) {
    const Time t =
        analytic_collective_time(router, spec, topology, {CollectiveOp::kAllReduce, a, 1e10});
    EXPECT_GE(t, analytic_collective_time(router, spec, topology,
                                          {CollectiveOp::kAllReduce, Algorithm::kNvls, 1e10}));
  }
  EXPECT_FALSE(is_applicable(Algorithm::kNvls, CollectiveOp::kAllReduce, spec, 2));
  EXPECT_FALSE(is_applicable(Algorithm::kTwoD, CollectiveOp::kAllToAll, spec, 1));
}

}  // namespace
}  // namespace trainsim::models
