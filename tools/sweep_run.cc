#include "tools/sweep_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/recsys_config.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/report_format.h"
#include "tools/result_schema.h"
#include "tools/version.h"

#ifdef TRAINSIM_HAVE_MPI
#include <boost/mpi.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/utility.hpp>
#endif

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

std::string hex(std::uint64_t v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

std::string number(double v) { return printf_string("%.9g", v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (const char c : s)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
}

// The result columns of a sweep row; in CSV an axis of the same name (nodes) stands for it.
std::vector<const ResultColumn*> row_columns(const SweepJob& job, bool csv) {
  std::vector<const ResultColumn*> out;
  for (const ResultColumn& c : result_columns()) {
    if (!c.in_sweep_rows) continue;
    bool axis = false;
    for (const auto& a : job.spec.axes) axis = axis || a.key == c.key;
    if (!(csv && axis)) out.push_back(&c);
  }
  return out;
}

// Which sweep the rows are: the first line of JSON Lines output, a CSV file's side file (and,
// behind "# trainsim sweep ", the first line of CSV files of earlier releases).
std::string header_line(const SweepJob& job, SweepFormat format) {
  const auto& s = job.spec;
  nlohmann::ordered_json h;
  h["trainsim_sweep"] = s.name;
  h["signature"] = hex(job.signature);
  h["points"] = s.point_count();
  h["file"] = s.source_file;
  h["version"] = kTrainsimVersion;
  h["network_model"] = job.network;
  h["baseline_nodes"] = s.baseline_nodes;
  auto& axes = h["axes"] = nlohmann::ordered_json::array();
  for (const auto& a : s.axes) axes.push_back(a.key);
  h["provenance"] = provenance_json(job.provenance);
  return (format == SweepFormat::kCsv ? "# trainsim sweep " : "") +
         h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string column_line(const SweepJob& job) {
  std::string line = "index";
  for (const auto& a : job.spec.axes) line += "," + csv_field(a.key);
  for (const ResultColumn* c : row_columns(job, true)) line += "," + c->csv_key();
  if (job.repeat > 1) line += repeated_csv_columns();
  return line + ",error";
}

std::vector<std::string> point_values(const models::SweepSpec& spec, std::size_t index) {
  std::vector<std::string> values;
  const auto at = spec.point(index);
  for (std::size_t a = 0; a < spec.axes.size(); ++a) values.push_back(spec.axes[a].values[at[a]]);
  return values;
}

// The configs and node count of one point.
struct PointSetup {
  ConfigFiles files;
  std::vector<models::ConfigOverride> overrides;
  int nodes = 1;
};

PointSetup setup_point(const SweepJob& job, const std::vector<std::string>& values) {
  PointSetup p;
  p.files = {job.spec.cluster, job.spec.model, job.spec.job};
  p.overrides = job.settings;
  for (std::size_t a = 0; a < job.spec.axes.size(); ++a) {
    const models::SweepAxis& axis = job.spec.axes[a];
    if (axis.key == "nodes") {
      p.nodes = std::stoi(values[a]);
    } else if (axis.key == "cluster") {
      p.files.cluster = values[a];
    } else if (axis.key == "model") {
      p.files.model = values[a];
    } else if (axis.key == "job") {
      p.files.job = values[a];
    } else {
      p.overrides.push_back(models::make_override(axis.key, values[a], axis.location));
    }
  }
  return p;
}

// The solve quantum as the signature has always spelt it: picoseconds, or minus parts per million
// of the step; "auto" (exact up to a number of rate changes per step, then a share) as minus
// (its share + 10^6 x its rate changes per step in thousands).
long long quantum_code(const models::SolveQuantum& quantum) {
  if (const auto* exact_first = std::get_if<models::ExactOrShare>(&quantum)) {
    return -(exact_first->otherwise.parts_per_million +
             1'000'000 * (exact_first->rate_changes_per_step / 1000));
  }
  if (const auto* share = std::get_if<models::StepShare>(&quantum))
    return -share->parts_per_million;
  return std::get<Time>(quantum);
}

}  // namespace

SweepJob prepare_sweep(const po::variables_map& vm) {
  SweepJob job;
  job.spec = models::load_sweep_spec(resolve_config_path(vm["file"].as<std::string>()));
  job.settings = parse_set_options(vm);
  job.study = parse_study_options(vm);
  if (vm["network"].defaulted() && job.spec.network) {
    job.study.simulation.network = *job.spec.network;
  }
  job.network = models::network_model_names().name(job.study.simulation.network);
  if (vm["scaling"].defaulted() && job.spec.scaling) job.study.scaling = *job.spec.scaling;
  std::string format;
  if (vm.count("format")) {
    format = vm["format"].as<std::string>();
  } else if (vm.count("output")) {
    const std::string ext = std::filesystem::path(vm["output"].as<std::string>()).extension();
    format = ext == ".jsonl" || ext == ".json" ? "jsonl" : "csv";
  } else {
    format = "csv";
  }
  if (format == "csv") {
    job.format = SweepFormat::kCsv;
  } else if (format == "jsonl" || format == "json") {
    job.format = SweepFormat::kJsonLines;
  } else {
    throw UsageError("--format must be csv or jsonl, not '" + format + "'");
  }
  // What the rows depend on: the sweep file, the config files it reads, the settings, the
  // simulation options and the trainsim version.
  std::string basis =
      std::to_string(job.spec.signature) + "|" + job.network + "|" + kTrainsimVersion;
  {
    std::set<std::string> files;
    std::vector<std::string> jobs;
    auto add = [&](const std::string& f) {
      if (f.empty() || !files.insert(resolve_config_path(f)).second) return;
      job.provenance.files.push_back({"config", f, file_sha1(f)});
    };
    job.provenance.command = "sweep";
    job.provenance.files.push_back(
        {"sweep", job.spec.source_file, file_sha1(job.spec.source_file)});
    add(job.spec.cluster);
    add(job.spec.model);
    add(job.spec.job);
    if (!job.spec.job.empty()) jobs.push_back(job.spec.job);
    for (const auto& axis : job.spec.axes) {
      if (axis.key != "cluster" && axis.key != "model" && axis.key != "job") continue;
      for (const auto& v : axis.values) {
        add(v);
        if (axis.key == "job") jobs.push_back(v);
      }
    }
    for (const std::string& j : jobs) {
      try {
        const models::JobSpec spec = models::load_job_spec(resolve_config_path(j));
        add(spec.cluster);
        add(spec.model);
      } catch (const models::ConfigError&) {
        // validate_sweep reports it.
      }
    }
    add(default_cluster_file());
    add(default_model_file());
    for (const std::string& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      basis += "|" + text.str();  // contents only: the same from any working directory
    }
  }
  for (const auto& o : job.settings) {
    basis += "|" + o.key() + "=" + o.value;
    job.provenance.settings.push_back(o.key() + "=" + o.value);
  }
  const auto& sim = job.study.simulation;
  job.provenance.seed = sim.seed;
  basis += "|" + std::to_string(sim.steps) + "|" + std::to_string(sim.warmup_steps) + "|" +
           std::to_string(sim.seed) + "|" + std::to_string(quantum_code(sim.solve_quantum)) + "|" +
           std::to_string(static_cast<int>(job.study.scaling));
  if (job.study.target_quality) basis += "|" + number(*job.study.target_quality);
  job.repeat = vm.count("repeat") ? vm["repeat"].as<int>() : 1;
  if (job.repeat < 1 || job.repeat > 10000) throw UsageError("--repeat must be from 1 to 10000");
  if (job.repeat > 1) basis += "|repeat=" + std::to_string(job.repeat);
  job.signature = models::fingerprint(basis);
  return job;
}

void validate_sweep(const SweepJob& job) {
  const auto& axes = job.spec.axes;
  // The base point (every axis at its first value) loads, whatever the axes vary: a file it
  // names that is missing or bad is the sweep's error, before any row.
  {
    std::vector<std::string> first;
    for (const auto& axis : axes) first.push_back(axis.values.front());
    const PointSetup base = setup_point(job, first);
    load_configs(base.files, base.overrides);
  }
  for (std::size_t a = 0; a < axes.size(); ++a) {
    std::set<std::string> seen;
    for (const std::string& v : axes[a].values) {
      if (!seen.insert(v).second || axes[a].key == "nodes") continue;
      std::vector<std::string> values;
      for (std::size_t b = 0; b < axes.size(); ++b) values.push_back(axes[b].values.front());
      values[a] = v;
      const PointSetup p = setup_point(job, values);
      try {
        load_configs(p.files, p.overrides);
      } catch (const models::ConfigError& e) {
        // A whole-file axis value that fails to load is the axis's error.
        if (axes[a].key == "cluster" || axes[a].key == "model" || axes[a].key == "job") {
          throw models::ConfigError(axes[a].location, axes[a].key + " " + v + ": " + e.what());
        }
        throw;
      }
    }
  }
}

SweepResult evaluate_point(const SweepJob& job, std::size_t index) {
  SweepResult r;
  r.index = index;
  r.values = point_values(job.spec, index);
  const PointSetup p = setup_point(job, r.values);
  SweepCache& cache = *job.cache;
  const ModelLoader cached_model = [&cache](const std::string& path,
                                            const std::vector<models::YamlSetting>& settings) {
    std::string key = path;
    for (const auto& s : settings) {
      for (const auto& k : s.keys) key += "\x1f" + k;
      key += "=" + s.value;
    }
    {
      const std::lock_guard<std::mutex> lock(cache.mutex);
      const auto it = cache.models.find(key);
      if (it != cache.models.end()) return *it->second;
    }
    auto model = std::make_shared<const models::ModelSpec>(models::load_model_spec(path, settings));
    const std::lock_guard<std::mutex> lock(cache.mutex);
    return *cache.models.emplace(key, model).first->second;
  };
  try {
    const SimulationInputs in = load_configs(p.files, p.overrides, cached_model);
    const int baseline = job.spec.baseline_nodes;
    check_simulation_inputs(in, {baseline, p.nodes});
    const int gpn = in.cluster.gpus_per_node;
    const models::BatchScaling batch = models::resolve_batch_scaling(
        in.workload, job.study.scaling, baseline * gpn, std::max(baseline, p.nodes) * gpn);
    const models::QualityTarget target = models::resolve_quality_target(
        in.workload, job.study.target_quality, job.study.target_origin);
    auto simulate = [&](int nodes) {
      return models::simulate_point(in.cluster, in.workload, nodes, batch.at(nodes * gpn),
                                    job.study.simulation, &target);
    };
    // The baseline of this combination of the other axes, simulated once.
    std::string key;
    for (std::size_t a = 0; a < job.spec.axes.size(); ++a) {
      if (job.spec.axes[a].key != "nodes") key += r.values[a] + "\x1f";
    }
    std::optional<models::ScalingPoint> base;
    {
      const std::lock_guard<std::mutex> lock(cache.mutex);
      const auto it = cache.baselines.find(key);
      if (it != cache.baselines.end()) base = it->second;
    }
    if (!base) {
      base = simulate(baseline);
      const std::lock_guard<std::mutex> lock(cache.mutex);
      cache.baselines.emplace(key, *base);
    }
    std::vector<models::ScalingPoint> points = {*base};
    if (p.nodes != baseline) points.push_back(simulate(p.nodes));
    models::fill_speedup_and_efficiency(points);
    r.point = points.back();
    if (job.repeat > 1) {
      // Every run draws everything random afresh from its seed (and a calibrated cluster's values
      // within their uncertainty); this point's runs go one after another, so a row does not
      // depend on how many points run at once.
      models::RunSamples samples;
      for (int k = 0; k < job.repeat; ++k) {
        // The first seed on the cluster as given is the row itself.
        if (k == 0 && in.cluster.uncertainty.empty()) {
          samples.add(*r.point);
          continue;
        }
        models::StepSimulationOptions options = job.study.simulation;
        options.seed += static_cast<std::uint64_t>(k);
        const models::ClusterSpec cluster =
            models::draw_within_uncertainty(in.cluster, options.seed);
        std::vector<models::ScalingPoint> run = {models::simulate_point(
            cluster, in.workload, baseline, batch.at(baseline * gpn), options, &target)};
        if (p.nodes != baseline) {
          run.push_back(models::simulate_point(cluster, in.workload, p.nodes,
                                               batch.at(p.nodes * gpn), options, &target));
        }
        models::fill_speedup_and_efficiency(run);
        samples.add(run.back());
      }
      r.point->repeated = samples.figures();
    }
  } catch (const models::ConfigError& e) {
    r.error = e.what();
    r.point.reset();
  } catch (const std::exception& e) {  // e.g. a UsageError (more nodes than the cluster has)
    r.error = e.what();
    r.point.reset();
  }
  return r;
}

std::string render_row(const SweepJob& job, const SweepResult& r) {
  const auto& axes = job.spec.axes;
  if (job.format == SweepFormat::kCsv) {
    std::string line = std::to_string(r.index);
    for (const std::string& v : r.values) line += "," + csv_field(v);
    const auto columns = row_columns(job, true);
    const std::string repeated = job.repeat > 1 ? repeated_csv_columns() : "";
    const auto extra = static_cast<std::size_t>(std::count(repeated.begin(), repeated.end(), ','));
    if (!r.point) {
      return line + std::string(columns.size() + extra, ',') + "," + csv_field(r.error);
    }
    for (const ResultColumn* c : columns) line += "," + csv_field(c->csv_text(*r.point));
    if (r.point->repeated) line += repeated_csv_fields(*r.point->repeated);
    return line + ",";
  }
  nlohmann::ordered_json j;
  j["index"] = r.index;
  auto& values = j["axes"] = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < axes.size(); ++a) {
    // A plain number stays a number ("nodes": 4); a quantity with its unit, a name or a path
    // is text.
    const std::string& v = r.values[a];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool number = !v.empty() && end == v.c_str() + v.size() && std::isfinite(x) &&
                        v.find_first_of("xXnNiI") == std::string::npos;
    if (number && x == std::floor(x) && std::abs(x) < 9e15) {
      values[axes[a].key] = static_cast<long long>(x);
    } else if (number) {
      values[axes[a].key] = x;
    } else {
      values[axes[a].key] = v;
    }
  }
  if (!r.point) {
    j["error"] = r.error;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  for (const ResultColumn* c : row_columns(job, false)) c->put_json(j, *r.point);
  if (r.point->repeated) j["repeated"] = repeated_json(*r.point->repeated);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SweepOutput::SweepOutput(const SweepJob& job, const po::variables_map& vm, std::ostream& out) {
  const bool csv = job.format == SweepFormat::kCsv;
  // JSON Lines carry the header as their first line; a CSV file's goes to FILE.meta.json, so the
  // CSV itself loads in any CSV reader (its first line is the column line).
  const std::string header_json = header_line(job, SweepFormat::kJsonLines);
  header_ = header_json;
  if (!vm.count("output")) {
    out_ = &out;
    copy_ = csv ? column_line(job) + "\n" : header_json + "\n";
    *out_ << copy_;
    return;
  }
  path_ = vm["output"].as<std::string>();
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string meta_path = path_ + ".meta.json";
  const bool exists = fs::exists(path_, ec) && fs::file_size(path_, ec) > 0;
  if (exists) {
    std::ifstream in(path_, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string first = text.substr(0, text.find('\n'));
    // The header: a JSON Lines file's first line; a CSV's side file, or its first line in the
    // files of earlier releases ("# trainsim sweep {...}", kept as they are when resumed).
    const bool in_file_header = !csv || first.rfind("# trainsim sweep {", 0) == 0;
    legacy_csv_header_ = csv && in_file_header;
    std::string recorded;
    bool have_header = false;
    if (in_file_header) {
      recorded = csv ? first.substr(17) : first;
      have_header = true;
    } else if (fs::exists(meta_path, ec)) {
      std::ifstream m(meta_path, std::ios::binary);
      recorded.assign(std::istreambuf_iterator<char>(m), std::istreambuf_iterator<char>());
      have_header = true;
    }
    // Same sweep: same format and signature (the recorded file path may differ by directory).
    bool same = false;
    if (have_header) {
      try {
        const auto h = nlohmann::json::parse(recorded);
        same = h.value("signature", std::string()) == hex(job.signature);
      } catch (const nlohmann::json::exception&) {
        same = false;
      }
    }
    if (!same) {
      const bool ours = first.find("trainsim sweep") != std::string::npos ||
                        first.find("trainsim_sweep") != std::string::npos ||
                        (csv && first.rfind("index,", 0) == 0 && have_header);
      if (csv && !have_header && first.rfind("index,", 0) == 0) {
        throw models::ConfigError(path_, 1, 1, "",
                                  "has sweep rows but no " + meta_path +
                                      " to say which sweep: refusing to resume into it");
      }
      throw models::ConfigError(
          path_, 1, 1, "",
          ours ? "holds results of a different sweep (another file, --set, format or options): "
                 "refusing to mix them; use another --output"
               : "exists and is not a trainsim sweep output: refusing to overwrite it");
    }
    // A row cut short by an interruption is dropped; the point runs again. A header (or column
    // line) cut off before its line end is written again, whole.
    const auto end = text.rfind('\n');
    if (end == std::string::npos) {
      text = in_file_header ? first + "\n" : "";
      std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
    } else if (end + 1 != text.size()) {
      text.resize(end + 1);
      fs::resize_file(path_, text.size());
    }
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    if (in_file_header) {
      std::getline(lines, line);  // header
      ++number;
    }
    bool columns_missing = false;
    if (csv) {
      ++number;
      if (!std::getline(lines, line)) {
        columns_missing = true;  // cut off before the column line
      } else if (line != column_line(job)) {
        throw models::ConfigError(path_, number, 1, "",
                                  "the column line does not match this sweep's: refusing to mix");
      }
    }
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty()) continue;
      try {
        if (csv) {
          std::size_t used = 0;
          const std::string field = line.substr(0, line.find(','));
          const std::size_t index = std::stoull(field, &used);
          if (used != field.size()) throw std::invalid_argument("index");
          done_.insert(index);
        } else {
          done_.insert(nlohmann::json::parse(line).at("index").get<std::size_t>());
        }
      } catch (const std::exception&) {
        throw models::ConfigError(path_, number, 1, "",
                                  "not a row of this sweep (corrupt?): refusing to resume into it");
      }
    }
    file_.open(path_, std::ios::binary | std::ios::app);
    if (file_ && columns_missing) file_ << column_line(job) << "\n";
  } else {
    if (csv) {
      // The side file first: a CSV with rows always has its metadata.
      std::ofstream meta(meta_path, std::ios::binary | std::ios::trunc);
      meta << header_json << "\n";
      if (!meta) throw std::runtime_error("cannot write " + meta_path);
    }
    file_.open(path_, std::ios::binary | std::ios::trunc);
    if (file_) {
      file_ << (csv ? column_line(job) : header_json) << "\n";
      file_.flush();
    }
  }
  if (!file_) throw std::runtime_error("cannot write " + path_);
  out_ = &file_;
}

namespace {

// The rows of one output of `job`'s sweep, by index (checked: same sweep, same format).
void read_sweep_rows(const SweepJob& job, const std::string& path,
                     std::map<std::size_t, std::string>& rows) {
  const bool csv = job.format == SweepFormat::kCsv;
  const std::string text = models::read_input_file(path);
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  std::string header;
  if (!std::getline(lines, line)) return;  // empty
  ++number;
  if (csv && line.rfind("# trainsim sweep {", 0) == 0) {
    header = line.substr(17);
    if (!std::getline(lines, line)) return;
    ++number;
  } else if (csv) {
    std::ifstream meta(path + ".meta.json", std::ios::binary);
    std::getline(meta, header);
  } else {
    header = line;
  }
  bool same = false;
  try {
    same = nlohmann::json::parse(header).value("signature", std::string()) == hex(job.signature);
  } catch (const nlohmann::json::exception&) {
  }
  if (!same) {
    throw models::ConfigError(path, 1, 1, "",
                              "is not an output of this sweep (another file, --set, format or "
                              "options, or its .meta.json is missing): cannot merge it");
  }
  if (csv && line != column_line(job)) {
    throw models::ConfigError(path, number, 1, "", "the column line does not match this sweep's");
  }
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    std::size_t index = 0;
    try {
      if (csv) {
        std::size_t used = 0;
        const std::string field = line.substr(0, line.find(','));
        index = std::stoull(field, &used);
        if (used != field.size()) throw std::invalid_argument("index");
      } else {
        index = nlohmann::json::parse(line).at("index").get<std::size_t>();
      }
    } catch (const std::exception&) {
      throw models::ConfigError(path, number, 1, "", "not a row of this sweep (corrupt?)");
    }
    if (index >= job.spec.point_count()) {
      throw models::ConfigError(path, number, 1, "",
                                "point " + std::to_string(index) + " is not in this sweep");
    }
    rows.emplace(index, line);  // a point given twice: the first file's row
  }
}

}  // namespace

std::size_t merge_sweep_outputs(const SweepJob& job, const std::vector<std::string>& slices,
                                const std::string& output) {
  std::map<std::size_t, std::string> rows;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(output, ec) && fs::file_size(output, ec) > 0) read_sweep_rows(job, output, rows);
  for (const std::string& slice : slices) read_sweep_rows(job, slice, rows);
  const bool csv = job.format == SweepFormat::kCsv;
  const std::string header = header_line(job, SweepFormat::kJsonLines);
  std::string text = (csv ? column_line(job) : header) + "\n";
  for (const auto& [index, row] : rows) text += row + "\n";
  if (csv) {
    AtomicOutputFile meta(output + ".meta.json");
    meta.stream() << header << "\n";
    meta.commit();
  }
  AtomicOutputFile out(output);
  out.stream() << text;
  out.commit();
  return rows.size();
}

std::string SweepOutput::text() const {
  std::string body;
  if (path_.empty()) {
    body = copy_;
  } else {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    body = s.str();
  }
  // For the result reader, a CSV's header in front as its files of earlier releases had it.
  if (body.rfind("index,", 0) == 0) return "# trainsim sweep " + header_ + "\n" + body;
  return body;
}

void SweepOutput::write(std::size_t index, const std::string& row) {
  if (path_.empty()) copy_ += row + "\n";
  *out_ << row << "\n";
  out_->flush();
  done_.insert(index);
}

void SweepOutput::finish() {
  out_->flush();
  if (!*out_)
    throw std::runtime_error("writing " + (path_.empty() ? "the output" : path_) + " failed");
}

#ifdef TRAINSIM_HAVE_MPI
namespace {
constexpr int kWork = 1, kRow = 2, kStop = 3;
}  // namespace

struct SweepMpi::State {
  boost::mpi::environment environment;
  boost::mpi::communicator world;
};

SweepMpi::SweepMpi() {
  // Only under a launcher (mpirun sets these).
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMI_SIZE")) return;
  state_ = std::make_unique<State>();
  if (state_->world.size() > 1) rank_ = state_->world.rank();
}

SweepMpi::~SweepMpi() = default;

void SweepMpi::coordinate(const SweepJob&, const std::vector<std::size_t>& todo,
                          SweepOutput& output) {
  boost::mpi::communicator& w = state_->world;
  std::vector<std::optional<std::string>> rows(todo.size());
  std::size_t handed = 0, received = 0, next = 0;
  // Every worker gets a point (or stop), then one more per row it returns.
  auto hand_out = [&](int rank) {
    if (handed < todo.size()) {
      w.send(rank, kWork, std::make_pair(handed, todo[handed]));
      ++handed;
    } else {
      w.send(rank, kStop);
    }
  };
  for (int r = 1; r < w.size(); ++r) hand_out(r);
  while (received < todo.size()) {
    std::pair<std::size_t, std::string> row;
    const boost::mpi::status s = w.recv(boost::mpi::any_source, kRow, row);
    rows[row.first] = std::move(row.second);
    ++received;
    hand_out(s.source());
    while (next < rows.size() && rows[next]) {
      output.write(todo[next], *rows[next]);
      rows[next].reset();
      ++next;
    }
  }
  output.finish();
}

void SweepMpi::work(const SweepJob& job) {
  boost::mpi::communicator& w = state_->world;
  for (;;) {
    const boost::mpi::status s = w.probe(0, boost::mpi::any_tag);
    if (s.tag() == kStop) {
      w.recv(0, kStop);
      return;
    }
    std::pair<std::size_t, std::size_t> work;  // (position in rank 0's list, point index)
    w.recv(0, kWork, work);
    w.send(0, kRow, std::make_pair(work.first, render_row(job, evaluate_point(job, work.second))));
  }
}
#else
struct SweepMpi::State {};
SweepMpi::SweepMpi() = default;
SweepMpi::~SweepMpi() = default;
void SweepMpi::coordinate(const SweepJob&, const std::vector<std::size_t>&, SweepOutput&) {}
void SweepMpi::work(const SweepJob&) {}
#endif

}  // namespace trainsim::cli
