#include "models/runtime/input_pipeline.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <vector>

#include "engine/check.h"
#include "engine/flow_network.h"
#include "engine/simulation.h"
#include "engine/topology.h"

namespace trainsim::models {

namespace {

// CPU work runs as flows on a link whose capacity is the number of cores, in units of
// core-nanoseconds per second; each worker is one thread (rate cap: one core).
constexpr double kCoreScale = 1e9;

struct StageCapacity {
  const char* name;
  double examples_per_s = std::numeric_limits<double>::infinity();
};

}  // namespace

InputPipelineResult simulate_input_pipeline(const InputPipelineInputs& in) {
  TRAINSIM_ASSERT(in.nodes >= 1 && in.gpus_per_node >= 1 && in.batch_per_gpu > 0,
                  "input pipeline needs nodes, GPUs and a batch");
  const DataloaderSpec& d = in.dataloader;
  const int gpus = in.gpus_per_node;
  const int workers = std::max(1, d.workers_per_gpu);
  const int depth = std::max(1, d.prefetch_batches);
  const double batch_bytes = in.batch_per_gpu * in.bytes_per_example;
  const double batch_cpu = in.batch_per_gpu * d.preprocess_seconds_per_example;
  // Nodes are symmetric (the same batches on the same schedule), so each gets an equal share of
  // a shared filesystem: one node stands for all.
  double read_bw = in.storage.read_bytes_per_s_per_node;
  if (in.storage.shared_read_bytes_per_s > 0) {
    const double share = in.storage.shared_read_bytes_per_s / in.nodes;
    read_bw = read_bw > 0 ? std::min(read_bw, share) : share;
  }
  const bool reads = batch_bytes > 0 && read_bw > 0;
  const int cores =
      in.host.cpu_cores > 0 ? std::min(in.host.cpu_cores, gpus * workers) : gpus * workers;
  const bool cpu = batch_cpu > 0;

  InputPipelineResult result;
  // The stages' capacities (examples/s per GPU), to name the limit.
  const double latency_s = to_seconds(in.storage.read_latency);
  std::vector<StageCapacity> stages;
  if (reads) {
    const double node_bw = in.storage.read_bytes_per_s_per_node;
    const bool shared_limits =
        in.storage.shared_read_bytes_per_s > 0 && (node_bw <= 0 || read_bw < node_bw);
    stages.push_back({shared_limits ? "shared filesystem" : "storage reads per node",
                      read_bw / (gpus * in.bytes_per_example)});
  }
  if (cpu && cores < gpus * workers) {  // fewer cores than workers
    stages.push_back(
        {"preprocessing (CPU cores)", cores / (gpus * d.preprocess_seconds_per_example)});
  }
  const double batch_latency =
      (reads ? latency_s + batch_bytes / read_bw : 0.0) + (cpu ? batch_cpu : 0.0);
  if (batch_latency > 0) {
    stages.push_back({"dataloader workers", workers * in.batch_per_gpu / batch_latency});
    stages.push_back({"prefetch depth", depth * in.batch_per_gpu / batch_latency});
  }
  if (stages.empty()) return result;  // nothing to wait for
  const auto limiting = std::min_element(stages.begin(), stages.end(),
                                         [](const StageCapacity& a, const StageCapacity& b) {
                                           return a.examples_per_s < b.examples_per_s;
                                         });
  result.limit = limiting->name;
  result.examples_per_s_per_gpu = limiting->examples_per_s;

  Simulation sim;
  Topology topology;
  const VertexId storage = topology.add_vertex("storage", false);
  const VertexId host = topology.add_vertex("host", false);
  const VertexId cpu_in = topology.add_vertex("cpu work", false);
  const VertexId cpu_out = topology.add_vertex("cpu done", false);
  if (reads) topology.add_link(storage, host, read_bw, in.storage.read_latency, "storage read");
  topology.add_link(cpu_in, cpu_out, cores * kCoreScale, 0, "cpu");
  FlowNetwork network(sim, topology);

  // Steady state: past the start-up transient (the prefetch queue filling or draining) and over a
  // whole number of worker rounds (each worker takes every `workers`-th batch).
  const int warmup = std::max(32, 2 * (depth + workers));
  const int rounds = (32 + workers - 1) / workers;
  const int steps = warmup + rounds * workers;
  result.steps_simulated = steps;

  std::vector<std::vector<Time>> ready(gpus, std::vector<Time>(steps + depth, -1));
  std::vector<std::vector<std::deque<int>>> queue(gpus, std::vector<std::deque<int>>(workers));
  std::vector<std::vector<bool>> busy(gpus, std::vector<bool>(workers, false));
  std::vector<Time> consumed(steps, 0);
  int next_step = 0;     // the next batch the training step takes
  Time step_free = 0;    // when the previous step ends
  bool waiting = false;  // a consume attempt is scheduled at step_free

  // A batch's preprocessing time factor: mean 1, coefficient of variation `preprocess_jitter`,
  // from a hash of (seed, GPU, batch) so it does not depend on the order events run in.
  auto jitter = [&](int g, int k) {
    if (d.preprocess_jitter <= 0) return 1.0;
    const std::uint64_t h = mix64(
        in.seed ^ mix64((static_cast<std::uint64_t>(g) << 32) ^ static_cast<std::uint64_t>(k)));
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
    return 1.0 + std::sqrt(3.0) * d.preprocess_jitter * (2.0 * u - 1.0);
  };
  std::function<void(int, int)> run_worker;
  std::function<void()> try_consume;
  auto finish = [&](int g, int w, int k) {
    ready[g][k] = sim.now();
    busy[g][w] = false;
    run_worker(g, w);
    if (k == next_step) try_consume();
  };
  run_worker = [&](int g, int w) {
    if (busy[g][w] || queue[g][w].empty()) return;
    const int k = queue[g][w].front();
    queue[g][w].pop_front();
    busy[g][w] = true;
    auto preprocess = [&, g, w, k] {
      if (cpu) {
        network.start(
            cpu_in, cpu_out, batch_cpu * jitter(g, k) * kCoreScale,
            [&finish, g, w, k] { finish(g, w, k); }, {}, kCoreScale);
      } else {
        finish(g, w, k);
      }
    };
    if (reads) {
      network.start(storage, host, batch_bytes, preprocess);
    } else {
      preprocess();
    }
  };
  auto request = [&](int k) {
    if (k >= steps) return;
    for (int g = 0; g < gpus; ++g) {
      queue[g][k % workers].push_back(k);
      run_worker(g, k % workers);
    }
  };
  try_consume = [&] {
    if (next_step >= steps || waiting) return;
    for (int g = 0; g < gpus; ++g) {
      if (ready[g][next_step] < 0) return;
    }
    if (sim.now() < step_free) {
      waiting = true;
      sim.schedule_at(step_free, [&] {
        waiting = false;
        try_consume();
      });
      return;
    }
    const int k = next_step++;
    consumed[k] = sim.now();
    step_free = sim.now() + in.step_time;
    request(k + depth);
    // The next step may take its batch (if ready) when this one ends.
    waiting = true;
    sim.schedule_at(step_free, [&] {
      waiting = false;
      try_consume();
    });
  };
  for (int k = 0; k < depth; ++k) request(k);
  sim.run();
  TRAINSIM_ASSERT(next_step == steps, "input pipeline did not finish");

  // Stall of step k: the time it started after the previous step ended.
  Time stalled = 0;
  for (int k = warmup; k < steps; ++k) stalled += consumed[k] - (consumed[k - 1] + in.step_time);
  result.stall_per_step = stalled / (steps - warmup);
  // Workers that read and then preprocess, all at once, leave the storage idle while they compute
  // and the CPUs idle while they read: the pipeline then delivers less than any one stage could.
  const double delivered = in.batch_per_gpu / to_seconds(in.step_time + result.stall_per_step);
  if (result.stall_per_step > 0 && delivered < 0.95 * result.examples_per_s_per_gpu) {
    result.limit = "dataloader workers (each reads, then preprocesses)";
    result.examples_per_s_per_gpu = delivered;
  }
  return result;
}

}  // namespace trainsim::models
