// Collectives lowered as NCCL runs them: flow form against analytic form at every shape, and both
// against closed forms worked out by hand on uncontended fabrics.
#include "models/collectives/algorithms.h"

#include <limits>
#include <map>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "models/collectives/collective_plan.h"

namespace trainsim::models {
namespace {

// `nodes` nodes of `gpus` Hopper GPUs on an NVSwitch (NVLink 100 GB/s each way, 1 us per link),
// one NIC of 25 GB/s (200 Gb/s) per GPU on a single switch (2 us per NIC link; GPU-NIC links
// fast). No launch cost and no per-hop latency (scales 0) unless a test sets them, so times are
// NCCL's base latency plus the bandwidth terms.
ClusterSpec cluster(int gpus, int nics = -1) {
  ClusterSpec c;
  c.name = "test";
  c.nodes = 128;
  c.gpus_per_node = gpus;
  c.gpu.model = "G";
  c.gpu.architecture = GpuArch::kHopper;
  c.gpu.peak_flops_per_s[Dtype::kBf16] = 1e15;
  c.gpu.hbm_bandwidth_bytes_per_s = 1e12;
  c.gpu.hbm_capacity_bytes = 1e10;
  c.intra_node.gpu_link = LinkClassSpec{100e9, kMicrosecond, 1.0};
  c.intra_node.nvls = true;
  c.nic.count = nics < 0 ? gpus : nics;
  c.nic.link = LinkClassSpec{25e9, 2 * kMicrosecond, 1.0};
  c.nic.gpu_link = LinkClassSpec{1e15, 0, 1.0};
  c.nic.gpus.assign(c.nic.count, {});
  for (int g = 0; g < gpus; ++g) c.nic.gpus[g * c.nic.count / gpus].push_back(g);
  c.network.topology = NetworkTopology::kSingleSwitch;
  c.collectives.nvlink_latency_scale = 0;
  c.collectives.pcie_latency_scale = 0;
  c.collectives.network_latency_scale = 0;
  return c;
}

// `after_analytic`: as a training step runs it, the analytic time first (its lowered streams
// kept in the cache), then the flows from the cache's streams; the cache must then hold them.
Time flow_time(const ClusterSpec& spec, int nodes, const CollectiveRequest& request,
               bool after_analytic = false) {
  Simulation sim;
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  FlowNetwork network(sim, topology.topology);
  AnalyticCache cache;
  if (after_analytic) {
    analytic_collective_time(network.router(), spec, topology, request, &cache);
    EXPECT_EQ(cache.lowered.size(), 1u);
  }
  auto collective = after_analytic
                        ? make_flow_collective(sim, network,
                                               prepare_flow_collective(network, spec, topology,
                                                                       request, &cache))
                        : make_flow_collective(sim, network, spec, topology, request);
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

CollectiveRequest simple(CollectiveOp op, Algorithm a, double bytes) {
  CollectiveRequest r{op, a, bytes};
  r.protocol = Protocol::kSimple;
  return r;
}

// NCCL's latency of the request with the test cluster's scales (0: base latency only).
Time base(const ClusterSpec& spec, int nodes, const CollectiveRequest& r) {
  const NcclComm comm = make_nccl_comm(spec, nodes);
  return time_from_seconds(1e-6 * nccl_latency_us(comm, r.op, r.algorithm, *r.protocol, r.bytes,
                                                  HopLatencyScales{0, 0, 0, 1, 1}));
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
      {CollectiveOp::kAllReduce, Algorithm::kRing, 3, 8},
      {CollectiveOp::kAllGather, Algorithm::kRing, 1, 8},
      {CollectiveOp::kAllGather, Algorithm::kRing, 5, 8},
      {CollectiveOp::kReduceScatter, Algorithm::kRing, 3, 1},
      {CollectiveOp::kBroadcast, Algorithm::kRing, 1, 4},
      {CollectiveOp::kReduce, Algorithm::kRing, 5, 2},
      {CollectiveOp::kAllReduce, Algorithm::kTree, 4, 1},
      {CollectiveOp::kAllReduce, Algorithm::kTree, 7, 4},
      {CollectiveOp::kAllReduce, Algorithm::kNvls, 1, 8},
      {CollectiveOp::kAllReduce, Algorithm::kNvlsTree, 3, 8},
      {CollectiveOp::kAllGather, Algorithm::kPat, 6, 1},
      {CollectiveOp::kAllReduce, Algorithm::kHierarchical, 2, 4},
      {CollectiveOp::kAllToAll, Algorithm::kDirect, 1, 8},
      {CollectiveOp::kAllToAll, Algorithm::kDirect, 4, 1},
      {CollectiveOp::kAllToAll, Algorithm::kTwoD, 2, 4},
      {CollectiveOp::kSendRecv, Algorithm::kP2p, 1, 8},
      {CollectiveOp::kSendRecv, Algorithm::kP2p, 4, 1},
  };
  for (const Case& c : cases) {
    ClusterSpec spec = cluster(c.gpus);
    spec.collectives.launch_latency = 3 * kMicrosecond;
    spec.collectives.nvlink_latency_scale = 1;
    spec.collectives.network_latency_scale = 1;
    for (const double bytes : {8.0, 1e6, 3.3e8}) {
      const CollectiveRequest request{c.op, c.algorithm, bytes};
      const double flow = static_cast<double>(flow_time(spec, c.nodes, request));
      const double analytic = static_cast<double>(analytic_time(spec, c.nodes, request));
      EXPECT_NEAR(flow / analytic, 1.0, 1e-9)
          << collective_name(c.op) << "/" << algorithm_name(c.algorithm) << " " << c.nodes << "x"
          << c.gpus << " " << bytes << " B";
      const bool streams = c.algorithm != Algorithm::kDirect && c.algorithm != Algorithm::kTwoD &&
                           c.algorithm != Algorithm::kP2p;
      if (streams) {
        // From the streams the analytic time kept: the same flows, to the picosecond.
        EXPECT_EQ(static_cast<double>(flow_time(spec, c.nodes, request, true)), flow)
            << collective_name(c.op) << "/" << algorithm_name(c.algorithm) << " " << c.nodes
            << "x" << c.gpus << " " << bytes << " B";
      }
    }
  }
}

TEST(AlgorithmsTest, FlowEqualsAnalyticAtEveryNodeCountUpTo128) {
  // A plain ring all-reduce, NCCL's choice at every size and the other algorithms across nodes:
  // within 0.1% (here: to rounding) at 1 to 128 nodes of 8 GPUs.
  ClusterSpec spec = cluster(8);
  spec.collectives.launch_latency = 2 * kMicrosecond;
  spec.collectives.nvlink_latency_scale = 1;
  spec.collectives.network_latency_scale = 1;
  for (const int nodes : {1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 128}) {
    for (const Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kNvlsTree}) {
      if (!is_applicable(a, CollectiveOp::kAllReduce, spec, nodes)) continue;
      const CollectiveRequest request{CollectiveOp::kAllReduce, a, 2.7e8};
      const double flow = static_cast<double>(flow_time(spec, nodes, request));
      const double analytic = static_cast<double>(analytic_time(spec, nodes, request));
      EXPECT_NEAR(flow / analytic, 1.0, 1e-3) << algorithm_name(a) << " " << nodes;
    }
  }
}

TEST(AlgorithmsTest, RingInsideANodeClosedForm) {
  // 8 GPUs, one ring stream crossing every GPU's NVLink once each way: it carries 2 (P-1)/P S
  // per hop at 100 GB/s, so busbw = 100 GB/s.
  const ClusterSpec spec = cluster(8);
  const double s = 8e8;
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kRing, s);
  EXPECT_EQ(flow_time(spec, 1, r), base(spec, 1, r) + transfer_time(2 * 7.0 / 8 * s, 100e9));
}

TEST(AlgorithmsTest, RingAcrossNodesUsesEveryRail) {
  // 2 nodes x 4 GPUs, a 25 GB/s NIC per GPU: one ring per NIC, each leaving a node on its own
  // rail and entering the next on the same rail, so every NIC carries one ring each way at
  // 25 GB/s (NVLink, 100 GB/s shared by 3 rings per GPU, does not bind): busbw = 4 x 25.
  const ClusterSpec spec = cluster(4);
  const double s = 8e8;
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kRing, s);
  EXPECT_EQ(flow_time(spec, 2, r), base(spec, 2, r) + transfer_time(2 * 7.0 / 8 * s, 100e9));
  // One NIC per node for 4 GPUs: all rings share it, busbw = 25 GB/s.
  const ClusterSpec one_nic = cluster(4, 1);
  EXPECT_EQ(flow_time(one_nic, 2, r), base(one_nic, 2, r) + transfer_time(2 * 7.0 / 8 * s, 25e9));
}

TEST(AlgorithmsTest, RingsStayOnTheirRailsAndUseEveryNic) {
  // 4 nodes x 8 GPUs, rail-optimised (NIC i of every node on rail leaf i, 4 nodes per leaf): no
  // ring hop climbs to a spine. With 16 NICs (two per GPU) every NIC carries a ring.
  for (const int nics : {8, 16}) {
    ClusterSpec spec = cluster(8, nics);
    spec.nic.gpus.assign(nics, {});
    for (int i = 0; i < nics; ++i) spec.nic.gpus[i] = {i * 8 / nics};
    spec.intra_node.gpu_link.bandwidth_bytes_per_s = 450e9;
    spec.nic.gpu_link.bandwidth_bytes_per_s = 63e9;
    spec.network.topology = NetworkTopology::kFatTree;
    spec.network.rail_optimized = true;
    spec.network.nodes_per_leaf = 4;
    spec.network.spines = 2;
    const ClusterTopology topology = build_cluster_topology(spec, 4);
    Router router(topology.topology);
    const NcclComm comm = make_nccl_comm(spec, 4);
    CollectiveRequest r = simple(CollectiveOp::kAllGather, Algorithm::kRing, 1e9);
    const LoweredCollective lowered =
        lower_collective(router, spec, topology, comm, r, Protocol::kSimple);
    std::set<LinkId> nic_links;
    for (const Stream& s : lowered.stages.at(0)) {
      for (const LinkId l : s.links) {
        EXPECT_NE(topology.topology.link(l).label, "leaf-spine") << nics;
        if (topology.topology.link(l).label == "nic") nic_links.insert(l);
      }
    }
    // Every NIC's send and receive link on every node.
    EXPECT_EQ(nic_links.size(), static_cast<std::size_t>(4 * nics * 2)) << nics;
  }
}

TEST(AlgorithmsTest, SendRecvLosesBandwidthAtScaleAllToAllDoesNot) {
  // H100-like nodes (450 GB/s NVLink, a 50 GB/s NIC per GPU behind Gen5 PCIe), 12.5 GB/s per
  // network p2p channel: NCCL gives a network peer 4 channels at 2 and 4 nodes (NIC-bound), 2 at
  // 8 nodes and 1 at 16, so one send/recv gets 50, 25 and 12.5 GB/s; an all-to-all keeps every
  // NIC busy with many peers.
  ClusterSpec spec = cluster(8);
  spec.intra_node.gpu_link.bandwidth_bytes_per_s = 450e9;
  spec.nic.link.bandwidth_bytes_per_s = 50e9;
  spec.nic.gpu_link.bandwidth_bytes_per_s = 63e9;
  spec.collectives.p2p_channel_bandwidth = 12.5e9;
  const double s = 4e9;
  auto busbw = [&](CollectiveOp op, int nodes) {
    const auto r =
        simple(op, op == CollectiveOp::kSendRecv ? Algorithm::kP2p : Algorithm::kTwoD, s);
    return s / to_seconds(analytic_time(spec, nodes, r)) * bus_bandwidth_factor(op, nodes * 8) /
           1e9;
  };
  EXPECT_NEAR(busbw(CollectiveOp::kSendRecv, 2), 50.0, 0.5);
  EXPECT_NEAR(busbw(CollectiveOp::kSendRecv, 8), 25.0, 0.25);
  EXPECT_NEAR(busbw(CollectiveOp::kSendRecv, 16), 12.5, 0.15);
  // all-to-all: busbw = N/(N-1) x the per-GPU NIC (nccl-tests#130): 50 x 16/15 at 16 nodes.
  EXPECT_NEAR(busbw(CollectiveOp::kAllToAll, 16), 50.0 * 16 / 15, 1.0);
}

TEST(AlgorithmsTest, InNetworkReductionNeedsSharp) {
  ClusterSpec spec = cluster(8);
  EXPECT_FALSE(is_applicable(Algorithm::kCollNetDirect, CollectiveOp::kAllReduce, spec, 4));
  spec.network.sharp = true;
  EXPECT_TRUE(is_applicable(Algorithm::kCollNetDirect, CollectiveOp::kAllReduce, spec, 4));
  EXPECT_TRUE(is_applicable(Algorithm::kCollNetChain, CollectiveOp::kAllReduce, spec, 4));
  EXPECT_FALSE(is_applicable(Algorithm::kCollNetChain, CollectiveOp::kAllGather, spec, 4));
  // Each node sends and receives the buffer once through the switches, whatever the node count:
  // busbw stays near 2 x the node's NICs (here capped by NVLink inside the node).
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kCollNetChain, 1e9);
  const Time four = analytic_time(spec, 4, r);
  const Time sixteen = analytic_time(spec, 16, r);
  EXPECT_NEAR(static_cast<double>(sixteen) / four, 1.0, 0.02);
}

TEST(AlgorithmsTest, DoubleBinaryTreeClosedForm) {
  // 4 nodes x 1 GPU, two tree streams on the one NIC. NCCL's trees over 4 nodes: tree 0 is
  // 0 -> 2 -> {1, 3}, tree 1 (mirrored) 3 -> 1 -> {0, 2}. Node 2's NIC sends tree 0's data up
  // once and down twice and tree 1's up once: 3 r0 + r1 <= 25 GB/s, and node 1 the mirror, so
  // r0 = r1 = 6.25 GB/s of wire bytes. Each stream carries half the channels: S / 2 of data,
  // S / (2 x 0.92) on the wire (NCCL rates Tree at 0.92).
  const ClusterSpec spec = cluster(1);
  const double s = 1e9;
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kTree, s);
  EXPECT_EQ(flow_time(spec, 4, r), base(spec, 4, r) + transfer_time(s / 2 / 0.92, 6.25e9));
}

TEST(AlgorithmsTest, NvlsMovesTheBufferThroughTheSwitch) {
  // Each GPU sends S (reduction reads) + S/P (multicast of its reduced shard) up and receives as
  // much down, at NCCL's NVLS efficiency (Hopper 0.85) of NVLink.
  const ClusterSpec spec = cluster(8);
  const double s = 1e9;
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kNvls, s);
  EXPECT_EQ(flow_time(spec, 1, r), base(spec, 1, r) + transfer_time(9.0 / 8 * s / 0.85, 100e9));
}

TEST(AlgorithmsTest, EveryNvlsChunkStepPaysTheStepLatency) {
  // 16 channels x 8 GPUs = 128 operations; a 1 GiB all-reduce moves 128 KiB chunks: 1 GiB /
  // (128 x 128 KiB) = 64 steps, 64 x 5 us = 320 us more than without a step latency. At 48 MiB
  // the chunks are 32 KiB: ceil(48 MiB / 4 MiB) = 12 steps, 60 us.
  ClusterSpec spec = cluster(8);
  ClusterSpec stepped = spec;
  stepped.intra_node.nvls_step_latency = 5 * kMicrosecond;
  for (const auto& [bytes, steps] : {std::pair{1073741824.0, 64}, std::pair{50331648.0, 12}}) {
    const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kNvls, bytes);
    EXPECT_EQ(flow_time(stepped, 1, r) - flow_time(spec, 1, r), steps * 5 * kMicrosecond);
    EXPECT_EQ(analytic_time(stepped, 1, r) - analytic_time(spec, 1, r), steps * 5 * kMicrosecond);
  }
}

TEST(AlgorithmsTest, NvlsTreeShowsThreeNvlsStepsAtEverySize) {
  // Across nodes the NVLS steps run beside the network stage, which is slower per chunk (here
  // 128 operations share the nodes' NICs), so only the first chunk's scatter and reduce and the
  // last one's broadcast show: 3 x 5 us more than without a step latency, at 1 GiB (256 chunks of
  // 32 KiB per operation, which counted per chunk would be 1.28 ms) as at 32 MiB (8 chunks).
  const ClusterSpec spec = cluster(8);
  ClusterSpec stepped = spec;
  stepped.intra_node.nvls_step_latency = 5 * kMicrosecond;
  for (const double bytes : {1073741824.0, 33554432.0}) {
    const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kNvlsTree, bytes);
    EXPECT_EQ(flow_time(stepped, 2, r) - flow_time(spec, 2, r), 3 * 5 * kMicrosecond);
    EXPECT_EQ(analytic_time(stepped, 2, r) - analytic_time(spec, 2, r), 3 * 5 * kMicrosecond);
  }
}

TEST(AlgorithmsTest, NvlsTreePaysItsPipelineFillOnce) {
  // 2 nodes: 16 NVLS channels x 8 heads = 128 operations; a chunk crosses 2 network stages
  // before the pipeline is full, so k chunks take k + 2 chunk times. The test cluster's NVLink
  // (4 links) makes NCCL rate NVLSTree under 150 GB/s, so its chunks are 32 KiB: 1 GiB in
  // k = 256 per operation, 512 MiB in 128, 32 MiB in 8. The bandwidth time per byte, divided by
  // (k + 2) / k, is the same at every size.
  const ClusterSpec spec = cluster(8);
  const NcclComm comm = make_nccl_comm(spec, 2);
  ASSERT_EQ(nccl_nvls_concurrent_ops(comm), 128);
  ASSERT_EQ(nccl_nvls_chunk_bytes(comm, 1073741824.0, true), 32768.0);
  auto per_byte = [&](double bytes, double k) {
    const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kNvlsTree, bytes);
    return to_seconds(flow_time(spec, 2, r) - base(spec, 2, r)) / bytes / ((k + 2) / k);
  };
  const double gib = per_byte(1073741824.0, 256);
  EXPECT_NEAR(per_byte(536870912.0, 128) / gib, 1.0, 1e-6);
  EXPECT_NEAR(per_byte(33554432.0, 8) / gib, 1.0, 1e-6);
}

TEST(AlgorithmsTest, NvlsAcrossNodesReducesInTheNetworkAtTheNicsRate) {
  // With SHARP, NVLS spans nodes: inside each node as on one (9/8 S / 0.85 at 100 GB/s: 13.2 ms),
  // and each of the 8 heads sends S / 8 up to the switch and receives as much, at its NIC's
  // 5 GB/s with no NVLS factor (NCCL: interBw = bwInter): 25 ms, the slower part.
  ClusterSpec spec = cluster(8);
  spec.network.sharp = true;
  spec.nic.link.bandwidth_bytes_per_s = 5e9;
  ASSERT_TRUE(is_applicable(Algorithm::kNvls, CollectiveOp::kAllReduce, spec, 2));
  const double s = 1e9;
  const auto r = simple(CollectiveOp::kAllReduce, Algorithm::kNvls, s);
  EXPECT_NEAR(to_seconds(flow_time(spec, 2, r) - base(spec, 2, r)), s / 8 / 5e9, 1e-9);
}

TEST(AlgorithmsTest, DirectAllToAllClosedForm) {
  // P GPUs on one NVSwitch: each sends S/P to P-1 peers over its 100 GB/s NVLink:
  // T = software latency + 2 l_nvl + (P-1) S / (P B).
  const ClusterSpec spec = cluster(8);
  const double s = 8e8;
  const auto r = simple(CollectiveOp::kAllToAll, Algorithm::kDirect, s);
  const NcclComm comm = make_nccl_comm(spec, 1);
  const Time software =
      time_from_seconds(1e-6 * nccl_base_latency_us(comm, Algorithm::kRing, Protocol::kSimple));
  EXPECT_EQ(flow_time(spec, 1, r), software + 2 * kMicrosecond + transfer_time(7 * s / 8, 100e9));
}

TEST(AlgorithmsTest, AllToAllvThroughTheDestinationsRail) {
  // 2 nodes x 2 GPUs, 1 MB between every pair. Through the peer on the destination's rail (PXN),
  // GPU 0 sends GPU 1 its own 1 MB plus the 1 MB bound for GPU 3 (which leaves node 0 from GPU
  // 1), and GPU 2 its own 1 MB plus GPU 1's 1 MB bound for GPU 2: 2 MB on each of the 8 flows
  // (4 inside nodes, 4 between same-rail GPUs), none between GPUs of different rails and nodes.
  const ClusterSpec spec = cluster(2);
  const ClusterTopology topology = build_cluster_topology(spec, 2);
  const ByteMatrix bytes =
      ByteMatrix::from_rows(std::vector<std::vector<double>>(4, std::vector<double>(4, 1e6)));
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
  const NcclComm comm = make_nccl_comm(spec, 2);
  const Time software =
      time_from_seconds(1e-6 * nccl_base_latency_us(comm, Algorithm::kRing, Protocol::kSimple));
  EXPECT_EQ(alltoallv_time(router, spec, topology, bytes, Algorithm::kTwoD),
            software + 80 * kMicrosecond + 4 * kMicrosecond);
  // Direct: 12 flows of 1 MB; each NIC carries 2 MB each way as well.
  EXPECT_EQ(alltoallv_plan(spec, topology, bytes)->size(), 12u);
}

// Every rank of `nodes` nodes joins the plan's all-to-all at once; each rank's finish and the
// flows the network started.
struct AllToAllRun {
  std::vector<Time> finish;
  std::uint64_t flows = 0;
};
AllToAllRun join_all_to_all(const ClusterSpec& spec, int nodes, const ByteMatrix& bytes,
                            bool alone, Time solve_quantum = 0) {
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  Simulation sim;
  FlowNetwork network(sim, topology.topology);
  network.set_solve_quantum(solve_quantum);
  auto op = make_alltoallv(sim, network, spec, topology, bytes, Algorithm::kTwoD);
  AllToAllRun run;
  run.finish.assign(topology.gpu_count(), -1);
  op->join_all(
      topology.gpu_count(), [&](int r) { run.finish[r] = sim.now(); }, alone);
  sim.run();
  run.flows = network.counters().flows_started;
  return run;
}

TEST(AlgorithmsTest, AnAllToAllvAloneRunsOneFlowPerClassWithTheSameTimes) {
  // The exchange of AllToAllvThroughTheDestinationsRail (2 nodes x 2 GPUs, 1 MB between every
  // pair, 2 MB on each of its 8 flows) on one switch: node 1's flows mirror node 0's, so alone on
  // the fabric the plan runs one flow per class: GPU 0 to 1 and 1 to 0 inside a node, rail 0 and
  // rail 1 between the nodes. Every rank is done when its rail's 2 MB has crossed its NIC at 25
  // GB/s (80 us), after the 2 + 2 us of the two NIC links, as when every flow runs.
  const ClusterSpec spec = cluster(2);
  const ByteMatrix bytes =
      ByteMatrix::from_rows(std::vector<std::vector<double>>(4, std::vector<double>(4, 1e6)));
  const AllToAllRun whole = join_all_to_all(spec, 2, bytes, /*alone=*/false);
  const AllToAllRun classes = join_all_to_all(spec, 2, bytes, /*alone=*/true);
  EXPECT_EQ(whole.flows, 8u);
  EXPECT_EQ(classes.flows, 4u);
  EXPECT_EQ(classes.finish, whole.finish);
  const Time software = time_from_seconds(
      1e-6 * nccl_base_latency_us(make_nccl_comm(spec, 2), Algorithm::kRing, Protocol::kSimple));
  for (const Time t : whole.finish) EXPECT_EQ(t, software + 84 * kMicrosecond);
  // 4 nodes of 2, GPU 0 of node 1 sending 4 MB to each peer: node 1 is a kind of its own, and
  // nodes 0, 2 and 3 one kind. The classes still run what every flow runs.
  std::vector<std::vector<double>> rows(8, std::vector<double>(8, 1e6));
  rows[2].assign(8, 4e6);
  const ByteMatrix hot = ByteMatrix::from_rows(rows);
  const AllToAllRun hot_whole = join_all_to_all(spec, 4, hot, false);
  const AllToAllRun hot_classes = join_all_to_all(spec, 4, hot, true);
  EXPECT_LT(hot_classes.flows, hot_whole.flows);
  EXPECT_EQ(hot_classes.finish, hot_whole.finish);
  // With a solve quantum (rates not exactly max-min between solves) every flow runs.
  const AllToAllRun quantum = join_all_to_all(spec, 2, bytes, true, 10 * kMicrosecond);
  EXPECT_EQ(quantum.flows, 8u);
}

TEST(AlgorithmsTest, AnAllToAllvBundlesATransferWithItsCounterpartsOnTheNodesOfAClass) {
  // 4 nodes of 2 GPUs on one switch. Node 0's GPUs hold the tables: each sends 4 MB to every
  // GPU of the other nodes, which send it 1 MB each (ids). Nodes 1-3 do the same: one class,
  // node 1 its first. Through the destination's rail (PXN), GPU (0, j) sends GPU (n, j) both of
  // node 0's 4 MB: 8 MB on each of its 3 flows, 24 MB through its 25 GB/s NIC in 960 us; every
  // GPU of nodes 1-3 gets its 8 MB at that pace too, and the ids (2 MB per flow, 6 MB into each
  // node-0 NIC) and NVLink legs finish sooner. So after NCCL's software latency node 0's ranks
  // are done in 960 us (a sender's part ends when its last byte has left), the others 2 + 2 us
  // later (the two NIC links' latency), with or without bundles.
  // Without bundles, 20 flows: 6 node-0 NIC flows each way, 2 NVLink legs on node 0 (data for
  // the other rail's peers) and 2 on each other node (ids for the other rail's table GPU). With
  // bundles, node 0's flows to (from) the 3 nodes of the class on one rail are one: 2 + 2
  // bundles; the class's NVLink legs from GPU 0 to 1 are one, and from 1 to 0: 2 bundles; node
  // 0's two legs stay apart: 8 flows.
  ClusterSpec spec = cluster(2);
  // Channels without a throughput of their own, so that every transfer's pace is the fabric's:
  // NCCL's rounds put node 0's parts for nodes 1 and 2 on channels 1 and 3 and those for node 3
  // on 0 and 2, which with a channel throughput would set node 3's apart.
  spec.collectives.p2p_channel_bandwidth = std::numeric_limits<double>::infinity();
  spec.collectives.p2p_nvlink_channel_bandwidth = std::numeric_limits<double>::infinity();
  const int nodes = 4, g = 2;
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  std::vector<std::vector<double>> rows(8, std::vector<double>(8, 0.0));
  for (int r = 0; r < g; ++r) {
    for (int o = g; o < nodes * g; ++o) {
      rows[r][o] = 4e6;
      rows[o][r] = 1e6;
    }
  }
  const ByteMatrix bytes = ByteMatrix::from_rows(rows);
  const auto plan = alltoallv_plan(spec, topology, bytes, Algorithm::kTwoD);
  const std::vector<int> representative = {0, 1, 1, 1};
  const NcclComm comm = make_nccl_comm(spec, nodes);
  const Time software =
      time_from_seconds(1e-6 * nccl_base_latency_us(comm, Algorithm::kRing, Protocol::kSimple));
  std::vector<std::vector<Time>> finish;
  for (const bool bundled : {false, true}) {
    Simulation sim;
    FlowNetwork network(sim, topology.topology);
    const auto routes = route_plan(network.router(), *plan);
    std::shared_ptr<const PlanBundles> bundles;
    if (bundled) {
      bundles = bundle_plan(network.router(), *plan, *routes, representative, topology);
      ASSERT_NE(bundles, nullptr);
      EXPECT_EQ(bundles->size(), 6u);
    }
    auto op = make_alltoallv(sim, network, spec, topology, plan, false, routes, bundles);
    finish.emplace_back(nodes * g, -1);
    for (int r = 0; r < nodes * g; ++r) {
      op->join(r, [&finish, &sim, r] { finish.back()[r] = sim.now(); });
    }
    bool apart = false;
    network.set_on_bundle_apart([&] { apart = true; });
    sim.run();
    EXPECT_FALSE(apart);
    EXPECT_EQ(network.counters().flows_started, bundled ? 8u : 20u);
    for (int r = 0; r < nodes * g; ++r) {
      EXPECT_EQ(finish.back()[r], software + (r < g ? 960 : 964) * kMicrosecond) << r;
    }
  }
  EXPECT_EQ(finish[1], finish[0]);
  Router router(topology.topology);
  const auto routes = route_plan(router, *plan);
  const auto bundles = bundle_plan(router, *plan, *routes, representative, topology);
  // A plan between the same ends (the gradients' after the ids') takes the same bundles when
  // its members are alike; when node 2's GPU 0 sends rank 0 2 MB (3 MB leave node 2 for GPU 0
  // of node 0, 2 MB the other nodes) that bundle is no more, and the plan gets bundles of its
  // own.
  EXPECT_EQ(bundle_plan(router, *plan, *routes, representative, topology, bundles), bundles);
  rows[4][0] = 2e6;
  const auto unlike = alltoallv_plan(spec, topology, ByteMatrix::from_rows(rows), Algorithm::kTwoD);
  ASSERT_TRUE(same_endpoints(*unlike, *plan));
  const auto own = bundle_plan(router, *unlike, *routes, representative, topology, bundles);
  ASSERT_NE(own, nullptr);
  EXPECT_NE(own, bundles);
  EXPECT_EQ(own->size(), 5u);
  // A plan between nodes that each are a class of their own has nothing to bundle.
  EXPECT_EQ(bundle_plan(router, *plan, *routes, std::vector<int>{0, 1, 2, 3}, topology), nullptr);
}

TEST(AlgorithmsTest, StageSecondsSharesLinksByMaxMinCountingRepeatedHops) {
  // Links L0 (100 B/s), L1 (100 B/s), L2 (40 B/s); 1000 bytes per stream. S0 crosses L0 twice
  // and L1 once, S1 crosses L1, S2 crosses L0 and L2. L0 carries three shares (two of S0's): 33.3
  // B/s each for S0 and S2; S1 takes L1's remaining 66.7 B/s and ends at 15 s, which leaves the
  // others' rates as they were: 1000 / 33.3 = 30 s in all. (Counting S0 once on L0 would give 40
  // B/s to S2, bound by L2, and 60 B/s to S0, bound by L1's 50: not 30 s.) The same streams again,
  // in a stage over other links first, give the same time.
  Topology topology;
  std::vector<VertexId> v;
  for (int i = 0; i < 6; ++i) v.push_back(topology.add_vertex("v" + std::to_string(i), false));
  const LinkId other = topology.add_link(v[4], v[5], 10, 0);
  const LinkId l0 = topology.add_link(v[0], v[1], 100, 0);
  const LinkId l1 = topology.add_link(v[1], v[2], 100, 0);
  const LinkId l2 = topology.add_link(v[2], v[3], 40, 0);
  std::vector<Stream> streams(3);
  streams[0].links = {l0, l1, l0};
  streams[1].links = {l1};
  streams[2].links = {l2, l0};
  for (Stream& s : streams) s.bytes_per_byte = 1.0;
  EXPECT_NEAR(stage_seconds(topology, streams, 1000), 30.0, 1e-9);
  std::vector<Stream> alone(1);
  alone[0].links = {other, other};
  alone[0].bytes_per_byte = 1.0;
  EXPECT_NEAR(stage_seconds(topology, alone, 1000), 200.0, 1e-9);  // 2 shares of 10 B/s
  EXPECT_NEAR(stage_seconds(topology, streams, 1000), 30.0, 1e-9);
}

TEST(AlgorithmsTest, StageSecondsHoldsCappedStreamsToTheirCaps) {
  // One 100 B/s link, 1000 bytes per stream. S1 (cap 20 B/s) is fixed first, under the fair
  // share of 33.3; then S0 (cap 30) under the share of 40 left; the uncapped S2 takes the
  // remaining 50 B/s and ends at 20 s. S0 and S1 stay at their caps: S0 ends at 33.3 s, S1 at
  // 50 s. Without the caps the three would share the link equally and end together at 30 s.
  Topology topology;
  const VertexId a = topology.add_vertex("a", false), b = topology.add_vertex("b", false);
  const LinkId link = topology.add_link(a, b, 100, 0);
  std::vector<Stream> streams(3);
  for (Stream& s : streams) {
    s.links = {link};
    s.bytes_per_byte = 1.0;
  }
  streams[0].rate_cap = 30;
  streams[1].rate_cap = 20;
  EXPECT_NEAR(stage_seconds(topology, streams, 1000), 50.0, 1e-9);
}

TEST(AlgorithmsTest, TransposedAllToAllvSendsEachPairsBytesTheOtherWay) {
  // 2 nodes x 2 GPUs, uneven bytes m[a][b] = 1 MB x (1 + 4a + b). Read transposed, GPU a sends
  // GPU b m[b][a]: with PXN, GPU 0 sends GPU 1 its own m[1][0] = 5 MB plus m[3][0] = 13 MB bound
  // for GPU 3, and GPU 1 sends GPU 3 that 13 MB plus its own m[3][1] = 14 MB. The plan equals the
  // one of the transposed copy, transfer for transfer.
  const ClusterSpec spec = cluster(2);
  const ClusterTopology topology = build_cluster_topology(spec, 2);
  std::vector<std::vector<double>> m(4, std::vector<double>(4)), copy = m;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) m[a][b] = 1e6 * (1 + 4 * a + b);
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) copy[a][b] = m[b][a];
  }
  const double eff_intra = spec.collectives.p2p_nvlink_efficiency;
  const double eff_net = spec.collectives.p2p_network_efficiency;
  for (const Algorithm algorithm : {Algorithm::kTwoD, Algorithm::kDirect}) {
    const ByteMatrix stored = ByteMatrix::from_rows(m), transposed = ByteMatrix::from_rows(copy);
    const auto view = alltoallv_plan(spec, topology, ByteMatrixView(stored, true), algorithm);
    const auto plain = alltoallv_plan(spec, topology, transposed, algorithm);
    ASSERT_EQ(view->size(), plain->size());
    for (TransferId id = 0; id < view->size(); ++id) {
      const PlanTransfer& a = view->transfer(id);
      const PlanTransfer& b = plain->transfer(id);
      EXPECT_EQ(a.sender, b.sender);
      EXPECT_EQ(a.receiver, b.receiver);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.rate_cap, b.rate_cap);
      if (algorithm != Algorithm::kTwoD) continue;
      if (a.sender == 0 && a.receiver == 1) {
        EXPECT_DOUBLE_EQ(a.bytes, (5e6 + 13e6) / eff_intra);
      }
      if (a.sender == 1 && a.receiver == 3) {
        EXPECT_DOUBLE_EQ(a.bytes, (13e6 + 14e6) / eff_net);
      }
    }
  }
}

TEST(AlgorithmsTest, AllToAllvPlansOverSeveralBlocksOfSendersSumEveryPairOnce) {
  // 10 nodes x 2 GPUs: the plan sums its flows eight nodes of senders at a time, so this takes
  // two blocks. Uneven bytes m[a][b] = 1 MB x (1 + (7a + 3b) mod 11), none where (a + b) mod 5
  // is 0. With PXN, a pair across nodes adds its bytes to (a, proxy) and (proxy, b), the proxy
  // being a's node's GPU on b's rail; inside a node, to (a, b). The flows worked out pair by pair
  // here must be the plan's, in sender-then-receiver order, for the matrix and for a transposed
  // view of its transpose alike.
  constexpr int g = 2, nodes = 10, p = g * nodes;
  const ClusterSpec spec = cluster(g);
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  std::vector<std::vector<double>> m(p, std::vector<double>(p, 0.0)), t = m;
  std::map<std::pair<int, int>, double> expected;
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      if ((a + b) % 5 == 0) continue;
      m[a][b] = 1e6 * (1 + (7 * a + 3 * b) % 11);
      t[b][a] = m[a][b];
      if (a == b) continue;
      if (a / g == b / g) {
        expected[{a, b}] += m[a][b];
        continue;
      }
      const int proxy = (a / g) * g + b % g;
      if (proxy != a) expected[{a, proxy}] += m[a][b];
      expected[{proxy, b}] += m[a][b];
    }
  }
  const ByteMatrix stored = ByteMatrix::from_rows(m), transpose = ByteMatrix::from_rows(t);
  const double eff_intra = spec.collectives.p2p_nvlink_efficiency;
  const double eff_net = spec.collectives.p2p_network_efficiency;
  const auto plain = alltoallv_plan(spec, topology, stored, Algorithm::kTwoD);
  const auto view =
      alltoallv_plan(spec, topology, ByteMatrixView(transpose, true), Algorithm::kTwoD);
  ASSERT_EQ(plain->size(), expected.size());
  ASSERT_EQ(view->size(), expected.size());
  TransferId id = 0;
  for (const auto& [pair, bytes] : expected) {
    const PlanTransfer& a = plain->transfer(id);
    const PlanTransfer& b = view->transfer(id);
    ++id;
    EXPECT_EQ(a.sender, pair.first);
    EXPECT_EQ(a.receiver, pair.second);
    const double eff = pair.first / g == pair.second / g ? eff_intra : eff_net;
    EXPECT_NEAR(a.bytes, bytes / eff, 1e-6 * bytes) << pair.first << " -> " << pair.second;
    EXPECT_EQ(b.sender, a.sender);
    EXPECT_EQ(b.receiver, a.receiver);
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ(b.rate_cap, a.rate_cap);
  }
}

TEST(AlgorithmsTest, PerNodeAllToAllvRunsOnEachNodesOwnCommunicator) {
  // 100 MB between every pair of GPUs inside each of 2 nodes of 8, nothing across. On one
  // communicator per node every channel serves NVLink peers, so both nodes together take exactly
  // what one node alone takes; on the 16-GPU communicator NCCL spreads its channels over network
  // peers too, and at 5 GB/s per NVLink channel the peers' caps make it slower.
  ClusterSpec spec = cluster(8);
  spec.collectives.p2p_nvlink_channel_bandwidth = 5e9;
  std::vector<std::vector<double>> two(16, std::vector<double>(16, 0.0));
  std::vector<std::vector<double>> one(8, std::vector<double>(8, 0.0));
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      if (a != b && a / 8 == b / 8) two[a][b] = 1e8;
      if (a < 8 && b < 8 && a != b) one[a][b] = 1e8;
    }
  }
  const ClusterTopology t2 = build_cluster_topology(spec, 2), t1 = build_cluster_topology(spec, 1);
  Router r2(t2.topology), r1(t1.topology);
  const ByteMatrix both = ByteMatrix::from_rows(two), first = ByteMatrix::from_rows(one);
  const Time alone = alltoallv_time(r1, spec, t1, first);
  EXPECT_EQ(alltoallv_time(r2, spec, t2, both, Algorithm::kDirect, /*per_node=*/true), alone);
  EXPECT_GT(alltoallv_time(r2, spec, t2, both), alone);
}

TEST(AlgorithmsTest, SendRecvRunsOnTheChannelsNcclGivesAPeer) {
  // 2 nodes x 1 GPU, 25 GB/s NICs: NCCL 2.29 gives a network peer ceil(25 / 14) = 2 channels;
  // at 5 GB/s per channel a large send/recv reaches 10 GB/s, well under the NIC.
  ClusterSpec spec = cluster(1);
  spec.collectives.p2p_channel_bandwidth = 5e9;
  const double s = 1e9;
  const auto r = simple(CollectiveOp::kSendRecv, Algorithm::kP2p, s);
  const NcclComm comm = make_nccl_comm(spec, 2);
  EXPECT_EQ(comm.p2p_channels_per_peer, 2);
  const Time software =
      time_from_seconds(1e-6 * nccl_base_latency_us(comm, Algorithm::kRing, Protocol::kSimple));
  EXPECT_EQ(flow_time(spec, 2, r), software + 4 * kMicrosecond + transfer_time(s, 10e9));
  // One channel per peer (NCCL_NCHANNELS_PER_NET_PEER=1): 5 GB/s.
  spec.collectives.channels_per_net_peer = 1;
  EXPECT_EQ(flow_time(spec, 2, r), software + 4 * kMicrosecond + transfer_time(s, 5e9));
}

TEST(AlgorithmsTest, AllToAllPartsShareTheirSendersChannels) {
  // 10 nodes x 1 GPU, 25 GB/s NICs, 2 GB/s per channel: 2 p2p channels, 1 per network peer. An
  // all-to-all of 1 GB sends 100 MB to each rank, itself included, in one part; round r (the
  // schedule's r-th node delta) puts it on channel r mod 2, so each channel carries 5 parts and
  // a part moves at 2 / 5 GB/s: 0.4 GB/s per peer, 3.6 GB/s through the NIC, where a cap of one
  // channel per peer would have let each peer have 2 GB/s. Busbw = 9/10 x 2 x 2 GB/s.
  ClusterSpec spec = cluster(1);
  spec.collectives.p2p_channel_bandwidth = 2e9;
  const double s = 1e9;
  const NcclComm comm = make_nccl_comm(spec, 10);
  ASSERT_EQ(comm.p2p_channels, 2);
  ASSERT_EQ(nccl_p2p_op_channels(comm, s / 10), 1);
  const auto r = simple(CollectiveOp::kAllToAll, Algorithm::kDirect, s);
  const Time software =
      time_from_seconds(1e-6 * nccl_base_latency_us(comm, Algorithm::kRing, Protocol::kSimple));
  EXPECT_EQ(flow_time(spec, 10, r), software + 4 * kMicrosecond + transfer_time(s / 10, 0.4e9));
  EXPECT_EQ(analytic_time(spec, 10, r), flow_time(spec, 10, r));
}

TEST(AlgorithmsTest, LatencyGrowsWithTheRing) {
  // NCCL's per-step latencies along the ring: with 1 us per NVLink step and 10 us per network
  // step (scales chosen so), a 2 x 8 ring all-reduce of 8 bytes (LL) pays 30 steps, 2 across
  // nodes, plus the launch cost; 4 x 8 pays 62 steps, 6 across.
  ClusterSpec spec = cluster(8);
  spec.collectives.launch_latency = 5 * kMicrosecond;
  spec.collectives.nvlink_latency_scale = 1.0 / 0.6;    // LL: 0.6 us per NVLink step
  spec.collectives.network_latency_scale = 10.0 / 2.7;  // LL: 2.7 us per network step
  CollectiveRequest r{CollectiveOp::kAllReduce, Algorithm::kRing, 8};
  r.protocol = Protocol::kLl;
  const Time two = analytic_time(spec, 2, r);
  const Time four = analytic_time(spec, 4, r);
  // 6.6 us of base latency; bandwidth terms of 8 bytes are about a nanosecond.
  EXPECT_NEAR(to_microseconds(two), 5 + 6.6 + 28 * 1.0 + 2 * 10.0, 0.01);
  EXPECT_NEAR(to_microseconds(four), 5 + 6.6 + 56 * 1.0 + 6 * 10.0, 0.01);
}

TEST(AlgorithmsTest, ProtocolScalesOnlyTheNetworksSteps) {
  // LL's latency scale multiplies a network step's latency (NCCL's 2.7 us for a Ring LL network
  // step, times 3 here), not an NVLink step's (NCCL's 0.6 us stands). A ring all-reduce of 8
  // bytes (LL) on one node of 8: 5 us launch + 6.6 us base + 14 NVLink steps of 0.6 us, whatever
  // the scale. On 2 x 8: 28 steps inside nodes, each at least NCCL's network post overhead of
  // 1 us (Intel host), and 2 network steps of 2.7 x 3 us.
  ClusterSpec spec = cluster(8);
  spec.collectives.launch_latency = 5 * kMicrosecond;
  spec.collectives.nvlink_latency_scale = 1;
  spec.collectives.network_latency_scale = 1;
  CollectiveRequest r{CollectiveOp::kAllReduce, Algorithm::kRing, 8};
  r.protocol = Protocol::kLl;
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 1, r)), 5 + 6.6 + 14 * 0.6, 0.01);
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 2, r)), 5 + 6.6 + 28 * 1.0 + 2 * 2.7, 0.01);
  spec.collectives.ll_latency_scale = 3;
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 1, r)), 5 + 6.6 + 14 * 0.6, 0.01);
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 2, r)), 5 + 6.6 + 28 * 1.0 + 2 * 2.7 * 3, 0.01);
}

TEST(AlgorithmsTest, QueuePairsPerConnectionMultiplyAnIbNetworkStep) {
  // NCCL_IB_QPS_PER_CONNECTION=2: each network step goes out as two work requests, so on
  // InfiniBand it costs twice NCCL's 2.7 us (the same 2 x 8 LL ring all-reduce of 8 bytes as
  // above: 5 + 6.6 + 28 x 1.0 + 2 x 2.7 x 2); the NVLink steps and one node are unchanged. EFA's
  // plugin does not read the variable.
  ClusterSpec spec = cluster(8);
  spec.collectives.launch_latency = 5 * kMicrosecond;
  spec.collectives.nvlink_latency_scale = 1;
  spec.collectives.network_latency_scale = 1;
  spec.collectives.ib_qps_per_connection = 2;
  CollectiveRequest r{CollectiveOp::kAllReduce, Algorithm::kRing, 8};
  r.protocol = Protocol::kLl;
  ASSERT_EQ(spec.nic.transport, NetTransport::kInfiniband);
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 1, r)), 5 + 6.6 + 14 * 0.6, 0.01);
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 2, r)), 5 + 6.6 + 28 * 1.0 + 2 * 2.7 * 2, 0.01);
  spec.nic.transport = NetTransport::kRoce;
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 2, r)), 5 + 6.6 + 28 * 1.0 + 2 * 2.7 * 2, 0.01);
  spec.nic.transport = NetTransport::kEfa;
  EXPECT_NEAR(to_microseconds(analytic_time(spec, 2, r)), 5 + 6.6 + 28 * 1.0 + 2 * 2.7, 0.01);
}

TEST(AlgorithmsTest, PickerRunsWhatNcclsTunerChooses) {
  ClusterSpec spec = cluster(8);
  spec.intra_node.gpu_link.bandwidth_bytes_per_s = 450e9;  // 18 NVLinks, as an H100
  const ClusterTopology topology = build_cluster_topology(spec, 1);
  Router router(topology.topology);
  const auto small = pick_algorithm(router, spec, topology, CollectiveOp::kAllReduce, 1e3);
  EXPECT_EQ(small.algorithm, Algorithm::kRing);
  EXPECT_EQ(small.protocol, Protocol::kLl);
  const auto large = pick_algorithm(router, spec, topology, CollectiveOp::kAllReduce, 1e10);
  EXPECT_EQ(large.algorithm, Algorithm::kNvls);
  // Each GPU sends (8 + 1) / 8 of the buffer up to the switch and receives as much, at NCCL's
  // Hopper NVLS efficiency of 0.85 of its 450 GB/s, after NCCL's NVLS latency of 25 us (not a
  // per-step latency, so the zero scales here leave it).
  EXPECT_NEAR(to_seconds(large.analytic_time), 25e-6 + 1e10 * 9.0 / 8 / 0.85 / 450e9, 1e-7);
  EXPECT_FALSE(is_applicable(Algorithm::kNvls, CollectiveOp::kAllReduce, spec, 2));
  EXPECT_TRUE(is_applicable(Algorithm::kNvlsTree, CollectiveOp::kAllReduce, spec, 2));
  EXPECT_FALSE(is_applicable(Algorithm::kTwoD, CollectiveOp::kAllToAll, spec, 1));
  EXPECT_FALSE(is_applicable(Algorithm::kPat, CollectiveOp::kAllGather, spec, 2));
  EXPECT_TRUE(is_applicable(Algorithm::kPat, CollectiveOp::kAllGather, cluster(1), 2));
}

TEST(AlgorithmsTest, SolveQuantumStaysWithinHalfAPercent) {
  // An all-to-all and a ring all-reduce at once on 4 x 8 GPUs: they contend on every NIC. The
  // solve quantum (re-solving rates at multiples of 0.2% of a step) moves the end by < 0.5%.
  ClusterSpec spec = cluster(8);
  spec.collectives.launch_latency = kMicrosecond;
  const ClusterTopology topology = build_cluster_topology(spec, 4);
  auto run = [&](Time quantum) {
    Simulation sim;
    FlowNetwork network(sim, topology.topology);
    network.set_solve_quantum(quantum);
    auto a = make_flow_collective(sim, network, spec, topology,
                                  {CollectiveOp::kAllToAll, Algorithm::kTwoD, 6.4e7});
    auto b = make_flow_collective(sim, network, spec, topology,
                                  {CollectiveOp::kAllReduce, Algorithm::kRing, 2.6e8});
    for (int r = 0; r < topology.gpu_count(); ++r) {
      a->join(r, [] {});
      b->join(r, [] {});
    }
    sim.run();
    return static_cast<double>(sim.now());
  };
  const double exact = run(0);
  const double quantised = run(static_cast<Time>(exact * 0.002));
  EXPECT_NEAR(quantised / exact, 1.0, 0.005);
  EXPECT_GT(exact, static_cast<double>(analytic_time(
                       spec, 4, {CollectiveOp::kAllReduce, Algorithm::kRing, 2.6e8})));
}

}  // namespace
}  // namespace trainsim::models
