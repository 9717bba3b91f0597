// Loading cluster specs: the shipped ones load, and each kind of bad input gives one error that
// names the file, line, column and key path.
#include "models/config/cluster_config.h"
#include "models/config/config_node.h"

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "models/hardware/cluster_topology.h"

namespace trainsim::models {
namespace {

const std::string kSourceDir = TRAINSIM_SOURCE_DIR;

// A valid two-node spec; tests break one thing at a time.
const std::string kGood = R"(name: test
nodes: 2
gpus_per_node: 4
gpu:
  model: A100 G
  peak_flops:
    bf16: 100 TFLOP/s
  hbm_bandwidth: 2 TB/s
  hbm_capacity: 40 GB
intra_node:
  fabric: nvswitch
  gpu_link: {bandwidth: 300 GB/s, latency: 1 us}
nic:
  count: 2
  bandwidth: 200 Gb/s
  latency: 5 us
  gpu_link: {bandwidth: 31 GB/s, latency: 0 us}
  gpus: [[0, 1], [2, 3]]
network:
  topology: single_switch
)";

ConfigError error_of(const std::string& yaml) {
  try {
    parse_cluster_spec(ConfigNode::load_string(yaml, "c.yaml"));
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return ConfigError("", 0, 0, "", "");
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(ClusterConfigTest, ShippedClustersLoad) {
  for (const char* name : {"dgx-h100", "dgx-a100", "pcie-8gpu-2x100g"}) {
    const ClusterSpec spec = load_cluster_spec(kSourceDir + "/configs/clusters/" + name + ".yaml");
    EXPECT_EQ(spec.name, name);
    EXPECT_EQ(spec.gpus_per_node, 8);
  }
  const ClusterSpec h100 = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  EXPECT_DOUBLE_EQ(h100.nic.link.bandwidth_bytes_per_s, 50e9);  // 400 Gb/s
  EXPECT_DOUBLE_EQ(h100.intra_node.gpu_link.bandwidth_bytes_per_s, 450e9);
  EXPECT_EQ(h100.intra_node.gpu_link.latency, 500'000);  // "0.5 us" in ps
  EXPECT_TRUE(h100.intra_node.nvls);
  EXPECT_EQ(h100.gpu.architecture, GpuArch::kHopper);  // from the model name
  EXPECT_DOUBLE_EQ(h100.gpu.peak_flops_per_s.at(Dtype::kBf16), 989e12);
}

TEST(ClusterConfigTest, GoodSpecParsesEveryField) {
  const ClusterSpec spec = parse_cluster_spec(ConfigNode::load_string(kGood, "c.yaml"));
  EXPECT_EQ(spec.nodes, 2);
  EXPECT_EQ(spec.nic.count, 2);
  EXPECT_EQ(spec.nic.gpus, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_DOUBLE_EQ(spec.nic.link.bandwidth_bytes_per_s, 25e9);
  EXPECT_EQ(spec.nic.link.latency, 5 * kMicrosecond);
  EXPECT_DOUBLE_EQ(spec.nic.link.efficiency, 1.0);
  EXPECT_EQ(spec.network.topology, NetworkTopology::kSingleSwitch);
}

TEST(ClusterConfigTest, DefaultNicMappingSplitsGpusEvenly) {
  const std::string yaml = replace(kGood, "  gpus: [[0, 1], [2, 3]]\n", "");
  const ClusterSpec spec = parse_cluster_spec(ConfigNode::load_string(yaml, "c.yaml"));
  EXPECT_EQ(spec.nic.gpus, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(ClusterConfigTest, UnknownKeySuggestsTheClosestOne) {
  const ConfigError e = error_of(replace(kGood, "  hbm_capacity: 40 GB", "  hbm_capacty: 40 GB"));
  EXPECT_EQ(e.file(), "c.yaml");
  EXPECT_EQ(e.line(), 9);
  EXPECT_EQ(e.column(), 3);
  EXPECT_EQ(e.key_path(), "gpu.hbm_capacty");
  EXPECT_NE(e.message().find("unknown key"), std::string::npos);
  EXPECT_NE(e.message().find("did you mean 'hbm_capacity'"), std::string::npos);
}

TEST(ClusterConfigTest, MissingFieldNamesTheKey) {
  const ConfigError e = error_of(replace(kGood, "  hbm_bandwidth: 2 TB/s\n", ""));
  EXPECT_EQ(e.key_path(), "gpu.hbm_bandwidth");
  EXPECT_EQ(e.line(), 5);  // the gpu map starts on line 5
  EXPECT_NE(e.message().find("missing required key"), std::string::npos);
}

TEST(ClusterConfigTest, NegativeBandwidthIsRejected) {
  const ConfigError e = error_of(replace(kGood, "bandwidth: 200 Gb/s", "bandwidth: -200 Gb/s"));
  EXPECT_EQ(e.key_path(), "nic.bandwidth");
  EXPECT_EQ(e.line(), 15);
  EXPECT_EQ(e.column(), 14);
  EXPECT_NE(e.message().find("must be positive"), std::string::npos);
}

TEST(ClusterConfigTest, ZeroGpusIsRejected) {
  const ConfigError e = error_of(replace(kGood, "gpus_per_node: 4", "gpus_per_node: 0"));
  EXPECT_EQ(e.key_path(), "gpus_per_node");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("positive whole number"), std::string::npos);
}

TEST(ClusterConfigTest, NicThatMapsToNoGpuIsRejected) {
  const ConfigError e =
      error_of(replace(kGood, "gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1, 2, 3], []]"));
  EXPECT_EQ(e.key_path(), "nic.gpus[1]");
  EXPECT_NE(e.message().find("maps to no GPU"), std::string::npos);
}

TEST(ClusterConfigTest, NicMappingToMissingGpuIsRejected) {
  const ConfigError e =
      error_of(replace(kGood, "gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1], [2, 7]]"));
  EXPECT_EQ(e.key_path(), "nic.gpus[1][1]");
  EXPECT_NE(e.message().find("GPU 7 does not exist"), std::string::npos);
}

TEST(ClusterConfigTest, GpuWithoutNicIsRejected) {
  const ConfigError e = error_of(replace(kGood, "gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1], [2]]"));
  EXPECT_EQ(e.key_path(), "nic.gpus");
  EXPECT_NE(e.message().find("GPU 3 is served by no NIC"), std::string::npos);
}

TEST(ClusterConfigTest, MalformedYamlGivesLineAndColumn) {
  const ConfigError e = error_of(replace(kGood, "  model: A100 G", "  model: [G"));
  EXPECT_EQ(e.file(), "c.yaml");
  EXPECT_GT(e.line(), 0);
  EXPECT_NE(e.message().find("invalid YAML"), std::string::npos);
}

TEST(ClusterConfigTest, DuplicateKeyIsRejected) {
  const ConfigError e = error_of(replace(kGood, "nodes: 2\n", "nodes: 2\nnodes: 3\n"));
  EXPECT_EQ(e.key_path(), "nodes");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("duplicate key"), std::string::npos);
}

TEST(ClusterConfigTest, WrongUnitIsRejected) {
  const ConfigError e = error_of(replace(kGood, "hbm_bandwidth: 2 TB/s", "hbm_bandwidth: 2 TB"));
  EXPECT_EQ(e.key_path(), "gpu.hbm_bandwidth");
  EXPECT_NE(e.message().find("expected a bandwidth"), std::string::npos);
}

TEST(ClusterConfigTest, MultiNodeClusterNeedsANetwork) {
  const std::string yaml = kGood.substr(0, kGood.find("network:"));
  const ConfigError e = error_of(yaml);
  EXPECT_EQ(e.key_path(), "network");
  EXPECT_NE(e.message().find("needs a network"), std::string::npos);
}

TEST(ClusterConfigTest, FatTreeKeysOnASingleSwitchAreRejected) {
  const ConfigError e =
      error_of(replace(kGood, "topology: single_switch", "topology: single_switch\n  spines: 2"));
  EXPECT_EQ(e.key_path(), "network.spines");
  EXPECT_NE(e.message().find("only to topology: fat_tree"), std::string::npos);
}

TEST(ClusterConfigTest, RoutingIsEcmpUnlessTheFatTreeSaysDestination) {
  const std::string fat_tree =
      replace(kGood, "topology: single_switch",
              "topology: fat_tree\n  nodes_per_leaf: 1\n  spines: 2\n  oversubscription: 1");
  EXPECT_EQ(parse_cluster_spec(ConfigNode::load_string(fat_tree, "c.yaml")).network.routing,
            NetworkRouting::kEcmp);
  const ClusterSpec by_destination =
      parse_cluster_spec(ConfigNode::load_string(fat_tree + "  routing: destination\n", "c.yaml"));
  EXPECT_EQ(by_destination.network.routing, NetworkRouting::kDestination);
  EXPECT_TRUE(build_cluster_topology(by_destination, 2).topology.route_by_destination());
  const ConfigError bad = error_of(fat_tree + "  routing: random\n");
  EXPECT_EQ(bad.key_path(), "network.routing");
  EXPECT_EQ(bad.line(), 24);
  const ConfigError single = error_of(kGood + "  routing: destination\n");
  EXPECT_EQ(single.key_path(), "network.routing");
  EXPECT_NE(single.message().find("only to topology: fat_tree"), std::string::npos);
}

TEST(ClusterConfigTest, UnknownGpuGenerationAsksForTheArchitecture) {
  const ConfigError e = error_of(replace(kGood, "  model: A100 G", "  model: Mystery"));
  EXPECT_EQ(e.key_path(), "gpu.model");
  EXPECT_NE(e.message().find("architecture"), std::string::npos);
  const ClusterSpec spec = parse_cluster_spec(ConfigNode::load_string(
      replace(kGood, "  model: A100 G", "  model: Mystery\n  architecture: blackwell"), "c.yaml"));
  EXPECT_EQ(spec.gpu.architecture, GpuArch::kBlackwell);
}

TEST(ClusterConfigTest, CollectivesSectionTakesNcclsEnvironment) {
  const std::string base = kGood + "collectives:\n  nccl_version: 2.18.5\n  launch_latency: 3 us\n";
  const ClusterSpec spec = parse_cluster_spec(ConfigNode::load_string(
      base + "  env:\n    NCCL_ALGO: Ring\n    NCCL_MIN_CTAS: 24\n", "c.yaml"));
  EXPECT_EQ(spec.collectives.nccl_version.minor, 18);
  EXPECT_EQ(spec.collectives.launch_latency, 3 * kMicrosecond);
  EXPECT_EQ(spec.collectives.algorithms, (std::vector<Algorithm>{Algorithm::kRing}));
  EXPECT_EQ(spec.collectives.min_channels, 24);
  const ConfigError bad = error_of(base + "  env:\n    NCCL_MIN_CTAS: lots\n");
  EXPECT_EQ(bad.key_path(), "collectives.env.NCCL_MIN_CTAS");
  EXPECT_NE(bad.message().find("integer"), std::string::npos);
  const ConfigError version = error_of(replace(base, "2.18.5", "3.0"));
  EXPECT_EQ(version.key_path(), "collectives.nccl_version");
}

TEST(ClusterConfigTest, DrawsWithinTheUncertaintyAreLogNormal) {
  // gemm_efficiency 0.8 with a relative uncertainty of 0.05: log(draw / 0.8) is normal with
  // mean 0 and sd 0.05; over 500 draws the sample mean is within 3 x 0.05 / sqrt(500) of 0 and
  // the sample sd within 10% (3 of its standard errors, 0.05 / sqrt(2 x 500)). nic.efficiency 0.969
  // at 0.5 would often pass 1: those are drawn again.
  ClusterSpec c = load_cluster_spec(kSourceDir + "/configs/clusters/dgx-h100.yaml");
  c.uncertainty = {{"gpu.gemm_efficiency", 0.05}, {"nic.efficiency", 0.5}};
  std::mt19937_64 rng(11);
  double sum = 0, squares = 0;
  const int n = 500;
  for (int i = 0; i < n; ++i) {
    const ClusterSpec d = draw_within_uncertainty(c, rng);
    const double x = std::log(d.gpu.gemm_efficiency / 0.8);
    sum += x;
    squares += x * x;
    EXPECT_LE(d.nic.link.efficiency, 1.0);
    EXPECT_EQ(d.gpu.hbm_efficiency, c.gpu.hbm_efficiency);  // not named: unchanged
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 3 * 0.05 / std::sqrt(1.0 * n));
  EXPECT_NEAR(std::sqrt(squares / n - mean * mean), 0.05, 0.1 * 0.05);
}

TEST(ClusterConfigTest, MissingFileIsAConfigError) {
  try {
    load_cluster_spec("/nonexistent/cluster.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/cluster.yaml");
    EXPECT_NE(e.message().find("cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainsim::models
