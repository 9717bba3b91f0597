// Calibration must recover the parameters that generated a log. Synthetic logs are produced by the
// analytic model itself with known parameters; the fit starts elsewhere and must find them again,
// with uncertainties that cover the truth; logs generated with different values of one parameter
// must be reported as pulling it apart.
#include "models/calibration/collective_calibration.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "models/collectives/algorithms.h"
#include "models/config/cluster_config.h"
#include "models/config/cluster_config.h"
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
  c.gpu.architecture = GpuArch::kHopper;
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

// A measured run made by the model: `op` on `nodes` x `gpus` as NCCL's tuner runs it, 1 KiB to
// 4 GiB.
MeasuredRun synthetic_run(const ClusterSpec& truth, int nodes, int gpus,
                          CollectiveOp op = CollectiveOp::kAllReduce) {
  const ClusterSpec spec = restrict_gpus_per_node(truth, gpus);
  const ClusterTopology topology = build_cluster_topology(spec, nodes);
  Router router(topology.topology);
  MeasuredRun m;
  m.source = "synthetic_" + std::string(collective_name(op)) + "_" + std::to_string(nodes) + "x" +
             std::to_string(gpus);
  m.run.op = op;
  m.run.ranks = nodes * gpus;
  for (int n = 0; n < nodes; ++n) m.run.hosts.push_back("host" + std::to_string(n));
  for (double bytes = 1024; bytes <= 4.0 * (1u << 30); bytes *= 4) {
    NcclTestsRow row;
    row.size_bytes = nccl_tests_size(op, static_cast<long long>(bytes), 4, m.run.ranks);
    row.time_us = to_microseconds(
        pick_algorithm(router, spec, topology, op, static_cast<double>(row.size_bytes))
            .analytic_time);
    row.in_place_time_us = row.time_us * 1.01;
    row.busbw_gb_per_s = bytes / (row.time_us * 1e3) * bus_bandwidth_factor(op, m.run.ranks);
    m.run.rows.push_back(row);
  }
  return m;
}

TEST(CollectiveCalibrationTest, RecoversLinkEfficienciesAndLatenciesFromSyntheticLogs) {
  ClusterSpec truth = node_of_8();
  truth.intra_node.gpu_link.efficiency = 0.8;
  truth.nic.link.efficiency = 0.7;
  truth.collectives.launch_latency = 4 * kMicrosecond;
  truth.collectives.network_latency_scale = 2.0;
  truth.collectives.ll_latency_scale = 2.5;
  // One node of 8 and of 4 GPUs separate the launch cost from NCCL's NVLink steps (which grow with
  // the ring); 4 and 2 nodes of one GPU give the network's steps, under Simple and under LL.
  const std::vector<MeasuredRun> runs = {synthetic_run(truth, 1, 8), synthetic_run(truth, 1, 4),
                                         synthetic_run(truth, 4, 1), synthetic_run(truth, 2, 1)};
  const CalibrationResult result = calibrate_collectives(node_of_8(), runs);
  EXPECT_NEAR(result.cluster.intra_node.gpu_link.efficiency, 0.8, 0.8 * 0.01);
  EXPECT_NEAR(result.cluster.nic.link.efficiency, 0.7, 0.7 * 0.01);
  EXPECT_NEAR(to_microseconds(result.cluster.collectives.launch_latency), 4.0, 4.0 * 0.05);
  EXPECT_NEAR(result.cluster.collectives.network_latency_scale, 2.0, 2.0 * 0.05);
  EXPECT_NEAR(result.cluster.collectives.ll_latency_scale, 2.5, 2.5 * 0.05);
  // NVLink steps take NCCL's own figures: not a parameter of the fit.
  EXPECT_EQ(result.cluster.collectives.nvlink_latency_scale, 1.0);
  for (const FittedParameter& p : result.parameters) {
    EXPECT_NE(p.key, "collectives.nvlink_latency_scale");
  }
  for (const FitRow& row : result.rows)
    EXPECT_NEAR(row.error, 0.0, 0.01) << row.source << " " << row.size_bytes;
  EXPECT_LT(result.rms_log_error, 0.01);
  // Exact synthetic data: tiny uncertainties, and no log pulls a parameter elsewhere.
  for (const FittedParameter& p : result.parameters) {
    EXPECT_LT(p.uncertainty, 0.02 * p.value) << p.key;
  }
  EXPECT_TRUE(result.warnings.empty()) << result.warnings.front().message;
}

TEST(CollectiveCalibrationTest, UncertaintiesDoNotDependOnWhereTheFitStarts) {
  // Rows 2% off alternately, so the residuals (and the uncertainties) are not zero. A fit that
  // starts at the values another fit found must find them again, within their uncertainty, and
  // report the same uncertainties.
  ClusterSpec truth = node_of_8();
  truth.intra_node.gpu_link.efficiency = 0.8;
  truth.collectives.launch_latency = 4 * kMicrosecond;
  std::vector<MeasuredRun> runs = {synthetic_run(truth, 1, 8), synthetic_run(truth, 1, 4)};
  int i = 0;
  for (MeasuredRun& m : runs) {
    for (NcclTestsRow& row : m.run.rows) {
      row.time_us *= (i++ % 2) ? 1.02 : 0.98;
      row.in_place_time_us = row.time_us * 1.01;
    }
  }
  const CalibrationResult off = calibrate_collectives(node_of_8(), runs);
  const CalibrationResult at = calibrate_collectives(off.cluster, runs);
  ASSERT_EQ(off.parameters.size(), at.parameters.size());
  for (std::size_t k = 0; k < off.parameters.size(); ++k) {
    EXPECT_NEAR(at.parameters[k].value, off.parameters[k].value, 2 * off.parameters[k].uncertainty)
        << off.parameters[k].key;
    EXPECT_GT(off.parameters[k].uncertainty, 0.0) << off.parameters[k].key;
    EXPECT_NEAR(at.parameters[k].uncertainty / off.parameters[k].uncertainty, 1.0, 0.1)
        << off.parameters[k].key;
  }
}

TEST(CollectiveCalibrationTest, JointFitSharesConstantsAndWarnsOnConflictingLogs) {
  // Two systems with the same NICs (one hardware class) share its efficiency and the network's
  // latency. A log of system b made with another NIC efficiency pulls the class apart.
  ClusterSpec a = node_of_8();
  a.nic.link.efficiency = 0.75;
  a.collectives.network_latency_scale = 1.5;
  ClusterSpec b = a;
  b.nic.link.efficiency = 0.6;
  MeasuredRun b2 = synthetic_run(b, 3, 1);
  b2.source = "b_other_log";
  std::vector<SystemRuns> systems = {{node_of_8(), {synthetic_run(a, 4, 1)}},
                                     {node_of_8(), {synthetic_run(a, 2, 1), b2}}};
  systems[0].cluster.name = "a";
  systems[1].cluster.name = "b";
  const JointCalibration joint = calibrate_jointly(systems);
  EXPECT_DOUBLE_EQ(joint.clusters[0].nic.link.efficiency, joint.clusters[1].nic.link.efficiency);
  EXPECT_DOUBLE_EQ(joint.clusters[0].collectives.network_latency_scale,
                   joint.clusters[1].collectives.network_latency_scale);
  bool warned = false;
  for (const CalibrationWarning& w : joint.warnings) {
    warned |= w.message.find("nic.efficiency of infiniband 400G") != std::string::npos &&
              w.message.find("b_other_log") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

TEST(CollectiveCalibrationTest, LeaveOneLogOutPredictsFromTheOthers) {
  // System with two logs from the same truth: each is predicted exactly by a fit on the other.
  ClusterSpec truth = node_of_8();
  truth.nic.link.efficiency = 0.7;
  const std::vector<SystemRuns> systems = {
      {node_of_8(), {synthetic_run(truth, 4, 1), synthetic_run(truth, 3, 1)}}};
  const auto held = leave_one_log_out(systems);
  ASSERT_EQ(held.size(), 2u);
  for (const HeldOutLog& h : held) {
    for (const FitRow& row : h.rows) {
      if (row.size_bytes >= (1 << 20)) {
        EXPECT_NEAR(row.error, 0.0, 0.02) << h.source;
      }
    }
  }
}

TEST(CollectiveCalibrationTest, AHeldOutLogAloneOnItsTransportTakesNcclsNetworkLatency) {
  // The network's per-hop latency is a constant of the transport. The only RoCE log, held out,
  // cannot take it from a fit (the shipped default for RoCE is the fit of that log): it is
  // predicted at NCCL's own figure (scale 1), not at the 3 its cluster file carries. Its rows are
  // then exactly those of the cluster at scale 1 with the InfiniBand system's fitted constants.
  ClusterSpec ib = node_of_8();
  ib.nic.link.efficiency = 0.7;
  ClusterSpec roce = ib;
  roce.name = "roce";
  roce.nic.transport = NetTransport::kRoce;
  roce.collectives.network_latency_scale = 3.0;
  MeasuredRun roce_run = synthetic_run(roce, 2, 1);
  roce_run.source = "roce.log";
  const std::vector<SystemRuns> systems = {{ib, {synthetic_run(ib, 4, 1)}}, {roce, {roce_run}}};
  const auto held = leave_one_log_out(systems);
  ASSERT_EQ(held.size(), 2u);
  const HeldOutLog& h = held[1];
  ASSERT_EQ(h.source, "roce.log");
  // The InfiniBand log alone, fitted: what the held-out RoCE log is predicted with.
  CalibrationOptions options;
  options.check_pulls = false;
  const JointCalibration fit = calibrate_jointly({systems[0], {roce, {}}}, options);
  ClusterSpec expected = fit.clusters[1];
  expected.collectives.network_latency_scale = 1.0;
  const std::vector<FitRow> rows = predict_runs(expected, {roce_run});
  ASSERT_EQ(h.rows.size(), rows.size());
  ASSERT_FALSE(rows.empty());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(h.rows[i].predicted_us, rows[i].predicted_us) << rows[i].size_bytes;
  }
  // Scale 3, the cluster file's, would have predicted the small rows slower.
  const std::vector<FitRow> file_rows = predict_runs(fit.clusters[1], {roce_run});
  EXPECT_LT(h.rows.front().predicted_us, file_rows.front().predicted_us);
}

TEST(CollectiveCalibrationTest, ARunWithoutNvlsInformsNoNvlsConstant) {
  // NVLS's efficiency and step latency are fitted only on runs where NCCL runs NVLS: not a run
  // with NCCL_NVLS_ENABLE=0 (GB200's log) nor one forced to Ring (node B's Ring log).
  ClusterSpec c = node_of_8();
  c.intra_node.nvls = true;
  const MeasuredRun nvls = synthetic_run(c, 1, 8);
  MeasuredRun off = nvls;
  off.env = {{"NCCL_NVLS_ENABLE", "0"}};
  MeasuredRun ring = nvls;
  ring.algorithm = Algorithm::kRing;
  CalibrationOptions options;
  options.check_pulls = false;
  const auto nvls_keys = [&](const MeasuredRun& run) {
    int n = 0;
    for (const FittedParameter& p : calibrate_jointly({{c, {run}}}, options).parameters) {
      n += p.key == "intra_node.nvls_efficiency" || p.key == "intra_node.nvls_step_latency";
    }
    return n;
  };
  // Nor a run whose sizes NCCL never gives to NVLS: at 1 and 4 KiB its tuner puts one-node NVLS at
  // 25 us (the NVLS hop) and Ring LL at 6.6 + 7 x 0.6 = 10.8 us, the bytes adding under 0.1 us.
  MeasuredRun small = nvls;
  small.run.rows.resize(2);
  ASSERT_EQ(small.run.rows.back().size_bytes, 4096);
  EXPECT_EQ(nvls_keys(nvls), 2);
  EXPECT_EQ(nvls_keys(off), 0);
  EXPECT_EQ(nvls_keys(ring), 0);
  EXPECT_EQ(nvls_keys(small), 0);
}

TEST(CollectiveCalibrationTest, ARunOnSimpleAloneInformsNoLlScale) {
  // The LL and LL128 scales multiply network steps under those protocols: a two-node run with
  // NCCL_PROTO=Simple (AWS p4de, as its EFA plugin sets it) informs neither, one with LL128 and
  // Simple only the LL128 one, and a run on one node neither.
  const ClusterSpec c = node_of_8();
  const MeasuredRun all = synthetic_run(c, 2, 8);
  MeasuredRun simple = all;
  simple.env = {{"NCCL_PROTO", "Simple"}};
  MeasuredRun ll128 = all;
  ll128.env = {{"NCCL_PROTO", "LL128,Simple"}};
  CalibrationOptions options;
  options.check_pulls = false;
  const auto scales = [&](const MeasuredRun& run) {
    std::string keys;
    for (const FittedParameter& p : calibrate_jointly({{c, {run}}}, options).parameters) {
      if (p.key == "collectives.ll_latency_scale") keys += "ll ";
      if (p.key == "collectives.ll128_latency_scale") keys += "ll128 ";
    }
    return keys;
  };
  EXPECT_EQ(scales(all), "ll ll128 ");
  EXPECT_EQ(scales(simple), "");
  EXPECT_EQ(scales(ll128), "ll128 ");
  EXPECT_EQ(scales(synthetic_run(c, 1, 8)), "");
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
  // A log without rank lines, given its shape.
  m.run.ranks = 0;
  m.run.hosts.clear();
  EXPECT_THROW(run_shape(m, cluster), ConfigError);
  m.shape = RunShape{2, 8};
  EXPECT_EQ(run_shape(m, cluster).nodes, 2);
  // An NVLink domain over 2 hosts: 4 hosts are 2 nodes.
  ClusterSpec rack = node_of_8();
  rack.intra_node.hosts = 2;
  MeasuredRun r;
  r.run.ranks = 16;
  r.run.hosts = {"a", "b", "c", "d"};
  EXPECT_EQ(run_shape(r, rack).nodes, 2);
  EXPECT_EQ(run_shape(r, rack).gpus_per_node, 8);
  EXPECT_EQ(algorithm_in_file_name("logs/h100x8_1node_allreduce_RING_nccl2.26.2.log"),
            Algorithm::kRing);
  EXPECT_EQ(algorithm_in_file_name("a/nvls-8gpu.log"), Algorithm::kNvls);
  EXPECT_FALSE(algorithm_in_file_name("a/string_results.log"));  // "string" is not "ring"
  // NCCL_ALGO forced on a log of several collectives: the collectives take it, the
  // point-to-point runs (which NCCL_ALGO does not select) do not; a name in the file goes to
  // all-reduce only.
  NcclTestsLog log;
  log.file = "allcolls.log";
  for (const CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                                CollectiveOp::kAllToAll, CollectiveOp::kSendRecv}) {
    NcclTestsRun run;
    run.op = op;
    log.runs.push_back(run);
  }
  const auto forced = measured_runs(log, Algorithm::kRing);
  ASSERT_EQ(forced.size(), 4u);
  EXPECT_EQ(forced[0].algorithm, Algorithm::kRing);
  EXPECT_EQ(forced[1].algorithm, Algorithm::kRing);
  EXPECT_FALSE(forced[2].algorithm.has_value());
  EXPECT_FALSE(forced[3].algorithm.has_value());
  log.file = "h100_RING.log";
  const auto named = measured_runs(log, std::nullopt);
  EXPECT_EQ(named[0].algorithm, Algorithm::kRing);
  EXPECT_FALSE(named[1].algorithm.has_value());
}

TEST(ClusterWriterTest, WrittenYamlLoadsBackToTheSameSpec) {
  ClusterSpec spec =
      load_cluster_spec(std::string(TRAINSIM_SOURCE_DIR) + "/configs/clusters/dgx-h100.yaml");
  spec.collectives.launch_latency = 4321 * kNanosecond;
  spec.collectives.network_latency_scale = 1.75;
  spec.collectives.p2p_channel_bandwidth = 12.5e9;
  spec.collectives.nccl_version = NcclVersion{21};
  ASSERT_EQ(apply_nccl_env(spec.collectives, "NCCL_ALGO", "Ring,NVLSTree"), "");
  spec.collectives.min_channels = 24;
  spec.gpu.gemm_half_flops = 2e10;
  spec.host.cpu_vendor = CpuVendor::kAmd;
  spec.intra_node.nvls_step_latency = 2345 * kNanosecond;
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
  EXPECT_EQ(back.intra_node.nvls_step_latency, 2345 * kNanosecond);
  EXPECT_EQ(back.network.rail_optimized, spec.network.rail_optimized);
  EXPECT_DOUBLE_EQ(back.gpu.peak_flops_per_s.at(Dtype::kFp8),
                   spec.gpu.peak_flops_per_s.at(Dtype::kFp8));
  EXPECT_DOUBLE_EQ(back.gpu.gemm_half_flops, 2e10);
  EXPECT_EQ(back.gpu.architecture, GpuArch::kHopper);
  EXPECT_EQ(back.host.cpu_vendor, CpuVendor::kAmd);
  const CollectiveTuning& t = back.collectives;
  EXPECT_EQ(t.launch_latency, 4321 * kNanosecond);
  EXPECT_DOUBLE_EQ(t.network_latency_scale, 1.75);
  EXPECT_DOUBLE_EQ(t.p2p_channel_bandwidth, 12.5e9);
  EXPECT_EQ(t.nccl_version.minor, 21);
  EXPECT_EQ(t.algorithms, (std::vector<Algorithm>{Algorithm::kRing, Algorithm::kNvlsTree}));
  EXPECT_EQ(t.min_channels, 24);
  EXPECT_NE(out.str().find("# fitted"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::models
