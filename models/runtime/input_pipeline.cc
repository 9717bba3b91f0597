#include "models/runtime/input_pipeline.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
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

// What one node's dataloader has to do per batch and GPU, and with what.
struct LoaderShape {
  explicit LoaderShape(const InputPipelineInputs& in)
      : gpus(in.gpus_per_node),
        workers(std::max(1, in.dataloader.workers_per_gpu)),
        depth(std::max(1, in.dataloader.prefetch_batches)),
        batch_bytes(in.batch_per_gpu * in.bytes_per_example),
        batch_cpu(in.batch_per_gpu * in.dataloader.preprocess_seconds_per_example) {
    // Nodes are symmetric (the same batches on the same schedule), so each gets an equal share
    // of a shared filesystem: one node stands for all.
    read_bw = in.storage.read_bytes_per_s_per_node;
    if (in.storage.shared_read_bytes_per_s > 0) {
      const double share = in.storage.shared_read_bytes_per_s / in.nodes;
      read_bw = read_bw > 0 ? std::min(read_bw, share) : share;
    }
    reads = batch_bytes > 0 && read_bw > 0;
    cores = in.host.cpu_cores > 0 ? std::min(in.host.cpu_cores, gpus * workers) : gpus * workers;
    cpu = batch_cpu > 0;
  }
  int gpus, workers, depth;
  double batch_bytes, batch_cpu;
  double read_bw = 0;
  bool reads = false;
  int cores = 0;
  bool cpu = false;
};

// The stage that limits the pipeline (examples/s per GPU); none when nothing is to be waited for.
std::optional<StageCapacity> limiting_stage(const InputPipelineInputs& in, const LoaderShape& l) {
  std::vector<StageCapacity> stages;
  if (l.reads) {
    const double node_bw = in.storage.read_bytes_per_s_per_node;
    const bool shared_limits =
        in.storage.shared_read_bytes_per_s > 0 && (node_bw <= 0 || l.read_bw < node_bw);
    stages.push_back({shared_limits ? "shared filesystem" : "storage reads per node",
                      l.read_bw / (l.gpus * in.bytes_per_example)});
  }
  if (l.cpu && l.cores < l.gpus * l.workers) {  // fewer cores than workers
    stages.push_back({"preprocessing (CPU cores)",
                      l.cores / (l.gpus * in.dataloader.preprocess_seconds_per_example)});
  }
  const double batch_latency =
      (l.reads ? to_seconds(in.storage.read_latency) + l.batch_bytes / l.read_bw : 0.0) +
      (l.cpu ? l.batch_cpu : 0.0);
  if (batch_latency > 0) {
    stages.push_back({"dataloader workers", l.workers * in.batch_per_gpu / batch_latency});
    stages.push_back({"prefetch depth", l.depth * in.batch_per_gpu / batch_latency});
  }
  if (stages.empty()) return std::nullopt;
  return *std::min_element(stages.begin(), stages.end(),
                           [](const StageCapacity& a, const StageCapacity& b) {
                             return a.examples_per_s < b.examples_per_s;
                           });
}

// One node's dataloader run batch by batch: each GPU's workers take every `workers`-th batch,
// read it (a flow on the storage link) and preprocess it (a flow on the node's cores, one core
// per worker at most); the step takes batch k when every GPU has it and the previous step has
// ended, and then requests batch k + depth.
class NodeLoader {
 public:
  NodeLoader(const InputPipelineInputs& in, const LoaderShape& l, int steps)
      : in_(in),
        l_(l),
        steps_(steps),
        storage_(topology_.add_vertex("storage", false)),
        host_(topology_.add_vertex("host", false)),
        cpu_in_(topology_.add_vertex("cpu work", false)),
        cpu_out_(topology_.add_vertex("cpu done", false)),
        ready_(l.gpus, std::vector<Time>(steps + l.depth, -1)),
        queue_(l.gpus, std::vector<std::deque<int>>(l.workers)),
        busy_(l.gpus, std::vector<bool>(l.workers, false)),
        consumed_(steps, 0) {
    if (l.reads) {
      topology_.add_link(storage_, host_, l.read_bw, in.storage.read_latency, "storage read");
    }
    topology_.add_link(cpu_in_, cpu_out_, l.cores * kCoreScale, 0, "cpu");
    network_ = std::make_unique<FlowNetwork>(sim_, topology_);
  }

  // When each step took its batch.
  const std::vector<Time>& run() {
    for (int k = 0; k < l_.depth; ++k) request(k);
    sim_.run();
    TRAINSIM_ASSERT(next_step_ == steps_, "input pipeline did not finish");
    return consumed_;
  }

 private:
  // A batch's preprocessing time factor: mean 1, coefficient of variation `preprocess_jitter`,
  // from a hash of (seed, GPU, batch) so it does not depend on the order events run in.
  double jitter(int g, int k) const {
    const double cv = in_.dataloader.preprocess_jitter;
    if (cv <= 0) return 1.0;
    const std::uint64_t h = mix64(
        in_.seed ^ mix64((static_cast<std::uint64_t>(g) << 32) ^ static_cast<std::uint64_t>(k)));
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
    return 1.0 + std::sqrt(3.0) * cv * (2.0 * u - 1.0);
  }

  void finish(int g, int w, int k) {
    ready_[g][k] = sim_.now();
    busy_[g][w] = false;
    run_worker(g, w);
    if (k == next_step_) try_consume();
  }

  void run_worker(int g, int w) {
    if (busy_[g][w] || queue_[g][w].empty()) return;
    const int k = queue_[g][w].front();
    queue_[g][w].pop_front();
    busy_[g][w] = true;
    auto preprocess = [this, g, w, k] {
      if (l_.cpu) {
        network_->start(
            cpu_in_, cpu_out_, l_.batch_cpu * jitter(g, k) * kCoreScale,
            [this, g, w, k] { finish(g, w, k); }, {}, kCoreScale);
      } else {
        finish(g, w, k);
      }
    };
    if (l_.reads) {
      network_->start(storage_, host_, l_.batch_bytes, preprocess);
    } else {
      preprocess();
    }
  }

  void request(int k) {
    if (k >= steps_) return;
    for (int g = 0; g < l_.gpus; ++g) {
      queue_[g][k % l_.workers].push_back(k);
      run_worker(g, k % l_.workers);
    }
  }

  // Tries again when the current step ends.
  void retry_at_step_end() {
    waiting_ = true;
    sim_.schedule_at(step_free_, [this] {
      waiting_ = false;
      try_consume();
    });
  }

  void try_consume() {
    if (next_step_ >= steps_ || waiting_) return;
    for (int g = 0; g < l_.gpus; ++g) {
      if (ready_[g][next_step_] < 0) return;
    }
    if (sim_.now() < step_free_) {
      retry_at_step_end();
      return;
    }
    const int k = next_step_++;
    consumed_[k] = sim_.now();
    step_free_ = sim_.now() + in_.step_time;
    request(k + l_.depth);
    // The next step may take its batch (if ready) when this one ends.
    retry_at_step_end();
  }

  const InputPipelineInputs& in_;
  const LoaderShape& l_;
  const int steps_;
  Simulation sim_;
  Topology topology_;
  const VertexId storage_, host_, cpu_in_, cpu_out_;
  std::unique_ptr<FlowNetwork> network_;
  std::vector<std::vector<Time>> ready_;  // [GPU][batch]: when its batch was ready (-1: not yet)
  std::vector<std::vector<std::deque<int>>> queue_;  // [GPU][worker]: batches requested
  std::vector<std::vector<bool>> busy_;
  std::vector<Time> consumed_;
  int next_step_ = 0;     // the next batch the training step takes
  Time step_free_ = 0;    // when the previous step ends
  bool waiting_ = false;  // a consume attempt is scheduled at step_free_
};

}  // namespace

InputPipelineResult simulate_input_pipeline(const InputPipelineInputs& in) {
  TRAINSIM_ASSERT(in.nodes >= 1 && in.gpus_per_node >= 1 && in.batch_per_gpu > 0,
                  "input pipeline needs nodes, GPUs and a batch");
  const LoaderShape shape(in);
  InputPipelineResult result;
  const std::optional<StageCapacity> limiting = limiting_stage(in, shape);
  if (!limiting) return result;  // nothing to wait for
  result.limit = limiting->name;
  result.examples_per_s_per_gpu = limiting->examples_per_s;

  // Steady state: past the start-up transient (the prefetch queue filling or draining) and over a
  // whole number of worker rounds (each worker takes every `workers`-th batch).
  const int warmup = std::max(32, 2 * (shape.depth + shape.workers));
  const int rounds = (32 + shape.workers - 1) / shape.workers;
  const int steps = warmup + rounds * shape.workers;
  result.steps_simulated = steps;
  NodeLoader loader(in, shape, steps);
  const std::vector<Time>& consumed = loader.run();

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
