#include "models/config/quantity.h"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace trainsim::models {

namespace {

struct Unit {
  std::string_view symbol;
  double factor;
};

// Decimal prefixes are powers of 1000, binary (Ki, Mi, ...) powers of 1024; lower-case b is bits.
constexpr std::array kBytesUnits = {Unit{"B", 1.0},
                                    Unit{"KB", 1e3},
                                    Unit{"MB", 1e6},
                                    Unit{"GB", 1e9},
                                    Unit{"TB", 1e12},
                                    Unit{"PB", 1e15},
                                    Unit{"KiB", 1024.0},
                                    Unit{"MiB", 1048576.0},
                                    Unit{"GiB", 1073741824.0},
                                    Unit{"TiB", 1099511627776.0}};
constexpr std::array kBandwidthUnits = {
    Unit{"B/s", 1.0},         Unit{"KB/s", 1e3},           Unit{"MB/s", 1e6},
    Unit{"GB/s", 1e9},        Unit{"TB/s", 1e12},          Unit{"KiB/s", 1024.0},
    Unit{"MiB/s", 1048576.0}, Unit{"GiB/s", 1073741824.0}, Unit{"b/s", 1.0 / 8},
    Unit{"Kb/s", 1e3 / 8},    Unit{"Mb/s", 1e6 / 8},       Unit{"Gb/s", 1e9 / 8},
    Unit{"Tb/s", 1e12 / 8},   Unit{"bps", 1.0 / 8},        Unit{"Kbps", 1e3 / 8},
    Unit{"Mbps", 1e6 / 8},    Unit{"Gbps", 1e9 / 8},       Unit{"Tbps", 1e12 / 8}};
constexpr std::array kTimeUnits = {Unit{"ps", 1e-12}, Unit{"ns", 1e-9},  Unit{"us", 1e-6},
                                   Unit{"ms", 1e-3},  Unit{"s", 1.0},    Unit{"min", 60.0},
                                   Unit{"h", 3600.0}, Unit{"d", 86400.0}};
constexpr std::array kFlopsUnits = {Unit{"FLOP", 1.0},  Unit{"KFLOP", 1e3},  Unit{"MFLOP", 1e6},
                                    Unit{"GFLOP", 1e9}, Unit{"TFLOP", 1e12}, Unit{"PFLOP", 1e15}};
constexpr std::array kFlopRateUnits = {Unit{"FLOP/s", 1.0}, Unit{"GFLOP/s", 1e9},
                                       Unit{"TFLOP/s", 1e12}, Unit{"PFLOP/s", 1e15}};

template <std::size_t N>
std::optional<double> find_factor(const std::array<Unit, N>& units, std::string_view symbol) {
  for (const Unit& unit : units) {
    if (unit.symbol == symbol) return unit.factor;
  }
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view dimension_name(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:
      return "a size";
    case Dimension::kBandwidth:
      return "a bandwidth";
    case Dimension::kTime:
      return "a time";
    case Dimension::kFlops:
      return "a FLOP count";
    case Dimension::kFlopRate:
      return "a FLOP rate";
  }
  return "a quantity";
}

QuantityRange quantity_range(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:  // per-parameter state of row-wise optimizers is a few bytes per row
      return {1e-6, 1e18, "1e-6 B", "1 EB"};
    case Dimension::kBandwidth:  // nothing in a cluster is slower than 1 MB/s
      return {1e6, 1e16, "1 MB/s", "10 PB/s"};
    case Dimension::kTime:  // the simulated clock's resolution; mean times between failures last
      return {1e-12, 1e10, "1 ps", "1e10 s (317 years)"};  // years (keys of simulated times stop sooner)
    case Dimension::kFlops:
      return {1, 1e24, "1 FLOP", "1e24 FLOP"};
    case Dimension::kFlopRate:  // no GPU, however old, below 1 GFLOP/s
      return {1e9, 1e19, "1 GFLOP/s", "10 EFLOP/s"};
  }
  return {};
}

std::string_view dimension_units(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBytes:
      return "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
    case Dimension::kBandwidth:
      return "B/s, MB/s, GB/s, TB/s, GiB/s, Mb/s, Gb/s, Tb/s (b = bits), Gbps";
    case Dimension::kTime:
      return "ps, ns, us, ms, s, min, h, d";
    case Dimension::kFlops:
      return "FLOP, MFLOP, GFLOP, TFLOP, PFLOP";
    case Dimension::kFlopRate:
      return "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s";
  }
  return "";
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<double> parse_quantity(std::string_view text, Dimension dimension) {
  text = trim(text);
  double value = 0.0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || !std::isfinite(value)) return std::nullopt;
  const std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (unit.empty()) return value;
  std::optional<double> factor;
  switch (dimension) {
    case Dimension::kBytes:
      factor = find_factor(kBytesUnits, unit);
      break;
    case Dimension::kBandwidth:
      factor = find_factor(kBandwidthUnits, unit);
      break;
    case Dimension::kTime:
      factor = find_factor(kTimeUnits, unit);
      break;
    case Dimension::kFlops:
      factor = find_factor(kFlopsUnits, unit);
      break;
    case Dimension::kFlopRate:
      factor = find_factor(kFlopRateUnits, unit);
      break;
  }
  if (!factor) return std::nullopt;
  return value * *factor;
}

}  // namespace trainsim::models
