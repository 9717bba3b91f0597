#include "models/scaling/scaling_study.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>

#include <boost/math/distributions/students_t.hpp>

#include "engine/check.h"
#include "engine/parallel.h"
#include "models/runtime/convergence.h"
#include "models/workload/plan_search.h"
#include "models/workload/recsys_training.h"
#include "models/workload/step_runner.h"

namespace trainsim::models {

namespace {

const DatasetSpec& dataset_of(const Workload& w) {
  return std::visit([](const auto& m) -> const DatasetSpec& { return m.dataset; }, w.model);
}

const ConvergenceSpec& convergence_of(const Workload& w) {
  return std::visit([](const auto& m) -> const ConvergenceSpec& { return m.convergence; }, w.model);
}

// Storage bytes of one example: the job's dataloader, else the model's dataset, else (for a
// recommender) its input bytes.
double storage_bytes_per_example(const Workload& w) {
  if (w.job && w.job->dataloader.bytes_per_example) return *w.job->dataloader.bytes_per_example;
  if (dataset_of(w).bytes_per_example > 0) return dataset_of(w).bytes_per_example;
  if (const auto* r = std::get_if<RecsysModelSpec>(&w.model)) return r->input_bytes_per_example();
  return 0.0;
}

// The input pipeline, checkpoints, evaluation and time-to-quality on top of the simulated step.
void add_beyond_the_step(ScalingPoint& p, const ClusterSpec& cluster, const Workload& w,
                         double batch_per_gpu, const QualityTarget* target, std::uint64_t seed,
                         const std::optional<EvaluationCost>& evaluation) {
  if (w.job && w.job->dataloader.configured) {
    InputPipelineInputs in;
    in.dataloader = w.job->dataloader;
    in.storage = cluster.storage;
    in.host = cluster.host;
    in.nodes = p.nodes;
    in.gpus_per_node = cluster.gpus_per_node;
    in.batch_per_gpu = batch_per_gpu;
    in.bytes_per_example = storage_bytes_per_example(w);
    in.step_time = p.step_time;
    in.seed = seed;
    p.input = simulate_input_pipeline(in);
    p.breakdown.input_stall += p.input->stall_per_step;
    p.step_time += p.input->stall_per_step;
  }
  if (w.job && w.job->checkpoint.configured) {
    CheckpointInputs in;
    in.checkpoint = w.job->checkpoint;
    in.storage = cluster.storage;
    in.reliability = cluster.reliability;
    in.nodes = p.nodes;
    in.gpus = p.gpus;
    in.model_bytes = model_state_bytes(w);
    in.device_to_host_bytes_per_s = cluster.host_link_bytes_per_s();
    p.checkpoint = checkpoint_cost(in);
    const Time overhead =
        static_cast<Time>(std::llround(static_cast<double>(p.step_time) * p.checkpoint->overhead));
    p.breakdown.checkpoint += overhead;
    p.step_time += overhead;
  }
  p.training_throughput = p.global_batch / to_seconds(p.step_time);
  if (evaluation) {
    p.evaluation = evaluation;
    const Time overhead =
        time_from_seconds(evaluation->seconds / std::max(1.0, evaluation->steps_between));
    p.breakdown.evaluation += overhead;
    p.step_time += overhead;
  }
  p.throughput = p.global_batch / to_seconds(p.step_time);
  const double b_noise = target ? target->critical_batch : std::numeric_limits<double>::infinity();
  p.relative_ttq = examples_to_target(1.0, p.global_batch, b_noise) / p.throughput;
  p.examples_to_target = p.steps_to_target = p.time_to_quality_s =
      std::numeric_limits<double>::quiet_NaN();
  if (target && target->min_examples) {
    p.examples_to_target = examples_to_target(*target->min_examples, p.global_batch, b_noise);
    p.steps_to_target = p.examples_to_target / p.global_batch;
    p.time_to_quality_s = p.examples_to_target / p.throughput;
  }
}

}  // namespace

void fill_speedup_and_efficiency(std::vector<ScalingPoint>& points) {
  if (points.empty()) return;
  const ScalingPoint& base = points.front();
  for (ScalingPoint& p : points) {
    p.speedup = p.throughput / base.throughput;
    p.efficiency = p.speedup / (static_cast<double>(p.nodes) / base.nodes);
    p.ttq_speedup = p.relative_ttq > 0 ? base.relative_ttq / p.relative_ttq : 0.0;
  }
}

double model_state_bytes(const Workload& w) {
  if (const auto* r = std::get_if<RecsysModelSpec>(&w.model)) return r->state_bytes();
  // A dense model: its weights and two optimizer moments of the same size.
  return 3.0 * std::get<DenseModelSpec>(w.model).parameter_bytes;
}

BatchScaling resolve_batch_scaling(const Workload& w, ScalingMode mode, int baseline_gpus,
                                   int largest_gpus) {
  BatchScaling b;
  double per_gpu = 0.0, global = 0.0;
  bool job_strong = false;
  SourceLocation where;
  if (w.job) {
    job_strong = w.job->global_batch.has_value();
    per_gpu = job_batch_per_gpu(*w.job, baseline_gpus);
    where = w.job->batch_location;
  } else {
    per_gpu = std::get<DenseModelSpec>(w.model).batch_per_gpu;
    where = SourceLocation{std::get<DenseModelSpec>(w.model).source_file, 0, 0, "batch_per_gpu"};
  }
  global = w.job && w.job->global_batch ? *w.job->global_batch : per_gpu * baseline_gpus;
  b.strong = mode == ScalingMode::kStrong || (mode == ScalingMode::kJob && job_strong);
  b.global_batch = global;
  b.batch_per_gpu = per_gpu;
  if (b.strong && global / largest_gpus < 1.0) {
    throw ConfigError(where, "strong scaling keeps the global batch at " +
                                 std::to_string(static_cast<long long>(global)) +
                                 " examples: fewer than one per GPU on " +
                                 std::to_string(largest_gpus) + " GPUs");
  }
  return b;
}

QualityTarget resolve_quality_target(const Workload& w, const std::optional<double>& target_quality,
                                     const SourceLocation& origin) {
  QualityTarget t;
  const ConvergenceSpec& c = convergence_of(w);
  t.metric = c.metric;
  t.critical_batch = c.critical_batch;
  if (!c.configured) {
    const char* const why = "a target quality needs the model's convergence section (curve)";
    if (target_quality) throw ConfigError(origin, why);
    if (w.job && w.job->target_quality) throw ConfigError(w.job->target_location, why);
    // Default: no batch penalty; one epoch to the target when the dataset size is known.
    t.default_model = true;
    if (dataset_of(w).examples > 0) t.min_examples = dataset_of(w).examples;
    return t;
  }
  SourceLocation where = c.target_location;
  if (target_quality) {
    t.quality = target_quality;
    where = origin;
  } else if (w.job && w.job->target_quality) {
    t.quality = w.job->target_quality;
    where = w.job->target_location;
  } else if (c.target) {
    t.quality = c.target;
  } else {
    t.quality = c.curve.back().quality;
    where = c.location;
  }
  t.min_examples = min_examples_for(c, *t.quality, where);
  return t;
}

namespace {

// The tables the plan keeps in host memory and what they cost the busiest GPU's host link (none:
// nullopt).
std::optional<HostMemoryUse> host_memory_use(const ClusterSpec& cluster,
                                             const RecsysModelSpec& model, const JobSpec& job,
                                             int nodes, const ShardingPlan& plan) {
  ShardingContext context = recsys_context(cluster, model, job, nodes);
  HostMemoryUse use;
  use.all_tables = static_cast<int>(model.tables.size());
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const EmbeddingStorage s = plan.tables[i].storage.value_or(context.model->tables[i].storage);
    use.tables += s != EmbeddingStorage::kHbm;
    use.cached += s == EmbeddingStorage::kUvmCaching;
  }
  if (use.tables == 0) return std::nullopt;
  context.loads_only = true;
  for (const RankLoad& l : compute_shard_costs(plan, context).ranks) {
    use.bytes = std::max(use.bytes, l.host_bytes);
    use.link_bytes = std::max(use.link_bytes, l.host_link_bytes);
  }
  return use;
}

}  // namespace

ScalingPoint simulate_point(const ClusterSpec& cluster, const Workload& workload, int nodes,
                            double batch_per_gpu, const StepSimulationOptions& options,
                            const QualityTarget* target, std::shared_ptr<StepTrace>* trace,
                            int threads) {
  TRAINSIM_ASSERT(nodes >= 1, "node counts must be positive");
  ScalingPoint p;
  p.nodes = nodes;
  p.gpus = nodes * cluster.gpus_per_node;
  const auto* recsys = std::get_if<RecsysModelSpec>(&workload.model);
  // The model or job with this node count's batch.
  std::optional<DenseModelSpec> dense;
  std::optional<JobSpec> job = workload.job;
  if (recsys) {
    TRAINSIM_ASSERT(job.has_value(), "a recommender needs a job");
    job->global_batch.reset();
    job->batch_per_gpu = batch_per_gpu;
  } else {
    dense = std::get<DenseModelSpec>(workload.model);
    if (job) dense = dense_model_for_job(*dense, *job);
    dense->batch_per_gpu = batch_per_gpu;
  }
  // A recommender's sharding plan is resolved once, for the estimate and the simulation.
  std::optional<ShardingPlan> plan;
  if (recsys) plan = job_plan(cluster, *recsys, *job, nodes, options);
  if (recsys) p.host_memory = host_memory_use(cluster, *recsys, *job, nodes, *plan);
  // The plan's costs, the topology, its routes and the collectives' analytic times are worked out
  // once for the estimate, the steps and the evaluation.
  std::optional<RecsysStepDetails> details;
  if (recsys) details = plan_recsys_training(cluster, *recsys, *job, nodes, options, &*plan);
  StepSimulationOptions effective = options;
  effective.shared_topology = std::make_shared<SharedTopology>(cluster, nodes);
  auto run = [&](const StepSimulationOptions& o) {
    return dense ? simulate_dense_training(cluster, *dense, nodes, o)
                 : simulate_recsys_training(cluster, *recsys, *job, nodes, o, *details);
  };
  // "auto": exact, going on under its share of the step once the exact run has changed too many
  // flow rates.
  const auto* exact_first = std::get_if<ExactOrShare>(&options.solve_quantum);
  const auto* share =
      exact_first ? &exact_first->otherwise : std::get_if<StepShare>(&options.solve_quantum);
  if (share && options.network == NetworkModel::kAnalytic) effective.solve_quantum = Time{0};
  if (share && options.network == NetworkModel::kFlow) {
    // Automatic quantum: a fixed fraction of the step, from a quick analytic run. Its all-to-all
    // plans (over the plan's byte matrices, which `details` keeps) are the steps' flows too.
    if (recsys) effective.all_to_all_plans = std::make_shared<AllToAllPlans>();
    StepSimulationOptions analytic = effective;
    analytic.network = NetworkModel::kAnalytic;
    analytic.keep_trace = false;
    analytic.solve_quantum = Time{0};
    analytic.steps = 1;  // an estimate: one step, start-up included
    analytic.warmup_steps = 0;
    const Time estimate = run(analytic).step_time;
    const Time quantum =
        std::max<Time>(kNanosecond, estimate / 1'000'000 * share->parts_per_million);
    effective.solve_quantum = quantum;
    if (exact_first && estimate > 0) {
      // A step's worth of rate changes at once, then a step's worth per estimated step time.
      const auto per_step = static_cast<double>(exact_first->rate_changes_per_step);
      effective.solve_quantum = Time{0};
      effective.rate_change_limit = StepSimulationOptions::RateChangeLimit{
          per_step, per_step / to_seconds(estimate), quantum};
    }
  }
  p.global_batch = batch_per_gpu * p.gpus;
  // A recommender's evaluation steps: a simulation of their own (the evaluation batch's matrices
  // and plans), which needs nothing from the training steps' and goes beside them when `threads`
  // allows, on a topology and routes of its own (the same routes: the output does not change).
  const bool evaluated = job && job->evaluation.configured;
  const double eval_batch =
      evaluated && job->evaluation.global_batch > 0 ? job->evaluation.global_batch : p.global_batch;
  std::optional<Time> eval_step, eval_quantum_from;
  StepSimulationResult result;
  if (recsys && evaluated) {
    // Evaluation steps repeat identically: one measured after the warm-up.
    StepSimulationOptions eval_options = effective;
    eval_options.keep_trace = false;
    eval_options.all_to_all_plans.reset();  // its own matrices (the evaluation batch's)
    eval_options.steps = eval_options.warmup_steps + 1;
    run_side_by_side(
        threads, [&] { result = run(effective); },
        [&] {
          if (threads != 1)
            eval_options.shared_topology = std::make_shared<SharedTopology>(cluster, nodes);
          const StepSimulationResult e = simulate_recsys_evaluation(
              cluster, *recsys, *job, nodes, eval_batch / p.gpus, *plan, eval_options);
          eval_step = e.step_time;
          eval_quantum_from = e.quantum_from;
        });
  } else {
    result = run(effective);
  }
  p.step_time = result.step_time;
  p.breakdown = result.breakdown;
  p.quantum_from = result.quantum_from;
  p.evaluation_quantum_from = eval_quantum_from;
  if (effective.rate_change_limit) p.quantum_after = effective.rate_change_limit->then_quantum;
  p.slowest_rank = result.slowest_rank;
  p.slowest_rank_compute = result.slowest_rank_compute;
  p.communication_busy = result.communication_busy;
  p.events = result.events;
  if (trace && result.trace) *trace = result.trace;
  std::optional<EvaluationCost> evaluation;
  if (evaluated) {
    const EvaluationSpec& e = job->evaluation;
    EvaluationCost cost;
    if (recsys) {
      cost.step_time = *eval_step;
    } else {
      DenseModelSpec forward = *dense;
      forward.batch_per_gpu = eval_batch / p.gpus;
      cost.step_time = time_from_seconds(to_seconds(dense_compute_time(forward, cluster.gpu)) *
                                         (1.0 - forward.backward_flops_fraction));
    }
    // The evaluation's reader streams each batch from storage while the previous one computes
    // (HugeCTR's asynchronous raw reader): a step takes the longer of its forward pass and its
    // read at the node's share of the storage bandwidth.
    double read_bw = cluster.storage.read_bytes_per_s_per_node;
    if (cluster.storage.shared_read_bytes_per_s > 0) {
      const double share = cluster.storage.shared_read_bytes_per_s / nodes;
      read_bw = read_bw > 0 ? std::min(read_bw, share) : share;
    }
    if (read_bw > 0) {
      cost.read_time = time_from_seconds(
          eval_batch / nodes * storage_bytes_per_example(workload) / read_bw,
          "reading an evaluation batch (its bytes over cluster.storage's read bandwidth)");
      cost.step_time = std::max(cost.step_time, cost.read_time);
    }
    const double epoch = dataset_of(workload).examples;
    if (e.every_in_epochs && !(epoch > 0)) {
      throw ConfigError(e.every_location,
                        "an interval in epochs needs the model's dataset.examples (or give "
                        "'N examples')");
    }
    cost.steps = std::ceil(e.examples / eval_batch);
    cost.seconds = cost.steps * to_seconds(cost.step_time);
    cost.steps_between = e.every * (e.every_in_epochs ? epoch : 1.0) / p.global_batch;
    evaluation = cost;
  }
  add_beyond_the_step(p, cluster, workload, batch_per_gpu, target, options.seed, evaluation);
  return p;
}

ScalingStudy run_scaling_study(const ClusterSpec& cluster, const Workload& workload,
                               std::vector<int> node_counts, const ScalingStudyOptions& options) {
  std::sort(node_counts.begin(), node_counts.end());
  node_counts.erase(std::unique(node_counts.begin(), node_counts.end()), node_counts.end());
  ScalingStudy study;
  if (node_counts.empty()) return study;
  study.batch =
      resolve_batch_scaling(workload, options.scaling, node_counts.front() * cluster.gpus_per_node,
                            node_counts.back() * cluster.gpus_per_node);
  study.target = resolve_quality_target(workload, options.target_quality, options.target_origin);
  // Each node count into its own slot. With several threads, each iteration takes the largest
  // node count not yet taken (the largest cost the most), so the study takes about as long as its
  // largest point when the others fit beside it. A point's memory grows with its nodes: the
  // points running at once hold at most twice the largest one's nodes (any one may run alone),
  // so a long list of large node counts (--nodes 1024-2048) does not multiply the memory by the
  // cores. An error is the smallest failing node count's, as when they run one after another.
  const std::size_t n = node_counts.size();
  study.points.resize(n);
  std::vector<std::exception_ptr> errors(n);
  std::mutex progress;
  std::size_t done = 0;
  auto simulate = [&](std::size_t i) {
    const int nodes = node_counts[i];
    StepSimulationOptions sim_options = options.simulation;
    sim_options.keep_trace = nodes == options.trace_nodes;  // only that one writes the trace
    study.points[i] =
        simulate_point(cluster, workload, nodes, study.batch.at(nodes * cluster.gpus_per_node),
                       sim_options, &study.target, &study.trace, options.threads);
    if (options.on_point) {
      const std::lock_guard<std::mutex> lock(progress);
      options.on_point(++done, n, nodes);
    }
  };
  if (options.threads == 1 || n == 1) {
    for (std::size_t i = 0; i < n; ++i) simulate(i);  // ascending; the first error stops it
  } else {
    const long budget = 2L * node_counts.back();
    std::mutex gate;
    std::condition_variable room;
    std::size_t next = 0;  // the points taken, largest first
    long running = 0;      // nodes of the points being simulated
    parallel_for_index(n, options.threads, [&](std::size_t) {
      std::size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(gate);
        i = n - 1 - next++;
        room.wait(lock, [&] { return running == 0 || running + node_counts[i] <= budget; });
        running += node_counts[i];
      }
      try {
        simulate(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      {
        const std::lock_guard<std::mutex> lock(gate);
        running -= node_counts[i];
      }
      room.notify_all();
    });
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  fill_speedup_and_efficiency(study.points);
  return study;
}

ScalingStudy run_scaling_study(const ClusterSpec& cluster, const DenseModelSpec& model,
                               std::vector<int> node_counts, const ScalingStudyOptions& options) {
  return run_scaling_study(cluster, Workload{model, std::nullopt}, std::move(node_counts), options);
}

Interval confidence_interval_95(const std::vector<double>& sample) {
  Interval out;
  const std::size_t n = sample.size();
  if (n == 0) return out;
  for (const double v : sample) out.mean += v;
  out.mean /= static_cast<double>(n);
  if (n == 1) return out;
  double squares = 0.0;
  for (const double v : sample) squares += (v - out.mean) * (v - out.mean);
  const double sd = std::sqrt(squares / static_cast<double>(n - 1));
  const boost::math::students_t t(static_cast<double>(n - 1));
  out.half_width = boost::math::quantile(t, 0.975) * sd / std::sqrt(static_cast<double>(n));
  return out;
}

void RunSamples::add(const ScalingPoint& point) {
  throughput.push_back(point.throughput);
  speedup.push_back(point.speedup);
  efficiency.push_back(point.efficiency);
  step_time_s.push_back(to_seconds(point.step_time));
}

RepeatedFigures RunSamples::figures() const {
  return {static_cast<int>(throughput.size()), confidence_interval_95(throughput),
          confidence_interval_95(speedup), confidence_interval_95(efficiency),
          confidence_interval_95(step_time_s)};
}

ScalingStudy run_repeated_scaling_study(
    const ClusterSpec& cluster, const Workload& workload, std::vector<int> node_counts,
    const ScalingStudyOptions& options, int runs, int threads,
    const std::function<ClusterSpec(std::uint64_t seed)>& draw) {
  TRAINSIM_ASSERT(runs >= 1, "at least one run");
  ScalingStudy first = run_scaling_study(cluster, workload, node_counts, options);
  if (runs == 1) return first;
  const std::size_t points = first.points.size();
  std::vector<RunSamples> samples(points);
  auto add = [&](const ScalingStudy& study) {
    for (std::size_t i = 0; i < points; ++i) samples[i].add(study.points[i]);
  };
  // Each run in its own slot, added in seed order: the same result for any thread count. Without
  // a draw, the first run is the given one.
  if (!draw) add(first);
  const std::size_t offset = draw ? 0 : 1;
  std::vector<ScalingStudy> more(runs - offset);
  parallel_for_index(more.size(), threads, [&](std::size_t k) {
    ScalingStudyOptions again = options;
    again.trace_nodes = 0;
    again.on_point = nullptr;
    again.threads = 1;  // the runs are what goes in parallel
    again.simulation.seed = options.simulation.seed + static_cast<std::uint64_t>(k + offset);
    more[k] = draw ? run_scaling_study(draw(again.simulation.seed), workload, node_counts, again)
                   : run_scaling_study(cluster, workload, node_counts, again);
  });
  for (const ScalingStudy& study : more) add(study);
  for (std::size_t i = 0; i < points; ++i) first.points[i].repeated = samples[i].figures();
  return first;
}

}  // namespace trainsim::models
