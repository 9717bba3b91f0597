// Renders a scaling study as a human table, CSV or JSON. Same inputs give the same bytes.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/scaling/scaling_study.h"
#include "models/spec/cluster_spec.h"

namespace trainsim::cli {

enum class OutputFormat { kTable, kCsv, kJson };
// --format's value: table, csv or json (a UsageError otherwise).
OutputFormat parse_output_format(const std::string& text);

struct Provenance;

struct PredictReport {
  const models::ClusterSpec* cluster = nullptr;
  const models::Workload* workload = nullptr;
  const models::ScalingStudy* study = nullptr;
  std::string network_model;  // "flow" or "analytic"
  int steps = 0;
  int warmup_steps = 0;
  const Provenance* provenance = nullptr;  // recorded in JSON and the CSV's side file
};

// What limits a point: the largest loss ("communication stall", "load imbalance", "input stall"
// or "checkpoint") when the losses together are at least a tenth of the step, else "compute".
std::string dominant_cause(const models::ScalingPoint& point);

// One number formatted with a printf format ("%.2fx").
std::string printf_string(const char* format, double value);

// --solve-quantum auto in words, from its constant: "exact until the solves have changed more
// than 2 million flow rates per step, then 0.05% of the step". `per`: what the limit is per.
std::string auto_solve_quantum_rule(const std::string& per = "step");

void write_predict_report(std::ostream& out, const PredictReport& report, OutputFormat format);
// What a CSV result leaves out, for its side file FILE.meta.json: the JSON document without its
// points (configs, settings, provenance).
void write_predict_metadata(std::ostream& out, const PredictReport& report);

// With --repeat: the CSV columns of the runs' figures (each after a comma), a row's fields for
// them, and their JSON object ("repeated").
std::string repeated_csv_columns();
std::string repeated_csv_fields(const models::RepeatedFigures& figures);
nlohmann::ordered_json repeated_json(const models::RepeatedFigures& figures);

}  // namespace trainsim::cli
