#include "models/scaling/claim.h"

namespace trainsim::models {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPlausible:
      return "plausible";
    case Verdict::kOptimistic:
      return "optimistic";
    case Verdict::kPessimistic:
      return "pessimistic";
  }
  return "?";
}

Verdict judge_claim(double claimed, double predicted, double bound, double ideal,
                    double tolerance) {
  if (claimed > ideal * (1.0 + 1e-9) || claimed > bound * (1.0 + tolerance)) {
    return Verdict::kOptimistic;
  }
  if (claimed < predicted * (1.0 - tolerance)) return Verdict::kPessimistic;
  return Verdict::kPlausible;
}

RunComparison compare_runs(const TrainingRun& a, const TrainingRun& b) {
  RunComparison c;
  c.throughput_ratio = b.throughput / a.throughput;
  c.time_to_quality_ratio = a.seconds_to_target / b.seconds_to_target;
  c.examples_ratio = b.examples() / a.examples();
  if (a.global_batch && b.global_batch) {
    c.fit = fit_convergence(*a.global_batch, a.examples(), *b.global_batch, b.examples());
  }
  return c;
}

}  // namespace trainsim::models
