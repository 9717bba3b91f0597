// `trainsim predict`: loads a cluster and a model, simulates training steps for each node count
// and writes the scaling table (and optionally a Chrome trace).
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include <unistd.h>
#include <boost/program_options.hpp>

#include "engine/check.h"
#include "engine/chrome_trace.h"
#include "models/config/cluster_config.h"
#include "models/config/config_override.h"
#include "models/config/quantity.h"
#include "models/scaling/scaling_study.h"
#include "models/scenario/scenario.h"
#include "tools/cli.h"
#include "tools/output_file.h"
#include "tools/plot_svg.h"
#include "tools/progress.h"
#include "tools/provenance.h"
#include "tools/report_format.h"
#include "tools/result_schema.h"
#include "tools/version.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

constexpr const char* kDefaultCluster = "configs/clusters/dgx-h100.yaml";
constexpr const char* kDefaultModel = "configs/models/dense-mlp-1b.yaml";

po::options_description predict_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("cluster", po::value<std::string>(),
     "cluster spec (YAML; default: the job's, else configs/clusters/dgx-h100.yaml); relative "
     "paths are looked up in the current directory, then in the trainsim source tree")
    ("model", po::value<std::string>(),
     "model spec (YAML; default: the job's, else configs/models/dense-mlp-1b.yaml)")
    ("job", po::value<std::string>(),
     "job spec (YAML): batch, sharding of embedding tables, communication, dataloader, "
     "checkpoints, target quality; needed for recommender models (kind: recsys)")
    ("placement", po::value<std::string>(),
     "several jobs on one cluster (configs/placements/*.yaml: each job's model, job, node range "
     "and start time, and background traffic): prints each job's step time and throughput alone "
     "on its nodes and sharing the fabric, its slowdown, and the links where the jobs' traffic "
     "met. Takes --steps, --warmup, --seed, --solve-quantum, --set cluster.KEY=VALUE, --repeat, "
     "--threads, --format and --output")
    ("nodes", po::value<std::string>()->default_value("1,2,4,8"),
     "node counts to simulate, e.g. 1,2,4,8 or 1-4; the smallest is the baseline for speedup "
     "and efficiency")
    ("format", po::value<std::string>()->default_value("table"), "output format: table, csv or json")
    ("output,o", po::value<std::string>(), "write the result to FILE instead of standard output")
    ("trace", po::value<std::string>(),
     "write a Chrome trace (JSON, opens in Perfetto or chrome://tracing) of the simulated steps "
     "at the largest node count, one track per GPU and stream")
    ("trace-nodes", po::value<int>(), "node count whose steps --trace records (default: the largest)")
    ("plot", po::value<std::string>(),
     "draw speedup and efficiency against nodes (with the ideal line) and the step breakdown per "
     "node count as an SVG file")
    ("repeat", po::value<int>()->default_value(1),
     "run N times with seeds --seed, --seed + 1, ... (stragglers drawn from a distribution, "
     "preprocessing jitter, a calibrated cluster's values within their uncertainty section: "
     "everything random drawn afresh) and give the mean and 95% confidence interval of "
     "throughput, speedup, efficiency and step time in every output format")
    ("threads", po::value<int>()->default_value(0),
     "node counts (largest first), --repeat runs, and a job's evaluation steps beside its "
     "training steps, simulated at once (0: all cores); the output does not depend on it");
  // clang-format on
  add_study_options(o);
  return o;
}

}  // namespace

void add_study_options(po::options_description& o) {
  // clang-format off
  o.add_options()
    ("scaling", po::value<std::string>()->default_value("job"),
     "strong: keep the global batch fixed (the per-GPU batch shrinks as nodes grow); weak: keep "
     "the per-GPU batch fixed (the global batch grows); job: strong if the job gives "
     "global_batch, else weak")
    ("target", po::value<double>(),
     "target quality for time-to-quality (default: the job's target_quality, else the model's "
     "convergence target)")
    ("network", po::value<std::string>()->default_value("flow"),
     "network model: flow (every transfer a flow sharing links by max-min fairness) or analytic "
     "(alpha-beta time per collective, no contention; faster)")
    ("solve-quantum", po::value<std::string>()->default_value("auto"),
     (std::string("flow mode: rate changes take effect at multiples of this time, so nearly simultaneous "
     "flow completions are solved together (faster where many flows finish one by one, as in "
     "a large all-to-all of uneven transfers; rates lag by less than one quantum, and a flow "
     "starting between solves takes only the bandwidth that is free). A time (1us), a "
     "percentage of the step time estimated analytically first (0.1%), 0 for exact, or auto: ") +
      auto_solve_quantum_rule())
         .c_str())
    ("steps", po::value<int>()->default_value(3), "training steps to simulate per node count")
    ("warmup", po::value<int>()->default_value(1), "leading steps left out of the measurement")
    ("seed", po::value<std::uint64_t>()->default_value(0), "random seed")
    ("resolved", po::bool_switch(),
     "print the scenario as resolved (the cluster, model and job with every key, defaults filled "
     "in and --set applied; each document loads back) and exit without simulating")
    ("set", po::value<std::vector<std::string>>(),
     "change a config key as it is loaded, KEY=VALUE with KEY starting with cluster., model. or "
     "job., e.g. --set cluster.nic.bandwidth=200Gb/s --set job.batch_per_gpu=4096 (repeatable)")
    ("sharding", po::value<std::string>(),
     "a recommender job's sharding strategy for this run (--set job.sharding.strategy=NAME): "
     "best (at each node count the fastest of the plans `trainsim shard` ranks), greedy, "
     "hugectr, torchrec or one strategy for every table");
  // clang-format on
}

std::vector<models::ConfigOverride> parse_set_options(const po::variables_map& vm) {
  std::vector<models::ConfigOverride> out;
  if (vm.count("set")) {
    for (const std::string& text : vm["set"].as<std::vector<std::string>>()) {
      out.push_back(models::parse_override(text, models::SourceLocation{"--set", 0, 0, ""}));
    }
  }
  if (vm.count("sharding")) {
    out.push_back(models::make_override("job.sharding.strategy", vm["sharding"].as<std::string>(),
                                        models::SourceLocation{"--sharding", 0, 0, ""}));
  }
  return out;
}

models::ScalingStudyOptions parse_study_options(const po::variables_map& vm) {
  models::ScalingStudyOptions study_options;
  study_options.scaling = parse_choice(vm, "scaling", models::scaling_mode_names());
  if (vm.count("target")) {
    study_options.target_quality = vm["target"].as<double>();
    study_options.target_origin = models::SourceLocation{"--target", 0, 0, "target"};
  }
  study_options.simulation.network = parse_choice(vm, "network", models::network_model_names());
  study_options.simulation.steps = vm["steps"].as<int>();
  study_options.simulation.warmup_steps = vm["warmup"].as<int>();
  study_options.simulation.seed = vm["seed"].as<std::uint64_t>();
  if (study_options.simulation.warmup_steps < 0) throw UsageError("--warmup must not be negative");
  if (study_options.simulation.steps <= study_options.simulation.warmup_steps) {
    throw UsageError("--steps must exceed --warmup (at least one measured step)");
  }
  if (study_options.simulation.steps > 1000) throw UsageError("--steps: at most 1000");
  const std::string text = vm["solve-quantum"].as<std::string>();
  if (text == "auto") {
    study_options.simulation.solve_quantum = models::kDefaultSolveQuantum;
  } else if (!text.empty() && text.back() == '%') {
    const auto percent =
        models::parse_quantity(text.substr(0, text.size() - 1), models::Dimension::kTime);
    if (!percent || *percent < 0 || *percent > 10) {
      throw UsageError("--solve-quantum: a percentage from 0% to 10%, not '" + text + "'");
    }
    study_options.simulation.solve_quantum =
        models::StepShare{static_cast<std::int64_t>(*percent * 1e4)};
  } else {
    const auto quantum = models::parse_quantity(text, models::Dimension::kTime);
    if (!quantum || *quantum < 0 || *quantum > 1.0) {
      throw UsageError(
          "--solve-quantum must be auto, a time from 0 to 1 s (e.g. 1us), a percentage "
          "(0.1%) or 0, not '" +
          text + "'");
    }
    study_options.simulation.solve_quantum = Time{time_from_seconds(*quantum)};
  }
  return study_options;
}

SimulationInputs load_simulation_inputs(const po::variables_map& vm,
                                        const std::vector<int>& nodes) {
  ConfigFiles files;
  if (vm.count("cluster")) files.cluster = vm["cluster"].as<std::string>();
  if (vm.count("model")) files.model = vm["model"].as<std::string>();
  if (vm.count("job")) files.job = vm["job"].as<std::string>();
  SimulationInputs in = load_configs(files, parse_set_options(vm));
  check_simulation_inputs(in, nodes);
  return in;
}

std::string default_cluster_file() { return kDefaultCluster; }
std::string default_model_file() { return kDefaultModel; }

SimulationInputs load_configs(const ConfigFiles& files,
                              const std::vector<models::ConfigOverride>& overrides,
                              const ModelLoader& load_model) {
  return models::load_scenario(files, overrides,
                               {kDefaultCluster, kDefaultModel, resolve_config_path, load_model});
}

void check_simulation_inputs(const SimulationInputs& in, const std::vector<int>& nodes) {
  try {
    models::check_scenario(in, nodes);
  } catch (const models::ScenarioError& e) {
    // Named by the option that changes it: "--nodes 200: cluster ... has 128 nodes".
    throw UsageError("--" + e.input() + (e.value().empty() ? "" : " " + e.value()) + ": " +
                     e.what());
  }
}

OutputFormat parse_output_format(const std::string& s) {
  if (s == "table") return OutputFormat::kTable;
  if (s == "csv") return OutputFormat::kCsv;
  if (s == "json") return OutputFormat::kJson;
  throw UsageError("--format must be table, csv or json, not '" + s + "'");
}

RepeatOptions parse_repeat_options(const po::variables_map& vm) {
  const int runs = vm["repeat"].as<int>();
  if (runs < 1 || runs > 10000) throw UsageError("--repeat must be from 1 to 10000");
  const int threads = vm["threads"].as<int>();
  if (threads < 0) throw UsageError("--threads must not be negative");
  return {runs, threads};
}

std::function<models::ClusterSpec(std::uint64_t)> uncertainty_draw(
    const models::ClusterSpec& cluster) {
  if (cluster.uncertainty.empty()) return {};
  return [&cluster](std::uint64_t seed) { return models::draw_within_uncertainty(cluster, seed); };
}

std::vector<std::string> shaping_arguments(const std::vector<std::string>& args) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool output =
        a == "-o" || a == "--output" || a == "--trace" || a == "--plot" || a == "--threads";
    if (output) {
      ++i;
      continue;
    }
    if (a.rfind("--output=", 0) == 0 || a.rfind("--trace=", 0) == 0 || a.rfind("--plot=", 0) == 0 ||
        a.rfind("--threads=", 0) == 0)
      continue;
    kept.push_back(a);
  }
  return kept;
}

void commit_result(AtomicOutputFile* output, AtomicOutputFile* meta, std::ostream& out,
                   const std::string& text) {
  if (!output) {
    out << text;
    return;
  }
  output->stream() << text;
  if (meta) meta->commit();
  output->commit();
}

int run_predict(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const po::options_description options = predict_options();
  const po::variables_map vm = parse_options(args, options, "predict");
  if (vm.count("help")) {
    out << "usage: trainsim predict [options]\n\n"
           "Simulates training steps of the model (or of a recommender job, --job) on each node\n"
           "count of the cluster and prints, per node count: nodes, GPUs, global batch, step "
           "time,\n"
           "throughput (examples/s), speedup over the smallest node count, efficiency (speedup /\n"
           "node ratio), the step's breakdown (compute, communication stall, load imbalance, "
           "input\n"
           "stall, checkpoint), the slowest rank and the dominant cause, and time-to-quality "
           "(wall\n"
           "time to the target quality, from the model's convergence at each global batch) with\n"
           "its speedup. Strong scaling keeps the global batch fixed; weak scaling keeps the "
           "batch\n"
           "per GPU fixed (--scaling; by default strong if the job gives a global batch).\n\n"
        << options
        << "\nExit status: 0 success, 2 bad input (the message names file, line and key).\n";
    return kExitOk;
  }

  if (vm.count("placement")) return run_predict_placement(vm, args, out);
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const std::string network = vm["network"].as<std::string>();
  models::ScalingStudyOptions study_options = parse_study_options(vm);
  const std::vector<int> nodes = parse_node_list(vm["nodes"].as<std::string>());
  const SimulationInputs inputs = load_simulation_inputs(vm, nodes);
  const models::ClusterSpec& cluster = inputs.cluster;
  const models::Workload& workload = inputs.workload;
  if (vm["resolved"].as<bool>()) {
    std::ostringstream text;
    models::write_resolved_scenario(
        text, inputs,
        {"trainsim " + std::string(kTrainsimVersion) +
             " predict --resolved: every key with its "
             "default filled in and --set applied;",
         "each document loads back as a file of its kind (--cluster, --model, --job)."});
    write_output(output_path(vm), out, text.str());
    return kExitOk;
  }
  const int largest = *std::max_element(nodes.begin(), nodes.end());
  std::optional<std::string> trace_path;
  if (vm.count("trace")) {
    trace_path = vm["trace"].as<std::string>();
    study_options.trace_nodes = vm.count("trace-nodes") ? vm["trace-nodes"].as<int>() : largest;
    if (std::find(nodes.begin(), nodes.end(), study_options.trace_nodes) == nodes.end()) {
      throw UsageError("--trace-nodes " + std::to_string(study_options.trace_nodes) +
                       " is not one of the --nodes");
    }
  } else if (vm.count("trace-nodes")) {
    throw UsageError("--trace-nodes needs --trace FILE");
  }

  // Open outputs first so an unwritable path fails before the simulation; nothing appears on
  // disk unless everything succeeds.
  std::unique_ptr<AtomicOutputFile> output_file;
  if (vm.count("output"))
    output_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>());
  std::unique_ptr<AtomicOutputFile> trace_file;
  if (trace_path) trace_file = std::make_unique<AtomicOutputFile>(*trace_path);
  std::unique_ptr<AtomicOutputFile> plot_file;
  if (vm.count("plot"))
    plot_file = std::make_unique<AtomicOutputFile>(vm["plot"].as<std::string>());

  // On a terminal, a progress line per node count (the largest take the longest).
  Progress progress(err, std::set<int>(nodes.begin(), nodes.end()).size(), "node counts");
  if (progress.enabled()) {
    err << "simulating " << nodes.size() << " node count(s) on " << cluster.name << "\n";
    study_options.on_point = [&progress](std::size_t done, std::size_t, int n) {
      progress.update(done, "(" + std::to_string(n) + " nodes done)");
    };
  }
  const RepeatOptions repeat = parse_repeat_options(vm);
  study_options.threads = repeat.threads;
  const models::ScalingStudy study =
      models::run_repeated_scaling_study(cluster, workload, nodes, study_options, repeat.runs,
                                         repeat.threads, uncertainty_draw(cluster));

  Provenance provenance;
  provenance.command = "predict";
  provenance.arguments = shaping_arguments(args);
  provenance.seed = study_options.simulation.seed;
  if (vm.count("set")) provenance.settings = vm["set"].as<std::vector<std::string>>();
  provenance.files = scenario_files(inputs);
  {
    std::ostringstream resolved;
    models::write_resolved_scenario(resolved, inputs,
                                    {"the scenario as simulated: every key with its default "
                                     "filled in and --set applied"});
    provenance.resolved = resolved.str();
  }
  PredictReport report{&cluster,
                       &workload,
                       &study,
                       network,
                       study_options.simulation.steps,
                       study_options.simulation.warmup_steps,
                       &provenance};
  std::ostringstream rendered;
  write_predict_report(rendered, report, format);
  // A CSV file's provenance goes beside it (FILE.meta.json), so the CSV itself loads anywhere.
  std::unique_ptr<AtomicOutputFile> meta_file;
  if (output_file && format == OutputFormat::kCsv) {
    meta_file = std::make_unique<AtomicOutputFile>(vm["output"].as<std::string>() + ".meta.json");
    write_predict_metadata(meta_file->stream(), report);
  }
  if (trace_file) {
    const int gpus_per_node = cluster.gpus_per_node;
    ChromeTraceOptions trace_options;
    trace_options.group_name = [gpus_per_node](std::int32_t rank) {
      return "rank " + std::to_string(rank) + " (node " + std::to_string(rank / gpus_per_node) +
             ", GPU " + std::to_string(rank % gpus_per_node) + ")";
    };
    trace_options.slices = study.trace->waits;
    trace_options.flows = study.trace->flows;
    trace_options.counters = study.trace->counters;
    trace_options.counters_name = "fabric: NIC and NVLink utilisation (first nodes)";
    write_chrome_trace(trace_file->stream(), study.trace->graph, study.trace->records,
                       trace_options);
  }
  commit_result(output_file.get(), meta_file.get(), out, rendered.str());
  if (trace_file) trace_file->commit();
  if (plot_file) {
    PlotSeries series{models::model_name(workload.model), {}};
    const auto parts = breakdown_parts();
    TRAINSIM_ASSERT(parts.size() == PlotPoint::kParts, "a plot bar for every breakdown part");
    for (const auto& p : study.points) {
      PlotPoint q;
      q.nodes = p.nodes;
      q.throughput = p.throughput;
      q.step_time = to_seconds(p.step_time);
      q.speedup = p.speedup;
      q.efficiency = p.efficiency;
      for (std::size_t i = 0; i < parts.size(); ++i) q.parts[i] = parts[i]->value(p);
      series.points.push_back(q);
    }
    write_scaling_svg(plot_file->stream(), {series},
                      models::model_name(workload.model) + " on " + cluster.name,
                      study.points.empty() ? 1 : study.points.front().nodes);
    plot_file->commit();
  }
  return kExitOk;
}

}  // namespace trainsim::cli
