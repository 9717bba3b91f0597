// Editing a YAML file in place keeps its comments, order and units.
#include "models/config/yaml_patch.h"

#include <gtest/gtest.h>

#include "models/spec/config_error.h"

namespace trainsim::models {
namespace {

const std::string kText = R"(# A cluster
name: x
nic:
  count: 8
  # measured by hand
  latency: 1 us
  efficiency: 0.9   # from a datasheet
network:
  topology: single_switch
)";

TEST(YamlPatchTest, ReplacesValuesInTheirUnitAndKeepsComments) {
  const auto r = patch_yaml(kText, "c.yaml",
                            {{"nic.latency", 2.5e-6, Dimension::kTime, "fitted"},
                             {"nic.efficiency", 0.95, std::nullopt, "fitted"}});
  EXPECT_NE(r.text.find("  latency: 2.5 us  # fitted\n"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("  efficiency: 0.95   # from a datasheet\n"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("# A cluster\n"), std::string::npos);
  EXPECT_NE(r.text.find("  # measured by hand\n"), std::string::npos);
  ASSERT_EQ(r.replaced.size(), 2u);
  EXPECT_EQ(r.replaced[0].line, 6);
  EXPECT_EQ(r.replaced[0].old_value, "1 us");
}

TEST(YamlPatchTest, AddsMissingKeysUnderTheirParent) {
  const auto r = patch_yaml(kText, "c.yaml",
                            {{"nic.gpu_direct_bandwidth", 48e9, Dimension::kBandwidth, "new"},
                             {"collectives.launch_latency", 3e-6, Dimension::kTime, "fitted"}});
  // Under nic, after its last key (before network:); a new section at the end.
  EXPECT_NE(r.text.find("  efficiency: 0.9   # from a datasheet\n  gpu_direct_bandwidth: 48 GB/s"
                        "  # new\nnetwork:"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("collectives:\n  launch_latency: 3 us  # fitted\n"), std::string::npos)
      << r.text;
  EXPECT_TRUE(r.replaced.empty());
}

TEST(YamlPatchTest, FlowMapsCannotTakeNewKeys) {
  EXPECT_THROW(patch_yaml("a: {b: 1}\n", "c.yaml", {{"a.c", 2, std::nullopt, ""}}), ConfigError);
  // but their values can change
  const auto r = patch_yaml("a: {b: 1 us}\n", "c.yaml", {{"a.b", 2e-6, Dimension::kTime, ""}});
  EXPECT_EQ(r.text, "a: {b: 2 us}\n");
}

}  // namespace
}  // namespace trainsim::models
