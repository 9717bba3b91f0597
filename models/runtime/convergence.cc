#include "models/runtime/convergence.h"

#include <cmath>
#include <sstream>

namespace trainsim::models {

double examples_to_target(double min_examples, double batch, double critical_batch) {
  return std::isinf(critical_batch) ? min_examples : min_examples * (1.0 + batch / critical_batch);
}

double steps_to_target(double min_examples, double batch, double critical_batch) {
  return examples_to_target(min_examples, batch, critical_batch) / batch;
}

double min_examples_for(const ConvergenceSpec& c, double target, const SourceLocation& where) {
  const auto& curve = c.curve;
  if (curve.empty()) throw ConfigError(where, "the model's convergence section has no curve");
  auto text = [](double q) {
    std::ostringstream s;
    s.precision(10);
    s << q;
    return s.str();
  };
  // Direction: quality rising (accuracy, AUC) or falling (loss) with examples.
  const bool rising = curve.size() < 2 || curve.back().quality > curve.front().quality;
  const double first = curve.front().quality;
  const double best = curve.back().quality;
  auto beyond = [&](double q, double limit) { return rising ? q > limit : q < limit; };
  if (beyond(target, best)) {
    throw ConfigError(where, "the convergence model cannot reach " + c.metric + " " + text(target) +
                                 ": the best it knows is " + text(best) + " after " +
                                 text(curve.back().min_examples) + " examples");
  }
  if (beyond(first, target)) {
    throw ConfigError(where, "target " + c.metric + " " + text(target) +
                                 " comes before the convergence curve's first point (" +
                                 text(first) + " after " + text(curve.front().min_examples) +
                                 " examples); add a point that reaches it");
  }
  for (std::size_t i = 0; i + 1 < curve.size(); ++i) {
    const QualityPoint& a = curve[i];
    const QualityPoint& b = curve[i + 1];
    if (!beyond(target, b.quality)) {
      const double f = (target - a.quality) / (b.quality - a.quality);
      return std::exp(std::log(a.min_examples) +
                      f * (std::log(b.min_examples) - std::log(a.min_examples)));
    }
  }
  return curve.back().min_examples;
}

std::optional<ConvergenceFit> fit_convergence(double b1, double e1, double b2, double e2) {
  // E = E_min + (E_min / B_noise) B: a line in B through the two runs.
  if (b1 == b2) return std::nullopt;
  const double slope = (e2 - e1) / (b2 - b1);
  const double intercept = e1 - slope * b1;
  if (!(slope > 0.0) || !(intercept > 0.0)) return std::nullopt;
  return ConvergenceFit{intercept, intercept / slope};
}

}  // namespace trainsim::models
