// What a training job needs beyond the step: the cluster's storage, host CPUs and reliability,
// the dataset and convergence behaviour of a model, and a job's dataloader and checkpoint
// settings. Plain validated data; models/config builds it from YAML (configs/README.md).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/units.h"
#include "models/spec/config_error.h"
#include "models/spec/enum_names.h"

namespace trainsim::models {

// Storage the nodes read training data from and write checkpoints to. 0 means not given.
struct StorageSpec {
  double read_bytes_per_s_per_node = 0.0;  // each node's reader (its storage NIC, local disks)
  double write_bytes_per_s_per_node = 0.0;
  double shared_read_bytes_per_s = 0.0;  // aggregate limit of a shared filesystem
  double shared_write_bytes_per_s = 0.0;
  Time read_latency = 0;  // per read request
  SourceLocation location;
};

// Host CPUs per node (0: not given; the dataloader's workers then each have a core).
enum class CpuVendor { kIntel, kAmd, kArm };
const EnumNames<CpuVendor>& cpu_vendor_names();  // "intel", "amd", "arm" (cluster_spec.cc)
struct HostSpec {
  int cpu_cores = 0;
  // NCCL's tuning reads the CPU vendor (its network overhead and low-latency bandwidth caps).
  CpuVendor cpu_vendor = CpuVendor::kIntel;
  double memory_bytes = 0.0;  // system memory per node (0: unknown)
};

// Failures: each node fails independently with this mean time between failures; the job then
// restarts (restart_seconds: rescheduling and start-up) and reloads its last checkpoint.
struct ReliabilitySpec {
  double node_mtbf_seconds = 0.0;  // 0: no failures modelled
  double restart_seconds = 0.0;
  SourceLocation location;
};

// The training data of a model.
struct DatasetSpec {
  double bytes_per_example = 0.0;  // on storage; 0: the model's input bytes per example
  double examples = 0.0;           // one epoch; 0: not given
};

// One measured point of the convergence curve: at a small global batch (well below the critical
// batch), `min_examples` examples reach `quality`.
struct QualityPoint {
  double quality = 0.0;
  double min_examples = 0.0;
};

// Critical-batch-size model of convergence: reaching a target takes S = S_min (1 + B_noise / B)
// steps, E = E_min (1 + B / B_noise) examples at global batch B (E_min = S_min B_noise).
struct ConvergenceSpec {
  bool configured = false;
  std::string metric = "quality";
  double critical_batch = std::numeric_limits<double>::infinity();  // B_noise, examples
  std::vector<QualityPoint> curve;                                  // E_min per quality, monotone
  std::optional<double> target;                                     // default target quality
  SourceLocation location;
  SourceLocation target_location;
};

struct DataloaderSpec {
  bool configured = false;
  std::optional<double> bytes_per_example;      // unset: the model's dataset
  double preprocess_seconds_per_example = 0.0;  // CPU time on one core
  // Variability of a batch's preprocessing time: its coefficient of variation (uniform spread
  // around the mean, drawn from the seed); 0 makes every batch alike.
  double preprocess_jitter = 0.0;
  int workers_per_gpu = 1;
  int prefetch_batches = 2;  // batches per GPU requested ahead (ready or being prepared)
  SourceLocation location;
};

struct CheckpointSpec {
  bool configured = false;
  bool async = false;                      // training pauses only for the device-to-host copy
  std::optional<double> interval_seconds;  // unset: the Young/Daly optimum
  std::optional<double> bytes;             // unset: parameters and optimizer state of the model
  SourceLocation location;
};

// Periodic evaluation on a held-out set: a phase of forward-only steps between training steps,
// not overlapped with them (MLPerf DLRM-DCNv2: every 0.05 epoch, the whole evaluation set of
// 89,137,319 examples at a batch of 262,144).
struct EvaluationSpec {
  bool configured = false;
  double every = 0.0;           // training between two evaluations, in epochs or in examples
  bool every_in_epochs = true;  // epochs need the model's dataset.examples
  double examples = 0.0;        // examples of one evaluation
  double global_batch = 0.0;    // examples per evaluation step over all GPUs (0: the training's)
  SourceLocation location;
  SourceLocation every_location;
};

}  // namespace trainsim::models
