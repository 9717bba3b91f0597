#include "models/scaling/job_calibration.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "engine/check.h"
#include "models/workload/plan_search.h"

namespace trainsim::models {

const std::vector<EfficiencyPrior>& job_calibration_priors() {
  // Relative prior uncertainties: the spread of the public figures each default comes from.
  static const std::vector<EfficiencyPrior> priors = {
      {"gpu.gemm_efficiency", &GpuSpec::gemm_efficiency, 0.15,
       "best-shape GEMM figure of the datasheet summary; a model's mid-size layers reach less "
       "(15%)"},
      {"gpu.hbm_efficiency", &GpuSpec::hbm_efficiency, 0.05,
       "streaming kernels reach 85-93% of HBM peak (5%)"},
      {"gpu.embedding_efficiency", &GpuSpec::embedding_efficiency, 0.25,
       "FBGEMM forward gathers reach 32-82% of HBM on different table mixes, 64.7% on a "
       "production one (torchrec PR #4757, FBGEMM PR #4688; 25%)"},
      {"gpu.embedding_backward_efficiency", &GpuSpec::embedding_backward_efficiency, 0.30,
       "one production mix only (26.5% FBGEMM, 28.2% Triton, torchrec PR #4757), on a GPU the "
       "PR does not name; other stacks run other kernels (30%)"},
  };
  return priors;
}

namespace {

// Finite-difference step, log of the value (5%): large against the step time's quantisation by
// the solve quantum (0.2% of the step by default) even for a fraction the step hardly depends on.
constexpr double kStep = 0.05;
constexpr int kMaxIterations = 12;
constexpr double kConverged = 1e-4;  // largest change of a log value that ends the fit

ClusterSpec with_values(const ClusterSpec& cluster, const std::vector<double>& log_ratio) {
  ClusterSpec c = cluster;
  const auto& priors = job_calibration_priors();
  for (std::size_t j = 0; j < priors.size(); ++j) {
    const double base = cluster.gpu.*priors[j].field;
    // A fraction of peak cannot pass 1.
    c.gpu.*priors[j].field = std::min(1.0, base * std::exp(log_ratio[j]));
  }
  return c;
}

}  // namespace

JobCalibration calibrate_job(const ClusterSpec& cluster, const Workload& workload,
                             const std::vector<MeasuredThroughput>& measured,
                             const JobCalibrationOptions& options) {
  TRAINSIM_ASSERT(!measured.empty(), "calibrate_job needs a measured point");
  TRAINSIM_ASSERT(options.measurement_uncertainty > 0, "a measurement uncertainty is positive");
  const auto& priors = job_calibration_priors();
  const auto n = static_cast<Eigen::Index>(priors.size());
  const auto m = static_cast<Eigen::Index>(measured.size());
  int smallest = measured.front().nodes, largest = smallest;
  for (const auto& p : measured) {
    TRAINSIM_ASSERT(
        p.nodes >= 1 && p.nodes <= cluster.nodes && (p.throughput > 0 || p.step_time_s > 0),
        "a measured point has nodes of the cluster and a throughput or step time");
    smallest = std::min(smallest, p.nodes);
    largest = std::max(largest, p.nodes);
  }
  const BatchScaling batch =
      resolve_batch_scaling(workload, options.study.scaling, smallest * cluster.gpus_per_node,
                            largest * cluster.gpus_per_node);
  auto global_batch = [&](int nodes) {
    return batch.at(nodes * cluster.gpus_per_node) * nodes * cluster.gpus_per_node;
  };
  std::vector<double> throughput;
  for (const auto& p : measured) {
    throughput.push_back(p.throughput > 0 ? p.throughput : global_batch(p.nodes) / p.step_time_s);
  }
  // Per measured point, what stays fixed while the fractions move, so that the predicted
  // throughput is a smooth function of them: the sharding plan (`best` re-ranks plans, a planner
  // weighs the kernel costs) and the solve quantum (a share of the step would move with it), both
  // as they are at the cluster's own values.
  std::vector<Workload> workloads;
  std::vector<StepSimulationOptions> sims;
  for (const auto& p : measured) {
    StepSimulationOptions sim = options.study.simulation;
    sim.keep_trace = false;
    const double per_gpu = batch.at(p.nodes * cluster.gpus_per_node);
    if (const auto* share = step_share(sim.solve_quantum);
        share && sim.network == NetworkModel::kFlow) {
      StepSimulationOptions analytic = sim;
      analytic.network = NetworkModel::kAnalytic;
      analytic.solve_quantum = Time{0};
      const Time estimate = simulate_point(cluster, workload, p.nodes, per_gpu, analytic).step_time;
      sim.solve_quantum =
          Time{std::max<Time>(kNanosecond, estimate / 1'000'000 * share->parts_per_million)};
    }
    Workload w = workload;
    if (const auto* recsys = std::get_if<RecsysModelSpec>(&w.model)) {
      JobSpec at_batch = *w.job;
      at_batch.global_batch.reset();
      at_batch.batch_per_gpu = per_gpu;
      std::vector<std::string> names;
      for (const auto& t : recsys->tables) names.push_back(t.name);
      w.job = job_with_plan(*w.job, job_plan(cluster, *recsys, at_batch, p.nodes, sim), names);
    }
    workloads.push_back(std::move(w));
    sims.push_back(sim);
  }
  auto predict = [&](const ClusterSpec& c, std::size_t i) {
    const MeasuredThroughput& p = measured[i];
    const ScalingPoint point =
        simulate_point(c, workloads[i], p.nodes, batch.at(p.nodes * c.gpus_per_node), sims[i]);
    return p.training_only ? point.training_throughput : point.throughput;
  };
  // Residuals: log(predicted step / measured step) = log(measured / predicted throughput).
  auto residuals = [&](const std::vector<double>& x) {
    const ClusterSpec c = with_values(cluster, x);
    Eigen::VectorXd r(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      r[i] = std::log(throughput[i] / predict(c, static_cast<std::size_t>(i)));
    }
    return r;
  };

  Eigen::VectorXd prior_sd(n);
  for (Eigen::Index j = 0; j < n; ++j) prior_sd[j] = priors[j].relative_uncertainty;
  const double u = options.measurement_uncertainty;

  std::vector<double> x(priors.size(), 0.0);
  Eigen::MatrixXd jacobian(m, n);
  Eigen::VectorXd r = residuals(x);
  JobCalibration out;
  // The Jacobian of the residuals at x (stepping down: a fraction at 1 cannot step up), and the
  // precision (inverse covariance) of the linearised posterior there.
  auto linearize = [&]() {
    for (Eigen::Index j = 0; j < n; ++j) {
      std::vector<double> xj = x;
      xj[j] -= kStep;
      jacobian.col(j) = (r - residuals(xj)) / kStep;
    }
    return Eigen::MatrixXd(
        jacobian.transpose() * jacobian / (u * u) +
        Eigen::MatrixXd(prior_sd.array().square().inverse().matrix().asDiagonal()));
  };
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    // Gauss-Newton on the whitened problem: data rows / u, prior rows / prior_sd.
    const Eigen::MatrixXd precision = linearize();
    Eigen::VectorXd xv(n);
    for (Eigen::Index j = 0; j < n; ++j) xv[j] = x[j];
    const Eigen::VectorXd gradient =
        jacobian.transpose() * r / (u * u) + (xv.array() / prior_sd.array().square()).matrix();
    Eigen::VectorXd delta = -precision.ldlt().solve(gradient);
    // Halve the step while it does not lower the objective (the clamp at 1 bends it).
    auto objective = [&](const Eigen::VectorXd& res, const Eigen::VectorXd& at) {
      return res.squaredNorm() / (u * u) + (at.array() / prior_sd.array()).square().sum();
    };
    const double before = objective(r, xv);
    bool improved = false;
    for (int halving = 0; halving < 8 && !improved; ++halving) {
      std::vector<double> next = x;
      Eigen::VectorXd at(n);
      for (Eigen::Index j = 0; j < n; ++j) at[j] = next[j] = x[j] + delta[j];
      const Eigen::VectorXd next_r = residuals(next);
      if (objective(next_r, at) <= before) {
        x = next;
        r = next_r;
        improved = true;
      } else {
        delta /= 2;
      }
    }
    out.iterations = iteration + 1;
    // Converged when the step taken is small, or when no step along the direction helps.
    if (!improved || delta.cwiseAbs().maxCoeff() < kConverged) break;
  }
  // Sensitivities and the posterior covariance at the fit.
  const Eigen::MatrixXd covariance = linearize().inverse();

  out.cluster = with_values(cluster, x);
  for (Eigen::Index j = 0; j < n; ++j) {
    FittedEfficiency f;
    f.key = priors[j].key;
    f.prior = cluster.gpu.*priors[j].field;
    f.prior_uncertainty = f.prior * priors[j].relative_uncertainty;
    f.value = out.cluster.gpu.*priors[j].field;
    f.uncertainty = f.value * std::sqrt(std::max(0.0, covariance(j, j)));
    // r = log(measured / predicted throughput) = log(predicted step / measured step), so the
    // Jacobian is d log(step) / d log(value) per point.
    f.sensitivity = jacobian.col(j).sum();
    out.parameters.push_back(f);
  }
  for (Eigen::Index i = 0; i < m; ++i) {
    CalibratedPoint p;
    p.nodes = measured[i].nodes;
    p.global_batch = global_batch(p.nodes);
    p.measured = throughput[i];
    p.training_only = measured[i].training_only;
    p.before = predict(cluster, static_cast<std::size_t>(i));
    p.after = predict(out.cluster, static_cast<std::size_t>(i));
    out.points.push_back(p);
  }
  return out;
}

}  // namespace trainsim::models
