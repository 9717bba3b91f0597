// `trainsim predict --placement FILE`: several jobs on one cluster. Each job's step alone on its
// nodes and sharing the fabric with the others, its slowdown, and the links where they collide,
// as a table, CSV or JSON.
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "models/scaling/shared_cluster.h"
#include "models/scenario/placement.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/provenance.h"
#include "tools/report_format.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

std::string pad(const std::string& s, std::size_t width, bool left = true) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? fill + s : s + fill;
}

std::string nodes_text(const models::SharedJobResult& j) {
  return std::to_string(j.first_node) + "-" + std::to_string(j.first_node + j.nodes - 1);
}

std::string ms_text(Time t) { return printf_string("%.3f", to_milliseconds(t)); }

struct PlacementReport {
  const models::PlacementFile* file = nullptr;
  const models::SharedClusterResult* result = nullptr;
  int steps = 0;
  int warmup_steps = 0;
  const Provenance* provenance = nullptr;
};

// Under --solve-quantum auto, the runs whose exact solves went on under the quantum.
void write_solver_switches(std::ostream& out, const models::SharedClusterResult& res) {
  std::string runs;
  if (res.quantum_from) runs += "the shared run from " + ms_text(*res.quantum_from) + " ms";
  for (const models::SharedJobResult& j : res.jobs) {
    if (!j.alone.quantum_from) continue;
    runs += (runs.empty() ? "" : "; ") + ("'" + j.name + "' alone from ") +
            ms_text(*j.alone.quantum_from) + " ms";
  }
  if (runs.empty()) return;
  out << "\nflow solver (--solve-quantum auto): "
      << auto_solve_quantum_rule("step of the shortest job") << "\nwent on at the quantum ("
      << printf_string("%.3f", to_seconds(res.quantum_after) * 1e6) << " us): " << runs << "\n";
}

void write_table(std::ostream& out, const PlacementReport& r) {
  const models::PlacementFile& f = *r.file;
  const models::ClusterSpec& cluster = f.placement.cluster;
  out << "cluster    " << cluster.name;
  if (!cluster.description.empty()) out << ": " << cluster.description;
  out << "\nplacement  " << f.name;
  if (!f.description.empty()) out << ": " << f.description;
  out << "\nnetwork    flow model; per job " << (r.steps - r.warmup_steps)
      << " measured step(s), after its warm-up (" << r.warmup_steps
      << ") and once every job has started\n";
  if (r.result->background) out << "background traffic between node groups runs throughout\n";
  out << "\n";
  for (std::size_t k = 0; k < f.placement.jobs.size(); ++k) {
    const models::PlacedJob& p = f.placement.jobs[k];
    out << pad(p.name, 10, false) << "  " << models::model_name(p.workload.model);
    if (p.workload.job) out << ", job " << p.workload.job->name;
    out << "\n";
  }
  out << "\n";
  const std::vector<std::pair<std::string, std::size_t>> header = {
      {"job", 10},          {"nodes", 7},        {"GPUs", 5},      {"start ms", 8},
      {"global batch", 12}, {"alone ms", 9},     {"shared ms", 9}, {"slowdown", 8},
      {"alone ex/s", 11},   {"shared ex/s", 11}, {"compute", 8},   {"comm stall", 10},
      {"imbalance", 9},     {"input", 7},        {"slowest", 7}};
  std::string line;
  for (std::size_t i = 0; i < header.size(); ++i) {
    line += (i ? "  " : "") + pad(header[i].first, header[i].second, i != 0);
  }
  out << line << "\n";
  for (const models::SharedJobResult& j : r.result->jobs) {
    const models::StepBreakdown& b = j.shared.breakdown;
    const std::vector<std::string> cells = {j.name,
                                            nodes_text(j),
                                            std::to_string(j.gpus),
                                            ms_text(j.start),
                                            printf_string("%.0f", j.global_batch),
                                            ms_text(j.alone.step_time),
                                            ms_text(j.shared.step_time),
                                            printf_string("%.3fx", j.slowdown),
                                            printf_string("%.0f", j.throughput_alone),
                                            printf_string("%.0f", j.throughput_shared),
                                            ms_text(b.compute),
                                            ms_text(b.exposed_communication),
                                            ms_text(b.imbalance),
                                            ms_text(b.input_stall),
                                            std::to_string(j.shared.slowest_rank)};
    line.clear();
    for (std::size_t i = 0; i < cells.size(); ++i) {
      line += (i ? "  " : "") + pad(cells[i], header[i].second, i != 0);
    }
    out << line << "\n";
  }
  const models::SharedClusterResult& res = *r.result;
  if (!res.jobs.empty() && res.jobs.front().repeated) {
    out << "\nOver " << res.jobs.front().repeated->runs
        << " runs (seeds --seed and on: stragglers, sampled ids and a calibrated cluster's "
           "values drawn afresh): mean +- 95% interval\n";
    out << pad("job", 10, false) << "  " << pad("alone ex/s", 24) << "  " << pad("shared ex/s", 24)
        << "  " << pad("slowdown", 18) << "  " << pad("shared ms", 20) << "\n";
    for (const models::SharedJobResult& j : res.jobs) {
      const models::SharedJobRepeats& f = *j.repeated;
      auto both = [](const char* format, double mean, double half, std::size_t width) {
        return pad(printf_string(format, mean) + " +- " + printf_string(format, half), width);
      };
      out << pad(j.name, 10, false) << "  "
          << both("%.0f", f.throughput_alone.mean, f.throughput_alone.half_width, 24) << "  "
          << both("%.0f", f.throughput_shared.mean, f.throughput_shared.half_width, 24) << "  "
          << both("%.4f", f.slowdown.mean, f.slowdown.half_width, 18) << "  "
          << both("%.3f", 1e3 * f.step_time_shared_s.mean, 1e3 * f.step_time_shared_s.half_width,
                  20)
          << "\n";
    }
    out << "(the table above is the run with the first seed on the cluster as given)\n";
  }
  const Time window = res.window_end - res.window_start;
  out << "\nLinks where the jobs' traffic met, from " << ms_text(res.window_start) << " ms (every "
      << "job started) to " << ms_text(res.window_end) << " ms (the last measured step done):\n";
  if (res.collisions.empty()) {
    out << "  none: no link carried two jobs' (or a job's and the background's) flows at once\n";
  }
  constexpr std::size_t kShown = 12;
  for (std::size_t i = 0; i < res.collisions.size() && i < kShown; ++i) {
    const models::LinkCollision& c = res.collisions[i];
    std::string owners;
    for (const std::string& o : c.owners) owners += (owners.empty() ? "" : ", ") + o;
    out << "  " << pad(c.link, 28, false) << "  " << pad(c.label, 11, false) << "  "
        << pad(ms_text(c.shared), 11) << " ms  "
        << pad(printf_string("%.1f%%", window > 0 ? 100.0 * c.shared / window : 0.0), 6) << "  "
        << owners << "\n";
  }
  if (res.collisions.size() > kShown) {
    out << "  ... and " << (res.collisions.size() - kShown)
        << " more links (all in --format json)\n";
  }
  write_solver_switches(out, res);
  out << "\nalone = the job's step on the same nodes with the other jobs and the background gone;\n"
         "shared = with them on the fabric (links shared by max-min fairness); slowdown = shared "
         "/\n"
         "alone; ex/s = examples per second; compute, comm stall, imbalance and input: the shared\n"
         "step's breakdown in ms; slowest = the global rank with the most local compute. A link's\n"
         "time is how long flows of two owners or more were on it at once, and its share of the\n"
         "window.\n";
}

const char* kCsvHeader =
    "job,first_node,last_node,gpus,start_s,global_batch,step_time_alone_s,step_time_shared_s,"
    "slowdown,throughput_alone,throughput_shared,compute_s,comm_stall_s,imbalance_s,"
    "input_stall_s,slowest_rank";

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const char* kRepeatedCsvColumns =
    ",runs,throughput_alone_mean,throughput_alone_ci95,throughput_shared_mean,"
    "throughput_shared_ci95,slowdown_mean,slowdown_ci95,step_time_shared_mean_s,"
    "step_time_shared_ci95_s";

void write_csv(std::ostream& out, const PlacementReport& r) {
  const bool repeated = !r.result->jobs.empty() && r.result->jobs.front().repeated;
  out << kCsvHeader << (repeated ? kRepeatedCsvColumns : "") << "\n";
  auto g = [](double v) { return printf_string("%.9g", v); };
  for (const models::SharedJobResult& j : r.result->jobs) {
    const models::StepBreakdown& b = j.shared.breakdown;
    out << csv_field(j.name) << "," << j.first_node << "," << (j.first_node + j.nodes - 1) << ","
        << j.gpus << "," << g(to_seconds(j.start)) << "," << g(j.global_batch) << ","
        << g(to_seconds(j.alone.step_time)) << "," << g(to_seconds(j.shared.step_time)) << ","
        << g(j.slowdown) << "," << g(j.throughput_alone) << "," << g(j.throughput_shared) << ","
        << g(to_seconds(b.compute)) << "," << g(to_seconds(b.exposed_communication)) << ","
        << g(to_seconds(b.imbalance)) << "," << g(to_seconds(b.input_stall)) << ","
        << j.shared.slowest_rank;
    if (repeated) {
      const models::SharedJobRepeats& f = *j.repeated;
      out << "," << f.runs;
      for (const models::Interval& i :
           {f.throughput_alone, f.throughput_shared, f.slowdown, f.step_time_shared_s}) {
        out << "," << g(i.mean) << "," << g(i.half_width);
      }
    }
    out << "\n";
  }
}

nlohmann::ordered_json json_document(const PlacementReport& r, bool with_results) {
  const models::PlacementFile& f = *r.file;
  nlohmann::ordered_json doc;
  doc["trainsim_version"] = kTrainsimVersion;
  doc["placement"] = {{"name", f.name}, {"file", f.source_file}};
  doc["cluster"] = {{"name", f.placement.cluster.name}, {"file", f.placement.cluster.source_file}};
  doc["network_model"] = "flow";
  doc["steps"] = r.steps;
  doc["warmup_steps"] = r.warmup_steps;
  if (r.provenance) doc["provenance"] = provenance_json(*r.provenance);
  if (!with_results) return doc;
  const models::SharedClusterResult& res = *r.result;
  auto& jobs = doc["jobs"] = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < res.jobs.size(); ++k) {
    const models::SharedJobResult& j = res.jobs[k];
    const models::PlacedJob& p = f.placement.jobs[k];
    const models::StepBreakdown& b = j.shared.breakdown;
    nlohmann::ordered_json o;
    o["name"] = j.name;
    o["model"] = models::model_name(p.workload.model);
    if (p.workload.job) o["job"] = p.workload.job->name;
    o["first_node"] = j.first_node;
    o["last_node"] = j.first_node + j.nodes - 1;
    o["gpus"] = j.gpus;
    o["start_s"] = to_seconds(j.start);
    o["measured_from_s"] = to_seconds(j.measured_from);
    o["global_batch"] = j.global_batch;
    o["step_time_alone_s"] = to_seconds(j.alone.step_time);
    o["step_time_shared_s"] = to_seconds(j.shared.step_time);
    o["slowdown"] = j.slowdown;
    o["throughput_alone"] = j.throughput_alone;
    o["throughput_shared"] = j.throughput_shared;
    o["breakdown_s"] = {{"compute", to_seconds(b.compute)},
                        {"comm_stall", to_seconds(b.exposed_communication)},
                        {"imbalance", to_seconds(b.imbalance)},
                        {"input_stall", to_seconds(b.input_stall)}};
    o["slowest_rank"] = j.shared.slowest_rank;
    if (j.alone.quantum_from) o["alone_solve_quantum_from_s"] = to_seconds(*j.alone.quantum_from);
    if (j.repeated) {
      const models::SharedJobRepeats& f = *j.repeated;
      auto interval = [](const models::Interval& i) {
        return nlohmann::ordered_json{{"mean", i.mean}, {"ci95", i.half_width}};
      };
      o["repeated"] = {{"runs", f.runs},
                       {"throughput_alone", interval(f.throughput_alone)},
                       {"throughput_shared", interval(f.throughput_shared)},
                       {"slowdown", interval(f.slowdown)},
                       {"step_time_shared_s", interval(f.step_time_shared_s)}};
    }
    jobs.push_back(std::move(o));
  }
  doc["window_s"] = {to_seconds(res.window_start), to_seconds(res.window_end)};
  if (res.quantum_from) doc["solve_quantum_from_s"] = to_seconds(*res.quantum_from);
  bool switched = res.quantum_from.has_value();
  for (const models::SharedJobResult& j : res.jobs) switched = switched || j.alone.quantum_from;
  if (switched) doc["solve_quantum_s"] = to_seconds(res.quantum_after);
  auto& links = doc["collisions"] = nlohmann::ordered_json::array();
  for (const models::LinkCollision& c : res.collisions) {
    links.push_back({{"link", c.link},
                     {"class", c.label},
                     {"shared_s", to_seconds(c.shared)},
                     {"owners", c.owners}});
  }
  doc["background_traffic"] = res.background;
  return doc;
}

}  // namespace

int run_predict_placement(const po::variables_map& vm, const std::vector<std::string>& args,
                          std::ostream& out) {
  // What a placement does not take: the jobs, their nodes and their files come from it.
  for (const char* option :
       {"cluster", "model", "job", "trace", "trace-nodes", "plot", "target", "sharding"}) {
    if (vm.count(option)) {
      throw UsageError(std::string("--") + option +
                       " does not apply with --placement (the placement file names each job's "
                       "files and nodes)");
    }
  }
  for (const char* option : {"nodes", "scaling"}) {
    if (!vm[option].defaulted()) {
      throw UsageError(std::string("--") + option + " does not apply with --placement");
    }
  }
  if (vm["network"].as<std::string>() != "flow") {
    throw UsageError("--network " + vm["network"].as<std::string>() +
                     " does not apply with --placement: jobs share links only in the flow "
                     "network model");
  }
  if (vm["resolved"].as<bool>()) throw UsageError("--resolved does not apply with --placement");
  const std::vector<models::ConfigOverride> overrides = parse_set_options(vm);
  for (const models::ConfigOverride& o : overrides) {
    if (o.target != "cluster") {
      throw UsageError("--set " + o.key() +
                       ": with --placement only cluster keys can be set (each job's model and "
                       "job are its own files)");
    }
  }
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const models::ScalingStudyOptions study = parse_study_options(vm);
  const std::string path = resolve_config_path(vm["placement"].as<std::string>());
  const models::PlacementFile file = models::load_placement(
      path, overrides, {default_cluster_file(), default_model_file(), resolve_config_path, {}});
  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());
  const RepeatOptions repeat = parse_repeat_options(vm);
  const models::SharedClusterResult result =
      models::run_repeated_shared_cluster(file.placement, study.simulation, repeat.runs,
                                          repeat.threads, uncertainty_draw(file.placement.cluster));

  Provenance provenance;
  provenance.command = "predict";
  provenance.arguments = shaping_arguments(args);
  provenance.seed = study.simulation.seed;
  if (vm.count("set")) provenance.settings = vm["set"].as<std::vector<std::string>>();
  provenance.files.push_back({"placement", path, file_sha1(path)});
  for (const std::string& f : file.files) provenance.files.push_back({"config", f, file_sha1(f)});
  const PlacementReport report{&file, &result, study.simulation.steps,
                               study.simulation.warmup_steps, &provenance};
  std::ostringstream rendered;
  switch (format) {
    case OutputFormat::kTable:
      write_table(rendered, report);
      break;
    case OutputFormat::kCsv:
      write_csv(rendered, report);
      break;
    case OutputFormat::kJson:
      rendered << json_document(report, true)
                      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
               << "\n";
      break;
  }
  std::unique_ptr<AtomicOutputFile> meta_file;
  if (output_file && format == OutputFormat::kCsv) {
    meta_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>() + ".meta.json");
    meta_file->stream() << json_document(report, false).dump(2) << "\n";
  }
  commit_result(output_file.get(), meta_file.get(), out, rendered.str());
  return kExitOk;
}

}  // namespace trainsim::cli
