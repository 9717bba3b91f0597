#include "models/config/quantity.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(QuantityTest, BandwidthInBytesAndBits) {
  EXPECT_DOUBLE_EQ(*parse_quantity("450 GB/s", Dimension::kBandwidth), 450e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("400 Gb/s", Dimension::kBandwidth), 50e9);  // bits / 8
  EXPECT_DOUBLE_EQ(*parse_quantity("100Gbps", Dimension::kBandwidth), 12.5e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("1 GiB/s", Dimension::kBandwidth), 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("3.35 TB/s", Dimension::kBandwidth), 3.35e12);
}

TEST(QuantityTest, SizesTimesAndFlops) {
  EXPECT_DOUBLE_EQ(*parse_quantity("80 GiB", Dimension::kBytes), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("2 GB", Dimension::kBytes), 2e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("2.5 us", Dimension::kTime), 2.5e-6);
  EXPECT_DOUBLE_EQ(*parse_quantity("10 min", Dimension::kTime), 600.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("6 GFLOP", Dimension::kFlops), 6e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("989 TFLOP/s", Dimension::kFlopRate), 989e12);
}

TEST(QuantityTest, PlainNumbersAreBaseUnits) {
  EXPECT_DOUBLE_EQ(*parse_quantity("1e9", Dimension::kBandwidth), 1e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("-3", Dimension::kBytes), -3.0);
}

TEST(QuantityTest, RejectsWrongOrUnknownUnits) {
  EXPECT_FALSE(parse_quantity("450 GB", Dimension::kBandwidth));
  EXPECT_FALSE(parse_quantity("2 us", Dimension::kBytes));
  EXPECT_FALSE(parse_quantity("fast", Dimension::kBandwidth));
  EXPECT_FALSE(parse_quantity("10 gb/s", Dimension::kBandwidth));  // case matters: b vs B
  EXPECT_FALSE(parse_quantity("", Dimension::kTime));
}

}  // namespace
}  // namespace trainsim::models
