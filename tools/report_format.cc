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

struct ModelSummary {
  std::string name, description, file, batch;
};

ModelSummary summarize(const models::Workload& w) {
  ModelSummary s;
  if (const auto* dense = std::get_if<models::DenseModelSpec>(&w.model)) {
    s = {dense->name, dense->description, dense->source_file,
         "weak, " + std::to_string(dense->batch_per_gpu) + " examples per GPU per step"};
  } else {
    const auto& recsys = std::get<models::RecsysModelSpec>(w.model);
    s = {recsys.name, recsys.description, recsys.source_file, ""};
    const models::JobSpec& job = *w.job;
    s.batch =
        job.batch_per_gpu
            ? "weak, " + printf_string("%.0f", *job.batch_per_gpu) + " examples per GPU per step"
            : "strong, global batch " + printf_string("%.0f", *job.global_batch);
    s.batch += "; job " + job.name + ", sharding " + job.sharding +
               (job.group == 0  ? ""
                : job.group < 0 ? " (2D, group = node)"
                                : " (2D, group = " + std::to_string(job.group) + " GPUs)");
  }
  return s;
}

struct Category {
  const char* name;
  Time models::StepBreakdown::*field;
};
constexpr Category kCategories[] = {
    {"compute", &models::StepBreakdown::compute},
    {"communication stall", &models::StepBreakdown::exposed_communication},
    {"load imbalance", &models::StepBreakdown::imbalance},
    {"input stall", &models::StepBreakdown::input_stall},
    {"checkpoint", &models::StepBreakdown::checkpoint}};

void write_table(std::ostream& out, const PredictReport& r) {
  const auto& points = r.study->points;
  const ModelSummary model = summarize(*r.workload);
  out << "cluster  " << r.cluster->name;
  if (!r.cluster->description.empty()) out << ": " << r.cluster->description;
  out << "\nmodel    " << model.name;
  if (!model.description.empty()) out << ": " << model.description;
  out << "\nscaling  " << model.batch << "; baseline "
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
                                                                    {"compute", 9},
                                                                    {"comm stall", 10},
                                                                    {"imbalance", 9},
                                                                    {"input", 7},
                                                                    {"ckpt", 6},
                                                                    {"slowest", 7},
                                                                    {"dominant", 19}};
  std::string header;
  for (const auto& [name, width] : columns)
    header += (header.empty() ? "" : "  ") + pad_left(name, width);
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
        printf_string("%.3f", ms(p.breakdown.imbalance)),
        printf_string("%.3f", ms(p.breakdown.input_stall)),
        printf_string("%.3f", ms(p.breakdown.checkpoint)),
        std::to_string(p.slowest_rank),
        dominant_cause(p)};
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i)
      line += (i == 0 ? "" : "  ") + pad_left(cells[i], columns[i].second);
    out << line << "\n";
  }
  out << "\ntimes in ms per step: compute = local work on the GPU; comm stall = communication not\n"
         "hidden behind compute; imbalance = waiting in collectives for the slowest rank; input = "
         "waiting\n"
         "for the batch; ckpt = checkpoint overhead; slowest = the rank with the most local "
         "compute;\n"
         "dominant = the largest loss (comm stall, imbalance, input or ckpt) once losses reach 10% "
         "of the\n"
         "step, else compute.\n";
}

void write_csv(std::ostream& out, const PredictReport& r) {
  out << "nodes,gpus,global_batch,step_time_s,throughput_examples_per_s,speedup,efficiency,compute_"
         "s,"
         "communication_stall_s,load_imbalance_s,input_stall_s,checkpoint_s,slowest_rank,"
         "dominant\n";
  for (const auto& p : r.study->points) {
    out << p.nodes << ',' << p.gpus << ',' << printf_string("%.0f", p.global_batch) << ','
        << printf_string("%.9g", to_seconds(p.step_time)) << ','
        << printf_string("%.9g", p.throughput) << ',' << printf_string("%.9g", p.speedup) << ','
        << printf_string("%.9g", p.efficiency);
    for (const Category& c : kCategories)
      out << ',' << printf_string("%.9g", to_seconds(p.breakdown.*c.field));
    out << ',' << p.slowest_rank << ',' << dominant_cause(p) << "\n";
  }
}

void write_json(std::ostream& out, const PredictReport& r) {
  const ModelSummary model = summarize(*r.workload);
  nlohmann::ordered_json doc;
  doc["trainsim_version"] = kTrainsimVersion;
  doc["cluster"] = {{"name", r.cluster->name}, {"file", r.cluster->source_file}};
  doc["model"] = {{"name", model.name}, {"file", model.file}};
  if (r.workload->job)
    doc["job"] = {{"name", r.workload->job->name}, {"file", r.workload->job->source_file}};
  doc["batch"] = model.batch;
  doc["network_model"] = r.network_model;
  doc["steps"] = r.steps;
  doc["warmup_steps"] = r.warmup_steps;
  doc["baseline_nodes"] = r.study->points.empty() ? 0 : r.study->points.front().nodes;
  auto& points = doc["points"] = nlohmann::ordered_json::array();
  for (const auto& p : r.study->points) {
    nlohmann::ordered_json breakdown;
    breakdown["compute"] = to_seconds(p.breakdown.compute);
    breakdown["communication_stall"] = to_seconds(p.breakdown.exposed_communication);
    breakdown["load_imbalance"] = to_seconds(p.breakdown.imbalance);
    breakdown["input_stall"] = to_seconds(p.breakdown.input_stall);
    breakdown["checkpoint"] = to_seconds(p.breakdown.checkpoint);
    points.push_back({{"nodes", p.nodes},
                      {"gpus", p.gpus},
                      {"global_batch", p.global_batch},
                      {"step_time_s", to_seconds(p.step_time)},
                      {"throughput_examples_per_s", p.throughput},
                      {"speedup", p.speedup},
                      {"efficiency", p.efficiency},
                      {"breakdown_s", breakdown},
                      {"slowest_rank", p.slowest_rank},
                      {"slowest_rank_compute_s", to_seconds(p.slowest_rank_compute)},
                      {"dominant", dominant_cause(p)},
                      {"events", p.events}});
  }
  out << doc.dump(2) << "\n";
}

}  // namespace

std::string dominant_cause(const models::ScalingPoint& point) {
  // What eats the step beyond local compute: the largest loss, once losses are a tenth of it.
  const Category* best = nullptr;
  Time losses = 0;
  for (const Category& c : kCategories) {
    if (c.field == &models::StepBreakdown::compute) continue;
    losses += point.breakdown.*c.field;
    if (!best || point.breakdown.*c.field > point.breakdown.*best->field) best = &c;
  }
  if (!best || losses * 10 < point.step_time) return kCategories[0].name;
  return best->name;
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
