#include "tools/report_format.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/version.h"

namespace trainsim::cli {

namespace {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

double ms(Time t) { return to_milliseconds(t); }

void write_table(std::ostream& out, const PredictReport& r) {
  const auto& points = r.study->points;
  out << "cluster  " << r.cluster->name;
  if (!r.cluster->description.empty()) out << ": " << r.cluster->description;
  out << "\nmodel    " << r.model->name;
  if (!r.model->description.empty()) out << ": " << r.model->description;
  out << "\nscaling  weak, " << r.model->batch_per_gpu << " examples per GPU per step; baseline "
      << (points.empty() ? 0 : points.front().nodes) << " node(s); network model "
      << r.network_model << "; " << (r.steps - r.warmup_steps) << " measured step(s) after "
      << r.warmup_steps << " warm-up\n\n";
  const std::vector<std::pair<std::string, std::size_t>> columns = {{"nodes", 5},
                                                                    {"GPUs", 5},
                                                                    {"global batch", 12},
                                                                    {"step (ms)", 10},
                                                                    {"throughput (ex/s)", 17},
                                                                    {"speedup", 8},
                                                                    {"efficiency", 10},
                                                                    {"compute (ms)", 12},
                                                                    {"exposed comm (ms)", 17},
                                                                    {"dominant", 22}};
  std::string header;
  for (const auto& [name, width] : columns) {
    header += (header.empty() ? "" : "  ") + pad_left(name, width);
  }
  out << header << "\n";
  for (const auto& p : points) {
    const std::vector<std::string> cells = {
        std::to_string(p.nodes),
        std::to_string(p.gpus),
        printf_string("%.0f", p.global_batch),
        printf_string("%.3f", ms(p.step_time)),
        printf_string("%.0f", p.throughput),
        printf_string("%.2fx", p.speedup),
        printf_string("%.1f%%", 100.0 * p.efficiency),
        printf_string("%.3f", ms(p.breakdown.compute)),
        printf_string("%.3f", ms(p.breakdown.exposed_communication)),
        dominant_cause(p)};
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      line += (i == 0 ? "" : "  ") + pad_left(cells[i], columns[i].second);
    }
    out << line << "\n";
  }
}

void write_csv(std::ostream& out, const PredictReport& r) {
  out << "nodes,gpus,global_batch,step_time_s,throughput_examples_per_s,speedup,efficiency,"
         "compute_s,exposed_communication_s,dominant\n";
  for (const auto& p : r.study->points) {
    out << p.nodes << ',' << p.gpus << ',' << printf_string("%.0f", p.global_batch) << ','
        << printf_string("%.9g", to_seconds(p.step_time)) << ','
        << printf_string("%.9g", p.throughput) << ',' << printf_string("%.9g", p.speedup) << ','
        << printf_string("%.9g", p.efficiency) << ','
        << printf_string("%.9g", to_seconds(p.breakdown.compute)) << ','
        << printf_string("%.9g", to_seconds(p.breakdown.exposed_communication)) << ','
        << dominant_cause(p) << "\n";
  }
}

void write_json(std::ostream& out, const PredictReport& r) {
  nlohmann::ordered_json doc;
  doc["trainsim_version"] = kTrainsimVersion;
  doc["cluster"] = {{"name", r.cluster->name}, {"file", r.cluster->source_file}};
  doc["model"] = {{"name", r.model->name},
                  {"file", r.model->source_file},
                  {"batch_per_gpu", r.model->batch_per_gpu}};
  doc["scaling"] = "weak";
  doc["network_model"] = r.network_model;
  doc["steps"] = r.steps;
  doc["warmup_steps"] = r.warmup_steps;
  doc["baseline_nodes"] = r.study->points.empty() ? 0 : r.study->points.front().nodes;
  auto& points = doc["points"] = nlohmann::ordered_json::array();
  for (const auto& p : r.study->points) {
    points.push_back({{"nodes", p.nodes},
                      {"gpus", p.gpus},
                      {"global_batch", p.global_batch},
                      {"step_time_s", to_seconds(p.step_time)},
                      {"throughput_examples_per_s", p.throughput},
                      {"speedup", p.speedup},
                      {"efficiency", p.efficiency},
                      {"breakdown_s",
                       {{"compute", to_seconds(p.breakdown.compute)},
                        {"exposed_communication", to_seconds(p.breakdown.exposed_communication)}}},
                      {"dominant", dominant_cause(p)},
                      {"events", p.events}});
  }
  out << doc.dump(2) << "\n";
}

}  // namespace

std::string dominant_cause(const models::ScalingPoint& point) {
  return point.breakdown.exposed_communication > point.breakdown.compute ? "exposed communication"
                                                                         : "compute";
}

void write_predict_report(std::ostream& out, const PredictReport& report, OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      write_table(out, report);
      break;
    case OutputFormat::kCsv:
      write_csv(out, report);
      break;
    case OutputFormat::kJson:
      write_json(out, report);
      break;
  }
}

}  // namespace trainsim::cli
