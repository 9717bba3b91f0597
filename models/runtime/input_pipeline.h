// The input pipeline of one node, simulated batch by batch until it reaches steady state: each
// GPU's dataloader workers read their batch from storage (the node's reader, and its share of a
// shared filesystem, as flows sharing bandwidth), preprocess it on the host CPUs, and queue it;
// a GPU requests `prefetch_batches` batches ahead; the training step takes the next batch when the
// previous step is done. An input stall is the time a step waits for its batch.
#pragma once

#include <cstdint>
#include <string>

#include "engine/units.h"
#include "models/spec/runtime_spec.h"

namespace trainsim::models {

struct InputPipelineInputs {
  DataloaderSpec dataloader;
  StorageSpec storage;
  HostSpec host;
  int nodes = 1;
  int gpus_per_node = 1;
  double batch_per_gpu = 1.0;
  double bytes_per_example = 0.0;  // read from storage
  Time step_time = 0;              // the step without input stalls
  std::uint64_t seed = 0;          // for preprocessing jitter
};

struct InputPipelineResult {
  Time stall_per_step = 0;  // steady state, mean over the measured steps
  // What limits the pipeline's rate, from the stages' capacities: "storage reads per node",
  // "shared filesystem", "preprocessing (CPU cores)", "dataloader workers" or "prefetch depth";
  // or, when the simulated pipeline delivers less than every stage could (workers reading and
  // preprocessing in step), "dataloader workers (each reads, then preprocesses)".
  std::string limit;
  double examples_per_s_per_gpu = 0.0;  // the limit's rate
  int steps_simulated = 0;
};

InputPipelineResult simulate_input_pipeline(const InputPipelineInputs& in);

}  // namespace trainsim::models
