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

#include "engine/check.h"
#include "engine/parallel.h"
#include "engine/routing.h"
#include "models/collectives/algorithms.h"
#include "models/hardware/cluster_topology.h"
#include "models/spec/config_error.h"

namespace trainsim::models {

RunShape run_shape(const MeasuredRun& m, const ClusterSpec& cluster) {
  const NcclTestsRun& run = m.run;
  auto fail = [&](const std::string& message) -> void {
    throw ConfigError(m.source, run.first_line, 1, "", message);
  };
  RunShape shape;
  if (m.shape) {
    shape = *m.shape;
  } else {
    if (run.ranks <= 0) {
      fail(
          "the log lists no ranks ('# Rank N ... on HOST device D' lines): give the run's nodes "
          "and gpus_per_node");
    }
    const int hosts = run.nodes();
    const int per_node = std::max(1, cluster.intra_node.hosts);
    if (hosts % per_node != 0) {
      fail(std::to_string(hosts) + " hosts do not make whole nodes of " + std::to_string(per_node) +
           " hosts (intra_node.hosts of cluster '" + cluster.name + "')");
    }
    shape.nodes = hosts / per_node;
    if (run.ranks % shape.nodes != 0) {
      fail(std::to_string(run.ranks) + " ranks do not split evenly over " +
           std::to_string(shape.nodes) + " nodes");
    }
    shape.gpus_per_node = run.ranks / shape.nodes;
  }
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

std::optional<Algorithm> algorithm_in_file_name(const std::string& path) {
  std::string base =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  std::transform(base.begin(), base.end(), base.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  static const std::regex word(R"([a-z0-9]+)");
  for (auto it = std::sregex_iterator(base.begin(), base.end(), word); it != std::sregex_iterator();
       ++it) {
    const std::string w = it->str();
    if (w == "ring" || w == "tree" || w == "nvls" || w == "nvlstree") return parse_algorithm(w);
  }
  return std::nullopt;
}

std::vector<MeasuredRun> measured_runs(const NcclTestsLog& log, std::optional<Algorithm> forced) {
  std::vector<MeasuredRun> out;
  const auto named = forced ? forced : algorithm_in_file_name(log.file);
  for (const NcclTestsRun& run : log.runs) {
    MeasuredRun m;
    m.source = log.file;
    m.run = run;
    m.gpus_per_thread = std::max(1, log.gpus_per_thread);
    // A name in the file applies to the operations it can run (e.g. NVLS to all-reduce); a
    // forced one (NCCL_ALGO) to every collective but the point-to-point ones, which ignore it.
    const bool p2p = run.op == CollectiveOp::kAllToAll || run.op == CollectiveOp::kSendRecv;
    if (named && (forced ? !p2p : run.op == CollectiveOp::kAllReduce)) m.algorithm = named;
    out.push_back(m);
  }
  return out;
}

ClusterSpec cluster_for_run(const ClusterSpec& cluster, const MeasuredRun& m) {
  const RunShape shape = run_shape(m, cluster);
  ClusterSpec spec = restrict_gpus_per_node(cluster, shape.gpus_per_node);
  for (const auto& [name, value] : m.env) {
    const std::string error = apply_nccl_env(spec.collectives, name, value);
    if (!error.empty()) throw ConfigError(m.source, m.run.first_line, 1, name, error);
  }
  if (m.algorithm) spec.collectives.algorithms = {*m.algorithm};
  return spec;
}

namespace {

double measured_time(const NcclTestsRow& r) {
  // Both columns run the same operation; noise only slows one down.
  if (std::isfinite(r.in_place_time_us) && r.in_place_time_us > 0) {
    return std::min(r.time_us, r.in_place_time_us);
  }
  return r.time_us;
}

}  // namespace

std::vector<FitRow> predict_runs(const ClusterSpec& cluster, const std::vector<MeasuredRun>& runs) {
  std::vector<FitRow> rows;
  for (const MeasuredRun& m : runs) {
    const RunShape shape = run_shape(m, cluster);
    const ClusterSpec spec = cluster_for_run(cluster, m);
    if (m.algorithm && !is_applicable(*m.algorithm, m.run.op, spec, shape.nodes)) {
      throw ConfigError(m.source, m.run.first_line, 1, "",
                        std::string(algorithm_name(*m.algorithm)) + " cannot run " +
                            std::string(collective_name(m.run.op)) + " on " +
                            std::to_string(shape.nodes) + " node(s) of cluster '" + cluster.name +
                            "'");
    }
    const ClusterTopology topology = build_cluster_topology(spec, shape.nodes);
    Router router(topology.topology);
    AnalyticCache cache;
    const int ranks = shape.nodes * shape.gpus_per_node;
    const double factor = bus_bandwidth_factor(m.run.op, ranks);
    for (const NcclTestsRow& r : m.run.rows) {
      if (r.size_bytes <= 0) continue;
      FitRow row;
      row.source = m.source;
      row.op = m.run.op;
      row.line = r.line;
      row.size_bytes = r.size_bytes;
      row.measured_us = measured_time(r);
      const PickedAlgorithm picked =
          pick_algorithm(router, spec, topology, m.run.op, static_cast<double>(r.size_bytes),
                         &cache, m.gpus_per_thread);
      row.algorithm = picked.algorithm;
      row.protocol = picked.protocol;
      row.predicted_us = to_microseconds(picked.analytic_time);
      row.predicted_busbw =
          row.predicted_us > 0 ? r.size_bytes / (row.predicted_us * 1e3) * factor : 0.0;
      // Measured busbw from size and time, not the rounded printed figure.
      row.measured_busbw = r.size_bytes / (row.measured_us * 1e3) * factor;
      row.error = row.measured_busbw > 0
                      ? (row.predicted_busbw - row.measured_busbw) / row.measured_busbw
                      : 0.0;
      rows.push_back(row);
    }
  }
  return rows;
}

std::vector<SourceError> summarize_errors(const std::vector<FitRow>& rows, double min_bytes,
                                          bool per_collective) {
  std::vector<SourceError> out;
  for (const FitRow& r : rows) {
    if (r.size_bytes < min_bytes) continue;
    const std::optional<CollectiveOp> op =
        per_collective ? std::optional<CollectiveOp>(r.op) : std::nullopt;
    auto it = std::find_if(out.begin(), out.end(), [&](const SourceError& e) {
      return e.source == r.source && e.op == op;
    });
    if (it == out.end()) {
      out.push_back(SourceError{r.source, op});
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

// One fitted quantity: how it is stored in a cluster and how the optimiser sees it.
// Hardware classes: constants of the hardware, shared by every system built of it.
std::string nvlink_class(const ClusterSpec& c) {
  return std::string(gpu_arch_name(c.gpu.architecture)) +
         (c.intra_node.fabric == IntraNodeFabric::kNvSwitch ? " nvlink" : " pcie");
}
std::string nic_class(const ClusterSpec& c) {
  char speed[32];
  std::snprintf(speed, sizeof speed, " %.0fG", c.nic.link.bandwidth_bytes_per_s * 8 / 1e9);
  return std::string(net_transport_name(c.nic.transport)) + speed;
}
std::string transport_class(const ClusterSpec& c) {
  return std::string(net_transport_name(c.nic.transport));
}

}  // namespace

std::vector<std::string> hardware_classes(const ClusterSpec& c) {
  return {nvlink_class(c), nic_class(c), transport_class(c)};
}

namespace {

struct Parameter {
  std::string key;
  std::string unit;
  int system = -1;    // -1: shared by all systems (of `group`, if set)
  std::string group;  // a hardware class: shared by the systems of it
  std::function<std::string(const ClusterSpec&)> group_of;
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
  double derivative(double x) const {
    if (fraction) {
      const double v = value(x);
      return v * (1.0 - v);
    }
    return value(x);
  }
};

// Settings of the fit, not physical constants. A parameter the logs say little about is pulled
// weakly to its starting value (a residual of weight 0.02 on its log ratio, against 1 for each
// measured row, so a handful of rows outweighs it). Rows below 1 MiB (the size the accuracy is
// scored from) count 0.3, so that latency-bound rows inform the latencies without outweighing
// the bandwidth rows.
constexpr double kPriorWeight = 0.02;
constexpr double kScoredBytes = 1024.0 * 1024.0;
constexpr double kSmallSizeWeight = 0.3;

// Fractions are fitted as logits, so a start at exactly 0 or 1 is moved inside the range first.
double clamp_fraction(double v) { return std::clamp(v, 0.05, 0.995); }

// What the runs of a system exercise.
struct Exercised {
  bool inside = false;   // GPUs of a node talk (NVLink or PCIe)
  bool across = false;   // nodes talk over NICs
  bool p2p = false;      // point-to-point operations
  bool p2p_net = false;  // ... across nodes
  bool launch = false;   // small messages (launch cost visible)
  bool nvls = false;     // NVLS or NVLSTree runs
  bool ll = false;       // LL crosses the network
  bool ll128 = false;    // ... LL128
};

Exercised exercised(const SystemRuns& s) {
  Exercised e;
  for (const MeasuredRun& m : s.runs) {
    const RunShape shape = run_shape(m, s.cluster);
    e.inside |= shape.gpus_per_node > 1;
    e.across |= shape.nodes > 1;
    const bool p2p = m.run.op == CollectiveOp::kAllToAll || m.run.op == CollectiveOp::kSendRecv;
    e.p2p |= p2p;
    e.p2p_net |= p2p && shape.nodes > 1;
    // What NCCL runs for each row, as the prediction picks it (its tuner takes NCCL's own
    // figures, not the fitted constants): NVLS's constants are informed where NVLS or NVLSTree
    // runs (not GB200's log, run with NCCL_NVLS_ENABLE=0, nor a Ring-forced one), the LL and
    // LL128 scales, which multiply network steps, where those protocols cross the network (not
    // AWS p4de, whose plugin leaves Simple alone).
    const ClusterSpec spec = cluster_for_run(s.cluster, m);
    const ClusterTopology topology = build_cluster_topology(spec, shape.nodes);
    Router router(topology.topology);
    AnalyticCache cache;
    for (const NcclTestsRow& r : m.run.rows) {
      e.launch |= r.size_bytes < kScoredBytes;
      if (r.size_bytes <= 0) continue;
      const PickedAlgorithm picked =
          pick_algorithm(router, spec, topology, m.run.op, static_cast<double>(r.size_bytes),
                         &cache, m.gpus_per_thread, /*with_time=*/false);
      e.nvls |= picked.algorithm == Algorithm::kNvls || picked.algorithm == Algorithm::kNvlsTree;
      e.ll |= shape.nodes > 1 && picked.protocol == Protocol::kLl;
      e.ll128 |= shape.nodes > 1 && picked.protocol == Protocol::kLl128;
    }
  }
  return e;
}

// The achieved fraction of NVLink (or PCIe) and of a NIC's line rate, and NVLS's step latency:
// constants of the hardware, one per class of it among the systems.
std::vector<Parameter> hardware_class_parameters(const std::vector<SystemRuns>& systems,
                                                 const std::vector<Exercised>& exercise) {
  std::vector<Parameter> params;
  auto add_class_of = [&](const std::string& key, const std::string& unit,
                          std::string (*group_of)(const ClusterSpec&), auto informs, auto get,
                          auto set) {
    std::map<std::string, double> classes;
    for (std::size_t i = 0; i < systems.size(); ++i) {
      const SystemRuns& s = systems[i];
      if (!s.runs.empty() && informs(exercise[i]))
        classes.emplace(group_of(s.cluster), get(s.cluster));
    }
    for (const auto& [group, start] : classes) {
      const bool fraction = unit.empty();
      params.push_back({key, unit, -1, group, group_of, fraction,
                        fraction ? clamp_fraction(start) : start, set});
    }
  };
  auto add_class = [&](const std::string& key, std::string (*group_of)(const ClusterSpec&),
                       auto informs, auto get,
                       auto set) { add_class_of(key, "", group_of, informs, get, set); };
  add_class(
      "intra_node.gpu_link.efficiency", nvlink_class, [](const Exercised& e) { return e.inside; },
      [](const ClusterSpec& c) { return c.intra_node.gpu_link.efficiency; },
      [](ClusterSpec& c, double v) { c.intra_node.gpu_link.efficiency = v; });
  add_class(
      "intra_node.nvls_efficiency", nvlink_class, [](const Exercised& e) { return e.nvls; },
      [](const ClusterSpec& c) {
        if (c.intra_node.nvls_efficiency > 0) return c.intra_node.nvls_efficiency;
        return c.gpu.architecture == GpuArch::kBlackwell ? 0.74 : 0.85;  // NCCL's (tuning.cc)
      },
      [](ClusterSpec& c, double v) { c.intra_node.nvls_efficiency = v; });
  add_class_of(
      "intra_node.nvls_step_latency", "s", nvlink_class, [](const Exercised& e) { return e.nvls; },
      [](const ClusterSpec& c) {
        // started at 1 us at least: the fit's steps are relative to the value
        return std::max(to_seconds(c.intra_node.nvls_step_latency), 1e-6);
      },
      [](ClusterSpec& c, double v) { c.intra_node.nvls_step_latency = time_from_seconds(v); });
  add_class(
      "collectives.p2p_nvlink_efficiency", nvlink_class,
      [](const Exercised& e) { return e.p2p && e.inside; },
      [](const ClusterSpec& c) { return c.collectives.p2p_nvlink_efficiency; },
      [](ClusterSpec& c, double v) { c.collectives.p2p_nvlink_efficiency = v; });
  add_class(
      "nic.efficiency", nic_class, [](const Exercised& e) { return e.across; },
      [](const ClusterSpec& c) { return c.nic.link.efficiency; },
      [](ClusterSpec& c, double v) { c.nic.link.efficiency = v; });
  return params;
}

// The constants every system shares (per transport for the network's hop latency), those the
// systems' runs exercise.
std::vector<Parameter> shared_parameters(const std::vector<SystemRuns>& systems,
                                         const std::vector<Exercised>& exercise) {
  Exercised any;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    if (systems[i].runs.empty()) continue;
    const Exercised& e = exercise[i];
    any.inside |= e.inside;
    any.across |= e.across;
    any.p2p |= e.p2p;
    any.p2p_net |= e.p2p_net;
    any.launch |= e.launch;
    any.ll |= e.ll;
    any.ll128 |= e.ll128;
  }
  std::vector<Parameter> params;
  const CollectiveTuning& t = systems.front().cluster.collectives;
  if (any.launch || any.inside || any.across) {
    params.push_back(
        {"collectives.launch_latency",
         "s",
         -1,
         "",
         {},
         false,
         // started at 0.5 us at least: the fit's steps are relative to the value
         std::max(to_seconds(t.launch_latency), 0.5e-6),
         [](ClusterSpec& s, double v) { s.collectives.launch_latency = time_from_seconds(v); }});
  }
  // Hop latencies inside a node are NCCL's own figures (nvlink/pcie_latency_scale 1): the logs in
  // validation/ fitted them to 0.01-4.5 times those, one system against another, where NCCL's
  // figures predict held-out logs better.
  // Per-hop network latency: one per transport, shared by the systems on it.
  std::set<NetTransport> transports;
  for (std::size_t i = 0; i < systems.size(); ++i) {
    if (!systems[i].runs.empty() && exercise[i].across) {
      transports.insert(systems[i].cluster.nic.transport);
    }
  }
  for (const NetTransport transport : transports) {
    const std::string group(net_transport_name(transport));
    double start = 1.0;
    for (const SystemRuns& s : systems) {
      if (s.cluster.nic.transport == transport) start = s.cluster.collectives.network_latency_scale;
    }
    Parameter p{"collectives.network_latency_scale",
                "",
                -1,
                group,
                transport_class,
                false,
                start,
                [](ClusterSpec& s, double v) { s.collectives.network_latency_scale = v; }};
    params.push_back(p);
  }
  if (any.ll) {
    params.push_back({"collectives.ll_latency_scale",
                      "",
                      -1,
                      "",
                      {},
                      false,
                      t.ll_latency_scale,
                      [](ClusterSpec& s, double v) { s.collectives.ll_latency_scale = v; }});
  }
  if (any.ll128) {
    params.push_back({"collectives.ll128_latency_scale",
                      "",
                      -1,
                      "",
                      {},
                      false,
                      t.ll128_latency_scale,
                      [](ClusterSpec& s, double v) { s.collectives.ll128_latency_scale = v; }});
  }
  if (any.p2p_net) {
    params.push_back({"collectives.p2p_channel_bandwidth",
                      "B/s",
                      -1,
                      "",
                      {},
                      false,
                      t.p2p_channel_bandwidth,
                      [](ClusterSpec& s, double v) { s.collectives.p2p_channel_bandwidth = v; }});
  }
  if (any.p2p && any.inside) {
    params.push_back(
        {"collectives.p2p_nvlink_channel_bandwidth",
         "B/s",
         -1,
         "",
         {},
         false,
         t.p2p_nvlink_channel_bandwidth,
         [](ClusterSpec& s, double v) { s.collectives.p2p_nvlink_channel_bandwidth = v; }});
  }
  // collectives.p2p_network_efficiency is not fitted: with the operations of a sender sharing
  // its p2p channels, the logs put it at 0.97 +- 0.05, within its uncertainty of 1.
  return params;
}

std::vector<Parameter> parameters_for(const std::vector<SystemRuns>& systems, bool shared) {
  // What each system's runs exercise, worked out once (it picks NCCL's choice for every row).
  std::vector<Exercised> exercise;
  for (const SystemRuns& s : systems) exercise.push_back(exercised(s));
  std::vector<Parameter> params = hardware_class_parameters(systems, exercise);
  if (shared) {
    for (Parameter& p : shared_parameters(systems, exercise)) params.push_back(std::move(p));
  }
  return params;
}

std::vector<ClusterSpec> apply(const std::vector<SystemRuns>& systems,
                               const std::vector<Parameter>& params, const Eigen::VectorXd& x) {
  std::vector<ClusterSpec> out;
  for (const SystemRuns& s : systems) out.push_back(s.cluster);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double v = params[i].value(x[static_cast<Eigen::Index>(i)]);
    if (params[i].system >= 0) {
      params[i].apply(out[params[i].system], v);
    } else {
      for (ClusterSpec& c : out) {
        if (params[i].group.empty() || params[i].group_of(c) == params[i].group) {
          params[i].apply(c, v);
        }
      }
    }
  }
  return out;
}

int row_count(const std::vector<SystemRuns>& systems) {
  int rows = 0;
  for (const SystemRuns& s : systems) {
    for (const MeasuredRun& m : s.runs) {
      for (const NcclTestsRow& r : m.run.rows) rows += r.size_bytes > 0;
    }
  }
  return rows;
}

double residual(const FitRow& r) {
  const double weight = r.size_bytes >= kScoredBytes ? 1.0 : kSmallSizeWeight;
  return weight * (r.predicted_us > 0 ? std::log(r.predicted_us / r.measured_us) : 10.0);
}

struct Objective : Eigen::DenseFunctor<double> {
  Objective(const std::vector<SystemRuns>& systems, const std::vector<Parameter>& params, int rows)
      : Eigen::DenseFunctor<double>(static_cast<int>(params.size()),
                                    rows + static_cast<int>(params.size())),
        systems(systems),
        params(params) {}

  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residuals) const {
    Eigen::Index i = 0;
    try {
      const auto clusters = apply(systems, params, x);
      for (std::size_t s = 0; s < systems.size(); ++s) {
        if (systems[s].runs.empty()) continue;
        for (const FitRow& r : predict_runs(clusters[s], systems[s].runs))
          residuals[i++] = residual(r);
      }
    } catch (const TimeRangeError&) {
      // Values the simulator cannot run (a latency beyond its clock): far worse than any fit, so
      // the search backs away from them.
      constexpr double kOutOfRange = 50.0;
      for (i = 0; i < residuals.size() - x.size(); ++i) residuals[i] = kOutOfRange;
    }
    for (Eigen::Index j = 0; j < x.size(); ++j) residuals[i++] = kPriorWeight * x[j];
    return 0;
  }

  const std::vector<SystemRuns>& systems;
  const std::vector<Parameter>& params;
};

// Finite differences with an absolute step in x (a log ratio of the value: 1e-3 moves it by
// 0.1%). A step relative to x, as Eigen's NumericalDiff takes, collapses near x = 0 (a start at
// the optimum) below the nanosecond resolution of the simulated times.
struct Differenced : Objective {
  using Objective::Objective;
  static constexpr double kStep = 1e-3;
  bool central = false;

  int df(const Eigen::VectorXd& x, Eigen::MatrixXd& jacobian) const {
    Eigen::VectorXd base(values());
    if (!central) (*this)(x, base);
    for (Eigen::Index j = 0; j < x.size(); ++j) {
      Eigen::VectorXd up(values());
      Eigen::VectorXd xj = x;
      xj[j] += kStep;
      (*this)(xj, up);
      if (central) {
        Eigen::VectorXd down(values());
        xj[j] = x[j] - kStep;
        (*this)(xj, down);
        jacobian.col(j) = (up - down) / (2 * kStep);
      } else {
        jacobian.col(j) = (up - base) / kStep;
      }
    }
    return 0;
  }
};

Eigen::VectorXd minimize(const std::vector<SystemRuns>& systems,
                         const std::vector<Parameter>& params, int rows) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(params.size()));
  if (params.empty()) return x;
  Differenced numeric(systems, params, rows);
  Eigen::LevenbergMarquardt<Differenced> lm(numeric);
  lm.setMaxfev(60 * static_cast<int>(params.size() + 1));
  lm.setXtol(1e-8);
  lm.setFtol(1e-10);
  lm.minimize(x);
  return x;
}

// Standard uncertainties of the values at x: covariance s^2 (J^T J)^-1 of the linearised fit,
// s^2 the residual variance of the data rows.
std::vector<double> uncertainties(const std::vector<SystemRuns>& systems,
                                  const std::vector<Parameter>& params, int rows,
                                  const Eigen::VectorXd& x) {
  const auto n = static_cast<Eigen::Index>(params.size());
  std::vector<double> out(params.size(), 0.0);
  if (n == 0) return out;
  Differenced objective(systems, params, rows);
  objective.central = true;
  Eigen::MatrixXd jacobian(rows + n, n);
  objective.df(x, jacobian);
  Eigen::VectorXd r(rows + n);
  objective(x, r);
  const double rss = r.head(rows).squaredNorm();
  const double dof = std::max<double>(1.0, static_cast<double>(rows - n));
  const Eigen::MatrixXd information = jacobian.transpose() * jacobian;
  const Eigen::MatrixXd covariance =
      (rss / dof) * information.completeOrthogonalDecomposition().pseudoInverse();
  for (Eigen::Index j = 0; j < n; ++j) {
    out[j] = std::abs(params[j].derivative(x[j])) * std::sqrt(std::max(0.0, covariance(j, j)));
  }
  return out;
}

// Fits parameter j alone on one log's runs (the others held at x): its value and uncertainty.
std::pair<double, double> fit_alone(const std::vector<SystemRuns>& systems,
                                    const std::vector<Parameter>& params, const Eigen::VectorXd& x,
                                    std::size_t j, std::size_t system, const std::string& source) {
  std::vector<SystemRuns> one = systems;
  for (std::size_t s = 0; s < one.size(); ++s) {
    auto& runs = one[s].runs;
    runs.erase(
        std::remove_if(runs.begin(), runs.end(),
                       [&](const MeasuredRun& m) { return s != system || m.source != source; }),
        runs.end());
  }
  // Hold the others by baking them into the clusters.
  const auto clusters = apply(systems, params, x);
  for (std::size_t s = 0; s < one.size(); ++s) one[s].cluster = clusters[s];
  Parameter p = params[j];
  p.initial = p.value(x[static_cast<Eigen::Index>(j)]);
  if (p.fraction) p.initial = clamp_fraction(p.initial);
  const std::vector<Parameter> single = {p};
  const int rows = row_count(one);
  const Eigen::VectorXd xj = minimize(one, single, rows);
  const double sigma = uncertainties(one, single, rows, xj)[0];
  return {single[0].value(xj[0]), sigma};
}

}  // namespace

JointCalibration calibrate_jointly(const std::vector<SystemRuns>& systems,
                                   const CalibrationOptions& options) {
  TRAINSIM_ASSERT(!systems.empty(), "nothing to calibrate");
  const std::vector<Parameter> params = parameters_for(systems, options.fit_shared);
  const int rows = row_count(systems);
  TRAINSIM_ASSERT(rows > 0, "nothing to calibrate against");
  const Eigen::VectorXd x = minimize(systems, params, rows);
  JointCalibration out;
  try {
    out.clusters = apply(systems, params, x);
    for (std::size_t s = 0; s < systems.size(); ++s) {
      if (!systems[s].runs.empty()) predict_runs(out.clusters[s], systems[s].runs);
    }
  } catch (const TimeRangeError& e) {
    std::string source;
    for (const SystemRuns& s : systems) {
      if (!s.runs.empty() && source.empty()) source = s.runs.front().source;
    }
    throw ConfigError(source, 0, 0, "",
                      std::string("the logs' times calibrate to a value the simulator cannot "
                                  "run (") +
                          e.what() + "): are they nccl-tests times in microseconds?");
  }
  const std::vector<double> sigma = uncertainties(systems, params, rows, x);
  for (std::size_t j = 0; j < params.size(); ++j) {
    out.parameters.push_back({params[j].key,
                              params[j].system >= 0     ? systems[params[j].system].cluster.name
                              : params[j].group.empty() ? ""
                                                        : "(" + params[j].group + ")",
                              params[j].value(x[static_cast<Eigen::Index>(j)]), sigma[j],
                              params[j].unit});
  }
  double sum = 0.0;
  int counted = 0;
  for (std::size_t s = 0; s < systems.size(); ++s) {
    out.rows.push_back(systems[s].runs.empty() ? std::vector<FitRow>{}
                                               : predict_runs(out.clusters[s], systems[s].runs));
    for (const FitRow& r : out.rows.back()) {
      sum += std::pow(std::log(r.predicted_us / r.measured_us), 2);
      ++counted;
    }
  }
  out.rms_log_error = std::sqrt(sum / std::max(1, counted));
  if (options.check_pulls) {
    // Which logs inform which parameter: those whose predictions move with it.
    for (std::size_t j = 0; j < params.size(); ++j) {
      struct Pull {
        std::string source;
        double value;
        double sigma;
      };
      std::vector<Pull> pulls;
      for (std::size_t s = 0; s < systems.size(); ++s) {
        if (params[j].system >= 0 && params[j].system != static_cast<int>(s)) continue;
        if (!params[j].group.empty() && params[j].group_of(systems[s].cluster) != params[j].group) {
          continue;
        }
        std::set<std::string> sources;
        for (const MeasuredRun& m : systems[s].runs) sources.insert(m.source);
        for (const std::string& source : sources) {
          // Skip logs the parameter does not move (their fit would only return the prior).
          std::vector<SystemRuns> probe = systems;
          for (std::size_t k = 0; k < probe.size(); ++k) {
            auto& runs = probe[k].runs;
            runs.erase(
                std::remove_if(runs.begin(), runs.end(),
                               [&](const MeasuredRun& m) { return k != s || m.source != source; }),
                runs.end());
          }
          Eigen::VectorXd up = x;
          up[static_cast<Eigen::Index>(j)] += 0.05;
          const auto base_rows = predict_runs(apply(probe, params, x)[s], probe[s].runs);
          const auto moved_rows = predict_runs(apply(probe, params, up)[s], probe[s].runs);
          double change = 0.0;
          for (std::size_t r = 0; r < base_rows.size(); ++r) {
            change = std::max(
                change, std::abs(std::log(moved_rows[r].predicted_us / base_rows[r].predicted_us)));
          }
          if (change < 1e-3) continue;
          const auto [value, sigma] = fit_alone(systems, params, x, j, s, source);
          pulls.push_back({source, value, sigma});
        }
      }
      // One warning per parameter: the two logs furthest apart, if they disagree.
      if (pulls.size() < 2) continue;
      const auto [lo, hi] =
          std::minmax_element(pulls.begin(), pulls.end(),
                              [](const Pull& x, const Pull& y) { return x.value < y.value; });
      const double diff = hi->value - lo->value;
      const double combined = std::hypot(lo->sigma, hi->sigma);
      if (diff > 3 * combined && diff > 0.05 * std::max(std::abs(lo->value), std::abs(hi->value))) {
        const std::string scope = params[j].system >= 0
                                      ? " of " + systems[params[j].system].cluster.name
                                  : params[j].group.empty() ? ""
                                                            : " of " + params[j].group;
        char line[768];
        std::snprintf(line, sizeof line,
                      "%s%s: %s alone gives %.4g +- %.2g, %s alone %.4g +- %.2g (%zu logs inform "
                      "it)",
                      params[j].key.c_str(), scope.c_str(), lo->source.c_str(), lo->value,
                      lo->sigma, hi->source.c_str(), hi->value, hi->sigma, pulls.size());
        out.warnings.push_back({line});
      }
    }
  }
  return out;
}

CalibrationResult calibrate_collectives(const ClusterSpec& base,
                                        const std::vector<MeasuredRun>& runs,
                                        const CalibrationOptions& options) {
  const JointCalibration joint = calibrate_jointly({SystemRuns{base, runs}}, options);
  CalibrationResult out;
  out.cluster = joint.clusters.front();
  out.rows = joint.rows.front();
  out.parameters = joint.parameters;
  for (FittedParameter& p : out.parameters) p.system.clear();
  out.warnings = joint.warnings;
  out.rms_log_error = joint.rms_log_error;
  return out;
}

std::vector<HeldOutLog> leave_one_log_out(const std::vector<SystemRuns>& systems) {
  std::vector<HeldOutLog> held;
  for (std::size_t s = 0; s < systems.size(); ++s) {
    std::vector<std::string> sources;
    for (const MeasuredRun& m : systems[s].runs) {
      if (std::find(sources.begin(), sources.end(), m.source) == sources.end()) {
        sources.push_back(m.source);
      }
    }
    for (const std::string& source : sources) held.push_back({s, source, {}, {}});
  }
  parallel_for_index(held.size(), 0, [&](std::size_t i) {
    HeldOutLog& h = held[i];
    std::vector<SystemRuns> training = systems;
    std::vector<MeasuredRun> test;
    auto& runs = training[h.system].runs;
    for (const MeasuredRun& m : runs) {
      if (m.source == h.source) test.push_back(m);
    }
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [&](const MeasuredRun& m) { return m.source == h.source; }),
               runs.end());
    if (row_count(training) == 0) {  // the only log: predicted from the cluster file as written
      h.rows = predict_runs(systems[h.system].cluster, test);
      return;
    }
    CalibrationOptions options;
    options.check_pulls = false;
    const JointCalibration fit = calibrate_jointly(training, options);
    ClusterSpec cluster = fit.clusters[h.system];
    // The network's per-hop latency is fitted per transport; where no other log crosses nodes on
    // this one, the shipped default would be the fit of this very log: NCCL's own figure instead.
    const NetTransport transport = cluster.nic.transport;
    const bool informed = std::any_of(training.begin(), training.end(), [&](const SystemRuns& s) {
      return s.cluster.nic.transport == transport &&
             std::any_of(s.runs.begin(), s.runs.end(),
                         [&](const MeasuredRun& m) { return run_shape(m, s.cluster).nodes > 1; });
    });
    if (!informed) cluster.collectives.network_latency_scale = 1.0;
    h.rows = predict_runs(cluster, test);
    h.parameters = fit.parameters;
  });
  return held;
}

}  // namespace trainsim::models
