// The SimGrid 3.32 reference results (validation/simgrid/*.csv) for the cross-checks: the rows of
// a results file, and which contention rows are pure max-min (the ones trainsim must match).
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace trainsim::simgrid {

inline const std::string kSimGridDir = std::string(TRAINSIM_SOURCE_DIR) + "/validation/simgrid/";

// One row: column name -> text.
using SimGridRow = std::map<std::string, std::string>;

inline std::vector<SimGridRow> read_simgrid_csv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<SimGridRow> rows;
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  for (std::string text; std::getline(in, text);) {
    SimGridRow row;
    std::stringstream fields(text);
    std::string field;
    for (std::size_t i = 0; i < header.size() && std::getline(fields, field, ',');) {
      row[header[i++]] = field;
    }
    rows.push_back(row);
  }
  return rows;
}

// A contention row of plain max-min sharing that ran to the end: the crossbar (`ideal` is
// max-min there), the fat-tree's `maxmin` model, and the lone ring on the fat-tree (one flow per
// link at a time: no sharing to weigh). SimGrid's lazy-update rows are its own error.
inline bool is_max_min_row(const SimGridRow& row) {
  const bool maxmin = row.at("model") == "maxmin" || row.at("fabric") == "crossbar" ||
                      (row.at("scenario") == "ring" && row.at("model") == "ideal");
  return maxmin && row.at("variant") == "base" && row.at("status") == "ok";
}

}  // namespace trainsim::simgrid
