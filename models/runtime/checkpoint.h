// Checkpoint and failure overhead: the Young/Daly optimum checkpoint interval and the expected
// wall time per unit of useful work with exponential failures (Daly, "A higher order estimate of
// the optimum checkpoint interval for restart dumps", FGCS 2006), for synchronous and
// asynchronous checkpoints.
#pragma once

#include "models/spec/runtime_spec.h"

namespace trainsim::models {

// Young's first-order optimum interval of compute between checkpoints: sqrt(2 delta M).
double young_interval(double checkpoint_seconds, double mtbf_seconds);
// Daly's higher-order optimum: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] -
// delta for delta < 2M, else M.
double daly_interval(double checkpoint_seconds, double mtbf_seconds);
// Expected wall time per unit of solve time, T_w / T_s, checkpointing every `interval` seconds of
// work with a pause of `checkpoint` seconds, `restart` seconds to resume after a failure, and
// exponential failures of mean `mtbf` (0: none, giving (interval + checkpoint) / interval):
// M e^(R/M) (e^((tau + delta)/M) - 1) / tau.
double daly_wall_time_ratio(double interval_seconds, double checkpoint_seconds,
                            double restart_seconds, double mtbf_seconds);

struct CheckpointCost {
  double bytes = 0.0;                 // one checkpoint
  double write_seconds = 0.0;         // to storage, all nodes writing
  double pause_seconds = 0.0;         // training stopped per checkpoint
  double restore_seconds = 0.0;       // after a failure: restart and reading the checkpoint back
  double cluster_mtbf_seconds = 0.0;  // node MTBF / nodes; 0: no failures
  double interval_seconds = 0.0;      // of training between checkpoints
  bool optimal_interval = false;      // chosen by Daly's formula
  double overhead = 0.0;              // T_w / T_s - 1: extra wall time per unit of useful work
};

struct CheckpointInputs {
  CheckpointSpec checkpoint;
  StorageSpec storage;
  ReliabilitySpec reliability;
  int nodes = 1;
  int gpus = 1;
  double model_bytes = 0.0;                 // parameters and optimizer state, one copy
  double device_to_host_bytes_per_s = 0.0;  // per GPU (0: not modelled)
};

// Throws ConfigError (at the job's checkpoint key) when the storage gives no write bandwidth, or
// the interval is left to the optimum without a node MTBF.
CheckpointCost checkpoint_cost(const CheckpointInputs& in);

}  // namespace trainsim::models
