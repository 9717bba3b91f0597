#include "tools/report_format.h"

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/version.h"

namespace trainsim::cli {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

namespace {

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

double ms(Time t) { return to_milliseconds(t); }

std::string number(double value) { return printf_string("%.6g", value); }

struct ModelSummary {
  std::string name, description, file, batch, job;
};

ModelSummary summarize(const models::Workload& w, const models::BatchScaling& batch) {
  ModelSummary s;
  s.name = models::model_name(w.model);
  std::visit(
      [&](const auto& m) {
        s.description = m.description;
        s.file = m.source_file;
      },
      w.model);
  s.batch = batch.strong
                ? "strong (global batch fixed at " + printf_string("%.0f", batch.global_batch) +
                      " examples; the per-GPU batch shrinks as nodes grow)"
                : "weak (" + printf_string("%.6g", batch.batch_per_gpu) +
                      " examples per GPU fixed; the global batch grows with the nodes)";
  if (w.job) {
    const models::JobSpec& job = *w.job;
    s.job = job.name;
    if (std::holds_alternative<models::RecsysModelSpec>(w.model)) {
      s.job += ", sharding " + job.sharding +
               (job.group.kind == models::ShardingGroup::Kind::kWorld ? ""
                : job.group.kind == models::ShardingGroup::Kind::kNode
                    ? " (2D, group = node)"
                    : " (2D, group = " + std::to_string(job.group.gpus) + " GPUs)");
    }
  }
  return s;
}

// "to AUC 0.80275 (...)": what time-to-quality measures.
std::string target_summary(const models::QualityTarget& t) {
  const std::string b_noise = std::isinf(t.critical_batch)
                                  ? "no critical batch (examples to target do not grow with it)"
                                  : "critical batch " + number(t.critical_batch);
  if (t.default_model) {
    return t.min_examples ? "no convergence section in the model: one epoch (" +
                                number(*t.min_examples) + " examples) to the target at any batch"
                          : "no convergence section in the model: time-to-quality speeds up as "
                            "throughput (ttq (h) unknown)";
  }
  return "to " + t.metric + " " + number(*t.quality) + ": " + number(*t.min_examples) +
         " examples at a small batch, " + b_noise;
}

std::string hours_cell(double seconds) {
  return std::isnan(seconds) ? "-" : printf_string("%.3g", seconds / 3600.0);
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

std::string duration(double seconds) {
  if (seconds < 1.0) return printf_string("%.3g ms", seconds * 1e3);
  if (seconds < 120.0) return printf_string("%.3g s", seconds);
  if (seconds < 7200.0) return printf_string("%.3g min", seconds / 60.0);
  if (seconds < 360000.0) return printf_string("%.3g h", seconds / 3600.0);
  return printf_string("%.0f h", seconds / 3600.0);
}

// Per node count: what limits the input pipeline, and the checkpoint schedule and its cost.
void write_beyond_the_step(std::ostream& out, const std::vector<models::ScalingPoint>& points) {
  bool input = false, checkpoint = false;
  for (const auto& p : points) {
    input = input || (p.input && !p.input->limit.empty());
    checkpoint = checkpoint || p.checkpoint;
  }
  if (input) {
    out << "\ninput pipeline (per GPU): nodes, what limits it, its capacity (ex/s), stall per "
           "step\n";
    for (const auto& p : points) {
      if (!p.input || p.input->limit.empty()) continue;
      out << pad_left(std::to_string(p.nodes), 5) << "  " << p.input->limit << ", "
          << printf_string("%.0f", p.input->examples_per_s_per_gpu) << " ex/s, stall "
          << printf_string("%.3f", ms(p.input->stall_per_step)) << " ms\n";
    }
  }
  if (checkpoint) {
    out << "\ncheckpoints: nodes, size, interval, pause per checkpoint, write, restore after a "
           "failure,\ncluster MTBF, overhead (extra wall time per unit of useful work)\n";
    for (const auto& p : points) {
      if (!p.checkpoint) continue;
      const models::CheckpointCost& c = *p.checkpoint;
      out << pad_left(std::to_string(p.nodes), 5) << "  " << printf_string("%.3g GB", c.bytes / 1e9)
          << ", every " << duration(c.interval_seconds)
          << (c.optimal_interval ? " (Young/Daly optimum)" : "") << ", pause "
          << duration(c.pause_seconds) << ", write " << duration(c.write_seconds) << ", restore "
          << duration(c.restore_seconds) << ", MTBF "
          << (c.cluster_mtbf_seconds > 0 ? duration(c.cluster_mtbf_seconds) : "-") << ", overhead "
          << printf_string("%.2f%%", 100.0 * c.overhead) << "\n";
    }
  }
}

void write_table(std::ostream& out, const PredictReport& r) {
  const auto& points = r.study->points;
  const ModelSummary model = summarize(*r.workload, r.study->batch);
  out << "cluster  " << r.cluster->name;
  if (!r.cluster->description.empty()) out << ": " << r.cluster->description;
  out << "\nmodel    " << model.name;
  if (!model.description.empty()) out << ": " << model.description;
  if (!model.job.empty()) out << "\njob      " << model.job;
  out << "\nscaling  " << model.batch << "; baseline "
      << (points.empty() ? 0 : points.front().nodes) << " node(s)\nnetwork  " << r.network_model
      << " model; " << (r.steps - r.warmup_steps) << " measured step(s) after " << r.warmup_steps
      << " warm-up\nquality  " << target_summary(r.study->target) << "\n\n";
  const std::vector<std::pair<std::string, std::size_t>> columns = {{"nodes", 5},
                                                                    {"GPUs", 5},
                                                                    {"global batch", 12},
                                                                    {"step (ms)", 10},
                                                                    {"throughput (ex/s)", 17},
                                                                    {"speedup", 8},
                                                                    {"efficiency", 10},
                                                                    {"ttq (h)", 8},
                                                                    {"ttq speedup", 11},
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
        hours_cell(p.time_to_quality_s),
        printf_string("%.2fx", p.ttq_speedup),
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
  write_beyond_the_step(out, points);
  out << "\nttq = time-to-quality (wall time to the target) and its speedup over the baseline;\n"
         "times in ms per step: compute = local work on the GPU; comm stall = communication not\n"
         "hidden behind compute; imbalance = waiting in collectives for the slowest rank; input = "
         "waiting\n"
         "for the batch; ckpt = checkpoint and failure overhead per step; slowest = the rank with "
         "the most\n"
         "local compute; dominant = the largest loss (comm stall, imbalance, input or ckpt) once "
         "losses\n"
         "reach 10% of the step, else compute.\n";
}

void write_csv(std::ostream& out, const PredictReport& r) {
  out << "nodes,gpus,global_batch,step_time_s,throughput_examples_per_s,speedup,efficiency,"
         "time_to_quality_s,ttq_speedup,compute_s,communication_stall_s,load_imbalance_s,"
         "input_stall_s,checkpoint_s,slowest_rank,dominant\n";
  for (const auto& p : r.study->points) {
    out << p.nodes << ',' << p.gpus << ',' << printf_string("%.0f", p.global_batch) << ','
        << printf_string("%.9g", to_seconds(p.step_time)) << ','
        << printf_string("%.9g", p.throughput) << ',' << printf_string("%.9g", p.speedup) << ','
        << printf_string("%.9g", p.efficiency) << ','
        << (std::isnan(p.time_to_quality_s) ? "" : printf_string("%.9g", p.time_to_quality_s))
        << ',' << printf_string("%.9g", p.ttq_speedup);
    for (const Category& c : kCategories)
      out << ',' << printf_string("%.9g", to_seconds(p.breakdown.*c.field));
    out << ',' << p.slowest_rank << ',' << dominant_cause(p) << "\n";
  }
}

void write_json(std::ostream& out, const PredictReport& r) {
  const ModelSummary model = summarize(*r.workload, r.study->batch);
  nlohmann::ordered_json doc;
  doc["trainsim_version"] = kTrainsimVersion;
  doc["cluster"] = {{"name", r.cluster->name}, {"file", r.cluster->source_file}};
  doc["model"] = {{"name", model.name}, {"file", model.file}};
  if (r.workload->job)
    doc["job"] = {{"name", r.workload->job->name}, {"file", r.workload->job->source_file}};
  doc["scaling"] = r.study->batch.strong ? "strong" : "weak";
  doc["batch"] = model.batch;
  const models::QualityTarget& target = r.study->target;
  doc["quality_target"] = {{"metric", target.metric}, {"summary", target_summary(target)}};
  if (target.quality) doc["quality_target"]["quality"] = *target.quality;
  if (target.min_examples) doc["quality_target"]["min_examples"] = *target.min_examples;
  if (!std::isinf(target.critical_batch))
    doc["quality_target"]["critical_batch"] = target.critical_batch;
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
    auto& j = points.back();
    j["ttq_speedup"] = p.ttq_speedup;
    if (!std::isnan(p.time_to_quality_s)) {
      j["time_to_quality_s"] = p.time_to_quality_s;
      j["examples_to_target"] = p.examples_to_target;
      j["steps_to_target"] = p.steps_to_target;
    }
    if (p.input) {
      j["input_pipeline"] = {{"limit", p.input->limit},
                             {"capacity_examples_per_s_per_gpu", p.input->examples_per_s_per_gpu},
                             {"stall_per_step_s", to_seconds(p.input->stall_per_step)},
                             {"steps_simulated", p.input->steps_simulated}};
    }
    if (p.checkpoint) {
      const models::CheckpointCost& c = *p.checkpoint;
      j["checkpoint"] = {{"bytes", c.bytes},
                         {"interval_s", c.interval_seconds},
                         {"optimal_interval", c.optimal_interval},
                         {"pause_s", c.pause_seconds},
                         {"write_s", c.write_seconds},
                         {"restore_s", c.restore_seconds},
                         {"cluster_mtbf_s", c.cluster_mtbf_seconds},
                         {"overhead", c.overhead}};
    }
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
