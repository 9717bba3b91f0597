#include "tools/result_schema.h"

#include <cmath>

#include "engine/check.h"
#include "tools/report_format.h"

namespace trainsim::cli {

namespace {

using Kind = ResultColumn::Kind;
using P = models::ScalingPoint;

double seconds(Time t) { return to_seconds(t); }

double stall(const models::ScalingPoint& p, models::StepCollective c) {
  return to_seconds(p.breakdown.stall_by_collective[static_cast<int>(c)]);
}

}  // namespace

const std::vector<ResultColumn>& result_columns() {
  // clang-format off
  static const std::vector<ResultColumn> columns = {
    {"nodes", "nodes", 5, "", Kind::kCount, true, "%.0f", 1,
     [](const P& p) { return double(p.nodes); }, nullptr},
    {"gpus", "GPUs", 5, "", Kind::kCount, true, "%.0f", 1,
     [](const P& p) { return double(p.gpus); }, nullptr},
    {"global_batch", "global batch", 12, "examples", Kind::kNumber, true, "%.0f", 1,
     [](const P& p) { return p.global_batch; }, nullptr},
    {"step_time_s", "step (ms)", 10, "s", Kind::kNumber, true, "%.3f", 1e3,
     [](const P& p) { return seconds(p.step_time); }, nullptr},
    {"throughput_examples_per_s", "throughput (ex/s)", 17, "examples/s", Kind::kNumber, true,
     "%.0f", 1, [](const P& p) { return p.throughput; }, nullptr},
    {"speedup", "speedup", 8, "", Kind::kNumber, true, "%.2fx", 1,
     [](const P& p) { return p.speedup; }, nullptr},
    {"efficiency", "efficiency", 10, "", Kind::kNumber, true, "%.1f%%", 100,
     [](const P& p) { return p.efficiency; }, nullptr},
    {"time_to_quality_s", "ttq (h)", 8, "s", Kind::kNumber, true, "%.3g", 1 / 3600.0,
     [](const P& p) { return p.time_to_quality_s; }, nullptr},
    {"ttq_speedup", "ttq speedup", 11, "", Kind::kNumber, true, "%.2fx", 1,
     [](const P& p) { return p.ttq_speedup; }, nullptr},
    {"compute", "compute", 9, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::compute, "compute"},
    {"communication_stall", "comm stall", 10, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::exposed_communication, "communication stall"},
    {"load_imbalance", "imbalance", 9, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::imbalance, "load imbalance"},
    {"input_stall", "input", 7, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::input_stall, "input stall"},
    {"checkpoint", "ckpt", 6, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::checkpoint, "checkpoint"},
    {"evaluation", "eval", 6, "s", Kind::kPart, true, "%.3f", 1e3, nullptr, nullptr,
     &models::StepBreakdown::evaluation, "evaluation"},
    // Examples/s of the training steps alone (throughput includes the evaluation phases): in CSV,
    // JSON and sweep rows.
    {"training_throughput_examples_per_s", "training throughput", 0, "examples/s", Kind::kNumber,
     true, "%.0f", 1, [](const P& p) { return p.training_throughput; }, nullptr},
    // The communication stall by collective: in CSV, JSON and sweep rows, and in the terminal as
    // its own section below the table (width 0: not a table column).
    {"stall_id_all_to_all_s", "id all-to-all", 0, "s", Kind::kNumber, true, "%.3f", 1e3,
     [](const P& p) { return stall(p, models::StepCollective::kIdAllToAll); }, nullptr},
    {"stall_embedding_all_to_all_s", "embedding all-to-all", 0, "s", Kind::kNumber, true, "%.3f",
     1e3, [](const P& p) { return stall(p, models::StepCollective::kEmbeddingAllToAll); },
     nullptr},
    {"stall_gradient_all_to_all_s", "gradient all-to-all", 0, "s", Kind::kNumber, true, "%.3f",
     1e3, [](const P& p) { return stall(p, models::StepCollective::kGradientAllToAll); },
     nullptr},
    {"stall_dense_all_reduce_s", "dense all-reduce", 0, "s", Kind::kNumber, true, "%.3f", 1e3,
     [](const P& p) { return stall(p, models::StepCollective::kDenseAllReduce); }, nullptr},
    {"stall_embedding_sync_s", "embedding sync", 0, "s", Kind::kNumber, true, "%.3f", 1e3,
     [](const P& p) { return stall(p, models::StepCollective::kEmbeddingSync); }, nullptr},
    {"slowest_rank", "slowest", 7, "", Kind::kCount, false, "%.0f", 1,
     [](const P& p) { return double(p.slowest_rank); }, nullptr},
    {"dominant", "dominant", 19, "", Kind::kText, true, "", 1, nullptr,
     [](const P& p) { return dominant_cause(p); }},
  };
  // clang-format on
  return columns;
}

const ResultColumn& result_column(std::string_view key) {
  for (const ResultColumn& c : result_columns()) {
    if (c.key == key) return c;
  }
  TRAINSIM_ASSERT(false, "no result column '" + std::string(key) + "'");
  return result_columns().front();
}

std::vector<const ResultColumn*> breakdown_parts() {
  std::vector<const ResultColumn*> parts;
  for (const ResultColumn& c : result_columns()) {
    if (c.kind == Kind::kPart) parts.push_back(&c);
  }
  return parts;
}

double ResultColumn::value(const models::ScalingPoint& point) const {
  return kind == Kind::kPart ? to_seconds(point.breakdown.*part) : number(point);
}

std::string ResultColumn::csv_key() const {
  return std::string(key) + (kind == Kind::kPart ? "_s" : "");
}

namespace {

std::string cell(const ResultColumn& c, double value) {
  if (std::isnan(value)) return "-";
  return printf_string(std::string(c.table_cell).c_str(), value * c.cell_scale);
}

}  // namespace

std::string ResultColumn::table_text(const models::ScalingPoint& point) const {
  return kind == Kind::kText ? text(point) : cell(*this, value(point));
}

std::string ResultColumn::csv_text(const models::ScalingPoint& point) const {
  if (kind == Kind::kText) return text(point);
  const double v = value(point);
  return std::isnan(v) ? "" : printf_string("%.9g", v);
}

void ResultColumn::put_json(nlohmann::ordered_json& row, const models::ScalingPoint& point) const {
  if (kind == Kind::kText) {
    row[std::string(key)] = text(point);
    return;
  }
  const double v = value(point);
  if (std::isnan(v)) return;
  if (kind == Kind::kPart) {
    row["breakdown_s"][std::string(key)] = v;
  } else if (kind == Kind::kCount) {
    row[std::string(key)] = static_cast<long long>(v);
  } else {
    row[std::string(key)] = v;
  }
}

double ResultColumn::number_in(const nlohmann::json& row) const {
  const nlohmann::json* at = &row;
  if (kind == Kind::kPart) {
    if (!row.contains("breakdown_s")) return std::nan("");
    at = &row["breakdown_s"];
  }
  const std::string k(key);
  return at->contains(k) && (*at)[k].is_number() ? (*at)[k].get<double>() : std::nan("");
}

std::string ResultColumn::table_text(const nlohmann::json& row) const {
  if (kind == Kind::kText) return row.value(std::string(key), std::string());
  return cell(*this, number_in(row));
}

void ResultColumn::put_json_from_csv(nlohmann::json& row, const std::string& text_cell) const {
  if (kind == Kind::kText) {
    row[std::string(key)] = text_cell;
  } else if (kind == Kind::kCount) {
    row[std::string(key)] = std::stoll(text_cell);
  } else if (!text_cell.empty()) {
    const double v = std::stod(text_cell);
    if (kind == Kind::kPart) {
      row["breakdown_s"][std::string(key)] = v;
    } else {
      row[std::string(key)] = v;
    }
  }
}

}  // namespace trainsim::cli
