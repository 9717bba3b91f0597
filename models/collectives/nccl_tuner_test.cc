// NCCL's cost model against the worked figures of notes/nccl-model.md (section 2.4: H100, NVLink,
// Intel CPU, InfiniBand, NCCL >= 2.23) and its channel rules worked by hand.
#include "models/collectives/nccl_tuner.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

// DGX H100 as NCCL sees it: 18 NVLinks of 25 GB/s line rate per GPU, NVSwitch with NVLS, one
// 400 Gb/s NIC per GPU behind PCIe Gen5 x16 (63 GB/s line rate: NCCL rates it 48).
ClusterSpec dgx_h100(int nics = 8, double nic_gbps = 400) {
  ClusterSpec c;
  c.name = "h100";
  c.nodes = 256;
  c.gpus_per_node = 8;
  c.gpu.model = "H100";
  c.gpu.architecture = GpuArch::kHopper;
  c.intra_node.gpu_link = LinkClassSpec{450e9, 0, 1.0};
  c.intra_node.nvls = true;
  c.nic.count = nics;
  c.nic.link = LinkClassSpec{nic_gbps * 1e9 / 8, 0, 1.0};
  c.nic.gpu_link = LinkClassSpec{63e9, 0, 1.0};
  for (int i = 0; i < nics; ++i) c.nic.gpus.push_back({i * 8 / nics});
  c.network.topology = NetworkTopology::kSingleSwitch;
  return c;
}

double latency(const NcclComm& comm, Algorithm a, Protocol p, double bytes = 8) {
  return nccl_tuner_cost(comm, CollectiveOp::kAllReduce, a, p, bytes).latency_us;
}

TEST(NcclTunerTest, WorkedLatenciesOfOneNode) {
  const NcclComm comm = make_nccl_comm(dgx_h100(), 1);
  // Ring: 6.6 + 14 x 0.6 = 15.0 (LL), 14 + 14 x 1.9 = 40.6 (LL128), 8.4 + 14 x 3.4 = 56.0.
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kLl), 15.0, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kLl128), 40.6, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kSimple), 56.0, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kNvls, Protocol::kSimple), 25.0, 1e-9);
}

TEST(NcclTunerTest, WorkedLatenciesOfFourNodes) {
  const NcclComm comm = make_nccl_comm(dgx_h100(), 4);
  // Ring, 62 steps of which 6 cross nodes; intra steps at least the 1 us network overhead
  // (x3 for Simple): 6.6 + 56 x 1.0 + 6 x 2.7 = 78.8; 14 + 56 x 1.9 + 6 x 4 = 144.4;
  // 8.4 + 56 x 3.4 + 6 x 14 = 282.8, x1.4 once the message fills the channels.
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kLl), 78.8, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kLl128), 144.4, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kSimple), 282.8, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kSimple, 1 << 30), 282.8 * 1.4, 1e-9);
  // Tree: base + 2 (7 intra + log2(4) = 2 inter hops).
  EXPECT_NEAR(latency(comm, Algorithm::kTree, Protocol::kLl), 35.2, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kTree, Protocol::kLl128), 65.5, 1e-9);
  EXPECT_NEAR(latency(comm, Algorithm::kTree, Protocol::kSimple), 120.4, 1e-9);
  // NVLSTree: 25 + 2 x 2 x 20.9.
  EXPECT_NEAR(latency(comm, Algorithm::kNvlsTree, Protocol::kSimple), 108.6, 1e-9);
}

TEST(NcclTunerTest, OlderReleasesCountMoreInterNodeSteps) {
  ClusterSpec spec = dgx_h100();
  spec.collectives.nccl_version = NcclVersion{21};
  const NcclComm comm = make_nccl_comm(spec, 4);
  // 2.19-2.22: 2 x nNodes = 8 inter-node steps of 62: 6.6 + 54 x 1.0 + 8 x 2.7.
  EXPECT_NEAR(latency(comm, Algorithm::kRing, Protocol::kLl), 6.6 + 54 + 8 * 2.7, 1e-9);
  // and a Tree Simple base of 0 with 28 us per hop: 2 (7 x 28 + 2 x 28).
  EXPECT_NEAR(latency(comm, Algorithm::kTree, Protocol::kSimple), 2 * (7 * 28.0 + 2 * 28.0), 1e-9);
  // 2.18: NVLS keeps its base of 23 us (its NVLink hop is 0).
  spec.collectives.nccl_version = NcclVersion{18};
  EXPECT_NEAR(latency(make_nccl_comm(spec, 1), Algorithm::kNvls, Protocol::kSimple), 23.0, 1e-9);
}

TEST(NcclTunerTest, LowLatencyCapAcrossNodesFollowsTheCpuVendor) {
  // One node: the GPU generation's row (Hopper 141); across nodes the CPU's: Intel and Arm
  // row 0 (39.0 on 2 nodes, 20.4 beyond), AMD row 1 (22.5, 19.0).
  ClusterSpec spec = dgx_h100();
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 1)).ll_max, 141.0);
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 2)).ll_max, 39.0);
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 4)).ll_max, 20.4);
  spec.host.cpu_vendor = CpuVendor::kArm;
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 2)).ll_max, 39.0);
  spec.host.cpu_vendor = CpuVendor::kAmd;
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 2)).ll_max, 22.5);
  EXPECT_DOUBLE_EQ(nccl_bandwidth_caps(make_nccl_comm(spec, 4)).ll_max, 19.0);
}

TEST(NcclTunerTest, ChannelSearchOfAnH100NodeAcrossNodes) {
  // 8 NICs: at 48 GB/s (the Gen5 PCIe path) each NIC carries one ring and NVLink carries 8 rings
  // (each crosses 7 of 8 GPUs' NVLink: 8 x 7/8 x 48 = 336 <= 370.8); 8 x 48 = 384 covers the
  // GPU's 370.8. No duplication below 50 GB/s with more than 4 channels, and no doubling of fast
  // rings (that is for fewer than 8 GPUs per node): 8 channels of 48, 16 collective channels.
  const NcclComm comm = make_nccl_comm(dgx_h100(), 4);
  EXPECT_EQ(comm.ring.channels, 8);
  EXPECT_DOUBLE_EQ(comm.ring.bw_inter, 48.0);
  EXPECT_EQ(comm.channels, 16);
  // 4 GPUs per node (and their 4 NICs): 4 rings of 48, duplicated (4 channels are not more than
  // 4): 8 channels of 24.
  const NcclComm four = make_nccl_comm(restrict_gpus_per_node(dgx_h100(), 4), 4);
  EXPECT_EQ(four.ring.channels, 8);
  EXPECT_DOUBLE_EQ(four.ring.bw_inter, 24.0);
  EXPECT_NEAR(comm.nvlink_bw, 18 * 20.6, 1e-9);
  // 16 NICs of 200 Gb/s, two per GPU sharing its PCIe: 16 rings of 24 GB/s.
  const NcclComm sixteen = make_nccl_comm(dgx_h100(16, 200), 4);
  EXPECT_EQ(sixteen.ring.channels, 16);
  EXPECT_DOUBLE_EQ(sixteen.ring.bw_inter, 24.0);
}

TEST(NcclTunerTest, TwoNodeTreesRaiseTheirIntraNodeSpeed) {
  // 8 A100 (12 NVLinks rated 20 GB/s: 240) and 4 NICs of 100 Gb/s, each shared by two GPUs, as on
  // AWS p4de. Ring search: 12.5 GB/s per NIC path -> speed 12, one ring per NIC: 4 x 12 (8 x 7/8
  // x 12 fits NVLink); below 25 GB/s, no duplication.
  ClusterSpec spec = dgx_h100(4, 100);
  spec.gpu.architecture = GpuArch::kAmpere;
  spec.intra_node.gpu_link = LinkClassSpec{300e9, 0, 1.0};
  spec.nic.gpus = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  spec.collectives.nccl_version = NcclVersion{20};
  const NcclComm comm = make_nccl_comm(spec, 2);
  EXPECT_EQ(comm.ring.channels, 4);
  EXPECT_DOUBLE_EQ(comm.ring.bw_intra, 12.0);
  // The tree's second pass raises the intra speed up the array (15, 18, 20, 24: 4 x 24 x 8/7 <=
  // 240) until it is twice the network's: 4 channels of 24 inside, 12 across.
  EXPECT_EQ(comm.tree.channels, 4);
  EXPECT_DOUBLE_EQ(comm.tree.bw_intra, 24.0);
  EXPECT_DOUBLE_EQ(comm.tree.bw_inter, 12.0);
  // At 2 nodes the tuner rates Tree at the intra speed: min(4 x 24 x 0.92, 4 x 23.6) = 88.3
  // busbw, x 0.5 = 44.2 algbw (x 1.0 correction at 1 GiB), against Ring's 48 x 16/30 = 25.6.
  const double gib = 1 << 30;
  auto algbw = [&](Algorithm a) {
    return nccl_tuner_cost(comm, CollectiveOp::kAllReduce, a, Protocol::kSimple, gib).algbw;
  };
  EXPECT_NEAR(algbw(Algorithm::kTree), 4 * 24 * 0.92 * 0.5, 1e-9);
  EXPECT_NEAR(algbw(Algorithm::kRing), 48.0 * 16 / 30, 1e-9);
  EXPECT_EQ(nccl_choose(comm, spec.collectives, CollectiveOp::kAllReduce, gib)->algorithm,
            Algorithm::kTree);
  // NCCL 2.5 keeps the tree at the ring's speed.
  spec.collectives.nccl_version = NcclVersion{5};
  EXPECT_DOUBLE_EQ(make_nccl_comm(spec, 2).tree.bw_intra, 12.0);
  // H100 with 8 NICs: 48 is already the top of the inter-node array, nothing to raise.
  EXPECT_DOUBLE_EQ(make_nccl_comm(dgx_h100(), 2).tree.bw_intra, 48.0);
}

TEST(NcclTunerTest, NvlsChunksShrinkForMidSizeMessages) {
  // One H100 node: 16 NVLS channels x 8 heads = 128 operations. 128 KiB chunks from 64 x 128 x
  // 128 KiB = 1 GiB, 64 KiB from 8 x 128 x 64 KiB = 64 MiB, 32 KiB from 2 x 128 x 32 KiB = 8 MiB,
  // 16 KiB below.
  const NcclComm one = make_nccl_comm(dgx_h100(), 1);
  EXPECT_EQ(nccl_nvls_concurrent_ops(one), 128);
  const double mib = 1 << 20;
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 1024 * mib), 131072.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 1024 * mib - 1), 65536.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 64 * mib), 65536.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 64 * mib - 1), 32768.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 8 * mib), 32768.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(one, 4 * mib), 16384.0);
  // NVLSTree across 2 nodes: 16 channels x 8 heads (one per NIC rail); 64 KiB below 4 x 128 x
  // 128 KiB = 64 MiB, 32 KiB below 1 x 128 x 64 KiB = 8 MiB.
  const NcclComm two = make_nccl_comm(dgx_h100(), 2);
  EXPECT_EQ(nccl_nvls_concurrent_ops(two), 128);
  EXPECT_EQ(nccl_nvls_chunk_bytes(two, 64 * mib, true), 131072.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(two, 32 * mib, true), 65536.0);
  EXPECT_EQ(nccl_nvls_chunk_bytes(two, 4 * mib, true), 32768.0);
}

TEST(NcclTunerTest, PointToPointPartsGoWhereNcclPutsThem) {
  // 10 nodes x 1 GPU, 4 p2p channels. NCCL probes node deltas 0, 1, 3, 6, (10), (15), 5, (12),
  // 4, (13), 7, 2, (14), (11), 9, 8 (mod 16; those of 10 and more are skipped): rank 0 sends to
  // rank 3 in round 2, to rank 2 in round 7; rank 5 to rank 4 (delta 9) in round 8. Round r's
  // base channel is r; part 1 adds 1 bit-reversed over 2 bits, 2.
  const NcclP2pPlacement ten(make_nccl_comm(restrict_gpus_per_node(dgx_h100(), 1), 10));
  EXPECT_EQ(ten.round(0, 3), 2);
  EXPECT_EQ(ten.round(0, 2), 7);
  EXPECT_EQ(ten.round(5, 4), 8);
  EXPECT_EQ(ten.channel(2, 0), 2);
  EXPECT_EQ(ten.channel(7, 1), (7 + 2) % 4);
  // 2 x 8, 16 p2p channels: rank 3 sends to rank 12 (node delta 1, local delta 1) in round
  // 8 + 1 = 9, whose base is node round 1 (x ceil(8 / 8)) + 1 / 8 = 1; parts 0-3 add 0, 8, 4, 12.
  // Every round inside the node (rank 0 to 5: round 5) has base 0.
  const NcclComm two_comm = make_nccl_comm(dgx_h100(), 2);
  ASSERT_EQ(two_comm.p2p_channels, 16);
  const NcclP2pPlacement two(two_comm);
  EXPECT_EQ(two.round(3, 12), 9);
  EXPECT_EQ(two.channel(9, 0), 1);
  EXPECT_EQ(two.channel(9, 1), 9);
  EXPECT_EQ(two.channel(9, 2), 5);
  EXPECT_EQ(two.channel(9, 3), 13);
  EXPECT_EQ(two.round(0, 5), 5);
  EXPECT_EQ(two.channel(5, 3), 12);
  // One node: the round is the rank delta and its own base.
  const NcclP2pPlacement one(make_nccl_comm(dgx_h100(), 1));
  EXPECT_EQ(one.round(6, 1), 3);
  EXPECT_EQ(one.channel(3, 0), 3);
}

TEST(NcclTunerTest, OneGpuPerNodeRing) {
  // NET -> GPU -> NET at 48 GB/s: one channel; duplicated (one channel is not more than 4): 2 x 24;
  // 4 collective channels.
  const NcclComm comm = make_nccl_comm(restrict_gpus_per_node(dgx_h100(), 1), 10);
  EXPECT_EQ(comm.ring.channels, 2);
  EXPECT_DOUBLE_EQ(comm.ring.bw_intra, 24.0);
  EXPECT_EQ(comm.channels, 4);
  EXPECT_EQ(comm.p2p_channels, 4);
}

TEST(NcclTunerTest, SendRecvChannelsPerNetworkPeerShrinkWithRanks) {
  // NCCL 2.29: max(1 NIC, ceil(48 / 14)) = 4 channels per network peer, halved while
  // 4 x ceil(ranks / 8) exceeds the p2p channels.
  // 10 x 1 GPU: 4 p2p channels, ceil(10/8) = 2: 4 x 2 > 4 -> 2.
  EXPECT_EQ(make_nccl_comm(restrict_gpus_per_node(dgx_h100(), 1), 10).p2p_channels_per_peer, 2);
  // 2 x 8: 16 p2p channels, 4 x 2 <= 16: 4; 4 x 8: 4 x 4 = 16: still 4.
  EXPECT_EQ(make_nccl_comm(dgx_h100(), 2).p2p_channels_per_peer, 4);
  EXPECT_EQ(make_nccl_comm(dgx_h100(), 4).p2p_channels_per_peer, 4);
  // 8 x 8: 4 x 8 > 16 -> 2 (the drop at 8 nodes NVIDIA/nccl#1272 reports); 16 x 8: 1.
  EXPECT_EQ(make_nccl_comm(dgx_h100(), 8).p2p_channels_per_peer, 2);
  EXPECT_EQ(make_nccl_comm(dgx_h100(), 16).p2p_channels_per_peer, 1);
  // NCCL_NCHANNELS_PER_NET_PEER=4 restores it.
  ClusterSpec set = dgx_h100();
  set.collectives.channels_per_net_peer = 4;
  EXPECT_EQ(make_nccl_comm(set, 16).p2p_channels_per_peer, 4);
}

TEST(NcclTunerTest, PicksWhatNcclPicks) {
  const ClusterSpec spec = dgx_h100();
  const NcclComm one = make_nccl_comm(spec, 1);
  // One node: small all-reduces run Ring LL (15 us of latency); large ones NVLS.
  auto pick = [&](const NcclComm& comm, CollectiveOp op, double bytes) {
    const auto c = nccl_choose(comm, spec.collectives, op, bytes);
    return std::make_pair(c.value().algorithm, c.value().protocol);  // throws (fails) if none
  };
  EXPECT_EQ(pick(one, CollectiveOp::kAllReduce, 8), std::make_pair(Algorithm::kRing, Protocol::kLl));
  EXPECT_EQ(pick(one, CollectiveOp::kAllReduce, 1 << 30).first, Algorithm::kNvls);
  // Across nodes: NVLSTree for large all-reduces at 2 nodes (twice the inter-node bandwidth).
  const NcclComm two = make_nccl_comm(spec, 2);
  EXPECT_EQ(pick(two, CollectiveOp::kAllReduce, 1 << 30).first, Algorithm::kNvlsTree);
  // All-gather has only Ring across nodes with 8 GPUs per node; PAT at one GPU per node for small
  // sizes.
  EXPECT_EQ(pick(two, CollectiveOp::kAllGather, 1 << 30).first, Algorithm::kRing);
  const NcclComm single = make_nccl_comm(restrict_gpus_per_node(spec, 1), 16);
  EXPECT_EQ(pick(single, CollectiveOp::kAllGather, 64 * 1024).first, Algorithm::kPat);
  // NCCL_ALGO restricts the choice.
  ClusterSpec ring_only = spec;
  ASSERT_EQ(apply_nccl_env(ring_only.collectives, "NCCL_ALGO", "Ring"), "");
  const auto forced = nccl_choose(two, ring_only.collectives, CollectiveOp::kAllReduce, 1 << 30);
  EXPECT_EQ(forced->algorithm, Algorithm::kRing);
  EXPECT_EQ(forced->protocol, Protocol::kSimple);
}

TEST(NcclTunerTest, LaunchedChannelsFollowTheSizeThreshold) {
  const NcclComm comm = make_nccl_comm(dgx_h100(), 1);
  // Simple: 512 threads x 64 B = 32 KiB per channel.
  EXPECT_EQ(nccl_launched_channels(comm, Algorithm::kRing, Protocol::kSimple, 1 << 30),
            comm.channels);
  EXPECT_EQ(nccl_launched_channels(comm, Algorithm::kRing, Protocol::kSimple, 5 * 32768), 5);
  EXPECT_EQ(nccl_launched_channels(comm, Algorithm::kRing, Protocol::kSimple, 100), 1);
}

TEST(NcclTunerTest, TreeCorrectionFactorBySize) {
  // index log2(bytes / 64): 64 B -> 0, 1 MiB -> 14, 256 MiB -> 22; outside: 1.
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Protocol::kSimple, 64), 0.9);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Protocol::kSimple, 1 << 20), 0.5);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Protocol::kLl, 1 << 20), 0.5);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Protocol::kSimple, 1 << 28), 0.9);
  EXPECT_DOUBLE_EQ(nccl_tree_correction(Protocol::kSimple, 1LL << 31), 1.0);
}

TEST(NcclTunerTest, EnvironmentVariables) {
  CollectiveTuning t;
  EXPECT_EQ(apply_nccl_env(t, "NCCL_PROTO", "^LL128"), "");
  EXPECT_TRUE(t.allows(Protocol::kLl));
  EXPECT_FALSE(t.allows(Protocol::kLl128));
  EXPECT_EQ(apply_nccl_env(t, "NCCL_MIN_CTAS", "24"), "");
  EXPECT_EQ(t.min_channels, 24);
  EXPECT_EQ(apply_nccl_env(t, "NCCL_IB_HCA", "mlx5_0"), "");
  EXPECT_EQ(apply_nccl_env(t, "NCCL_IB_QPS_PER_CONNECTION", "2"), "");
  EXPECT_EQ(t.ib_qps_per_connection, 2);
  EXPECT_NE(apply_nccl_env(t, "NCCL_IB_QPS_PER_CONNECTION", "0"), "");
  EXPECT_NE(apply_nccl_env(t, "NCCL_ALGO", "Bogus"), "");
  // "^" leaves NCCL's other algorithms (Tree, NVLS, NVLSTree, CollNet Direct and Chain, PAT),
  // none of trainsim's own, so the variable it writes back reads again.
  EXPECT_EQ(apply_nccl_env(t, "NCCL_ALGO", "^Ring"), "");
  EXPECT_EQ(t.algorithms.size(), 6u);
  EXPECT_FALSE(t.allows(Algorithm::kRing));
  EXPECT_FALSE(t.allows(Algorithm::kHierarchical));
  int written = 0;
  for (const auto& [name, value] : nccl_env_of(t)) {
    CollectiveTuning again;
    EXPECT_EQ(apply_nccl_env(again, name, value), "") << name << "=" << value;
    written += name == "NCCL_IB_QPS_PER_CONNECTION" && value == "2";
  }
  EXPECT_EQ(written, 1);
  EXPECT_NE(apply_nccl_env(t, "NCCL_MIN_CTAS", "x"), "");
  EXPECT_EQ(parse_nccl_version("22602")->minor, 26);
  EXPECT_EQ(parse_nccl_version("2.18.5")->minor, 18);
  EXPECT_FALSE(parse_nccl_version("3.1").has_value());
}

}  // namespace
}  // namespace trainsim::models
