#include "tools/sweep_run.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/config/job_config.h"
#include "models/config/recsys_config.h"
#include "tools/cli.h"
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

// The first line of the output: which sweep (JSON; behind "# trainsim sweep " in CSV).
std::string header_line(const SweepJob& job) {
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
  return (job.format == SweepFormat::kCsv ? "# trainsim sweep " : "") +
         h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string column_line(const SweepJob& job) {
  std::string line = "index";
  for (const auto& a : job.spec.axes) line += "," + csv_field(a.key);
  for (const ResultColumn* c : row_columns(job, true)) line += "," + c->csv_key();
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
// of the step.
long long quantum_code(const models::SolveQuantum& quantum) {
  if (const auto* share = std::get_if<models::StepShare>(&quantum)) return -share->parts_per_million;
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
      if (!f.empty()) files.insert(resolve_config_path(f));
    };
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
  for (const auto& o : job.settings) basis += "|" + o.key() + "=" + o.value;
  const auto& sim = job.study.simulation;
  basis += "|" + std::to_string(sim.steps) + "|" + std::to_string(sim.warmup_steps) + "|" +
           std::to_string(sim.seed) + "|" + std::to_string(quantum_code(sim.solve_quantum)) + "|" +
           std::to_string(static_cast<int>(job.study.scaling));
  if (job.study.target_quality) basis += "|" + number(*job.study.target_quality);
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
    const models::QualityTarget target =
        models::resolve_quality_target(in.workload, job.study.target_quality,
                                       job.study.target_origin);
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
    if (!r.point) return line + std::string(columns.size(), ',') + "," + csv_field(r.error);
    for (const ResultColumn* c : columns) line += "," + csv_field(c->csv_text(*r.point));
    return line + ",";
  }
  nlohmann::ordered_json j;
  j["index"] = r.index;
  auto& values = j["axes"] = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < axes.size(); ++a) values[axes[a].key] = r.values[a];
  if (!r.point) {
    j["error"] = r.error;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  for (const ResultColumn* c : row_columns(job, false)) c->put_json(j, *r.point);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

SweepOutput::SweepOutput(const SweepJob& job, const po::variables_map& vm, std::ostream& out) {
  const std::string header = header_line(job);
  if (!vm.count("output")) {
    out_ = &out;
    copy_ = header + "\n";
    if (job.format == SweepFormat::kCsv) copy_ += column_line(job) + "\n";
    *out_ << copy_;
    return;
  }
  path_ = vm["output"].as<std::string>();
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path_, ec) && fs::file_size(path_, ec) > 0;
  if (exists) {
    std::ifstream in(path_, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string first = text.substr(0, text.find('\n'));
    // Same sweep: same format and signature (the recorded file path may differ by directory).
    bool same = false;
    const bool csv_header = first.rfind("# trainsim sweep {", 0) == 0;
    if (csv_header == (job.format == SweepFormat::kCsv)) {
      try {
        const auto h = nlohmann::json::parse(csv_header ? first.substr(17) : first);
        same = h.value("signature", std::string()) == hex(job.signature);
      } catch (const nlohmann::json::exception&) {
        same = false;
      }
    }
    if (!same) {
      const bool ours = first.find("trainsim sweep") != std::string::npos ||
                        first.find("trainsim_sweep") != std::string::npos;
      throw models::ConfigError(
          path_, 1, 1, "",
          ours ? "holds results of a different sweep (another file, --set, format or options): "
                 "refusing to mix them; use another --output"
               : "exists and is not a trainsim sweep output: refusing to overwrite it");
    }
    // A row cut short by an interruption is dropped; the point runs again. A header cut off
    // before its line end is written again, whole.
    const auto end = text.rfind('\n');
    if (end == std::string::npos) {
      text = first + "\n";
      std::ofstream(path_, std::ios::binary | std::ios::trunc) << text;
    } else if (end + 1 != text.size()) {
      text.resize(end + 1);
      fs::resize_file(path_, text.size());
    }
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);  // header
    int number = 1;
    bool columns_missing = false;
    if (job.format == SweepFormat::kCsv) {
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
        if (job.format == SweepFormat::kCsv) {
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
    file_.open(path_, std::ios::binary | std::ios::trunc);
    if (file_) {
      file_ << header << "\n";
      if (job.format == SweepFormat::kCsv) file_ << column_line(job) << "\n";
      file_.flush();
    }
  }
  if (!file_) throw std::runtime_error("cannot write " + path_);
  out_ = &file_;
}

std::string SweepOutput::text() const {
  if (path_.empty()) return copy_;
  std::ifstream in(path_, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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
