#include "models/scaling/shared_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include "engine/check.h"
#include "engine/parallel.h"
#include "models/workload/plan_search.h"
#include "models/workload/recsys_training.h"
#include "models/workload/step_runner.h"

namespace trainsim::models {

namespace {

// A placed job made ready to add its steps to a runner: its batch at its GPU count, its plan.
class PreparedJob {
 public:
  PreparedJob(const ClusterSpec& cluster, const PlacedJob& placed,
              const StepSimulationOptions& options)
      : placed_(placed) {
    const int gpus = placed.nodes * cluster.gpus_per_node;
    // The job's own batch: its global batch over its GPUs, or its batch per GPU.
    const double batch_per_gpu =
        resolve_batch_scaling(placed.workload, ScalingMode::kJob, gpus, gpus).at(gpus);
    global_batch_ = batch_per_gpu * gpus;
    recsys_ = std::get_if<RecsysModelSpec>(&placed.workload.model);
    if (recsys_) {
      TRAINSIM_ASSERT(placed.workload.job.has_value(), "a recommender needs a job");
      job_ = placed.workload.job;
      job_->global_batch.reset();
      job_->batch_per_gpu = batch_per_gpu;
      launched_ = launched_on(cluster, *job_);
      const ShardingPlan plan = job_plan(cluster, *recsys_, *job_, placed.nodes, options);
      details_ = plan_recsys_training(cluster, *recsys_, *job_, placed.nodes, options, &plan);
    } else {
      dense_ = std::get<DenseModelSpec>(placed.workload.model);
      if (placed.workload.job) dense_ = dense_model_for_job(*dense_, *placed.workload.job);
      dense_->batch_per_gpu = batch_per_gpu;
      launched_ = cluster;
    }
  }

  const PlacedJob& placed() const { return placed_; }
  double global_batch() const { return global_batch_; }

  // A runner of this job's steps on `fabric`.
  std::unique_ptr<StepRunner> runner(Fabric& fabric, const StepSimulationOptions& options) const {
    auto r = std::make_unique<StepRunner>(fabric, launched_, placed_.first_node, placed_.nodes,
                                          options, /*input_copies=*/recsys_ != nullptr);
    if (recsys_) {
      add_recsys_training(*r, *recsys_, *job_, details_);
    } else {
      add_dense_training(*r, *dense_);
    }
    return r;
  }

 private:
  const PlacedJob& placed_;
  double global_batch_ = 0.0;
  const RecsysModelSpec* recsys_ = nullptr;
  std::optional<JobSpec> job_;
  std::optional<DenseModelSpec> dense_;
  RecsysStepDetails details_;
  ClusterSpec launched_;  // the cluster as the job launches work on it
};

// The job alone on its nodes of a fabric of `extent` nodes: its steps as `options` say.
StepSimulationResult run_alone(const ClusterSpec& cluster, int extent, const PreparedJob& job,
                               const StepSimulationOptions& options, Time quantum) {
  Fabric fabric(cluster, extent, options.seed, quantum);
  std::optional<Time> quantum_from;
  if (options.rate_change_limit) {
    fabric.limit_rate_changes(*options.rate_change_limit,
                              [&] { quantum_from = fabric.sim().now(); });
  }
  const auto runner = job.runner(fabric, options);
  runner->start(0, [&fabric] { fabric.sim().stop(); });
  fabric.sim().run();
  StepSimulationResult result = runner->measure();
  result.quantum_from = quantum_from;
  return result;
}

// Whose traffic is on each link while the jobs share the fabric, and how long two owners or
// more met there (from `from` on). Owner k < jobs: job k; owner jobs: the background.
class CollisionTracker {
 public:
  CollisionTracker(Fabric& fabric, const std::vector<PreparedJob>& jobs, int gpus_per_node,
                   Time from)
      : fabric_(fabric), owners_(static_cast<int>(jobs.size()) + 1), from_(from) {
    const ClusterTopology& t = fabric.topology();
    owner_of_vertex_.assign(t.topology.vertex_count(), -1);
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const PlacedJob& p = jobs[k].placed();
      for (int n = p.first_node; n < p.first_node + p.nodes; ++n) {
        for (int g = 0; g < gpus_per_node; ++g) owner_of_vertex_[t.gpu(n, g)] = static_cast<int>(k);
        if (n < static_cast<int>(t.nic_send_vertices.size())) {
          for (const VertexId v : t.nic_send_vertices[n]) owner_of_vertex_[v] = static_cast<int>(k);
          for (const VertexId v : t.nic_receive_vertices[n]) {
            owner_of_vertex_[v] = static_cast<int>(k);
          }
        }
      }
    }
    links_.resize(t.topology.link_count());
    fabric.network().set_flow_observer(
        [this](RouteId route, double, bool begins) { observe(route, begins); });
    // Owners already meeting on a link when the window opens have met there.
    if (from_ > 0) {
      fabric.sim().schedule_at(from_, [this] {
        for (LinkUse& use : links_) {
          if (use.distinct >= 2) mark_met(use);
        }
      });
    }
  }

  // The collisions up to `to`, the longest first.
  std::vector<LinkCollision> collisions(Time to, const std::vector<std::string>& names) {
    const Topology& t = fabric_.topology().topology;
    std::vector<LinkCollision> out;
    for (LinkId l = 0; l < links_.size(); ++l) {
      LinkUse& use = links_[l];
      if (use.distinct >= 2) close(use, to);
      if (use.shared <= 0) continue;
      LinkCollision c;
      const Link& link = t.link(l);
      c.link = t.vertex(link.from).name + " -> " + t.vertex(link.to).name;
      c.label = link.label;
      c.shared = use.shared;
      for (int k = 0; k < owners_; ++k) {
        if (use.met[k]) c.owners.push_back(k < owners_ - 1 ? names[k] : "background");
      }
      out.push_back(std::move(c));
    }
    std::stable_sort(out.begin(), out.end(), [](const LinkCollision& a, const LinkCollision& b) {
      return a.shared > b.shared;
    });
    return out;
  }

 private:
  struct LinkUse {
    std::vector<int> active;  // flows per owner
    std::vector<bool> met;    // the owner had flows there while another did
    int distinct = 0;         // owners with flows
    Time since = 0;           // when distinct last reached 2
    Time shared = 0;
  };

  int owner(RouteId route) const {
    if (fabric_.is_background(route)) return owners_ - 1;
    const auto links = fabric_.network().router().links(route);
    if (links.empty()) return -1;
    const Topology& t = fabric_.topology().topology;
    const int first = owner_of_vertex_[t.link(links.front()).from];
    return first >= 0 ? first : owner_of_vertex_[t.link(links.back()).to];
  }

  void mark_met(LinkUse& use) const {
    for (int o = 0; o < owners_; ++o) use.met[o] = use.met[o] || use.active[o] > 0;
  }

  void close(LinkUse& use, Time to) {
    use.shared += std::max<Time>(0, to - std::max(use.since, from_));
  }

  void observe(RouteId route, bool begins) {
    const int k = owner(route);
    if (k < 0) return;
    const Time now = fabric_.sim().now();
    for (const LinkId l : fabric_.network().router().links(route)) {
      LinkUse& use = links_[l];
      if (use.active.empty()) {
        use.active.assign(owners_, 0);
        use.met.assign(owners_, false);
      }
      int& count = use.active[k];
      if (begins) {
        if (count++ > 0) continue;
        if (++use.distinct == 2) use.since = now;
        if (use.distinct >= 2 && now >= from_) mark_met(use);
      } else {
        TRAINSIM_ASSERT(count > 0, "a flow ends on a link it did not take");
        if (--count > 0) continue;
        if (use.distinct-- == 2) close(use, now);
      }
    }
  }

  Fabric& fabric_;
  int owners_;
  Time from_;
  std::vector<int> owner_of_vertex_;
  std::vector<LinkUse> links_;
};

}  // namespace

SharedClusterResult run_shared_cluster(const Placement& placement,
                                       const StepSimulationOptions& options) {
  TRAINSIM_ASSERT(options.network == NetworkModel::kFlow,
                  "jobs share links only in the flow network model");
  TRAINSIM_ASSERT(!placement.jobs.empty(), "a placement has a job");
  const ClusterSpec& cluster = placement.cluster;
  // The fabric: every node a job or the background traffic uses.
  int extent = 1;
  for (const PlacedJob& j : placement.jobs) extent = std::max(extent, j.first_node + j.nodes);
  std::vector<BackgroundTraffic> background = cluster.background_traffic;
  background.insert(background.end(), placement.background.begin(), placement.background.end());
  for (const BackgroundTraffic& b : background) {
    extent = std::max({extent, b.from_last + 1, b.to_last + 1});
  }
  extent = std::min(extent, cluster.nodes);

  std::vector<PreparedJob> jobs;
  jobs.reserve(placement.jobs.size());
  for (const PlacedJob& j : placement.jobs) {
    try {
      jobs.emplace_back(cluster, j, options);
    } catch (const ConfigError& e) {
      // The same job file may be placed twice: say which placed job it is.
      throw ConfigError(e.file(), e.line(), e.column(), e.key_path(),
                        "placed job '" + j.name + "' (nodes " + std::to_string(j.first_node) + "-" +
                            std::to_string(j.first_node + j.nodes - 1) + "): " + e.message());
    }
  }

  // The solve quantum: as given, or a share of the shortest job's step (its analytic estimate);
  // under "auto", exact until the solves have changed more flow rates than that step allows.
  Time quantum = 0;
  std::optional<StepSimulationOptions::RateChangeLimit> limit;
  if (const auto* share = step_share(options.solve_quantum)) {
    StepSimulationOptions analytic = options;
    analytic.network = NetworkModel::kAnalytic;
    analytic.keep_trace = false;
    analytic.steps = 1;
    analytic.warmup_steps = 0;
    analytic.trailing_steps = 0;
    Time shortest = 0;
    for (const PreparedJob& j : jobs) {
      const Time estimate = run_alone(cluster, extent, j, analytic, 0).step_time;
      shortest = shortest == 0 ? estimate : std::min(shortest, estimate);
    }
    quantum = std::max<Time>(kNanosecond, shortest / 1'000'000 * share->parts_per_million);
    const auto* exact_first = std::get_if<ExactOrShare>(&options.solve_quantum);
    if (exact_first && shortest > 0) {
      // As the scaling study does: a step's worth at once, then a step's worth per step time.
      const auto per_step = static_cast<double>(exact_first->rate_changes_per_step);
      limit = StepSimulationOptions::RateChangeLimit{per_step, per_step / to_seconds(shortest),
                                                     quantum};
      quantum = 0;
    }
  } else {
    quantum = std::get<Time>(options.solve_quantum);
  }
  StepSimulationOptions alone_options = options;
  alone_options.keep_trace = false;
  // One step after the measured ones, as in the shared run: the last measured step then
  // overlaps the next one's prefetched ids and input copy, as every other step does.
  alone_options.trailing_steps = 1;
  alone_options.solve_quantum = quantum;
  alone_options.rate_change_limit = limit;

  SharedClusterResult result;
  Time latest_start = 0;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const PlacedJob& p = placement.jobs[k];
    SharedJobResult r;
    r.name = p.name;
    r.first_node = p.first_node;
    r.nodes = p.nodes;
    r.gpus = p.nodes * cluster.gpus_per_node;
    r.start = p.start;
    r.global_batch = jobs[k].global_batch();
    r.alone = run_alone(cluster, extent, jobs[k], alone_options, quantum);
    r.throughput_alone = r.global_batch / to_seconds(r.alone.step_time);
    result.jobs.push_back(std::move(r));
    latest_start = std::max(latest_start, p.start);
  }

  // Steps per job: leading ones (its warm-up, and enough that its measured steps begin once every
  // job has started), the measured ones, and trailing ones that keep its traffic on the fabric
  // until every job's measured steps are done. The alone step times make the first guess; a run
  // that falls short (a job's measured steps began too early, or it ran out of steps while
  // another was still measuring) is run again with more.
  const int measured = options.steps - options.warmup_steps;
  const std::size_t n = jobs.size();
  std::vector<int> leading(n), trailing(n);
  Time horizon = 0;
  // Steps of job k in `span` (at least), and the bound on a job's steps.
  auto steps_for = [&](std::size_t k, Time span) {
    const Time t = std::max<Time>(1, result.jobs[k].alone.step_time);
    return static_cast<int>(std::min<Time>(kMostSharedSteps + 1, (span + t - 1) / t));
  };
  auto check_bound = [&](std::size_t k, int leading_steps, int trailing_steps) {
    if (leading_steps + measured + trailing_steps <= kMostSharedSteps) return;
    const PlacedJob& p = placement.jobs[k];
    // Said at the start that keeps the jobs apart (the latest one), else at the job.
    const PlacedJob& last =
        *std::max_element(placement.jobs.begin(), placement.jobs.end(),
                          [](const PlacedJob& a, const PlacedJob& b) { return a.start < b.start; });
    const SourceLocation& where =
        !last.start_location.file.empty() ? last.start_location : p.location;
    char step[32];
    std::snprintf(step, sizeof step, "%.4g", to_milliseconds(result.jobs[k].alone.step_time));
    throw ConfigError(
        where, "job '" + p.name + "' would run more than " + std::to_string(kMostSharedSteps) +
                   " steps (" + step +
                   " ms each alone) for the jobs' measured steps to overlap: start the "
                   "jobs closer together");
  };
  for (std::size_t k = 0; k < n; ++k) {
    const Time start = placement.jobs[k].start;
    leading[k] = options.warmup_steps + steps_for(k, latest_start - start);
    check_bound(k, leading[k], 0);
    horizon = std::max(horizon, start + (leading[k] + measured) * result.jobs[k].alone.step_time);
  }
  for (std::size_t k = 0; k < n; ++k) {
    const Time start = placement.jobs[k].start;
    // A quarter more than the alone estimate: shared steps are slower.
    trailing[k] = std::max(1, steps_for(k, (horizon - start) / 4 * 5) - leading[k] - measured);
    check_bound(k, leading[k], trailing[k]);
  }

  result.background = false;
  for (int attempt = 0;; ++attempt) {
    // Each retry adds steps, so the bound ends it.
    TRAINSIM_ASSERT(attempt < 4 * kMostSharedSteps, "the jobs' steps could not be lined up");
    Fabric fabric(cluster, extent, options.seed, quantum);
    result.quantum_from.reset();
    if (limit) {
      result.quantum_after = limit->then_quantum;
      fabric.limit_rate_changes(*limit, [&] { result.quantum_from = fabric.sim().now(); });
    }
    // Watching the flows before any starts.
    CollisionTracker tracker(fabric, jobs, cluster.gpus_per_node, latest_start);
    result.background = fabric.start_background_traffic(background);
    std::vector<std::unique_ptr<StepRunner>> runners;
    std::size_t pending = n;
    Time stopped = 0;
    for (std::size_t k = 0; k < n; ++k) {
      StepSimulationOptions o = alone_options;
      o.steps = leading[k] + measured;
      o.warmup_steps = leading[k];
      o.trailing_steps = trailing[k];
      o.keep_trace = false;
      runners.push_back(jobs[k].runner(fabric, o));
    }
    for (std::size_t k = 0; k < n; ++k) {
      runners[k]->start(placement.jobs[k].start, [&] {
        if (--pending == 0) {
          stopped = fabric.sim().now();
          fabric.sim().stop();
        }
      });
    }
    fabric.sim().run();
    TRAINSIM_ASSERT(pending == 0, "the jobs' measured steps did not finish (deadlock)");
    bool lined_up = true;
    for (std::size_t k = 0; k < n; ++k) {
      if (runners[k]->measured_from() < latest_start) {
        leading[k] += steps_for(k, latest_start - runners[k]->measured_from()) + 1;
        lined_up = false;
      }
      if (runners[k]->ran_out()) {
        trailing[k] = std::min(trailing[k] * 2 + 1, kMostSharedSteps + 1);
        lined_up = false;
      }
      check_bound(k, leading[k], trailing[k]);
    }
    if (!lined_up) continue;
    std::vector<std::string> names;
    for (std::size_t k = 0; k < n; ++k) {
      SharedJobResult& r = result.jobs[k];
      names.push_back(r.name);
      r.shared = runners[k]->measure();
      r.measured_from = runners[k]->measured_from();
      r.shared.slowest_rank += r.first_node * cluster.gpus_per_node;
      r.throughput_shared = r.global_batch / to_seconds(r.shared.step_time);
      r.slowdown = static_cast<double>(r.shared.step_time) / static_cast<double>(r.alone.step_time);
    }
    result.window_start = latest_start;
    result.window_end = stopped;
    result.collisions = tracker.collisions(stopped, names);
    break;
  }
  return result;
}

SharedClusterResult run_repeated_shared_cluster(
    const Placement& placement, const StepSimulationOptions& options, int runs, int threads,
    const std::function<ClusterSpec(std::uint64_t seed)>& draw) {
  TRAINSIM_ASSERT(runs >= 1, "at least one run");
  SharedClusterResult first = run_shared_cluster(placement, options);
  if (runs == 1) return first;
  // Each run in its own slot, gathered in seed order: the same result for any thread count.
  // Without a draw, the first run is the given one.
  const std::size_t offset = draw ? 0 : 1;
  std::vector<SharedClusterResult> more(runs - offset);
  parallel_for_index(more.size(), threads, [&](std::size_t k) {
    StepSimulationOptions again = options;
    again.seed = options.seed + static_cast<std::uint64_t>(k + offset);
    if (draw) {
      Placement drawn = placement;
      drawn.cluster = draw(again.seed);
      more[k] = run_shared_cluster(drawn, again);
    } else {
      more[k] = run_shared_cluster(placement, again);
    }
  });
  for (std::size_t j = 0; j < first.jobs.size(); ++j) {
    std::vector<double> alone, shared, slowdown, step;
    auto add = [&](const SharedJobResult& r) {
      alone.push_back(r.throughput_alone);
      shared.push_back(r.throughput_shared);
      slowdown.push_back(r.slowdown);
      step.push_back(to_seconds(r.shared.step_time));
    };
    if (!draw) add(first.jobs[j]);
    for (const SharedClusterResult& r : more) add(r.jobs[j]);
    first.jobs[j].repeated =
        SharedJobRepeats{runs, confidence_interval_95(alone), confidence_interval_95(shared),
                         confidence_interval_95(slowdown), confidence_interval_95(step)};
  }
  return first;
}

}  // namespace trainsim::models
