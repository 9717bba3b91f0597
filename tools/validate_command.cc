// `trainsim validate`: runs validation cases (validation/**/*.yaml), each a system (a cluster and
// its measured logs). By default each case is calibrated on its logs and checked against them (or
// held-out ones). With --leave-one-out every log of every case is predicted by a calibration that
// did not see it: the shared constants fitted on all other logs, the system's own on its other
// logs (or its configured values when it has none); a case fails when the mean busbw error of one
// of its logs and collectives exceeds the case's bound.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/calibration/collective_calibration.h"
#include "models/config/cluster_config.h"
#include "models/config/validation_case.h"
#include "models/scaling/job_calibration.h"
#include "models/spec/config_error.h"
#include "tools/cli.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

// The runs of a case's `fit` (or `check`) logs; a log that is not there is reported where the
// case names it.
std::vector<models::MeasuredRun> case_runs(const models::ValidationCase& c,
                                           const std::vector<models::CaseLog>& logs,
                                           const char* key) {
  std::vector<models::MeasuredRun> runs;
  for (const models::CaseLog& log : logs) {
    const std::string path = resolve_config_path(log.path);
    if (!std::filesystem::is_regular_file(path)) {
      throw models::ConfigError(c.file, log.line, 1, key, "no nccl-tests log '" + log.path + "'");
    }
    const models::NcclTestsLog parsed = models::read_nccl_tests_log(path, log.op);
    for (auto& run : models::measured_runs(parsed, log.algorithm)) {
      if (!log.ops.empty() &&
          std::find(log.ops.begin(), log.ops.end(), run.run.op) == log.ops.end()) {
        continue;
      }
      run.source = log.path;
      run.env = log.env;
      if (log.nodes > 0) run.shape = models::RunShape{log.nodes, log.gpus_per_node};
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

std::vector<std::string> case_files(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    const std::string path = resolve_config_path(arg);
    if (fs::is_directory(path)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        if (entry.path().extension() == ".yaml") found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  return files;
}

models::ClusterSpec case_cluster(const models::ValidationCase& c) {
  std::vector<models::YamlSetting> settings;
  for (const auto& [key, value] : c.set) {
    models::YamlSetting s;
    std::stringstream in(key);
    for (std::string part; std::getline(in, part, '.');) s.keys.push_back(part);
    s.value = value;
    settings.push_back(s);
  }
  models::ClusterSpec spec = models::load_cluster_spec(resolve_config_path(c.cluster), settings);
  spec.name = std::filesystem::path(c.file).stem().string();
  return spec;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Per (log, collective): mean busbw error of the fit and of leave-one-out, against the bound.
int leave_one_out(const std::vector<models::ValidationCase>& cases, bool summary,
                  std::ostream& out) {
  std::vector<models::SystemRuns> systems;
  for (const models::ValidationCase& c : cases)
    systems.push_back({case_cluster(c), case_runs(c, c.fit, "fit")});
  const models::JointCalibration joint = models::calibrate_jointly(systems);
  const std::vector<models::HeldOutLog> held = models::leave_one_log_out(systems);
  char line[512];
  out << "constants fitted on all logs (value +- standard uncertainty):\n";
  for (const auto& p : joint.parameters) {
    std::snprintf(line, sizeof line, "  %-44s %-24s %14s +- %s\n", p.key.c_str(),
                  p.system.empty() ? "(shared)" : p.system.c_str(),
                  display_fitted(p.value, p.unit).c_str(),
                  display_fitted(p.uncertainty, p.unit).c_str());
    out << line;
  }
  for (const auto& w : joint.warnings) out << "  warning: logs disagree: " << w.message << "\n";
  out << "\n";
  int failed = 0;
  int scored = 0;
  int on_target = 0;
  std::snprintf(line, sizeof line, "%-28s %-62s %-14s %5s %8s %8s %8s %8s  %s\n", "system", "log",
                "collective", "rows", "fitted", "held out", "bound", "target", "");
  out << line;
  for (std::size_t s = 0; s < cases.size(); ++s) {
    const models::ValidationCase& c = cases[s];
    const auto fitted = models::summarize_errors(joint.rows[s], c.min_bytes, true);
    bool pass = true;
    for (const models::HeldOutLog& h : held) {
      if (h.system != s) continue;
      for (const auto& e : models::summarize_errors(h.rows, c.min_bytes, true)) {
        const auto f = std::find_if(fitted.begin(), fitted.end(), [&](const auto& x) {
          return x.source == e.source && x.op == e.op;
        });
        const bool ok = e.mean_abs_error <= c.leave_one_out_max_mean_error;
        pass &= ok;
        std::string target = "-";
        bool missed = false;
        if (c.leave_one_out_target > 0) {
          ++scored;
          const bool met = e.mean_abs_error <= c.leave_one_out_target;
          missed = !met;
          on_target += met;
          target = std::to_string(static_cast<int>(std::lround(100 * c.leave_one_out_target))) +
                   (met ? "%" : "%*");
        }
        std::snprintf(line, sizeof line, "%-28s %-62s %-14s %5d %7.1f%% %7.1f%% %7.0f%% %8s  %s\n",
                      systems[s].cluster.name.c_str(), base_name(e.source).substr(0, 62).c_str(),
                      std::string(models::collective_name(*e.op)).c_str(), e.rows,
                      f == fitted.end() ? 0.0 : 100 * f->mean_abs_error, 100 * e.mean_abs_error,
                      100 * c.leave_one_out_max_mean_error, target.c_str(), ok ? "PASS" : "FAIL");
        out << line;
        if (!summary && (!ok || missed)) {
          out << "  fitted without it:";
          for (const auto& p : h.parameters) {
            const auto classes = models::hardware_classes(systems[s].cluster);
            const bool mine = p.system.empty() || p.system == systems[s].cluster.name ||
                              std::any_of(classes.begin(), classes.end(),
                                          [&](const auto& k) { return p.system == "(" + k + ")"; });
            if (!mine) continue;
            out << " " << p.key.substr(p.key.rfind('.') + 1) << "="
                << display_fitted(p.value, p.unit);
          }
          out << "\n";
          write_fit_table(out, h.rows, c.min_bytes);
        }
      }
    }
    if (!pass) ++failed;
  }
  std::snprintf(line, sizeof line, "\n%zu system(s), %zu log(s) held out, %d system(s) failed\n",
                cases.size(), held.size(), failed);
  out << line;
  if (scored > 0) {
    std::snprintf(line, sizeof line,
                  "%d of %d log(s) and collective(s) meet their target (* marks a miss)\n",
                  on_target, scored);
    out << line;
  }
  return failed == 0 ? kExitOk : kExitFailure;
}

std::string row_field(const models::TrainingCase& c, const models::CsvRow& row,
                      const std::string& column) {
  const std::string* text = row.get(column);
  if (!text) {
    throw models::ConfigError(c.file, c.measurements_line, 1, "measurements",
                              c.measurements + " has no column '" + column + "'");
  }
  return *text;
}

// A number of the measurement table: `_Msps` columns are millions of examples/s.
double measured_value(const models::TrainingCase& c, const models::CsvRow& row,
                      const std::string& column) {
  const std::string text = row_field(c, row, column);
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || !(value > 0)) {
    throw models::ConfigError(c.measurements, row.line, 1, column,
                              "'" + text + "' is not a positive number");
  }
  const bool millions = column.size() > 5 && column.substr(column.size() - 5) == "_Msps";
  return millions ? value * 1e6 : value;
}

// The scenario of one row: its GPU's cluster, the case's job and settings.
models::Scenario training_scenario(const models::TrainingCase& c, const models::CsvRow& row) {
  const std::string gpu = row_field(c, row, "gpu");
  const auto system =
      std::find_if(c.systems.begin(), c.systems.end(), [&](const auto& s) { return s.gpu == gpu; });
  if (system == c.systems.end()) {
    throw models::ConfigError(c.file, 0, 1, "systems",
                              "no cluster for gpu '" + gpu + "' (" + c.measurements + " line " +
                                  std::to_string(row.line) + ")");
  }
  std::vector<models::ConfigOverride> overrides;
  for (const auto& [key, value] : c.set) {
    overrides.push_back(models::make_override(key, value, {c.file, 0, 0, "set." + key}));
  }
  ConfigFiles files;
  files.cluster = system->cluster;
  files.job = c.job;
  return load_configs(files, overrides);
}

int row_nodes(const models::TrainingCase& c, const models::CsvRow& row,
              const models::Scenario& scenario) {
  const std::string text = row_field(c, row, "nodes");
  std::size_t used = 0;
  int nodes = 0;
  try {
    nodes = std::stoi(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || nodes < 1) {
    throw models::ConfigError(c.measurements, row.line, 1, "nodes",
                              "'" + text + "' is not a node count");
  }
  if (nodes > scenario.cluster.nodes) {
    throw models::ConfigError(c.measurements, row.line, 1, "nodes",
                              std::to_string(nodes) + " nodes: cluster '" + scenario.cluster.name +
                                  "' has " + std::to_string(scenario.cluster.nodes));
  }
  try {
    check_simulation_inputs(scenario, {nodes});
  } catch (const UsageError& e) {
    throw models::ConfigError(c.measurements, row.line, 1, "", e.what());
  }
  return nodes;
}

// Calibrates on the fit row, predicts every row; returns whether all are within the bound.
bool run_training_case(const models::TrainingCase& c, std::ostream& out) {
  const std::vector<models::CsvRow> rows =
      models::read_csv_table(resolve_config_path(c.measurements));
  const auto fit_row = std::find_if(rows.begin(), rows.end(), [&](const models::CsvRow& r) {
    const std::string* system = r.get("system");
    return system && *system == c.fit_system;
  });
  if (fit_row == rows.end()) {
    throw models::ConfigError(c.file, c.fit_line, 1, "fit.system",
                              "no row of " + c.measurements + " has system '" + c.fit_system + "'");
  }
  const models::Scenario fit_scenario = training_scenario(c, *fit_row);
  const int fit_nodes = row_nodes(c, *fit_row, fit_scenario);
  // As `calibrate --job` and `predict` run by default: flows, the default solve quantum.
  models::ScalingStudyOptions study;
  study.simulation.solve_quantum = models::kDefaultSolveQuantum;
  models::JobCalibrationOptions calibration;
  calibration.study = study;
  bool fit_training_only = true;
  for (const auto& column : c.columns) {
    if (column.name == c.fit_column) fit_training_only = column.measures == "train_only";
  }
  const models::JobCalibration fit = models::calibrate_job(
      fit_scenario.cluster, fit_scenario.workload,
      {{fit_nodes, measured_value(c, *fit_row, c.fit_column), 0.0, fit_training_only}},
      calibration);
  out << "== " << c.name << " (" << c.file << ")\n"
      << "calibrated on " << c.fit_system << " " << c.fit_column << " ("
      << fit_scenario.cluster.name << "); the fitted / prior ratio of each fraction carried to "
      << "every row's cluster:\n";
  char line[512];
  for (const auto& p : fit.parameters) {
    std::snprintf(line, sizeof line, "  %-36s %.4f -> %.4f +- %.4f (x%.3f)\n", p.key.c_str(),
                  p.prior, p.value, p.uncertainty, p.value / p.prior);
    out << line;
  }
  std::snprintf(line, sizeof line, "%-8s %-28s %-18s %5s %-16s %12s %12s %8s %7s\n", "round",
                "system", "gpu", "nodes", "column", "measured", "predicted", "error", "bound");
  out << line;
  bool pass = true;
  for (const models::CsvRow& row : rows) {
    models::Scenario s = training_scenario(c, row);
    const int nodes = row_nodes(c, row, s);
    const auto& priors = models::job_calibration_priors();
    for (std::size_t j = 0; j < priors.size(); ++j) {
      double& value = s.cluster.gpu.*priors[j].field;
      value = std::min(1.0, value * fit.parameters[j].value / fit.parameters[j].prior);
    }
    const models::ScalingStudy predicted =
        models::run_scaling_study(s.cluster, s.workload, {nodes}, study);
    const models::ScalingPoint& point = predicted.points.front();
    for (const auto& col : c.columns) {
      const std::string& column = col.name;
      const double measured = measured_value(c, row, column);
      const double predicted =
          col.measures == "end_to_end" ? point.throughput : point.training_throughput;
      const double error = (predicted - measured) / measured;
      const bool fitted = &row == &*fit_row && column == c.fit_column;
      const bool ok = fitted || std::abs(error) <= col.max_error;
      pass &= ok;
      const std::string* round = row.get("round");
      std::snprintf(line, sizeof line,
                    "%-8s %-28s %-18s %5d %-16s %12.0f %12.0f %7.1f%% %6.0f%%  %s\n",
                    round ? round->c_str() : "", row_field(c, row, "system").c_str(),
                    row_field(c, row, "gpu").c_str(), nodes, column.c_str(), measured, predicted,
                    100 * error, 100 * col.max_error,
                    fitted ? "fitted"
                    : ok   ? "PASS"
                           : "FAIL");
      out << line;
    }
  }
  std::snprintf(line, sizeof line, "   %s: every row within its column's bound\n\n",
                pass ? "PASS" : "FAIL");
  out << line;
  return pass;
}

}  // namespace

int run_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  // clang-format off
  options.add_options()
    ("help,h", "show this help")
    ("case", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "a case file or a folder of them (default: validation/collectives and "
     "validation/training)")
    ("leave-one-out", "cross-validate: predict every log of every case from a calibration that "
     "did not see it")
    ("summary", "print only the per-log errors, not every row");
  // clang-format on
  const po::variables_map vm = parse_options(args, options, "validate");
  if (vm.count("help")) {
    out << "usage: trainsim validate [--case FILE|DIR]... [--leave-one-out] [--summary]\n\n"
           "Runs validation cases. A case is a system: a cluster file (with `set` keys changed)\n"
           "and its measured nccl-tests logs. By default each case is calibrated on its logs and\n"
           "predicts them (or the held-out logs it names); it passes when, for every checked log,\n"
           "the mean absolute busbw error and the largest one, over sizes from min_size up, are\n"
           "within its tolerances. --leave-one-out predicts every log from a joint calibration\n"
           "of all the other logs (shared constants from every other system, the system's own\n"
           "constants from its other logs, or as configured when it has none; a transport's\n"
           "network latency from the other logs on it, or NCCL's own figure), and holds each\n"
           "log and collective to the case's leave_one_out_max_mean_error (and shows its\n"
           "leave_one_out_target, the accuracy goal, with * where it is missed); without\n"
           "--summary it also prints, for each log that fails its bound or misses its target,\n"
           "the constants fitted without it and its rows as predicted.\n\n"
           "A training case (validation/training) is a job and a table of published\n"
           "throughputs: calibrated on one row as `calibrate --job --measured` does, it predicts\n"
           "every row (the fitted / prior ratio of each GPU fraction carried to the row's\n"
           "cluster) and passes when each is within its column's bound.\n\n"
        << options << "\nExit status: 0 all cases pass, 1 a case fails, 2 bad input.\n";
    return kExitOk;
  }
  const std::vector<std::string> targets =
      vm.count("case") ? vm["case"].as<std::vector<std::string>>()
                       : std::vector<std::string>{"validation/collectives", "validation/training"};
  const std::vector<std::string> files = case_files(targets);
  if (files.empty()) throw UsageError("validate: no case files found");
  std::vector<models::ValidationCase> cases;
  std::vector<models::TrainingCase> training;
  for (const std::string& file : files) {
    if (models::is_training_case(file)) {
      training.push_back(models::load_training_case(file));
    } else {
      cases.push_back(models::load_validation_case(file));
    }
  }
  if (vm.count("leave-one-out")) {
    if (cases.empty()) throw UsageError("validate --leave-one-out: no collective cases given");
    if (!training.empty()) {
      out << "(" << training.size()
          << " training case(s) not run here: each already predicts every row but one)\n\n";
    }
    return leave_one_out(cases, vm.count("summary") > 0, out);
  }

  int failed = 0;
  for (const models::TrainingCase& c : training) failed += run_training_case(c, out) ? 0 : 1;
  char line[512];
  for (const models::ValidationCase& c : cases) {
    const models::ClusterSpec base = case_cluster(c);
    const auto fit_runs = case_runs(c, c.fit, "fit");
    models::CalibrationOptions opts;
    opts.check_pulls = false;
    const models::CalibrationResult calibration =
        models::calibrate_collectives(base, fit_runs, opts);
    const auto check_runs = c.check.empty() ? fit_runs : case_runs(c, c.check, "check");
    const auto rows =
        c.check.empty() ? calibration.rows : models::predict_runs(calibration.cluster, check_runs);
    out << "== " << c.name << " (" << c.file << ")\n";
    if (!vm.count("summary")) write_fit_table(out, rows, c.min_bytes);
    bool pass = true;
    for (const auto& e : models::summarize_errors(rows, c.min_bytes)) {
      const bool ok = e.mean_abs_error <= c.max_mean_error && e.max_abs_error <= c.max_error;
      pass &= ok;
      std::snprintf(line, sizeof line,
                    "   %s %s: mean %.1f%% (limit %.0f%%), max %.1f%% (limit %.0f%%)\n",
                    ok ? "PASS" : "FAIL", e.source.c_str(), 100 * e.mean_abs_error,
                    100 * c.max_mean_error, 100 * e.max_abs_error, 100 * c.max_error);
      out << line;
    }
    if (!pass) ++failed;
    out << "\n";
  }
  std::snprintf(line, sizeof line, "%zu case(s), %d failed\n", files.size(), failed);
  out << line;
  return failed == 0 ? kExitOk : kExitFailure;
}

}  // namespace trainsim::cli
