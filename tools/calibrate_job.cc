// `trainsim calibrate --job FILE --measured NODES:THROUGHPUT...`: fits the GPU's achieved
// fractions (GEMM, HBM, embedding lookup and update) to a user's measured throughput, prints each
// with its prior and posterior uncertainty, the measured runs before and after, and the ratios
// that carry the fractions to another GPU; -o writes the calibrated cluster YAML: the cluster
// file with the fitted values replaced (its comments and units kept).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "models/config/quantity.h"
#include "models/config/yaml_patch.h"
#include "models/scaling/job_calibration.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

// "15.63M", "15630000", "2.5k" (examples/s) or a step time "3.54ms".
models::MeasuredThroughput parse_measured(const std::string& text) {
  const std::string usage = "--measured " + text +
                            ": expected NODES:THROUGHPUT (examples/s, e.g. 1:15.63M) or "
                            "NODES:STEP_TIME (e.g. 1:3.54ms)";
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0) throw UsageError(usage);
  models::MeasuredThroughput m;
  std::size_t used = 0;
  try {
    m.nodes = std::stoi(text.substr(0, colon), &used);
  } catch (const std::exception&) {
    throw UsageError(usage);
  }
  if (used != colon || m.nodes < 1) throw UsageError(usage);
  std::string value = text.substr(colon + 1);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  if (value.empty()) throw UsageError(usage);
  if (const auto t = models::parse_quantity(value, models::Dimension::kTime);
      t && std::isalpha(static_cast<unsigned char>(value.back()))) {
    if (!(*t > 0)) throw UsageError(usage + ": a step time is positive");
    m.step_time_s = *t;
    return m;
  }
  double scale = 1.0;
  switch (value.back()) {
    case 'k': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'G': scale = 1e9; break;
    default: break;
  }
  if (scale != 1.0) value.pop_back();
  try {
    m.throughput = std::stod(value, &used) * scale;
  } catch (const std::exception&) {
    throw UsageError(usage);
  }
  if (used != value.size() || !(m.throughput > 0) || !std::isfinite(m.throughput)) {
    throw UsageError(usage);
  }
  return m;
}

std::string fraction(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

}  // namespace

void add_job_calibration_options(po::options_description& o) {
  // clang-format off
  o.add_options()
    ("job", po::value<std::string>(),
     "with --measured: the job (and its cluster and model) that was measured")
    ("model", po::value<std::string>(), "with --job: model spec (default: the job's)")
    ("measured", po::value<std::vector<std::string>>()->multitoken()->composing(),
     "NODES:THROUGHPUT (examples/s: 1:15.63M) or NODES:STEP_TIME (1:3.54ms) of the job as "
     "measured, repeatable; fits the GPU's achieved fractions of peak (GEMM, HBM, embedding "
     "lookup and update) and nothing that changes with scale")
    ("training-only", "the measured values leave out the job's evaluation phases (a train-only "
     "throughput): compared with the training steps alone")
    ("measured-uncertainty", po::value<std::string>()->default_value("2%"),
     "relative standard uncertainty of each measured value (run-to-run spread and how it was "
     "timed)");
  // clang-format on
  add_study_options(o);
}

int run_calibrate_job(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  if (!vm.count("job")) throw UsageError("calibrate: --measured needs --job FILE");
  if (!vm.count("measured")) throw UsageError("calibrate: --job needs --measured NODES:THROUGHPUT");
  if (vm.count("nccl-tests") || vm.count("microbench") || vm.count("check")) {
    throw UsageError(
        "calibrate: --job fits a measured training run; fit nccl-tests logs or microbenchmarks "
        "in a separate run (its -o cluster can then be the --cluster of this one)");
  }
  std::vector<models::MeasuredThroughput> measured;
  std::vector<int> nodes;
  for (const std::string& text : vm["measured"].as<std::vector<std::string>>()) {
    measured.push_back(parse_measured(text));
    measured.back().training_only = vm.count("training-only") > 0;
    nodes.push_back(measured.back().nodes);
  }
  models::JobCalibrationOptions options;
  options.study = parse_study_options(vm);
  {
    const std::string text = vm["measured-uncertainty"].as<std::string>();
    double u = -1;
    std::size_t used = 0;
    try {
      u = std::stod(text, &used);
    } catch (const std::exception&) {
    }
    if (used + 1 == text.size() && text.back() == '%') u /= 100;
    else if (used != text.size()) u = -1;
    if (!(u > 0 && u <= 1)) {
      throw UsageError("--measured-uncertainty: a fraction (0.02) or percentage (2%) above 0, "
                       "not '" + text + "'");
    }
    options.measurement_uncertainty = u;
  }
  SimulationInputs inputs = load_configs(
      {vm.count("cluster") ? vm["cluster"].as<std::string>() : "",
       vm.count("model") ? vm["model"].as<std::string>() : "", vm["job"].as<std::string>()},
      parse_set_options(vm));
  for (const auto& m : measured) {
    if (m.nodes > inputs.cluster.nodes) {
      throw UsageError("--measured " + std::to_string(m.nodes) + ":...: cluster '" +
                       inputs.cluster.name + "' has " + std::to_string(inputs.cluster.nodes) +
                       " nodes");
    }
  }
  check_simulation_inputs(inputs, nodes);
  if (vm["resolved"].as<bool>()) {
    std::ostringstream text;
    models::write_resolved_scenario(
        text, inputs,
        {"trainsim " + std::string(kTrainsimVersion) + " calibrate --resolved: the scenario the "
         "measurements are fitted on"});
    out << text.str();
    return kExitOk;
  }
  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());

  const models::JobCalibration fit =
      models::calibrate_job(inputs.cluster, inputs.workload, measured, options);
  const std::string& cluster_path = inputs.cluster.source_file;
  std::ostringstream text;
  char line[512];
  text << "calibrated the GPU of " << inputs.cluster.name << " (" << cluster_path
       << ") on job " << inputs.workload.job->name << " against " << measured.size()
       << " measured run(s), uncertainty " << fraction(options.measurement_uncertainty)
       << " each; " << fit.iterations << " iteration(s)\n\n";
  std::snprintf(line, sizeof line, "%5s  %12s  %14s  %14s %8s  %14s %8s\n", "nodes",
                "global batch", "measured", "before", "error", "after", "error");
  text << "throughput (examples/s):\n" << line;
  for (const auto& p : fit.points) {
    std::snprintf(line, sizeof line, "%5d  %12.0f  %14.0f  %14.0f %7.1f%%  %14.0f %7.1f%%\n",
                  p.nodes, p.global_batch, p.measured, p.before,
                  100 * (p.before - p.measured) / p.measured, p.after,
                  100 * (p.after - p.measured) / p.measured);
    text << line;
  }
  text << "\nGPU fractions of peak (value +- standard uncertainty); sensitivity = d log(step) / "
          "d log(value):\n";
  std::snprintf(line, sizeof line, "  %-36s %18s %18s %12s\n", "key", "prior", "fitted",
                "sensitivity");
  text << line;
  std::vector<models::YamlUpdate> updates;
  std::string carry;
  std::ostringstream sources;
  for (const std::string& m : vm["measured"].as<std::vector<std::string>>()) sources << " " << m;
  for (const auto& f : fit.parameters) {
    std::snprintf(line, sizeof line, "  %-36s %8.4f +- %6.4f %8.4f +- %6.4f %12.3f\n",
                  f.key.c_str(), f.prior, f.prior_uncertainty, f.value, f.uncertainty,
                  f.sensitivity);
    text << line;
    updates.push_back({f.key, f.value, std::nullopt,
                       "fitted by trainsim calibrate --job to" + sources.str() + ": +- " +
                           fraction(f.uncertainty) + " (prior " + fraction(f.prior) + ")"});
    // A value the fit left undetermined (relative uncertainty above 1) is not drawn.
    if (f.value > 0 && f.uncertainty <= f.value) {
      updates.push_back({"uncertainty." + f.key, f.uncertainty / f.value, std::nullopt,
                         "relative standard uncertainty of the fit (predict --repeat draws within "
                         "it)"});
    }
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, " x%.3f", f.value / f.prior);
    carry += "  " + f.key.substr(f.key.find('.') + 1) + ratio + "\n";
  }
  text << "\nFitted / prior, to carry to another GPU running the same software stack (scale its "
          "own fractions):\n"
       << carry;
  out << text.str();
  for (const auto& o : parse_set_options(vm)) {
    if (o.target == "cluster" && output_file) {
      err << "trainsim: warning: " << o.key()
          << " was set on the command line; the calibrated cluster is written from "
          << cluster_path << " and does not carry it\n";
    }
  }
  if (output_file) {
    std::ifstream in(cluster_path);
    std::stringstream original;
    original << in.rdbuf();
    if (!in) throw UsageError("calibrate: cannot read the cluster file " + cluster_path);
    const models::YamlPatchResult patched =
        models::patch_yaml(original.str(), cluster_path, updates);
    std::ostringstream header;
    header << "# Calibrated by trainsim " << kTrainsimVersion << " calibrate --job "
           << vm["job"].as<std::string>() << " from " << cluster_path << ": measured"
           << sources.str() << "\n";
    for (const auto& p : fit.points) {
      header << "#   " << p.nodes << " node(s): measured " << fraction(p.measured / 1e6)
             << " M examples/s, predicted " << fraction(p.before / 1e6) << " M before, "
             << fraction(p.after / 1e6) << " M after\n";
    }
    output_file->stream() << header.str() << patched.text;
    output_file->commit();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
