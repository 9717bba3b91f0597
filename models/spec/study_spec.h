// How a study runs: whether the batch follows the node count (strong or weak scaling), how a
// simulation moves bytes (every transfer a flow on the fabric with max-min fair sharing, or each
// collective at its analytic time), and, for flows, how often rates are re-solved.
#pragma once

#include <cstdint>
#include <variant>

#include "engine/units.h"
#include "models/spec/enum_names.h"

namespace trainsim::models {

enum class NetworkModel {
  kFlow,      // every transfer is a flow on the fabric, sharing links by max-min fairness
  kAnalytic,  // collectives take their alpha-beta time; no contention between them
};

const EnumNames<NetworkModel>& network_model_names();  // "flow", "analytic"

// How the batch changes with the node count. Strong scaling keeps the global batch (the workload
// of a step) fixed, so the per-GPU batch shrinks as nodes grow; weak scaling keeps the per-GPU
// batch fixed, so the global batch grows with the hardware. kJob: strong if the job gives a
// global batch, else weak.
enum class ScalingMode { kJob, kStrong, kWeak };

const EnumNames<ScalingMode>& scaling_mode_names();  // "job", "strong", "weak"

// The flow solver's quantum (FlowNetwork::set_solve_quantum): a time (0: exact), or a share of
// the step time that a quick analytic run estimates first.
struct StepShare {
  std::int64_t parts_per_million = 0;  // e.g. 1000 for 0.1% of the step
  bool operator==(const StepShare&) const = default;
};
// Exact until the solves have changed flow rates more than `rate_changes_per_step` times per step
// (the step estimated by a quick analytic run, like a share): from then on `otherwise`.
struct ExactOrShare {
  std::int64_t rate_changes_per_step = 0;
  StepShare otherwise;
  bool operator==(const ExactOrShare&) const = default;
};
using SolveQuantum = std::variant<Time, StepShare, ExactOrShare>;
// The commands' default ("auto"). The local filling makes exact solves cheap where few rates
// change at each event: about 1.5 us of one core per rate change (the MLPerf job with HugeCTR's
// plan, on a 2-core AMD EPYC VM: 0.9 M changes per step at 64 nodes, exact in 4.7 s; 5 M per step
// at 128 nodes, 18 s). Past two million per step the run goes on at 0.0125% of the step, which
// keeps every step time and breakdown part of the shipped jobs at 1 to 128 nodes within 0.5% of
// the exact solve's (tests/solve_quantum_check.py; the MLPerf job at 128 nodes, the one not
// exact: step 0.01%, load imbalance 0.37%; at 0.025% its load imbalance was 0.71% off once
// NVLSTree's step latencies hid behind the network, at 0.05% 0.78% once point-to-point
// operations shared their senders' channels, at 0.1% 1.4% before). The finer quantum costs no
// measurable time there (6-7 s either way on the 2-core VM).
inline constexpr ExactOrShare kDefaultSolveQuantum{2'000'000, StepShare{125}};
// The share of the step a quantum is (or goes on at); null for a time. (A fit, whose prediction
// must move smoothly with the fitted values, takes "auto"'s share from the start.)
inline const StepShare* step_share(const SolveQuantum& quantum) {
  if (const auto* exact_first = std::get_if<ExactOrShare>(&quantum)) return &exact_first->otherwise;
  return std::get_if<StepShare>(&quantum);
}

}  // namespace trainsim::models
