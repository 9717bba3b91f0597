// Simulates training steps of a data-parallel dense model on a cluster: per GPU, forward and
// backward compute on the compute stream, then the gradient all-reduce on the communication
// stream (by buckets during backward when overlap is on). Steps repeat; the first ones are warm-up.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/chrome_trace.h"
#include "engine/task_graph.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/dense_model.h"
#include "models/spec/job_spec.h"
#include "models/spec/study_spec.h"

namespace trainsim::models {

struct SharedTopology;
struct AllToAllPlans;

struct StepSimulationOptions {
  int steps = 3;         // simulated steps, including warm-up
  int warmup_steps = 1;  // not measured
  NetworkModel network = NetworkModel::kFlow;
  bool keep_trace = false;  // keep the task graph and records for a Chrome trace
  std::uint64_t seed = 0;
  // Flow network solve quantum; the step runs only with a time (a share of the step is turned
  // into one by the scaling study's estimate).
  SolveQuantum solve_quantum = Time{0};
  // A bound on the flow solver's work (FlowNetwork::set_rate_change_limit): past it the run
  // goes on with `then_quantum` as its solve quantum, and its result says from when
  // (quantum_from). None: no bound.
  struct RateChangeLimit {
    double first = 0.0;
    double per_second = 0.0;  // of simulated time
    Time then_quantum = 0;
  };
  std::optional<RateChangeLimit> rate_change_limit;
  // Steps built after the measured ones and not measured: on a shared cluster they keep a job's
  // traffic going while the other jobs finish their measured steps (the run stops then).
  int trailing_steps = 0;
  // The cluster's topology on these nodes, its routes and the collectives' analytic times, shared
  // by the simulations of one cluster on one node count (the scaling study's estimate, steps and,
  // when it runs after them, evaluation) so none is computed twice; built afresh when null.
  std::shared_ptr<SharedTopology> shared_topology;
  // Where the job's ranks repeat node after node, simulate node 0's tasks for every node's
  // (StepRunner::represent_nodes), with the same results; false: every rank's.
  bool represent_nodes = true;
  // All-to-all plans (flows of each byte matrix), shared by simulations over the same matrices
  // on the whole fabric: the scaling study's estimate makes them and its steps run them, so none
  // is made twice. Keyed by the matrices' addresses: every matrix given to a simulation that
  // shares them must live as long as this does. Null: each simulation keeps its own.
  std::shared_ptr<AllToAllPlans> all_to_all_plans;
};

// Where the time of one step goes, averaged over measured steps and ranks; the parts add up to
// the step time. The categories are the measurement note's.
// The collectives of a step, for the communication stall's split.
enum class StepCollective {
  kIdAllToAll,         // a recommender's ids to the GPUs that own their rows
  kEmbeddingAllToAll,  // the looked-up (pooled) embeddings back (forward)
  kGradientAllToAll,   // their gradients to the owners (backward)
  kDenseAllReduce,     // dense gradients (every bucket; replicated rows' in the last)
  kEmbeddingSync,      // embedding gradients of 2D replicas
};
inline constexpr int kStepCollectives = 5;

struct StepBreakdown {
  Time compute = 0;                // local compute (busy time of the compute stream)
  Time exposed_communication = 0;  // communication not hidden behind compute (nor waiting)
  // exposed_communication split by collective (the sum is exposed_communication): each
  // collective's transfer time not overlapped with its rank's compute, in proportion.
  std::array<Time, kStepCollectives> stall_by_collective{};
  Time imbalance = 0;    // time ranks wait in collectives for the slowest rank
  Time input_stall = 0;  // time a step waits for its batch
  Time checkpoint = 0;   // checkpoint and failure-recovery overhead per step
  Time evaluation = 0;   // evaluation phases, per training step
};

struct StepTrace {
  TaskGraph graph;
  std::vector<TaskRecord> records;
  int gpus_per_node = 1;
  // For the Chrome trace: a rank's wait inside a collective for its last participant, arrows
  // from each sender's slice to its receivers' (collectives with few enough pairs), and the
  // utilisation of NICs and NVLink ports over time (the first nodes').
  std::vector<TraceSlice> waits;
  std::vector<TraceFlow> flows;
  std::vector<TraceCounter> counters;
};

struct StepSimulationResult {
  Time step_time = 0;  // mean over measured steps
  StepBreakdown breakdown;
  int slowest_rank = 0;  // the rank with the most local compute
  Time slowest_rank_compute = 0;
  // Time a rank's communication spends transferring (after every participant has joined), per
  // step, overlapped or not: what perfect overlap could at best hide.
  Time communication_busy = 0;
  std::uint64_t events = 0;
  std::shared_ptr<StepTrace> trace;  // set when keep_trace
  // When the run passed the options' rate_change_limit and went on under its quantum (none:
  // the solve quantum it started with held throughout).
  std::optional<Time> quantum_from;
};

// The dense model as a job runs it: the job's communication (all-reduce algorithm) and overlap
// (gradient all-reduce during backward, buckets) keys, where it gives them, replace the model's.
DenseModelSpec dense_model_for_job(DenseModelSpec model, const JobSpec& job);

// Per-GPU compute time of the model's forward+backward for one batch on this GPU.
Time dense_compute_time(const DenseModelSpec& model, const GpuSpec& gpu);

class StepRunner;
// The model's steps, added to `runner` (which runs them).
void add_dense_training(StepRunner& runner, const DenseModelSpec& model);

StepSimulationResult simulate_dense_training(const ClusterSpec& cluster,
                                             const DenseModelSpec& model, int nodes,
                                             const StepSimulationOptions& options);

}  // namespace trainsim::models
