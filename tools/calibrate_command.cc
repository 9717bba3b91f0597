// `trainsim calibrate`: fits a cluster's link and collective parameters to nccl-tests logs (and GPU
// efficiency curves to microbenchmark results), prints the fit table and writes the calibrated
// cluster YAML.
#include <cstdio>
#include <memory>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/calibration/collective_calibration.h"
#include "models/calibration/microbench.h"
#include "models/config/cluster_config.h"
#include "models/config/cluster_writer.h"
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
    ("cluster", po::value<std::string>()->default_value("configs/clusters/dgx-h100.yaml"),
     "cluster spec to start from (its hardware figures are kept; link and collective figures "
     "are fitted)")
    ("nccl-tests", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "nccl-tests log, repeatable; LOG:ALGO says which algorithm NCCL ran (ring, tree, nvls, ...); "
     "otherwise a word in the file name (..._RING_...) or NCCL's default for the operation")
    ("check", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "nccl-tests log (LOG or LOG:ALGO, repeatable) NOT used for fitting: predicted with the "
     "calibrated cluster and scored, to test the calibration on data it has not seen")
    ("microbench", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "JSON lines from tools/microbench (repeatable): fits GEMM efficiency by size, HBM and "
     "embedding-gather efficiency and host-to-device bandwidth; NCCL results join the "
     "collective fit")
    ("gemm-dtype", po::value<std::string>()->default_value("bf16"),
     "the GEMM format whose efficiency curve goes into the cluster (others are reported)")
    ("output,o", po::value<std::string>(), "write the calibrated cluster YAML to FILE")
    ("report-min-bytes", po::value<double>()->default_value(1048576.0),
     "sizes below this are fitted but left out of the error summary");
  // clang-format on
  return o;
}

std::string format(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string display_value(const models::FittedParameter& p) {
  if (p.unit == "s") return format("%.3f us", p.value * 1e6);
  if (p.unit == "B/s") return format("%.2f GB/s", p.value / 1e9);
  if (p.unit == "B") return format("%.0f B", p.value);
  return format("%.4f", p.value);
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<models::MeasuredRun> read_measured_runs(const std::vector<std::string>& args,
                                                    const std::string& flag,
                                                    std::vector<std::string>* sources) {
  std::vector<models::MeasuredRun> runs;
  for (const std::string& arg : args) {
    std::string path = arg;
    std::optional<models::Algorithm> algorithm;
    const auto colon = arg.rfind(':');
    if (colon != std::string::npos) {
      algorithm = models::parse_algorithm(arg.substr(colon + 1));
      if (!algorithm) {
        throw UsageError(flag + " " + arg + ": unknown algorithm '" + arg.substr(colon + 1) + "'");
      }
      path = arg.substr(0, colon);
    }
    const models::NcclTestsLog log = models::read_nccl_tests_log(resolve_config_path(path));
    for (auto& run : models::measured_runs(log, algorithm)) runs.push_back(std::move(run));
    if (sources) sources->push_back(path);
  }
  return runs;
}

void write_fit_table(std::ostream& out, const std::vector<models::FitRow>& rows, double min_bytes) {
  char line[512];
  std::snprintf(line, sizeof line, "%-58s %-14s %-6s %12s %12s %12s %9s %9s %8s\n", "log", "op",
                "algo", "size (B)", "meas (us)", "pred (us)", "meas bw", "pred bw", "error");
  out << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line,
                  "%-58s %-14s %-6s %12lld %12.2f %12.2f %9.2f %9.2f %7.1f%%%s\n",
                  base_name(r.source).substr(0, 58).c_str(),
                  std::string(models::collective_name(r.op)).c_str(),
                  std::string(models::algorithm_name(r.algorithm)).c_str(), r.size_bytes,
                  r.measured_us, r.predicted_us, r.measured_busbw, r.predicted_busbw,
                  100.0 * r.error, r.size_bytes < min_bytes ? "  (not scored)" : "");
    out << line;
  }
  out << "\nbusbw error per log, sizes >= " << format("%.0f", min_bytes) << " B:\n";
  for (const auto& e : models::summarize_errors(rows, min_bytes)) {
    std::snprintf(line, sizeof line, "  %-58s rows %3d   mean %5.1f%%   max %5.1f%%\n",
                  base_name(e.source).substr(0, 58).c_str(), e.rows, 100.0 * e.mean_abs_error,
                  100.0 * e.max_abs_error);
    out << line;
  }
}

int run_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  const po::options_description options = calibrate_options();
  const po::variables_map vm = parse_options(args, options, "calibrate");
  if (vm.count("help")) {
    out << "usage: trainsim calibrate --cluster FILE --nccl-tests LOG[:ALGO]... [-o "
           "calibrated.yaml]\n\n"
           "Fits, by least squares on log(predicted / measured time) over every row of the logs,\n"
           "the latency and achieved fraction of line rate of each link class the runs cross\n"
           "(NVLink or PCIe inside a node, the NIC between nodes), and per algorithm its software\n"
           "latency and efficiency (and the channel ramp of send/recv). Each run's nodes and GPUs\n"
           "come from its device list. Prints measured against predicted time and busbw per log\n"
           "and size, with mean and max absolute busbw error per log, and writes the calibrated\n"
           "cluster YAML naming the logs it was fitted on.\n\n"
        << options
        << "\nExit status: 0 success, 2 bad input (unreadable or malformed log, a run the\n"
           "cluster cannot hold).\n";
    return kExitOk;
  }
  if (!vm.count("nccl-tests") && !vm.count("microbench")) {
    throw UsageError("calibrate: give at least one --nccl-tests LOG or --microbench FILE");
  }
  const auto gemm_dtype = models::parse_dtype(vm["gemm-dtype"].as<std::string>());
  if (!gemm_dtype)
    throw UsageError("--gemm-dtype: unknown format '" + vm["gemm-dtype"].as<std::string>() + "'");
  const double min_bytes = vm["report-min-bytes"].as<double>();

  const std::string cluster_path = resolve_config_path(vm["cluster"].as<std::string>());
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
  std::vector<models::MeasuredRun> checks;
  if (vm.count("check")) {
    checks = read_measured_runs(vm["check"].as<std::vector<std::string>>(), "--check", nullptr);
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
  std::map<std::string, std::string> notes;
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
    for (const char* key : {"gpu.gemm_efficiency", "gpu.gemm_half_flops", "gpu.hbm_efficiency",
                            "gpu.embedding_efficiency", "gpu.embedding_half_row_bytes",
                            "gpu.host_to_device_bandwidth"}) {
      notes[key] = "fitted by trainsim calibrate from microbenchmarks";
    }
  }
  if (!runs.empty()) text << "fitted parameters:\n";
  for (const auto& p : result.parameters) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-52s %s\n", p.key.c_str(), display_value(p).c_str());
    text << line;
    notes[p.key] = "fitted by trainsim calibrate";
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

  if (output_file) {
    std::vector<std::string> header = {"Calibrated by trainsim " + std::string(kTrainsimVersion) +
                                       " calibrate from " + cluster_path +
                                       " against these measurements:"};
    for (const std::string& s : sources) header.push_back("  " + s);
    if (!runs.empty()) {
      header.push_back(
          format("rms log(predicted/measured time) error: %.4f", result.rms_log_error));
    }
    for (const auto& e : models::summarize_errors(result.rows, min_bytes)) {
      header.push_back(base_name(e.source) +
                       format(": mean busbw error %.1f%%", 100 * e.mean_abs_error) +
                       format(", max %.1f%%", 100 * e.max_abs_error));
    }
    models::write_cluster_yaml(output_file->stream(), result.cluster, header, notes);
    output_file->commit();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
