// Parsing of physical quantities written in configs, e.g. "450 GB/s", "400 Gb/s", "2.5 us",
// "80 GiB", "989 TFLOP/s". A plain number is taken in the base unit of its dimension (bytes,
// bytes/s, seconds, FLOP, FLOP/s).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainsim::models {

enum class Dimension { kBytes, kBandwidth, kTime, kFlops, kFlopRate };

std::string_view dimension_name(Dimension dimension);
// Units accepted for a dimension, for error messages.
std::string_view dimension_units(Dimension dimension);

// The range a nonzero quantity of each dimension may take in a config: values outside it are not
// physical for a training cluster (a unit forgotten, a typo) and too small or too large to
// simulate, so a reader refuses them at their key. Zero (unset, for many keys) is not bounded.
struct QuantityRange {
  double smallest = 0, largest = 0;          // base units
  std::string_view smallest_text, largest_text;  // as a user writes them
};
QuantityRange quantity_range(Dimension dimension);

// A plain finite number that is the whole of `text` ("1abc", "0x10", "nan" and "" are not), or
// nullopt.
std::optional<double> parse_number(std::string_view text);

// Value in base units, or nullopt if `text` is not a number followed by a unit of `dimension`.
std::optional<double> parse_quantity(std::string_view text, Dimension dimension);

}  // namespace trainsim::models
