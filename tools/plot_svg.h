// Scaling plots as standalone SVG: speedup and efficiency against nodes (log2 axis) with the ideal
// line, one line per series, and a stacked bar per node count of where the step time goes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace trainsim::cli {

struct PlotPoint {
  int nodes = 0;
  double throughput = 0.0;  // examples/s
  double step_time = 0.0;   // seconds
  double speedup = 0.0;
  double efficiency = 0.0;
  // Seconds per step of each part of the breakdown, in the order of breakdown_parts()
  // (result_schema.h): compute, communication stall, load imbalance, input stall, checkpoint,
  // evaluation.
  static constexpr int kParts = 6;
  double parts[kParts] = {0, 0, 0, 0, 0, 0};
};

struct PlotSeries {
  std::string label;
  std::vector<PlotPoint> points;  // ascending node counts
};

// `baseline_nodes` anchors the ideal line (speedup = N / baseline). Breakdown bars are drawn for
// the first series.
void write_scaling_svg(std::ostream& out, const std::vector<PlotSeries>& series,
                       const std::string& title, int baseline_nodes);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace trainsim::cli
