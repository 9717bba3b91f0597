#include "models/spec/enum_names.h"

#include <gtest/gtest.h>

#include "models/spec/collective_tuning.h"

namespace trainsim::models {
namespace {

enum class Color { kRed, kGreen, kBlue };

TEST(EnumNamesTest, TheFirstNameOfAValueIsItsNameLaterOnesAreAliases) {
  const EnumNames<Color> names = {
      {Color::kRed, "red"}, {Color::kGreen, "green"}, {Color::kBlue, "blue"}, {Color::kRed, "r"}};
  EXPECT_EQ(names.name(Color::kRed), "red");
  EXPECT_EQ(names.parse("r"), Color::kRed);
  EXPECT_EQ(names.parse("blue"), Color::kBlue);
  EXPECT_FALSE(names.parse("Red").has_value());
  EXPECT_EQ(names.values(), (std::vector<Color>{Color::kRed, Color::kGreen, Color::kBlue}));
  EXPECT_EQ(names.choices(), "red, green or blue");
}

TEST(EnumNamesTest, NcclsSpellingsParseAsAliases) {
  // NCCL_ALGO writes NVLSTree and CollNetDirect without underscores; trainsim's own names keep them.
  EXPECT_EQ(parse_algorithm("nvlstree"), Algorithm::kNvlsTree);
  EXPECT_EQ(algorithm_name(Algorithm::kNvlsTree), "nvls_tree");
  EXPECT_EQ(all_algorithms().size(), 11u);  // Ring .. PAT, hierarchical, direct, 2D, p2p
}

}  // namespace
}  // namespace trainsim::models
