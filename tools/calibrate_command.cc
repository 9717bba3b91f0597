// `trainsim calibrate`: fits a cluster's physical collective constants to nccl-tests logs (and GPU
// efficiency curves to microbenchmark results), prints each value with its uncertainty, the fit
// table and warnings, and writes the calibrated cluster YAML by editing the original in place
// (its comments and units stay). `--check CLUSTER LOG...` scores a cluster without refitting.
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/calibration/collective_calibration.h"
#include "models/calibration/microbench.h"
#include "models/config/cluster_config.h"
#include "models/config/yaml_patch.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

po::options_description calibrate_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("cluster", po::value<std::string>(),
     "cluster spec to start from (its hardware figures are kept; the achieved fractions of its "
     "links and the collective constants are fitted); default configs/clusters/dgx-h100.yaml, "
     "with --job the job's")
    ("nccl-tests", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "nccl-tests log, repeatable. LOG:ALGO says the run forced NCCL_ALGO (ring, tree, nvls, "
     "nvls_tree, ...), otherwise a word in the file name (..._RING_...) or NCCL's own choice per "
     "size; LOG:OP names the collective (all_reduce, alltoall, ...) of a log that does not say "
     "it; LOG@NxG gives nodes x GPUs per node for a log that lists no ranks; e.g. "
     "p4de.log:all_reduce@2x8")
    ("env", po::value<std::vector<std::string>>()->composing(),
     "NAME=VALUE: an NCCL environment variable the runs set (NCCL_MIN_CTAS=24, NCCL_PROTO=...), "
     "repeatable")
    ("check", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "with --nccl-tests: logs NOT used for fitting, predicted with the calibrated cluster and "
     "scored. Alone: CLUSTER LOG...: score that cluster on the logs without refitting")
    ("microbench", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "JSON lines from tools/microbench (repeatable): fits GEMM efficiency by size, HBM "
     "efficiency, embedding gathers' and updates' efficiency by row size and host-to-device "
     "bandwidth; NCCL results join the collective fit")
    ("gemm-dtype", po::value<std::string>()->default_value("bf16"),
     "the GEMM format whose efficiency curve goes into the cluster (others are reported)")
    ("output,o", po::value<std::string>(),
     "write the calibrated cluster YAML to FILE: the --cluster file with the fitted values "
     "replaced in place (comments and units kept) and a header naming the logs")
    ("report-min-bytes", po::value<double>()->default_value(1048576.0),
     "sizes below this are fitted but left out of the error summary");
  // clang-format on
  po::options_description job("options for a measured training run (--job, --measured)");
  add_job_calibration_options(job);
  o.add(job);
  return o;
}

std::string format(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::optional<models::Dimension> dimension_of(const std::string& unit) {
  if (unit == "s") return models::Dimension::kTime;
  if (unit == "B/s") return models::Dimension::kBandwidth;
  if (unit == "B") return models::Dimension::kBytes;
  if (unit == "FLOP") return models::Dimension::kFlops;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> parse_env(const po::variables_map& vm) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!vm.count("env")) return env;
  for (const std::string& item : vm["env"].as<std::vector<std::string>>()) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--env " + item + ": expected NAME=VALUE");
    }
    models::CollectiveTuning probe;
    const std::string error = models::apply_nccl_env(probe, item.substr(0, eq), item.substr(eq + 1));
    if (!error.empty()) throw UsageError("--env " + item + ": " + error);
    env.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return env;
}

}  // namespace

std::string display_fitted(double value, const std::string& unit) {
  if (unit == "s") return format("%.3f us", value * 1e6);
  if (unit == "B/s") return format("%.2f GB/s", value / 1e9);
  if (unit == "B") return format("%.0f B", value);
  return format("%.4f", value);
}

std::vector<models::MeasuredRun> read_measured_runs(const std::vector<std::string>& args,
                                                    const std::string& flag,
                                                    std::vector<std::string>* sources) {
  std::vector<models::MeasuredRun> runs;
  for (const std::string& arg : args) {
    std::string path = arg;
    std::optional<models::RunShape> shape;
    const auto at = path.rfind('@');
    if (at != std::string::npos) {
      const std::string text = path.substr(at + 1);
      const auto x = text.find('x');
      models::RunShape s;
      try {
        s.nodes = std::stoi(text.substr(0, x));
        s.gpus_per_node = std::stoi(text.substr(x + 1));
      } catch (const std::exception&) {
        throw UsageError(flag + " " + arg + ": '@" + text + "' is not NODESxGPUS");
      }
      if (x == std::string::npos || s.nodes < 1 || s.gpus_per_node < 1) {
        throw UsageError(flag + " " + arg + ": '@" + text + "' is not NODESxGPUS");
      }
      shape = s;
      path = path.substr(0, at);
    }
    // LOG:OP and LOG:ALGO, in either order: the collective of a log that does not name it, and
    // the algorithm the run forced.
    std::optional<models::Algorithm> algorithm;
    std::optional<models::CollectiveOp> op;
    for (auto colon = path.rfind(':'); colon != std::string::npos; colon = path.rfind(':')) {
      const std::string word = path.substr(colon + 1);
      if (const auto a = models::parse_algorithm(word); a && !algorithm) {
        algorithm = a;
      } else if (const auto o = models::parse_collective(word); o && !op) {
        op = o;
      } else {
        throw UsageError(flag + " " + arg + ": '" + word +
                         "' is neither an algorithm (ring, tree, ...) nor a collective "
                         "(all_reduce, ...), or is given twice");
      }
      path = path.substr(0, colon);
    }
    const models::NcclTestsLog log = models::read_nccl_tests_log(resolve_config_path(path), op);
    for (auto& run : models::measured_runs(log, algorithm)) {
      run.shape = shape;
      runs.push_back(std::move(run));
    }
    if (sources) sources->push_back(path);
  }
  return runs;
}

void write_fit_table(std::ostream& out, const std::vector<models::FitRow>& rows, double min_bytes) {
  char line[512];
  std::snprintf(line, sizeof line, "%-58s %-14s %-16s %12s %12s %12s %9s %9s %8s\n", "log", "op",
                "algo/proto", "size (B)", "meas (us)", "pred (us)", "meas bw", "pred bw", "error");
  out << line;
  for (const auto& r : rows) {
    const std::string algo = std::string(models::algorithm_name(r.algorithm)) + "/" +
                             std::string(models::protocol_name(r.protocol));
    std::snprintf(line, sizeof line,
                  "%-58s %-14s %-16s %12lld %12.2f %12.2f %9.2f %9.2f %7.1f%%%s\n",
                  base_name(r.source).substr(0, 58).c_str(),
                  std::string(models::collective_name(r.op)).c_str(), algo.c_str(), r.size_bytes,
                  r.measured_us, r.predicted_us, r.measured_busbw, r.predicted_busbw,
                  100.0 * r.error, r.size_bytes < min_bytes ? "  (not scored)" : "");
    out << line;
  }
  out << "\nbusbw error per log and collective, sizes >= " << format("%.0f", min_bytes)
      << " B:\n";
  for (const auto& e : models::summarize_errors(rows, min_bytes, /*per_collective=*/true)) {
    std::snprintf(line, sizeof line, "  %-58s %-14s rows %3d   mean %5.1f%%   max %5.1f%%\n",
                  base_name(e.source).substr(0, 58).c_str(),
                  std::string(models::collective_name(*e.op)).c_str(), e.rows,
                  100.0 * e.mean_abs_error, 100.0 * e.max_abs_error);
    out << line;
  }
}

int run_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const po::options_description options = calibrate_options();
  const po::variables_map vm = parse_options(args, options, "calibrate");
  if (vm.count("help")) {
    out << "usage: trainsim calibrate --cluster FILE --nccl-tests LOG[:OP][:ALGO][@NxG]... [--env "
           "NAME=VALUE]...\n"
           "                          [--check LOG...] [-o calibrated.yaml]\n"
           "       trainsim calibrate --check CLUSTER LOG...\n"
           "       trainsim calibrate --job FILE --measured NODES:THROUGHPUT... [--set "
           "KEY=VALUE]...\n"
           "                          [-o calibrated.yaml]\n\n"
           "The collective model runs what NCCL runs (its channels, algorithms, protocols and\n"
           "tuner); calibration fits only physical constants, by least squares on log(predicted /\n"
           "measured time) over every row of the logs: the achieved fraction of NVLink (or PCIe)\n"
           "and NIC line rate, NVLS efficiency and the cost of an NVLS chunk step, the host's\n"
           "launch cost per GPU, the network's per-hop latency relative to NCCL's figure (per\n"
           "transport; NVLink and PCIe steps keep NCCL's own) and that of LL and LL128 network\n"
           "steps relative to Simple, the throughput of a point-to-point channel over the\n"
           "network and over NVLink, and the fraction of NVLink's rate point-to-point traffic\n"
           "reaches - those the logs inform. Each value is printed with its standard\n"
           "uncertainty (covariance of the fit); a warning names logs that pull one value apart,\n"
           "and values the cluster file set that the fit replaces.\n"
           "Each run's nodes and GPUs come from its device list (or LOG@NxG). The measured time\n"
           "of a row is the faster of its out-of-place and in-place times.\n\n"
           "With --job and --measured, calibration fits a training run the user measured\n"
           "(examples/s or step time at a node count): only the GPU's achieved fractions of peak\n"
           "(gpu.gemm_efficiency, gpu.hbm_efficiency, gpu.embedding_efficiency,\n"
           "gpu.embedding_backward_efficiency), each from the cluster's value with a prior\n"
           "uncertainty (the spread of its public source), by the most probable values given the\n"
           "measurements (Gauss-Newton in log space). Links, NICs, NCCL's constants, sharding and\n"
           "overlap stay as the files give them, so predict on other node counts changes only by\n"
           "physics. Each fraction is printed with its prior, its fitted value and uncertainty,\n"
           "and how strongly the step depends on it; -o writes the cluster with them.\n\n"
        << options
        << "\nExit status: 0 success, 2 bad input (unreadable or malformed log, a run the\n"
           "cluster cannot hold).\n";
    return kExitOk;
  }
  if (vm.count("job") || vm.count("measured")) return run_calibrate_job(vm, out, err);
  const auto env = parse_env(vm);
  const double min_bytes = vm["report-min-bytes"].as<double>();
  if (!vm.count("nccl-tests") && !vm.count("microbench")) {
    if (!vm.count("check")) {
      throw UsageError("calibrate: give --nccl-tests LOG..., --microbench FILE, or --check "
                       "CLUSTER LOG...");
    }
    // Score a cluster as it is.
    auto items = vm["check"].as<std::vector<std::string>>();
    if (items.size() < 2) throw UsageError("--check CLUSTER LOG...: give a cluster and a log");
    const std::string cluster_path = resolve_config_path(items.front());
    const models::ClusterSpec cluster = models::load_cluster_spec(cluster_path);
    items.erase(items.begin());
    auto runs = read_measured_runs(items, "--check", nullptr);
    for (auto& r : runs) r.env.insert(r.env.end(), env.begin(), env.end());
    std::ostringstream text;
    text << "checked " << cluster.name << " (" << cluster_path << ") against " << items.size()
         << " file(s), not refitted\n\n";
    write_fit_table(text, models::predict_runs(cluster, runs), min_bytes);
    out << text.str();
    return kExitOk;
  }
  const auto gemm_dtype = models::parse_dtype(vm["gemm-dtype"].as<std::string>());
  if (!gemm_dtype)
    throw UsageError("--gemm-dtype: unknown format '" + vm["gemm-dtype"].as<std::string>() + "'");

  const std::string cluster_path = resolve_config_path(
      vm.count("cluster") ? vm["cluster"].as<std::string>() : default_cluster_file());
  const models::ClusterSpec base = models::load_cluster_spec(cluster_path);
  std::vector<std::string> sources;
  std::vector<models::MeasuredRun> runs;
  if (vm.count("nccl-tests")) {
    runs = read_measured_runs(vm["nccl-tests"].as<std::vector<std::string>>(), "--nccl-tests",
                              &sources);
  }
  models::ClusterSpec start = base;
  std::optional<models::MicrobenchFit> gpu_fit;
  if (vm.count("microbench")) {
    std::vector<models::MicrobenchRecord> records;
    for (const std::string& path : vm["microbench"].as<std::vector<std::string>>()) {
      const auto read = models::read_microbench(resolve_config_path(path));
      records.insert(records.end(), read.begin(), read.end());
      sources.push_back(path);
    }
    gpu_fit = models::fit_microbench(base.gpu, records, *gemm_dtype);
    start.gpu = gpu_fit->gpu;
    for (auto& run : gpu_fit->nccl) runs.push_back(std::move(run));
  }
  for (auto& r : runs) r.env.insert(r.env.end(), env.begin(), env.end());
  std::vector<models::MeasuredRun> checks;
  if (vm.count("check")) {
    checks = read_measured_runs(vm["check"].as<std::vector<std::string>>(), "--check", nullptr);
    for (auto& r : checks) r.env.insert(r.env.end(), env.begin(), env.end());
  }
  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());

  models::CalibrationResult result;
  result.cluster = start;
  if (!runs.empty()) result = models::calibrate_collectives(start, runs);

  std::ostringstream text;
  text << "calibrated " << base.name << " (" << cluster_path << ") against " << sources.size()
       << " file(s): " << runs.size() << " collective run(s), " << result.rows.size()
       << " rows\n\n";
  std::vector<models::YamlUpdate> updates;
  if (gpu_fit) {
    text << "GPU efficiency from microbenchmarks:\n";
    for (const auto& f : gpu_fit->fits) {
      char line[512];
      std::snprintf(line, sizeof line,
                    "  %-14s %s (%d samples, fit error mean %.1f%%, max %.1f%%)\n", f.what.c_str(),
                    f.summary.c_str(), f.samples, 100 * f.mean_abs_error, 100 * f.max_abs_error);
      text << line;
    }
    text << "\n";
    const models::GpuSpec& g = gpu_fit->gpu;
    const models::GpuSpec& b = base.gpu;
    const std::string note = "fitted by trainsim calibrate from microbenchmarks";
    auto add = [&](const char* key, double value, double before,
                   std::optional<models::Dimension> d) {
      if (value != before) updates.push_back({key, value, d, note});
    };
    add("gpu.gemm_efficiency", g.gemm_efficiency, b.gemm_efficiency, std::nullopt);
    add("gpu.gemm_half_flops", g.gemm_half_flops, b.gemm_half_flops, models::Dimension::kFlops);
    add("gpu.hbm_efficiency", g.hbm_efficiency, b.hbm_efficiency, std::nullopt);
    add("gpu.embedding_efficiency", g.embedding_efficiency, b.embedding_efficiency, std::nullopt);
    add("gpu.embedding_backward_efficiency", g.embedding_backward_efficiency,
        b.embedding_backward_efficiency, std::nullopt);
    add("gpu.embedding_half_row_bytes", g.embedding_half_row_bytes, b.embedding_half_row_bytes,
        models::Dimension::kBytes);
    add("gpu.host_to_device_bandwidth", g.host_to_device_bytes_per_s,
        b.host_to_device_bytes_per_s, models::Dimension::kBandwidth);
  }
  if (!runs.empty()) text << "fitted parameters (value +- standard uncertainty):\n";
  for (const auto& p : result.parameters) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-46s %14s +- %s\n", p.key.c_str(),
                  display_fitted(p.value, p.unit).c_str(),
                  display_fitted(p.uncertainty, p.unit).c_str());
    text << line;
    updates.push_back({p.key, p.value, dimension_of(p.unit),
                       "fitted by trainsim calibrate: +- " +
                           display_fitted(p.uncertainty, p.unit)});
    // A value the fit left undetermined (relative uncertainty above 1) is not drawn.
    if (p.value > 0 && p.uncertainty <= p.value) {
      updates.push_back({"uncertainty." + p.key, p.uncertainty / p.value, std::nullopt,
                         "relative standard uncertainty of the fit (predict --repeat draws within "
                         "it)"});
    }
  }
  // Values the cluster file set that the fit replaces.
  std::ifstream in(cluster_path);
  std::stringstream original;
  original << in.rdbuf();
  const models::YamlPatchResult patched = models::patch_yaml(original.str(), cluster_path, updates);
  std::vector<std::string> warnings;
  for (const auto& w : result.warnings) warnings.push_back("logs disagree: " + w.message);
  for (const auto& r : patched.replaced) {
    for (const auto& p : result.parameters) {
      if (p.key != r.key_path) continue;
      warnings.push_back(cluster_path + ":" + std::to_string(r.line) + ": " + r.key_path +
                         " was set to '" + r.old_value + "' there; the fit replaces it with " +
                         display_fitted(p.value, p.unit));
    }
  }
  if (!runs.empty()) {
    text << format("  rms log error over all rows: %.4f\n\n", result.rms_log_error);
    write_fit_table(text, result.rows, min_bytes);
  }
  if (!checks.empty()) {
    text << "\nlogs not used for fitting, predicted with the calibrated cluster:\n";
    write_fit_table(text, models::predict_runs(result.cluster, checks), min_bytes);
  }
  out << text.str();
  for (const std::string& w : warnings) err << "trainsim: warning: " << w << "\n";

  if (output_file) {
    std::ostringstream header;
    header << "# Calibrated by trainsim " << kTrainsimVersion << " calibrate from "
           << cluster_path << " against:\n";
    for (const std::string& s : sources) header << "#   " << s << "\n";
    for (const auto& [name, value] : env) header << "#   with " << name << "=" << value << "\n";
    if (!runs.empty()) {
      header << format("# rms log(predicted/measured time) error: %.4f\n", result.rms_log_error);
      header << "# fitted (value +- standard uncertainty):\n";
      for (const auto& p : result.parameters) {
        header << "#   " << p.key << " = " << display_fitted(p.value, p.unit) << " +- "
               << display_fitted(p.uncertainty, p.unit) << "\n";
      }
    }
    for (const auto& e : models::summarize_errors(result.rows, min_bytes, true)) {
      header << "#   " << base_name(e.source) << " " << models::collective_name(*e.op)
             << format(": mean busbw error %.1f%%", 100 * e.mean_abs_error)
             << format(", max %.1f%%\n", 100 * e.max_abs_error);
    }
    output_file->stream() << header.str() << patched.text;
    output_file->commit();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
