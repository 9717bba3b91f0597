// Calibration must recover the parameters that generated a log. Synthetic logs are produced by the
// analytic model itself with known parameters; the fit starts elsewhere and must find them again.
#include "models/calibration/collective_calibration.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "models/collectives/algorithms.h"
#include "models/config/cluster_config.h"
#include "models/config/cluster_writer.h"
#include "models/config/config_node.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {
namespace {

ClusterSpec node_of_8() {
  ClusterSpec c;
  c.name = "synthetic";
  c.nodes = 4;
  c.gpus_per_node = 8;
  c.gpu.model = "G";
  c.gpu.peak_flops_per_s[Dtype::kBf16] = 1e15;
  c.gpu.hbm_bandwidth_bytes_per_s = 3e12;
  c.gpu.hbm_capacity_bytes = 8e10;
  c.intra_node.gpu_link = LinkClassSpec{450e9, kMicrosecond, 0.9};
  c.nic.count = 8;
  c.nic.link = LinkClassSpec{50e9, 5 * kMicrosecond, 0.9};
  c.nic.gpu_link = LinkClassSpec{64e9, 0, 1.0};
  for (int g = 0; g < 8; ++g) c.nic.gpus.push_back({g});
  c.network.topology = NetworkTopology::kSingleSwitch;
  return c;
}

// A measured run made by the model: ring all-reduce on `nodes` x `gpus`, 1 KiB to 4 GiB.
MeasuredRun synthetic_run(const ClusterSpec& truth, int nodes, int gpus) {
  const ClusterSpec spec = restrict_gpus_per_node(truth, gpus);
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  Router router(topology.topology);
  MeasuredRun m;
  m.source = "synthetic_" + std::to_string(nodes) + "x" + std::to_string(gpus);
  m.algorithm = Algorithm::kRing;
  m.run.op = CollectiveOp::kAllReduce;
  m.run.ranks = nodes * gpus;
  for (int n = 0; n < nodes; ++n) m.run.hosts.push_back("host" + std::to_string(n));
  for (double bytes = 1024; bytes <= 4.0 * (1u << 30); bytes *= 4) {
    NcclTestsRow row;
    row.size_bytes = static_cast<long long>(bytes);
    row.time_us = to_microseconds(analytic_collective_time(
        router, spec, topology, {CollectiveOp::kAllReduce, Algorithm::kRing, bytes}));
    row.busbw_gb_per_s = bytes / (row.time_us * 1e3) * bus_bandwidth_factor(m.run.op, m.run.ranks);
    m.run.rows.push_back(row);
  }
  return m;
}

TEST(CollectiveCalibrationTest, RecoversLinkAndSoftwareParametersFromSyntheticLogs) {
  ClusterSpec truth = node_of_8();
  truth.intra_node.gpu_link.latency = 1500 * kNanosecond;
  truth.intra_node.gpu_link.efficiency = 0.8;
  truth.collectives.at(Algorithm::kRing).software_latency = 6 * kMicrosecond;
  // Two shapes (8 and 4 GPUs in one node) separate per-hop latency (scales with steps) from the
  // software latency (paid once).
  const std::vector<MeasuredRun> runs = {synthetic_run(truth, 1, 8), synthetic_run(truth, 1, 4)};

  const ClusterSpec start = node_of_8();  // latency 1 us, efficiency 0.9, no software latency
  const CalibrationResult result = calibrate_collectives(start, runs);
  EXPECT_NEAR(result.cluster.intra_node.gpu_link.efficiency, 0.8, 0.8 * 0.01);
  EXPECT_NEAR(to_microseconds(result.cluster.intra_node.gpu_link.latency), 1.5, 1.5 * 0.05);
  EXPECT_NEAR(to_microseconds(result.cluster.collectives.of(Algorithm::kRing).software_latency),
              6.0, 6.0 * 0.05);
  for (const FitRow& row : result.rows)
    EXPECT_NEAR(row.error, 0.0, 0.01) << row.source << " " << row.size_bytes;
  EXPECT_LT(result.rms_log_error, 0.01);
}

TEST(CollectiveCalibrationTest, RecoversTheNicFromMultiNodeRuns) {
  ClusterSpec truth = node_of_8();
  truth.nic.link.efficiency = 0.7;
  truth.nic.link.latency = 8 * kMicrosecond;
  const std::vector<MeasuredRun> runs = {synthetic_run(truth, 4, 1), synthetic_run(truth, 2, 1)};
  const CalibrationResult result = calibrate_collectives(node_of_8(), runs);
  EXPECT_NEAR(result.cluster.nic.link.efficiency, 0.7, 0.7 * 0.01);
  for (const FitRow& row : result.rows) EXPECT_NEAR(row.error, 0.0, 0.01) << row.size_bytes;
}

TEST(CollectiveCalibrationTest, ShapeAndAlgorithmOfARun) {
  MeasuredRun m;
  m.source = "x.log";
  m.run.ranks = 16;
  m.run.hosts = {"a", "b"};
  const ClusterSpec cluster = node_of_8();
  const RunShape shape = run_shape(m, cluster);
  EXPECT_EQ(shape.nodes, 2);
  EXPECT_EQ(shape.gpus_per_node, 8);
  m.run.ranks = 15;
  EXPECT_THROW(run_shape(m, cluster), ConfigError);
  EXPECT_EQ(algorithm_in_file_name("logs/h100x8_1node_allreduce_RING_nccl2.26.2.log"),
            Algorithm::kRing);
  EXPECT_EQ(algorithm_in_file_name("a/nvls-8gpu.log"), Algorithm::kNvls);
  EXPECT_FALSE(algorithm_in_file_name("a/string_results.log"));  // "string" is not "ring"
  EXPECT_EQ(default_algorithm(CollectiveOp::kAllToAll, cluster, 1), Algorithm::kDirect);
}

TEST(ClusterWriterTest, WrittenYamlLoadsBackToTheSameSpec) {
  ClusterSpec spec =
      load_cluster_spec(std::string(TRAINSIM_SOURCE_DIR) + "/configs/clusters/dgx-h100.yaml");
  AlgorithmTuning ring;
  ring.software_latency = 4321 * kNanosecond;
  ring.channel_bandwidth = 12.5e9;
  ring.bytes_per_channel = 3e6;
  ring.max_channels = 16;
  spec.collectives.at(Algorithm::kRing) = ring;
  AlgorithmTuning ll = ring;
  ll.efficiency = 0.4;
  spec.collectives.at(Algorithm::kRing, Protocol::kLl128) = ll;
  spec.gpu.gemm_half_flops = 2e10;
  std::ostringstream out;
  write_cluster_yaml(out, spec, {"test"}, {{"nic.efficiency", "fitted"}});
  const ClusterSpec back = parse_cluster_spec(ConfigNode::load_string(out.str(), "written.yaml"));
  EXPECT_EQ(back.name, spec.name);
  EXPECT_EQ(back.nodes, spec.nodes);
  EXPECT_EQ(back.nic.gpus, spec.nic.gpus);
  EXPECT_DOUBLE_EQ(back.nic.link.bandwidth_bytes_per_s, spec.nic.link.bandwidth_bytes_per_s);
  EXPECT_EQ(back.intra_node.gpu_link.latency, spec.intra_node.gpu_link.latency);
  EXPECT_DOUBLE_EQ(back.intra_node.gpu_link.efficiency, spec.intra_node.gpu_link.efficiency);
  EXPECT_EQ(back.intra_node.nvls, spec.intra_node.nvls);
  EXPECT_EQ(back.network.rail_optimized, spec.network.rail_optimized);
  EXPECT_DOUBLE_EQ(back.gpu.peak_flops_per_s.at(Dtype::kFp8),
                   spec.gpu.peak_flops_per_s.at(Dtype::kFp8));
  EXPECT_DOUBLE_EQ(back.gpu.gemm_half_flops, 2e10);
  const AlgorithmTuning r = back.collectives.of(Algorithm::kRing);
  EXPECT_EQ(r.software_latency, ring.software_latency);
  EXPECT_DOUBLE_EQ(r.channel_bandwidth, ring.channel_bandwidth);
  EXPECT_DOUBLE_EQ(r.bytes_per_channel, ring.bytes_per_channel);
  EXPECT_EQ(r.max_channels, 16);
  EXPECT_DOUBLE_EQ(back.collectives.of(Algorithm::kRing, Protocol::kLl128).efficiency, 0.4);
  EXPECT_NE(out.str().find("# fitted"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::models
