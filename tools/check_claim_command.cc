// `trainsim check-claim`: speedup and efficiency of a reported scaling result, checked against
// trainsim's prediction for a cluster, model and job; or two runs' throughput against their
// time-to-quality.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>

#include <boost/program_options.hpp>

#include "models/config/quantity.h"
#include "models/scaling/claim.h"
#include "models/scaling/scaling_study.h"
#include "tools/cli.h"
#include "tools/report_format.h"

namespace trainsim::cli {

namespace po = boost::program_options;

namespace {

// A plain positive number (all of the text), or nullopt.
std::optional<double> plain_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0) || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// A claim's verdict tolerance: trainsim's bar is within 10% of measurements.
constexpr double kTolerance = 0.10;

po::options_description check_claim_options() {
  po::options_description o("options");
  // clang-format off
  o.add_options()
    ("help,h", "show this help")
    ("baseline-nodes", po::value<int>()->default_value(1), "node count of the baseline")
    ("nodes", po::value<int>(), "node count of the claimed result")
    ("speedup", po::value<double>(), "claimed speedup over the baseline")
    ("baseline-throughput", po::value<double>(),
     "the baseline's throughput (examples/s), with --throughput in place of --speedup")
    ("throughput", po::value<double>(), "the claimed throughput (examples/s) on --nodes")
    ("cluster", po::value<std::string>(), "cluster spec: check the claim against trainsim's prediction")
    ("model", po::value<std::string>(), "model spec (default: the job's)")
    ("job", po::value<std::string>(), "job spec (YAML)")
    ("run", po::value<std::vector<std::string>>(),
     "a run as THROUGHPUT:TIME[:GLOBAL_BATCH], e.g. 100000:10h (examples/s and wall time to the "
     "target quality); give two to compare throughput with time-to-quality");
  // clang-format on
  add_study_options(o);
  return o;
}

models::TrainingRun parse_run(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
  if (parts.size() < 2 || parts.size() > 3) {
    throw UsageError("check-claim: --run '" + text +
                     "': expected THROUGHPUT:TIME[:GLOBAL_BATCH], e.g. 100000:10h");
  }
  models::TrainingRun run;
  const auto throughput = plain_number(parts[0]);
  const auto seconds = models::parse_quantity(parts[1], models::Dimension::kTime);
  if (!throughput || *throughput <= 0) {
    throw UsageError("check-claim: --run '" + text + "': throughput '" + parts[0] +
                     "' is not a positive number of examples/s");
  }
  if (!seconds || *seconds <= 0) {
    throw UsageError("check-claim: --run '" + text + "': time '" + parts[1] +
                     "' is not a positive time (e.g. 10h, 90min)");
  }
  run.throughput = *throughput;
  run.seconds_to_target = *seconds;
  if (parts.size() == 3) {
    const auto batch = plain_number(parts[2]);
    if (!batch || *batch <= 0) {
      throw UsageError("check-claim: --run '" + text + "': global batch '" + parts[2] +
                       "' is not positive");
    }
    run.global_batch = *batch;
  }
  return run;
}

std::string hours(double seconds) { return printf_string("%.4g h", seconds / 3600.0); }

void compare_two_runs(std::ostream& out, const models::TrainingRun& a,
                      const models::TrainingRun& b) {
  const models::RunComparison c = models::compare_runs(a, b);
  auto describe = [&](const char* name, const models::TrainingRun& r) {
    out << "run " << name << "    " << printf_string("%.6g", r.throughput) << " examples/s, "
        << hours(r.seconds_to_target) << " to the target: " << printf_string("%.4g", r.examples())
        << " examples";
    if (r.global_batch) out << " at a global batch of " << printf_string("%.6g", *r.global_batch);
    out << "\n";
  };
  describe("A", a);
  describe("B", b);
  out << "\nthroughput      B / A = " << printf_string("%.2fx", c.throughput_ratio)
      << "\ntime-to-quality A / B = " << printf_string("%.2fx", c.time_to_quality_ratio)
      << " (B reaches the target " << printf_string("%.2fx", c.time_to_quality_ratio)
      << " sooner)\n\nwhy: ";
  if (std::abs(c.examples_ratio - 1.0) < 0.01) {
    out << "both runs needed the same examples to reach the target, so time-to-quality follows "
           "throughput.\n";
  } else if (c.examples_ratio > 1.0) {
    out << "run B needed " << printf_string("%.2fx", c.examples_ratio)
        << " the examples of run A to reach the target. Convergence changed (a larger global "
           "batch beyond the critical batch, changed sampling, optimizer or numerics), so "
        << printf_string("%.2fx", c.throughput_ratio) << " the throughput buys only "
        << printf_string("%.2fx", c.time_to_quality_ratio) << " the time-to-quality.\n";
  } else {
    out << "run B needed only " << printf_string("%.2fx", c.examples_ratio)
        << " the examples of run A: it converged in fewer examples, so its time-to-quality gain ("
        << printf_string("%.2fx", c.time_to_quality_ratio) << ") exceeds its throughput gain.\n";
  }
  if (a.global_batch && b.global_batch) {
    if (c.fit) {
      out << "\ncritical-batch model fitted to the two runs (E = E_min (1 + B / B_noise)):\n"
             "  E_min = "
          << printf_string("%.4g", c.fit->min_examples)
          << " examples, B_noise = " << printf_string("%.6g", c.fit->critical_batch)
          << " examples\nfor the model's YAML:\nconvergence:\n  critical_batch: "
          << printf_string("%.6g", c.fit->critical_batch)
          << "\n  curve:\n    - {quality: TARGET, examples: "
          << printf_string("%.6g", c.fit->min_examples) << "}\n";
    } else {
      out << "\nthe two runs do not fit the critical-batch model (the larger batch must need more "
             "examples, but less than in proportion to the batch)\n";
    }
  }
}

}  // namespace

int run_check_claim(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  const po::options_description options = check_claim_options();
  const po::variables_map vm = parse_options(args, options, "check-claim");
  if (vm.count("help")) {
    out << "usage: trainsim check-claim --nodes N --speedup S [--baseline-nodes B] [--job FILE]\n"
           "       trainsim check-claim --nodes N --baseline-throughput X --throughput Y ...\n"
           "       trainsim check-claim --run THROUGHPUT:TIME[:BATCH] --run "
           "THROUGHPUT:TIME[:BATCH]\n\n"
           "Checks a reported scaling result. Prints the claim's speedup = throughput(N) /\n"
           "throughput(baseline), efficiency = speedup / (N / N_baseline) and the ideal (linear)\n"
           "speedup. Given a cluster, model or job, trainsim predicts the same two node counts "
           "and\n"
           "gives its speedup, the step breakdown, the bound (every transfer hidden behind "
           "compute)\n"
           "and a verdict: plausible, optimistic (beyond what the cluster allows)\n"
           "or pessimistic (a bottleneck the cluster should not have), with a 10% tolerance.\n"
           "Measured throughputs are compared with their predictions and the claimed one is\n"
           "judged as it is (a slow baseline cannot flatter it); a superlinear speedup is\n"
           "flagged.\n"
           "With two --run, compares throughput with time-to-quality and says why they differ.\n\n"
        << options << "\nExit status: 0 success, 2 bad input.\n";
    return kExitOk;
  }
  const bool runs = vm.count("run") > 0;
  const bool claim = vm.count("speedup") || vm.count("throughput") ||
                     vm.count("baseline-throughput") || vm.count("nodes");
  if (runs) {
    if (claim)
      throw UsageError("check-claim: give either --run twice or a speedup claim, not both");
    const auto& texts = vm["run"].as<std::vector<std::string>>();
    if (texts.size() != 2) throw UsageError("check-claim: --run needs exactly two runs (A and B)");
    compare_two_runs(out, parse_run(texts[0]), parse_run(texts[1]));
    return kExitOk;
  }
  if (!vm.count("speedup") && !vm.count("throughput")) {
    throw UsageError(
        "check-claim: give --nodes N with --speedup S (or --baseline-throughput X --throughput "
        "Y), or two --run");
  }
  if (!vm.count("nodes")) {
    throw UsageError(
        "check-claim: a claimed speedup needs the node counts: --nodes N (and "
        "--baseline-nodes, default 1)");
  }
  models::ScalingClaim c;
  c.baseline_nodes = vm["baseline-nodes"].as<int>();
  c.nodes = vm["nodes"].as<int>();
  if (c.baseline_nodes < 1 || c.nodes < 1)
    throw UsageError("check-claim: node counts must be positive");
  if (c.nodes <= c.baseline_nodes) {
    throw UsageError(
        "check-claim: --nodes must exceed --baseline-nodes (a speedup from adding "
        "nodes)");
  }
  // The measured throughputs, when given (examples/s): baseline and claimed.
  std::optional<std::pair<double, double>> measured;
  if (vm.count("speedup")) {
    if (vm.count("throughput") || vm.count("baseline-throughput")) {
      throw UsageError("check-claim: give --speedup or the two throughputs, not both");
    }
    c.speedup = vm["speedup"].as<double>();
  } else {
    if (!vm.count("baseline-throughput")) {
      throw UsageError("check-claim: --throughput needs --baseline-throughput");
    }
    const double base = vm["baseline-throughput"].as<double>();
    const double now = vm["throughput"].as<double>();
    if (!(base > 0) || !(now > 0)) throw UsageError("check-claim: throughputs must be positive");
    c.speedup = now / base;
    measured = std::make_pair(base, now);
  }
  if (!(c.speedup > 0) || !std::isfinite(c.speedup)) {
    throw UsageError("check-claim: the speedup must be a positive number");
  }
  out << "claim     " << c.nodes << " nodes vs " << c.baseline_nodes
      << (c.baseline_nodes == 1 ? " node" : " nodes") << ": speedup "
      << printf_string("%.2fx", c.speedup) << ", efficiency "
      << printf_string("%.2f%%", 100.0 * c.efficiency())
      << " of ideal (linear scaling: " << printf_string("%.2fx", c.ideal()) << ")\n";
  if (c.speedup > c.ideal() * (1 + 1e-9)) {
    out << "warning   superlinear: " << printf_string("%.2fx", c.speedup) << " on "
        << printf_string("%.3g", c.ideal())
        << "x the hardware; only a baseline slower than it should be, or per-GPU work that "
           "shrank (strong scaling into caches, a smaller problem per GPU) gives that\n";
  }
  if (!vm.count("cluster") && !vm.count("model") && !vm.count("job")) return kExitOk;

  const models::ScalingStudyOptions study_options = parse_study_options(vm);
  const std::vector<int> nodes = {c.baseline_nodes, c.nodes};
  const SimulationInputs inputs = load_simulation_inputs(vm, nodes);
  const models::ScalingStudy study =
      models::run_scaling_study(inputs.cluster, inputs.workload, nodes, study_options);
  const models::ScalingPoint& base = study.points.front();
  const models::ScalingPoint& at = study.points.back();
  const models::ScalingPoint& claimed_point = at;
  const models::ScalingPoint& baseline_point = base;
  const double predicted = claimed_point.throughput / baseline_point.throughput;
  auto bound_throughput = [](const models::ScalingPoint& p) {
    // Communication entirely hidden behind compute; ranks still wait for the slowest, as the
    // sharding makes them; input and checkpoints as predicted.
    const Time step = std::max(p.breakdown.compute + p.breakdown.imbalance, p.communication_busy) +
                      p.breakdown.input_stall + p.breakdown.checkpoint;
    return p.global_batch / to_seconds(step);
  };
  const double bound = bound_throughput(claimed_point) / baseline_point.throughput;
  // Speedups, or, with measured throughputs, absolute examples/s at the claimed node count
  // (a slow baseline cannot then flatter the claim): prediction, bound and linear scaling of
  // the measured baseline on the same scale as the claim.
  const double scale = measured ? baseline_point.throughput : 1.0;
  const double claimed = measured ? measured->second : c.speedup;
  const double ideal = measured ? measured->first * c.ideal() : c.ideal();
  const models::Verdict verdict =
      models::judge_claim(claimed, predicted * scale, bound * scale, ideal, kTolerance);
  const auto figure = [&](double v) {
    return measured ? printf_string("%.0f ex/s", v) : printf_string("%.2fx", v);
  };
  const auto ms = [](Time t) { return printf_string("%.3f", to_milliseconds(t)); };
  const models::StepBreakdown& b = claimed_point.breakdown;
  out << "trainsim  " << inputs.cluster.name << ", " << models::model_name(inputs.workload.model)
      << (inputs.workload.job ? ", job " + inputs.workload.job->name : "") << "; "
      << (study.batch.strong ? "strong" : "weak") << " scaling, " << vm["network"].as<std::string>()
      << " network model\n"
      << "          predicted speedup " << printf_string("%.2fx", predicted) << ", efficiency "
      << printf_string("%.1f%%", 100.0 * predicted / c.ideal()) << "\n"
      << "          at " << c.nodes << " nodes, ms per step: step " << ms(claimed_point.step_time)
      << " = compute " << ms(b.compute) << " + comm stall " << ms(b.exposed_communication)
      << " + imbalance " << ms(b.imbalance) << " + input " << ms(b.input_stall) << " + ckpt "
      << ms(b.checkpoint) << " + eval " << ms(b.evaluation)
      << "; dominant: " << dominant_cause(claimed_point) << "\n"
      << "          bound " << printf_string("%.2fx", bound)
      << ": every transfer hidden behind compute (communication "
      << ms(claimed_point.communication_busy) << " ms per step against " << ms(b.compute)
      << " ms of compute and " << ms(b.imbalance) << " ms waiting for the slowest rank)\n";
  if (measured) {
    const double base_share = measured->first / baseline_point.throughput;
    out << "measured  baseline " << figure(measured->first) << " = "
        << printf_string("%.1f%%", 100 * base_share) << " of the predicted "
        << figure(baseline_point.throughput) << "; at " << c.nodes << " nodes "
        << figure(measured->second) << " = "
        << printf_string("%.1f%%", 100 * measured->second / claimed_point.throughput)
        << " of the predicted " << figure(claimed_point.throughput) << " (bound "
        << figure(bound * scale) << ")\n";
    if (base_share < 1 - kTolerance) {
      out << "warning   the baseline ran at " << printf_string("%.0f%%", 100 * base_share)
          << " of its prediction: a slow baseline inflates the speedup, so the claim is judged "
             "on the measured throughputs\n";
    }
  }
  out << "verdict   " << models::verdict_name(verdict) << ": " << figure(claimed);
  switch (verdict) {
    case models::Verdict::kPlausible:
      if (claimed > bound * scale) {
        out << " is above the bound " << figure(bound * scale) << " by less than the "
            << printf_string("%.0f%%", 100 * kTolerance) << " tolerance";
      } else if (claimed > predicted * scale * (1 + kTolerance)) {
        out << " is above the predicted " << figure(predicted * scale) << " and under the bound "
            << figure(bound * scale) << " (better overlap than modelled)";
      } else {
        out << " is within " << printf_string("%.0f%%", 100 * kTolerance) << " of the predicted "
            << figure(predicted * scale) << " or above it (under the "
            << "bound " << figure(bound * scale) << ")";
      }
      out << "\n";
      break;
    case models::Verdict::kOptimistic:
      if (claimed > ideal * (1 + 1e-9)) {
        out << " is beyond linear scaling of the baseline (" << figure(ideal)
            << "): only a slower baseline or per-GPU work that shrank (strong scaling into "
               "caches) gives that\n";
      } else {
        out << " is beyond the " << figure(bound * scale)
            << " this cluster allows even with every transfer hidden behind compute, by more "
               "than the "
            << printf_string("%.0f%%", 100 * kTolerance) << " tolerance"
            << (measured ? "; the claim is too good for this fabric\n"
                         : "; unless the baseline ran slower than predicted, the claim is too "
                           "good for this fabric\n");
      }
      break;
    case models::Verdict::kPessimistic: {
      const double implied = measured ? claimed_point.global_batch / measured->second
                                      : claimed_point.global_batch /
                                            (c.speedup * baseline_point.throughput);  // s/step
      out << " is below the predicted " << figure(predicted * scale) << " by more than the "
          << printf_string("%.0f%%", 100 * kTolerance) << " tolerance: the run lost about "
          << printf_string("%.3f", (implied - to_seconds(claimed_point.step_time)) * 1e3)
          << " ms per step more than the model expects at " << c.nodes
          << " nodes. Look for a bottleneck this cluster should not have: input pipeline, "
             "stragglers, collectives not using every NIC or falling back to a slower "
             "transport"
          << (measured ? "" : ", or a faster baseline than modelled") << "\n";
      break;
    }
  }
  return kExitOk;
}

}  // namespace trainsim::cli
