// Scaling plots as standalone SVG: speedup (log-log, where linear scaling is the straight dashed
// line), absolute throughput (log-log, so series with different baselines compare honestly) and
// efficiency against nodes, one line per series, each series with its own colour, dash and
// marker; where the step goes, in ms per step, a stacked bar per series at each node count; a
// legend that names every series. Ticks at 1, 2, 5 x 10^k.
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

// `baseline_nodes` anchors the ideal line (speedup = N / baseline).
void write_scaling_svg(std::ostream& out, const std::vector<PlotSeries>& series,
                       const std::string& title, int baseline_nodes);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace trainsim::cli
