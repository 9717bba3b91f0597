#include "models/workload/dense_training.h"

#include <string>

#include "engine/check.h"
#include "models/workload/step_runner.h"

namespace trainsim::models {

Time dense_compute_time(const DenseModelSpec& model, const GpuSpec& gpu) {
  const auto peak = gpu.peak_flops_per_s.find(model.compute_dtype);
  TRAINSIM_ASSERT(peak != gpu.peak_flops_per_s.end(), "GPU has no peak for the compute format");
  const double flops = model.flops_per_example * model.batch_per_gpu;
  return time_from_seconds(flops / (peak->second * gpu.gemm_efficiency),
                           "a GPU's compute per step (model.flops_per_example x the batch over "
                           "cluster.gpu.peak_flops)");
}

DenseModelSpec dense_model_for_job(DenseModelSpec model, const JobSpec& job) {
  if (job.all_reduce_algorithm) model.all_reduce_algorithm = job.all_reduce_algorithm;
  if (job.overlap_gradient_all_reduce) model.overlap_all_reduce = *job.overlap_gradient_all_reduce;
  if (job.gradient_buckets) model.gradient_buckets = *job.gradient_buckets;
  return model;
}

StepSimulationResult simulate_dense_training(const ClusterSpec& cluster,
                                             const DenseModelSpec& model, int nodes,
                                             const StepSimulationOptions& options) {
  StepRunner runner(cluster, nodes, options, /*input_copies=*/false);
  add_dense_training(runner, model);
  StepSimulationResult result = runner.run();
  if (!runner.symmetry_broken()) return result;
  StepSimulationOptions whole = options;
  whole.represent_nodes = false;
  StepRunner every_rank(cluster, nodes, whole, /*input_copies=*/false);
  add_dense_training(every_rank, model);
  return every_rank.run();
}

void add_dense_training(StepRunner& runner, const DenseModelSpec& model) {
  const ClusterSpec& cluster = runner.cluster();
  // Compute split: forward, then backward in `buckets` equal pieces.
  const Time compute = dense_compute_time(model, cluster.gpu);
  const Time backward = time_from_seconds(to_seconds(compute) * model.backward_flops_fraction);
  const Time forward = compute - backward;
  const int buckets = model.overlap_all_reduce ? model.gradient_buckets : 1;
  const double bucket_bytes = model.parameter_bytes / buckets;
  // Every bucket has the same size, so one algorithm choice serves them all.
  const PickedAlgorithm picked = runner.pick_all_reduce(bucket_bytes, model.all_reduce_algorithm);
  // Every rank does the same.
  runner.represent_nodes();

  for (int s = 0; s < runner.steps(); ++s) {
    runner.begin_step(s);
    const std::string suffix = " #" + std::to_string(s);
    std::vector<Collective*> bucket_collectives;
    for (int b = 0; b < buckets; ++b) {
      bucket_collectives.push_back(runner.all_reduce(bucket_bytes, picked));
    }
    for (const int r : runner.simulated()) {
      const TaskId fwd = runner.compute("forward" + suffix, r, forward);
      if (s > 0) runner.depend(runner.step_end(s - 1, r), fwd);
      TaskId previous = fwd;
      std::vector<TaskId> reduces;
      for (int b = 0; b < buckets; ++b) {
        // Split backward time exactly: bucket b ends at backward * (b + 1) / buckets.
        const Time piece = backward * (b + 1) / buckets - backward * b / buckets;
        const TaskId bwd = runner.compute(
            "backward" + suffix + (buckets > 1 ? " bucket " + std::to_string(b) : ""), r, piece);
        runner.depend(previous, bwd);
        previous = bwd;
        if (model.overlap_all_reduce) {
          const TaskId ar = runner.join("all-reduce" + suffix + " bucket " + std::to_string(b), r,
                                        bucket_collectives[b], r);
          runner.depend(bwd, ar);
          reduces.push_back(ar);
        }
      }
      if (!model.overlap_all_reduce) {
        const TaskId ar = runner.join("all-reduce" + suffix, r, bucket_collectives[0], r);
        runner.depend(previous, ar);
        reduces.push_back(ar);
      }
      const TaskId end = runner.end_step("step end" + suffix, r);
      runner.depend(previous, end);
      for (const TaskId ar : reduces) runner.depend(ar, end);
    }
  }
}

}  // namespace trainsim::models
