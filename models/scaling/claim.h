// Checking a reported scaling result: speedup and efficiency of a claim, a verdict against
// trainsim's prediction and the bound the cluster allows, and two runs' throughput against their
// time-to-quality (with the critical-batch model fitted to them when their batches are known).
#pragma once

#include <optional>
#include <string>

#include "models/runtime/convergence.h"

namespace trainsim::models {

struct ScalingClaim {
  int baseline_nodes = 1;
  int nodes = 1;
  double speedup = 0.0;
  double ideal() const { return static_cast<double>(nodes) / baseline_nodes; }
  double efficiency() const { return speedup / ideal(); }
};

enum class Verdict { kPlausible, kOptimistic, kPessimistic };
const char* verdict_name(Verdict verdict);

// Plausible when the claim lies within `tolerance` (relative) of the prediction, or between the
// prediction and the bound; optimistic beyond the bound (by more than the tolerance), or beyond
// linear scaling; pessimistic below the prediction by more than the tolerance.
Verdict judge_claim(double claimed, double predicted, double bound, double ideal, double tolerance);

// A run: throughput (examples/s), wall time to the target quality, and (optionally) its global
// batch.
struct TrainingRun {
  double throughput = 0.0;
  double seconds_to_target = 0.0;
  std::optional<double> global_batch;
  double examples() const { return throughput * seconds_to_target; }
};

struct RunComparison {
  double throughput_ratio = 0.0;       // B / A
  double time_to_quality_ratio = 0.0;  // A's time / B's time: the time-to-quality speedup
  double examples_ratio = 0.0;         // examples B needed / examples A needed
  std::optional<ConvergenceFit> fit;   // when both batches are given and fit the model
};
RunComparison compare_runs(const TrainingRun& a, const TrainingRun& b);

}  // namespace trainsim::models
