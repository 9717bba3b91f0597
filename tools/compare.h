// What-ifs side by side: the series of several results (predict JSON, sweep CSV or JSON Lines)
// at the same node counts, each with its difference from the first in throughput, efficiency
// and every part of the step breakdown. `trainsim compare` prints it; `report` with several
// results puts it on the page.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/result_reader.h"

namespace trainsim::cli {

struct ComparedSeries {
  std::string letter;  // "A", "B", ...: A is what the others are compared with
  std::string label;   // the file, and the series' label in it when it has several
  PlotSeries series;
};

struct Comparison {
  std::vector<ComparedSeries> series;
  std::vector<int> nodes;  // every node count of any series, ascending
};

// The series of every result, in order (`sources` names each result's file).
Comparison compare_results(const std::vector<ResultSet>& results,
                           const std::vector<std::string>& sources);

// The comparison as a terminal table, CSV, or an HTML table.
void write_comparison_table(std::ostream& out, const Comparison& c);
void write_comparison_csv(std::ostream& out, const Comparison& c);
void write_comparison_html(std::ostream& out, const Comparison& c);

}  // namespace trainsim::cli
