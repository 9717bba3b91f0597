// Time-to-quality: how many examples (and steps) reaching a target quality takes at a global batch,
// by the critical-batch-size model (McCandlish et al., "An Empirical Model of Large-Batch
// Training", 2018): S = S_min (1 + B_noise / B) steps, E = E_min (1 + B / B_noise) examples.
// Below the critical batch B_noise, a larger batch needs about as many examples (fewer steps);
// beyond it, more examples for the same quality.
#pragma once

#include <optional>

#include "models/spec/runtime_spec.h"

namespace trainsim::models {

// Examples and steps to the target at global batch `batch` from E_min and B_noise (infinite
// B_noise: E = E_min at any batch).
double examples_to_target(double min_examples, double batch, double critical_batch);
double steps_to_target(double min_examples, double batch, double critical_batch);

// E_min for a target quality on the model's curve: log-linear between measured points (a single
// point gives only its own quality). Throws ConfigError at `where` for a target the curve does
// not reach, naming the best quality it does.
double min_examples_for(const ConvergenceSpec& convergence, double target,
                        const SourceLocation& where);

// Fits E_min and B_noise from two runs that reached the same target: global batches b1 != b2 and
// the examples e1, e2 each took. nullopt when the runs do not fit the model (a larger batch that
// needed no more examples, or fewer: B_noise would be infinite or negative).
struct ConvergenceFit {
  double min_examples = 0.0;
  double critical_batch = 0.0;
};
std::optional<ConvergenceFit> fit_convergence(double b1, double e1, double b2, double e2);

}  // namespace trainsim::models
