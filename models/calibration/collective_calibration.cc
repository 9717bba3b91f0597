#include "models/calibration/collective_calibration.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include <Eigen/Dense>
#include <unsupported/Eigen/LevenbergMarquardt>
#include <unsupported/Eigen/NumericalDiff>

#include "engine/check.h"
#include "engine/routing.h"
#include "models/collectives/algorithms.h"
#include "models/config/config_error.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {

RunShape run_shape(const MeasuredRun& m, const ClusterSpec& cluster) {
  const NcclTestsRun& run = m.run;
  auto fail = [&](const std::string& message) -> void {
    throw ConfigError(m.source, run.first_line, 1, "", message);
  };
  if (run.ranks <= 0) fail("the log lists no ranks ('# Rank N ... on HOST device D' lines)");
  RunShape shape;
  shape.nodes = run.nodes();
  if (run.ranks % shape.nodes != 0) {
    fail(std::to_string(run.ranks) + " ranks do not split evenly over " +
         std::to_string(shape.nodes) + " hosts");
  }
  shape.gpus_per_node = run.ranks / shape.nodes;
  if (shape.nodes > cluster.nodes) {
    fail("the run used " + std::to_string(shape.nodes) + " nodes; cluster '" + cluster.name +
         "' has " + std::to_string(cluster.nodes));
  }
  if (shape.gpus_per_node > cluster.gpus_per_node) {
    fail("the run used " + std::to_string(shape.gpus_per_node) + " GPUs per node; cluster '" +
         cluster.name + "' has " + std::to_string(cluster.gpus_per_node));
  }
  return shape;
}

Algorithm default_algorithm(CollectiveOp op, const ClusterSpec& cluster, int nodes) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return is_applicable(Algorithm::kNvls, op, cluster, nodes) ? Algorithm::kNvls
                                                                 : Algorithm::kRing;
    case CollectiveOp::kAllToAll:
      return Algorithm::kDirect;
    case CollectiveOp::kSendRecv:
      return Algorithm::kP2p;
    default:
      return Algorithm::kRing;
  }
}

std::optional<Algorithm> algorithm_in_file_name(const std::string& path) {
  std::string base =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::transform(base.begin(), base.end(), base.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::regex word(R"([a-z0-9]+)");
  for (auto it = std::sregex_iterator(base.begin(), base.end(), word); it != std::sregex_iterator();
       ++it) {
    const std::string w = it->str();
    if (w == "ring" || w == "tree" || w == "nvls") return parse_algorithm(w);
  }
  return std::nullopt;
}

std::vector<MeasuredRun> measured_runs(const NcclTestsLog& log, std::optional<Algorithm> forced) {
  std::vector<MeasuredRun> out;
  const auto named = forced ? forced : algorithm_in_file_name(log.file);
  for (const NcclTestsRun& run : log.runs) {
    MeasuredRun m{log.file, run, std::nullopt};
    // A name in the file applies to the operations it can run (e.g. NVLS to all-reduce).
    if (named && (forced || run.op == CollectiveOp::kAllReduce)) m.algorithm = named;
    out.push_back(m);
  }
  return out;
}

std::vector<FitRow> predict_runs(const ClusterSpec& cluster, const std::vector<MeasuredRun>& runs) {
  std::vector<FitRow> rows;
  for (const MeasuredRun& m : runs) {
    const RunShape shape = run_shape(m, cluster);
    const ClusterSpec spec = restrict_gpus_per_node(cluster, shape.gpus_per_node);
    const Algorithm algorithm =
        m.algorithm ? *m.algorithm : default_algorithm(m.run.op, spec, shape.nodes);
    if (!is_applicable(algorithm, m.run.op, spec, shape.nodes)) {
      throw ConfigError(m.source, m.run.first_line, 1, "",
                        std::string(algorithm_name(algorithm)) + " cannot run " +
                            std::string(collective_name(m.run.op)) + " on " +
                            std::to_string(shape.nodes) + " node(s) of cluster '" + cluster.name +
                            "'");
    }
    const ClusterTopology topology = build_cluster_topology(spec, shape.nodes);
    Router router(topology.topology);
    AnalyticCache cache;
    const double factor = bus_bandwidth_factor(m.run.op, m.run.ranks);
    for (const NcclTestsRow& r : m.run.rows) {
      FitRow row;
      row.source = m.source;
      row.op = m.run.op;
      row.algorithm = algorithm;
      row.line = r.line;
      row.size_bytes = r.size_bytes;
      row.measured_us = r.time_us;
      row.measured_busbw = r.busbw_gb_per_s;
      const Time t = analytic_collective_time(
          router, spec, topology, {m.run.op, algorithm, static_cast<double>(r.size_bytes), 0},
          &cache);
      row.predicted_us = to_microseconds(t);
      row.predicted_busbw =
          row.predicted_us > 0 ? r.size_bytes / (row.predicted_us * 1e3) * factor : 0.0;
      // Measured busbw from size and time, not the rounded printed figure.
      const double measured_busbw = r.size_bytes / (r.time_us * 1e3) * factor;
      row.error =
          measured_busbw > 0 ? (row.predicted_busbw - measured_busbw) / measured_busbw : 0.0;
      rows.push_back(row);
    }
  }
  return rows;
}

std::vector<SourceError> summarize_errors(const std::vector<FitRow>& rows, double min_bytes) {
  std::vector<SourceError> out;
  for (const FitRow& r : rows) {
    if (r.size_bytes < min_bytes) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const SourceError& e) { return e.source == r.source; });
    if (it == out.end()) {
      out.push_back(SourceError{r.source});
      it = out.end() - 1;
    }
    ++it->rows;
    it->mean_abs_error += std::abs(r.error);
    it->max_abs_error = std::max(it->max_abs_error, std::abs(r.error));
  }
  for (SourceError& e : out) e.mean_abs_error /= std::max(1, e.rows);
  return out;
}

namespace {

// One fitted quantity: how it is stored in the cluster spec and how the optimiser sees it.
struct Parameter {
  std::string key;
  std::string unit;
  bool fraction = false;  // in (0, 1) via a logistic; else positive via exp
  double initial = 0.0;
  std::function<void(ClusterSpec&, double)> apply;

  double value(double x) const {
    if (fraction) {
      const double z = std::log(initial / (1.0 - initial)) + x;
      return 1.0 / (1.0 + std::exp(-z));
    }
    return initial * std::exp(x);
  }
};

constexpr double kPriorWeight = 0.01;  // pulls unidentifiable parameters to their starting value
constexpr double kScoredBytes = 1024.0 * 1024.0;
constexpr double kSmallSizeWeight = 0.3;
// Channel count a fitted algorithm may ramp up to (NCCL runs up to 32 channels on H100; 16 lets a
// channel be at most an eighth of... enough resolution for the ramps the logs show).
constexpr int kFittedChannels = 16;

double clamp_fraction(double v) { return std::clamp(v, 0.05, 0.98); }

std::vector<Parameter> parameters_for(const ClusterSpec& base, const std::vector<MeasuredRun>& runs,
                                      std::set<Algorithm>& used) {
  bool inside = false;
  bool across = false;
  for (const MeasuredRun& m : runs) {
    const RunShape shape = run_shape(m, base);
    inside |= shape.gpus_per_node > 1;
    across |= shape.nodes > 1;
    const ClusterSpec spec = restrict_gpus_per_node(base, shape.gpus_per_node);
    used.insert(m.algorithm ? *m.algorithm : default_algorithm(m.run.op, spec, shape.nodes));
  }
  std::vector<Parameter> params;
  auto latency_start = [](Time t) { return std::max(to_seconds(t), 0.2e-6); };
  const std::string intra = "intra_node.gpu_link";
  if (inside) {
    params.push_back(
        {intra + ".latency", "s", false, latency_start(base.intra_node.gpu_link.latency),
         [](ClusterSpec& c, double v) { c.intra_node.gpu_link.latency = time_from_seconds(v); }});
    params.push_back({intra + ".efficiency", "", true,
                      clamp_fraction(base.intra_node.gpu_link.efficiency),
                      [](ClusterSpec& c, double v) { c.intra_node.gpu_link.efficiency = v; }});
  }
  if (across) {
    params.push_back({"nic.latency", "s", false, latency_start(base.nic.link.latency),
                      [](ClusterSpec& c, double v) { c.nic.link.latency = time_from_seconds(v); }});
    params.push_back({"nic.efficiency", "", true, clamp_fraction(base.nic.link.efficiency),
                      [](ClusterSpec& c, double v) { c.nic.link.efficiency = v; }});
  }
  const double link = std::max(inside ? base.intra_node.gpu_link.effective_bandwidth() : 0.0,
                               across ? base.nic.link.effective_bandwidth() : 0.0);
  for (const Algorithm a : used) {
    for (const Protocol p : base.collectives.protocols(a)) {
      const std::string key = "collectives.algorithms." + std::string(algorithm_name(a)) + "." +
                              std::string(protocol_name(p));
      const AlgorithmTuning t = base.collectives.of(a, p);
      params.push_back({key + ".software_latency", "s", false,
                        std::max(to_seconds(t.software_latency), 2e-6),
                        [a, p](ClusterSpec& c, double v) {
                          c.collectives.at(a, p).software_latency = time_from_seconds(v);
                        }});
      // Ring (Simple) efficiency anchors the links' achieved bandwidth; the rest is relative to it.
      if (a != Algorithm::kRing || p != Protocol::kSimple) {
        params.push_back(
            {key + ".efficiency", "", true, clamp_fraction(t.efficiency),
             [a, p](ClusterSpec& c, double v) { c.collectives.at(a, p).efficiency = v; }});
      }
      // Channel ramp: messages use more channels (thread blocks, each with limited throughput)
      // as they grow, up to kFittedChannels. Unless given, starts with an eighth of the link per
      // channel and a channel per MiB (the link's full bandwidth from 8 MiB).
      params.push_back({key + ".channel_bandwidth", "B/s", false,
                        std::isfinite(t.channel_bandwidth) ? t.channel_bandwidth : link / 8,
                        [a, p](ClusterSpec& c, double v) {
                          c.collectives.at(a, p).channel_bandwidth = v;
                          c.collectives.at(a, p).max_channels = kFittedChannels;
                        }});
      params.push_back(
          {key + ".bytes_per_channel", "B", false,
           t.bytes_per_channel > 0 ? t.bytes_per_channel : 1024.0 * 1024,
           [a, p](ClusterSpec& c, double v) { c.collectives.at(a, p).bytes_per_channel = v; }});
    }
  }
  return params;
}

ClusterSpec apply(const ClusterSpec& base, const std::vector<Parameter>& params,
                  const Eigen::VectorXd& x) {
  ClusterSpec spec = base;
  for (std::size_t i = 0; i < params.size(); ++i)
    params[i].apply(spec, params[i].value(x[static_cast<Eigen::Index>(i)]));
  return spec;
}

struct Objective : Eigen::DenseFunctor<double> {
  Objective(const ClusterSpec& base, const std::vector<MeasuredRun>& runs,
            const std::vector<Parameter>& params, int rows)
      : Eigen::DenseFunctor<double>(static_cast<int>(params.size()),
                                    rows + static_cast<int>(params.size())),
        base(base),
        runs(runs),
        params(params) {}

  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residuals) const {
    const auto rows = predict_runs(apply(base, params, x), runs);
    Eigen::Index i = 0;
    for (const FitRow& r : rows) {
      // Sizes of at least 1 MiB (those users scale with, and that validation scores) weigh
      // fully; smaller ones still pin the latencies.
      const double weight = r.size_bytes >= kScoredBytes ? 1.0 : kSmallSizeWeight;
      residuals[i++] =
          weight * (r.predicted_us > 0 ? std::log(r.predicted_us / r.measured_us) : 10.0);
    }
    for (Eigen::Index j = 0; j < x.size(); ++j) residuals[i++] = kPriorWeight * x[j];
    return 0;
  }

  const ClusterSpec& base;
  const std::vector<MeasuredRun>& runs;
  const std::vector<Parameter>& params;
};

struct Fit {
  ClusterSpec cluster;
  std::vector<FittedParameter> parameters;
  double cost = 0.0;
};

Fit fit(const ClusterSpec& base, const std::vector<MeasuredRun>& runs,
        const std::vector<Parameter>& params, int rows) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(params.size()));
  Objective objective(base, runs, params, rows);
  Eigen::NumericalDiff<Objective> numeric(objective, 1e-4);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Objective>> lm(numeric);
  lm.setMaxfev(400 * static_cast<int>(params.size() + 1));
  lm.setXtol(1e-10);
  lm.setFtol(1e-12);
  lm.minimize(x);
  Fit out;
  out.cluster = apply(base, params, x);
  Eigen::VectorXd residuals(rows + static_cast<Eigen::Index>(params.size()));
  objective(x, residuals);
  out.cost = residuals.squaredNorm();
  for (std::size_t i = 0; i < params.size(); ++i) {
    out.parameters.push_back(
        {params[i].key, params[i].value(x[static_cast<Eigen::Index>(i)]), params[i].unit});
  }
  return out;
}

}  // namespace

CalibrationResult calibrate_collectives(const ClusterSpec& base,
                                        const std::vector<MeasuredRun>& runs) {
  TRAINSIM_ASSERT(!runs.empty(), "nothing to calibrate against");
  std::set<Algorithm> used;
  std::vector<Parameter> params = parameters_for(base, runs, used);
  int rows = 0;
  for (const MeasuredRun& m : runs) rows += static_cast<int>(m.run.rows.size());

  // The channel ramps make the problem non-convex. Fit once, then for each algorithm in turn try
  // restarting its ramp from several lengths (the size at which a message reaches all its
  // channels), keeping any restart that lowers the cost.
  Fit best = fit(base, runs, params, rows);
  const double mib = 1024.0 * 1024.0;
  auto refit_from = [&](const ClusterSpec& start) {
    std::set<Algorithm> ignored;
    Fit candidate = fit(start, runs, parameters_for(start, runs, ignored), rows);
    if (candidate.cost < best.cost) best = std::move(candidate);
  };
  auto restart_ramps = [&](Algorithm a, Protocol p) {
    for (const double reach : {1 * mib, 16 * mib, 256 * mib, 2048 * mib}) {
      ClusterSpec start = best.cluster;
      AlgorithmTuning& t = start.collectives.at(a, p);
      t.bytes_per_channel = reach / kFittedChannels;
      t.channel_bandwidth = std::numeric_limits<double>::infinity();  // restart from link / 8
      refit_from(start);
    }
  };
  for (const Algorithm a : used) restart_ramps(a, Protocol::kSimple);
  // A second protocol (NCCL's LL128: lower latency, less bandwidth) where it helps: NCCL picks
  // the faster per size, and so does the model.
  for (const Algorithm a : used) {
    // Only runs with small messages say anything about a low-latency protocol.
    bool small = false;
    for (const MeasuredRun& m : runs) {
      const RunShape shape = run_shape(m, base);
      const ClusterSpec spec = restrict_gpus_per_node(base, shape.gpus_per_node);
      const Algorithm used_here =
          m.algorithm ? *m.algorithm : default_algorithm(m.run.op, spec, shape.nodes);
      for (const NcclTestsRow& r : m.run.rows)
        small |= used_here == a && r.size_bytes < kScoredBytes;
    }
    if (!small) continue;
    const double before = best.cost;
    const ClusterSpec keep = best.cluster;
    const std::vector<FittedParameter> keep_parameters = best.parameters;
    ClusterSpec start = best.cluster;
    AlgorithmTuning low = start.collectives.of(a, Protocol::kSimple);
    low.software_latency = low.software_latency / 2;
    low.efficiency = 0.5;
    low.channel_bandwidth = std::numeric_limits<double>::infinity();
    low.bytes_per_channel = 0.0;
    start.collectives.at(a, Protocol::kLl128) = low;
    best.cost = std::numeric_limits<double>::infinity();
    best.cluster = start;
    refit_from(start);
    restart_ramps(a, Protocol::kLl128);
    // Keep the extra protocol only for a clear gain (it adds four parameters).
    if (best.cost > 0.8 * before) {
      best.cluster = keep;
      best.parameters = keep_parameters;
      best.cost = before;
    }
  }
  CalibrationResult result;
  result.cluster = best.cluster;
  result.parameters = best.parameters;
  result.rows = predict_runs(result.cluster, runs);
  double sum = 0.0;
  for (const FitRow& r : result.rows) sum += std::pow(std::log(r.predicted_us / r.measured_us), 2);
  result.rms_log_error = std::sqrt(sum / std::max<std::size_t>(1, result.rows.size()));
  return result;
}

}  // namespace trainsim::models
