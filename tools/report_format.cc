#include "tools/report_format.h"

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/provenance.h"
#include "tools/result_schema.h"
#include "tools/version.h"

namespace trainsim::cli {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string auto_solve_quantum_rule(const std::string& per) {
  const models::ExactOrShare& rule = models::kDefaultSolveQuantum;
  return "exact until the solves have changed more than " +
         printf_string("%g", rule.rate_changes_per_step / 1e6) + " million flow rates per " + per +
         ", then " + printf_string("%g", rule.otherwise.parts_per_million / 1e4) + "% of the step";
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

std::string duration(double seconds) {
  if (seconds < 1.0) return printf_string("%.3g ms", seconds * 1e3);
  if (seconds < 120.0) return printf_string("%.3g s", seconds);
  if (seconds < 7200.0) return printf_string("%.3g min", seconds / 60.0);
  if (seconds < 360000.0) return printf_string("%.3g h", seconds / 3600.0);
  return printf_string("%.0f h", seconds / 3600.0);
}

// Per node count, the communication stall by collective, when a collective other than the dense
// all-reduce leaves any (a recommender's all-to-alls and embedding syncs).
void write_stall_by_collective(std::ostream& out, const std::vector<models::ScalingPoint>& points) {
  std::vector<const ResultColumn*> parts;
  for (const ResultColumn& c : result_columns()) {
    if (c.key.rfind("stall_", 0) == 0) parts.push_back(&c);
  }
  bool shown = false;
  for (const auto& p : points) {
    for (int k = 0; k < models::kStepCollectives; ++k) {
      shown = shown || (k != static_cast<int>(models::StepCollective::kDenseAllReduce) &&
                        p.breakdown.stall_by_collective[k] > 0);
    }
  }
  if (!shown) return;
  out << "\ncomm stall by collective (ms per step): nodes";
  for (const ResultColumn* c : parts) out << ", " << c->label;
  out << "\n";
  for (const auto& p : points) {
    out << pad_left(std::to_string(p.nodes), 5) << " ";
    for (const ResultColumn* c : parts) out << " " << pad_left(c->table_text(p), 8);
    out << "\n";
  }
}

// Under --solve-quantum auto, the node counts whose exact run went on under the quantum.
void write_solver_switches(std::ostream& out, const std::vector<models::ScalingPoint>& points) {
  bool any = false;
  for (const auto& p : points) any = any || p.quantum_from || p.evaluation_quantum_from;
  if (!any) return;
  out << "\nflow solver (--solve-quantum auto): " << auto_solve_quantum_rule()
      << "\nwent on at the quantum: nodes, the run, from (ms into it), quantum\n";
  for (const auto& p : points) {
    const std::pair<const char*, const std::optional<Time>*> runs[] = {
        {"training", &p.quantum_from}, {"evaluation", &p.evaluation_quantum_from}};
    for (const auto& [run, from] : runs) {
      if (!*from) continue;
      out << pad_left(std::to_string(p.nodes), 5) << "  " << run << ", "
          << printf_string("%.3f", ms(**from)) << " ms, "
          << printf_string("%.3f", to_seconds(p.quantum_after) * 1e6) << " us\n";
    }
  }
}

// Per node count: what limits the input pipeline, and the checkpoint schedule and its cost.
void write_beyond_the_step(std::ostream& out, const std::vector<models::ScalingPoint>& points) {
  bool input = false, checkpoint = false, evaluation = false;
  for (const auto& p : points) {
    input = input || (p.input && !p.input->limit.empty());
    checkpoint = checkpoint || p.checkpoint;
    evaluation = evaluation || p.evaluation;
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
  const bool host_memory =
      std::any_of(points.begin(), points.end(), [](const auto& p) { return p.host_memory; });
  if (host_memory) {
    out << "\nhost memory: nodes, tables whose rows live in host memory (sharding.storage, or\n"
           "moved there by the planner when no plan fits in HBM; cached: behind an HBM cache),\n"
           "rows and optimizer state the busiest GPU keeps there, bytes over its host link per\n"
           "step\n";
    for (const auto& p : points) {
      if (!p.host_memory) continue;
      const models::HostMemoryUse& h = *p.host_memory;
      out << pad_left(std::to_string(p.nodes), 5) << "  " << h.tables << " of " << h.all_tables
          << " tables (" << h.cached << " cached), " << printf_string("%.3g GB", h.bytes / 1e9)
          << " per GPU, " << printf_string("%.3g MB", h.link_bytes / 1e6) << " per step\n";
    }
  }
  if (evaluation) {
    out << "\nevaluation: nodes, step (ms: forward pass, or reading its batch from storage if "
           "longer), steps\nper evaluation, one evaluation, training steps between evaluations, "
           "training throughput\nwithout it (ex/s)\n";
    for (const auto& p : points) {
      if (!p.evaluation) continue;
      const models::EvaluationCost& e = *p.evaluation;
      out << pad_left(std::to_string(p.nodes), 5) << "  " << printf_string("%.3f", ms(e.step_time))
          << " ms" << (e.read_time >= e.step_time && e.read_time > 0 ? " (read)" : "") << ", "
          << printf_string("%.0f", e.steps) << " steps, " << duration(e.seconds) << ", every "
          << printf_string("%.0f", e.steps_between) << " steps, "
          << printf_string("%.0f", p.training_throughput) << " ex/s\n";
    }
  }
}

bool repeated(const PredictReport& r) {
  return !r.study->points.empty() && r.study->points.front().repeated;
}

// With --repeat: per node count, the mean and 95% interval of the figures over the runs.
void write_repeated(std::ostream& out, const PredictReport& r) {
  if (!repeated(r)) return;
  const auto& points = r.study->points;
  const int runs = points.front().repeated->runs;
  out << "\nover " << runs << " runs";
  if (r.provenance) {
    out << " (seeds " << r.provenance->seed << " to " << r.provenance->seed + runs - 1 << ")";
  }
  out << ", everything random drawn afresh in each"
      << (r.cluster->uncertainty.empty() ? ""
                                         : "\n(and the calibrated values within their uncertainty)")
      << ": mean +- 95% confidence interval\n"
      << "nodes  " << pad_left("throughput (ex/s)", 22) << "  " << pad_left("speedup", 19) << "  "
      << pad_left("efficiency", 21) << "  " << pad_left("step (ms)", 19) << "\n";
  for (const auto& p : points) {
    const models::RepeatedFigures& f = *p.repeated;
    auto pair = [](const char* format, double mean, double half, std::size_t width) {
      return pad_left(printf_string(format, mean) + " +- " + printf_string(format, half), width);
    };
    out << pad_left(std::to_string(p.nodes), 5) << "  "
        << pair("%.0f", f.throughput.mean, f.throughput.half_width, 22) << "  "
        << pair("%.3f", f.speedup.mean, f.speedup.half_width, 19) << "  "
        << pair("%.4f", f.efficiency.mean, f.efficiency.half_width, 21) << "  "
        << pair("%.3f", 1e3 * f.step_time_s.mean, 1e3 * f.step_time_s.half_width, 19) << "\n";
  }
  out << "(the table above is the run with the first seed on the cluster as given; efficiency "
         "as a fraction)\n";
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
  const auto& columns = result_columns();
  std::string header;
  for (const ResultColumn& c : columns) {
    if (c.width > 0)
      header += (header.empty() ? "" : "  ") + pad_left(std::string(c.label), c.width);
  }
  out << header << "\n";
  for (const auto& p : points) {
    std::string line;
    for (const ResultColumn& c : columns) {
      if (c.width > 0) line += (line.empty() ? "" : "  ") + pad_left(c.table_text(p), c.width);
    }
    out << line << "\n";
  }
  write_stall_by_collective(out, points);
  write_beyond_the_step(out, points);
  write_solver_switches(out, points);
  write_repeated(out, r);
  out << "\nttq = time-to-quality (wall time to the target) and its speedup over the baseline;\n"
         "times in ms per step: compute = local work on the GPU; comm stall = communication not\n"
         "hidden behind compute; imbalance = waiting in collectives for the slowest rank; input = "
         "waiting\n"
         "for the batch; ckpt = checkpoint and failure overhead per step; eval = the evaluation\n"
         "phases per step; slowest = the rank with the most local compute; dominant = the largest\n"
         "loss (comm stall, imbalance, input, ckpt or eval) once losses reach 10% of the step,\n"
         "else compute. Comm stall by collective: the comm stall shared in proportion to each\n"
         "collective's transfer time that its GPU's compute does not hide.\n";
}

void write_csv(std::ostream& out, const PredictReport& r) {
  std::string header;
  for (const ResultColumn& c : result_columns())
    header += (header.empty() ? "" : ",") + c.csv_key();
  // With --repeat: the mean and 95% half-width over the runs.
  const bool extra = repeated(r);
  if (extra) header += repeated_csv_columns();
  out << header << "\n";
  for (const auto& p : r.study->points) {
    std::string line;
    for (const ResultColumn& c : result_columns()) {
      line += (&c == &result_columns().front() ? "" : ",") + c.csv_text(p);
    }
    if (extra) line += repeated_csv_fields(*p.repeated);
    out << line << "\n";
  }
}

// The JSON document without its points: what was run, on what, and how it was made.
nlohmann::ordered_json json_head(const PredictReport& r) {
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
  if (r.provenance) doc["provenance"] = provenance_json(*r.provenance);
  return doc;
}

void write_json(std::ostream& out, const PredictReport& r) {
  nlohmann::ordered_json doc = json_head(r);
  auto& points = doc["points"] = nlohmann::ordered_json::array();
  for (const auto& p : r.study->points) {
    nlohmann::ordered_json j;
    for (const ResultColumn& c : result_columns()) c.put_json(j, p);
    j["slowest_rank_compute_s"] = to_seconds(p.slowest_rank_compute);
    j["events"] = p.events;
    if (p.quantum_from) j["solve_quantum_from_s"] = to_seconds(*p.quantum_from);
    if (p.evaluation_quantum_from) {
      j["evaluation_solve_quantum_from_s"] = to_seconds(*p.evaluation_quantum_from);
    }
    if (p.quantum_from || p.evaluation_quantum_from) {
      j["solve_quantum_s"] = to_seconds(p.quantum_after);
    }
    if (!std::isnan(p.time_to_quality_s)) {
      j["examples_to_target"] = p.examples_to_target;
      j["steps_to_target"] = p.steps_to_target;
    }
    if (p.repeated) j["repeated"] = repeated_json(*p.repeated);
    if (p.host_memory) {
      const models::HostMemoryUse& h = *p.host_memory;
      j["host_memory"] = {{"tables", h.tables},
                          {"cached_tables", h.cached},
                          {"all_tables", h.all_tables},
                          {"bytes_per_gpu", h.bytes},
                          {"link_bytes_per_step", h.link_bytes}};
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
    points.push_back(std::move(j));
  }
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

std::string repeated_csv_columns() {
  return ",runs,throughput_mean,throughput_ci95,speedup_mean,speedup_ci95,efficiency_mean,"
         "efficiency_ci95,step_time_mean_s,step_time_ci95_s";
}

std::string repeated_csv_fields(const models::RepeatedFigures& f) {
  std::string line = "," + std::to_string(f.runs);
  for (const models::Interval& i : {f.throughput, f.speedup, f.efficiency, f.step_time_s}) {
    line += "," + printf_string("%.9g", i.mean) + "," + printf_string("%.9g", i.half_width);
  }
  return line;
}

nlohmann::ordered_json repeated_json(const models::RepeatedFigures& f) {
  auto interval = [](const models::Interval& i) {
    return nlohmann::ordered_json{{"mean", i.mean}, {"ci95_half_width", i.half_width}};
  };
  return {{"runs", f.runs},
          {"throughput", interval(f.throughput)},
          {"speedup", interval(f.speedup)},
          {"efficiency", interval(f.efficiency)},
          {"step_time_s", interval(f.step_time_s)}};
}

void write_predict_metadata(std::ostream& out, const PredictReport& report) {
  out << json_head(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

std::string dominant_cause(const models::ScalingPoint& point) {
  // What eats the step beyond local compute: the largest loss, once losses are a tenth of it.
  const std::vector<const ResultColumn*> parts = breakdown_parts();
  const models::StepBreakdown& b = point.breakdown;
  const ResultColumn* best = nullptr;
  Time losses = 0;
  for (const ResultColumn* c : parts) {
    if (c == parts.front()) continue;  // compute
    losses += b.*c->part;
    if (!best || b.*c->part > b.*best->part) best = c;
  }
  if (!best || losses * 10 < point.step_time) return std::string(parts.front()->name);
  return std::string(best->name);
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
