// The columns of a result: every figure of a scaling point that trainsim reports, once, with its
// key (CSV column and JSON key), terminal heading, unit and accessor. The terminal table, CSV and
// JSON of `predict`, the rows of `sweep`, the result reader behind `report` and the plots all
// take their columns from here; a new column is one line of result_columns().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/scaling/scaling_study.h"

namespace trainsim::cli {

struct ResultColumn {
  enum class Kind {
    kCount,   // a whole number (JSON integer)
    kNumber,  // a number (NaN: absent: an empty CSV cell, no JSON key, "-" in the table)
    kPart,    // a part of the step breakdown, in seconds (JSON: under "breakdown_s")
    kText,    // text
  };
  std::string_view key;    // JSON key; the CSV column too (a part's adds "_s": "compute_s")
  std::string_view label;  // terminal heading
  int width;               // terminal width
  std::string_view unit;   // of the CSV and JSON value ("s", "examples/s"; "" for counts, ratios)
  Kind kind;
  bool in_sweep_rows;           // also a column of sweep rows
  std::string_view table_cell;  // printf format of the terminal cell, of the value x cell_scale
  double cell_scale;
  double (*number)(const models::ScalingPoint&);     // kCount, kNumber
  std::string (*text)(const models::ScalingPoint&);  // kText
  Time models::StepBreakdown::*part = nullptr;       // kPart
  std::string_view name = {};  // a part's name in words ("communication stall")

  // The column's number of a point (a part in seconds).
  double value(const models::ScalingPoint& point) const;

  std::string csv_key() const;
  // The value of a point, formatted for the terminal, a CSV cell ("%.9g"), or put in JSON.
  std::string table_text(const models::ScalingPoint& point) const;
  std::string csv_text(const models::ScalingPoint& point) const;
  void put_json(nlohmann::ordered_json& row, const models::ScalingPoint& point) const;
  // The same from a JSON row (as predict --format json or a sweep writes it; absent: NaN / "").
  std::string table_text(const nlohmann::json& row) const;
  double number_in(const nlohmann::json& row) const;
  // A CSV cell read back into a JSON row.
  void put_json_from_csv(nlohmann::json& row, const std::string& cell) const;
};

const std::vector<ResultColumn>& result_columns();
// The column of `key` (an internal error if there is none).
const ResultColumn& result_column(std::string_view key);
// The parts of the step breakdown, in order (compute, communication stall, load imbalance, input
// stall, checkpoint).
std::vector<const ResultColumn*> breakdown_parts();

}  // namespace trainsim::cli
