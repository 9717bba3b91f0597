// `trainsim validate`: runs validation cases (validation/**/*.yaml): calibrate on measured logs,
// predict the logs to check, print measured against predicted figures, and fail when an error
// exceeds the case's tolerance.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <boost/program_options.hpp>

#include "models/calibration/collective_calibration.h"
#include "models/config/cluster_config.h"
#include "models/config/validation_case.h"
#include "tools/cli.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

std::vector<models::MeasuredRun> case_runs(const std::vector<models::CaseLog>& logs) {
  std::vector<models::MeasuredRun> runs;
  for (const models::CaseLog& log : logs) {
    const models::NcclTestsLog parsed = models::read_nccl_tests_log(resolve_config_path(log.path));
    for (auto& run : models::measured_runs(parsed, log.algorithm)) {
      if (log.ops.empty() ||
          std::find(log.ops.begin(), log.ops.end(), run.run.op) != log.ops.end()) {
        runs.push_back(std::move(run));
      }
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

}  // namespace

int run_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("options");
  // clang-format off
  options.add_options()
    ("help,h", "show this help")
    ("case", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "a case file or a folder of them (default: validation/collectives)")
    ("summary", "print only the per-log errors, not every row");
  // clang-format on
  const po::variables_map vm = parse_options(args, options, "validate");
  if (vm.count("help")) {
    out << "usage: trainsim validate [--case FILE|DIR]... [--summary]\n\n"
           "Runs validation cases: each calibrates a cluster on measured nccl-tests logs, "
           "predicts\n"
           "the logs it checks (the fitted ones, or held-out ones), and compares busbw for every\n"
           "size from the case's min_size up. A case passes when, for every checked log, the mean\n"
           "absolute error and the largest one are within its tolerances.\n\n"
        << options << "\nExit status: 0 all cases pass, 1 a case fails, 2 bad input.\n";
    return kExitOk;
  }
  const std::vector<std::string> targets = vm.count("case")
                                               ? vm["case"].as<std::vector<std::string>>()
                                               : std::vector<std::string>{"validation/collectives"};
  const std::vector<std::string> files = case_files(targets);
  if (files.empty()) throw UsageError("validate: no case files found");

  int failed = 0;
  char line[512];
  for (const std::string& file : files) {
    const models::ValidationCase c = models::load_validation_case(file);
    const models::ClusterSpec base = models::load_cluster_spec(resolve_config_path(c.cluster));
    const auto fit_runs = case_runs(c.fit);
    const models::CalibrationResult calibration = models::calibrate_collectives(base, fit_runs);
    const auto check_runs = c.check.empty() ? fit_runs : case_runs(c.check);
    const auto rows =
        c.check.empty() ? calibration.rows : models::predict_runs(calibration.cluster, check_runs);
    out << "== " << c.name << " (" << file << ")\n";
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
