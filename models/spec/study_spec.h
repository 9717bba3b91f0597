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
using SolveQuantum = std::variant<Time, StepShare>;
// The commands' default: 0.1% of the step keeps every step time of the shipped jobs within 0.5%
// of the exact solve at 1 to 128 nodes (tests/solve_quantum_check.py; 0.2% did not).
inline constexpr StepShare kDefaultSolveQuantum{1000};

}  // namespace trainsim::models
