// Reads results back for plots and reports: a `predict --format json` document, or a sweep's CSV
// or JSON Lines output (its header line says which sweep it is).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/plot_svg.h"
#include "tools/provenance.h"

namespace trainsim::cli {

struct ResultSet {
  std::string kind;   // "predict" or "sweep"
  std::string title;  // model and cluster, or the sweep's name
  std::string version;
  int baseline_nodes = 1;
  std::vector<std::string> config_files;  // the configs it came from (as recorded)
  std::vector<std::string> columns;       // a table of every row
  std::vector<std::vector<std::string>> rows;
  std::vector<PlotSeries> series;  // speedup/efficiency lines: a sweep's other axes make series
  std::optional<Provenance> provenance;  // how it was made, when the result records it
};

// `name` stands for the text's file in errors (ConfigError naming the line).
ResultSet parse_results(const std::string& text, const std::string& name);
ResultSet read_results(const std::string& path);

}  // namespace trainsim::cli
