// What every training step simulation shares: one simulation on the cluster's fabric, a task graph
// with its streams (copy, compute, communication) and categories, collectives made as the options
// say (flows on the fabric, or analytic times), and one measurement of the steps. A workload (the
// dense model, the recommender) only adds its tasks, step by step, and reads the result.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/flow_network.h"
#include "engine/simulation.h"
#include "engine/task_graph.h"
#include "models/collectives/algorithms.h"
#include "models/collectives/collective.h"
#include "models/collectives/collective_plan.h"
#include "models/hardware/cluster_topology.h"
#include "models/spec/cluster_spec.h"
#include "models/workload/dense_training.h"

namespace trainsim::models {

// The part of [from, to) that `intervals` (disjoint, in time order) do not cover.
Time time_not_covered(const std::vector<std::pair<Time, Time>>& intervals, Time from, Time to);
// `total` split in proportion to `weights`; the last nonzero weight takes the rounding, so the
// parts add up to `total` exactly.
std::array<Time, kStepCollectives> split_in_proportion(
    Time total, const std::array<Time, kStepCollectives>& weights);

// What the simulations of one cluster on one node count can share, one at a time: the topology of
// its first `nodes` nodes, the routes on it and the collectives' analytic times (the picks of
// NCCL's tuner). Never moved: the router refers to the topology.
struct SharedTopology {
  SharedTopology(const ClusterSpec& cluster, int nodes);
  SharedTopology(const SharedTopology&) = delete;
  SharedTopology& operator=(const SharedTopology&) = delete;

  ClusterTopology topology;
  Router router;
  AnalyticCache analytic;
};

// All-to-all plans by byte matrix (address), orientation, algorithm and communicator (per node or
// whole), on one topology, each with its transfers' routes on the router of the first runner
// that looked them up (runners sharing that router, SharedTopology's, reuse them; others look
// their own up).
struct AllToAllPlans {
  using Key = std::tuple<const void*, bool, Algorithm, bool>;
  struct Kept {
    std::shared_ptr<const CollectivePlan> plan;
    std::shared_ptr<const PlanRoutes> routes;
    std::shared_ptr<const Router> router;  // the routes' (kept alive with them)
  };
  std::map<Key, Kept> plans;
  // The classes of nodes of the runs that share these plans (the same job on the same nodes), as
  // the workload found them and as StepRunner::represent_nodes() split them, made by the first.
  std::optional<std::vector<int>> workload_classes;
  std::optional<std::pair<std::vector<int>, std::vector<int>>> split_classes;
};

// One simulation of a cluster's fabric: the topology of its first `nodes` nodes, the flow network
// on it, and every GPU's straggler slowdown drawn from the seed. One job's steps run on it, or
// several jobs' on node ranges of it (sharing its links).
class Fabric {
 public:
  // `shared`: the cluster's topology on these nodes and its routes, from an earlier simulation
  // (built afresh when null).
  Fabric(const ClusterSpec& cluster, int nodes, std::uint64_t seed, Time solve_quantum,
         std::shared_ptr<SharedTopology> shared = nullptr);
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  Simulation& sim() { return sim_; }
  FlowNetwork& network() { return network_; }
  const ClusterTopology& topology() const { return shared_->topology; }
  // The analytic times of collectives on the whole fabric (for a job alone on it).
  AnalyticCache& analytic_cache() { return shared_->analytic; }
  double slowdown(int global_rank) const { return slowdown_[global_rank]; }
  // `traffic` among the fabric's nodes as capped flows that renew for as long as the simulation
  // runs (it must then be stopped); false if none applies.
  bool start_background_traffic(const std::vector<BackgroundTraffic>& traffic);
  // A route the background traffic takes (for telling its flows from the jobs').
  bool is_background(RouteId route) const { return background_routes_.count(route) > 0; }
  // Exact solves until they have changed more flow rates than `limit` allows, then its quantum
  // (FlowNetwork::set_rate_change_limit); `switched` is called then.
  void limit_rate_changes(const StepSimulationOptions::RateChangeLimit& limit,
                          std::function<void()> switched = {});

 private:
  void background_flow(VertexId from, VertexId to, double rate);
  // The random stream of the stragglers' draws (Simulation::rng).
  static constexpr std::uint64_t kStragglerStream = 0x5157'a66e'0000'0001;

  Simulation sim_;
  std::shared_ptr<SharedTopology> shared_;
  FlowNetwork network_;
  int nics_ = 0;
  std::vector<double> slowdown_;  // per global rank: its compute's slowdown
  std::set<RouteId> background_routes_;
};

class StepRunner {
 public:
  // A job alone on the first `nodes` nodes of `cluster`, on a fabric of its own.
  // `input_copies`: the steps copy their batch host-to-device on a copy stream (measured as input
  // stall when a step waits for it).
  StepRunner(const ClusterSpec& cluster, int nodes, const StepSimulationOptions& options,
             bool input_copies);
  // A job on nodes [first_node, first_node + nodes) of a shared fabric; `cluster` (the fabric's,
  // or the job's view of it, e.g. its launch costs) must outlive the runner. The options' seed
  // and solve quantum are the fabric's.
  StepRunner(Fabric& fabric, const ClusterSpec& cluster, int first_node, int nodes,
             const StepSimulationOptions& options, bool input_copies);
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  const ClusterSpec& cluster() const { return cluster_; }
  const ClusterTopology& topology() const { return topology_; }
  int ranks() const { return topology_.gpu_count(); }

  // Node 0's ranks stand for every node's (one representative per class of ranks that do the
  // same, node after node): the workload adds the tasks of the simulated ranks only (simulates()),
  // and when one of them joins a collective, its counterpart on every other node (the
  // participant as many places on per node) joins with it. For a job whose plan, bytes and
  // compute repeat node after node; call before the first step. The runner refuses (false) on a
  // shared fabric, with a trace, stragglers or background traffic, or on one node. Every flow
  // still runs, so a counterpart finishing its part of a collective later or sooner than its
  // representative (a fabric that differs seen from different nodes, such as ECMP's hash over
  // the spines) shows it: run() then stops at once with symmetry_broken(), and the caller
  // simulates every rank.
  bool represent_nodes();
  // The same for classes of nodes: `representative[n]` is the node whose ranks stand for node
  // n's (the first node of its class: representative[n] <= n, and a representative stands for
  // itself). For a job whose nodes of a class do the same and exchange the same bytes with the
  // rest (the nodes of a skewed plan that hold no shard: they differ from the nodes that do).
  // The runner splits off the nodes of a class that see the fabric otherwise than its first
  // (routes to the other classes of another length, other classes before or after them in the
  // rings' node order). The results weigh each simulated rank by the ranks it stands for.
  bool represent_nodes(std::vector<int> representative);
  bool simulates(int rank) const { return weight_.empty() || weight_[rank] > 0; }
  // The plans this runner shares with others (null: none).
  const std::shared_ptr<AllToAllPlans>& shared_plans() const { return all_to_all_plans_; }
  int simulated_ranks() const { return static_cast<int>(simulated_.size()); }
  const std::vector<int>& simulated() const { return simulated_; }  // ascending
  bool symmetry_broken() const { return symmetry_broken_; }
  // Steps to build: the measured ones (options.steps, warm-up included) and the trailing ones.
  int steps() const { return options_.steps + options_.trailing_steps; }

  // Collectives, flow or analytic by the options; they live as long as the runner.
  // NCCL's choice for an all-reduce of `bytes` (its protocol for a given algorithm).
  PickedAlgorithm pick_all_reduce(double bytes, std::optional<Algorithm> algorithm = {});
  Collective* all_reduce(double bytes, const PickedAlgorithm& picked);
  // `per_node`: the bytes stay inside nodes, on one communicator per node (alltoallv_plan).
  // The matrix must stay as it is while the runner lives: its plan (or analytic time) is made
  // once and serves every all-to-all of the same matrix, orientation, algorithm and `per_node`.
  Collective* all_to_all(ByteMatrixView bytes, Algorithm algorithm, bool per_node = false);
  // Plans (flow mode) or analytic times all_to_all() has worked out.
  std::size_t all_to_all_plans() const { return all_to_all_plans_made_; }
  // Ring all-reduce among some GPUs (one per node), e.g. the replicas of a shard.
  Collective* group_all_reduce(const std::vector<VertexId>& ring, double bytes);

  // The tasks of one step, added step after step: begin_step(s), then each rank's tasks.
  void begin_step(int step);
  TaskId sync(const std::string& name, int rank);  // joins its dependencies
  TaskId compute(const std::string& name, int rank, Time duration);
  // The batch's host-to-device copy, measured with step `for_step` (-1: the current one; a later
  // one for a batch prefetched ahead).
  TaskId input_copy(const std::string& name, int rank, Time duration, int for_step = -1);
  // Rank `rank` joins `collective` as `participant`, measured with step `for_step` (-1: the
  // current one). Each rank enters its collectives in the order they are added (as NCCL on one
  // stream does), on the communication stream or, with `prefetch`, on a second stream of its own
  // (a pipeline's prefetch stream: its collectives run beside the main stream's, sharing links).
  TaskId join(const std::string& name, int rank, Collective* collective, int participant,
              StepCollective kind = StepCollective::kDenseAllReduce, int for_step = -1,
              bool prefetch = false);
  // The task that ends the rank's step (the next step's tasks may wait for it).
  TaskId end_step(const std::string& name, int rank);
  TaskId step_end(int step, int rank) const { return steps_[step].end[index_[rank]]; }
  void depend(TaskId before, TaskId after) { trace_->graph.add_dependency(before, after); }

  // Runs every step and measures the ones after warm-up: step time, the breakdown (compute,
  // waiting for the last participant of a collective, input stall, exposed communication), the
  // slowest rank, communication busy time. Stops early, with nothing measured, when the
  // symmetry breaks. Past the options' rate_change_limit the run goes on under its quantum.
  StepSimulationResult run();

  // On a shared fabric: start() every runner's steps (the first ones at `at`), run the fabric's
  // simulation until each has called `on_measured` (its measured steps have ended), then
  // measure() each. ran_out(): the runner had done all its steps when it was stopped (its
  // traffic ended before the others' measured steps did).
  void start(Time at = 0, std::function<void()> on_measured = {});
  StepSimulationResult measure();
  bool ran_out() const;
  // When the runner's first measured step began (the end of its last warm-up step, or the start).
  Time measured_from() const;

 private:
  struct StepTasks {
    std::vector<TaskId> compute;
    std::vector<TaskId> input;  // per rank, at most one
    std::vector<TaskId> end;    // per simulated rank, in rank order
    // Per collective, its members (rank, task), in the order the collectives were added.
    std::vector<std::vector<std::pair<int, TaskId>>> collectives;
    std::vector<StepCollective> kinds;  // of each collective
    // Joined on the prefetch stream: waiting in it holds back no work of the step, so it is not
    // load imbalance.
    std::vector<bool> background;
    std::map<const Collective*, std::size_t> collective_index;
  };

  // What a trace shows of a collective: per rank, the slice's args; the pairs that exchange
  // bytes (for arrows, when there are few enough).
  struct CollectiveInfo {
    std::string what;  // "all-to-all", "all-reduce ring/simple"
    std::vector<std::vector<std::pair<std::string, std::string>>> args;  // per rank
    std::vector<std::pair<int, int>> pairs;
  };
  void describe(const Collective* c, CollectiveInfo info);
  void describe_all_to_all(const Collective* c, ByteMatrixView bytes, const std::string& what);
  void init(int first_rank, bool input_copies);
  // Keeps a collective of `participants` made for this runner.
  Collective* keep(std::unique_ptr<Collective> collective, int participants);
  // represent_nodes(): `participant` and its counterpart on every node it stands for join
  // `collective`; `done` when the participant's part is done.
  void join_for_every_node(Collective* collective, int participant, std::function<void()> done);
  void break_symmetry();
  void record_utilisation();
  void trace_waits_and_flows();

  const ClusterSpec& cluster_;
  StepSimulationOptions options_;
  std::unique_ptr<Fabric> own_fabric_;  // alone on the cluster
  Fabric& fabric_;
  Simulation& sim_;
  std::optional<ClusterTopology> slice_;  // a node range of a shared fabric
  const ClusterTopology& topology_;
  FlowNetwork& network_;
  std::unique_ptr<TaskGraphExecutor> executor_;
  Time started_at_ = 0;
  AnalyticCache own_cache_;         // on a node range of a shared fabric
  AnalyticCache* cache_ = nullptr;  // the fabric's when alone on it, else own_cache_
  std::vector<std::unique_ptr<Collective>> collectives_;
  std::map<const Collective*, int> participants_;  // of each collective
  bool represent_nodes_ = false;
  // With represent_nodes(): per node, the other nodes it stands for (empty for the others).
  std::vector<std::vector<int>> stands_for_;
  std::vector<int> simulated_;  // the simulated ranks, ascending (every rank without)
  std::vector<int> index_;      // per rank, its place in simulated_ (-1: not simulated)
  std::vector<Time> weight_;    // per rank, the ranks it stands for (empty: every rank simulated)
  bool symmetry_broken_ = false;
  std::optional<Time> quantum_from_;  // when the rate_change_limit was passed
  // Flow mode with classes of several nodes: each node's representative (empty without), and
  // each all-to-all plan's bundles (bundle_plan(); null when it has none).
  std::vector<int> representative_;
  struct MadeBundles {
    std::shared_ptr<const PlanRoutes> routes;  // the plan's
    std::shared_ptr<const PlanBundles> bundles;
  };
  std::map<const CollectivePlan*, MadeBundles> bundles_;
  // Flow mode: each all-reduce lowered once, by bytes, algorithm and protocol.
  std::map<std::tuple<double, Algorithm, Protocol>, std::shared_ptr<const FlowCollectiveShape>>
      all_reduce_shapes_;
  // all_to_all()'s plans and analytic times by (matrix, transposed, algorithm, per node).
  using AllToAllKey = AllToAllPlans::Key;
  // Flow mode keeps every plan; analytic mode keeps them only when they are shared (else it
  // keeps each one's time).
  std::shared_ptr<AllToAllPlans> all_to_all_plans_;
  std::map<AllToAllKey, Time> all_to_all_times_;
  std::size_t all_to_all_plans_made_ = 0;
  std::shared_ptr<StepTrace> trace_;
  StreamId copy_stream_ = kNoStream, compute_stream_, comm_stream_;
  CategoryId input_category_ = 0, compute_category_, comm_category_, sync_category_;
  std::vector<StepTasks> steps_;
  int step_ = -1;
  StreamId prefetch_stream_ = kNoStream;              // made by the first prefetch join
  std::vector<std::optional<TaskId>> last_comm_;      // per rank
  std::vector<std::optional<TaskId>> last_prefetch_;  // per rank
  std::map<const Collective*, CollectiveInfo> info_;  // kept with a trace only
  std::map<LinkId, std::size_t> traced_links_;        // link -> its counter in the trace
  std::vector<double> slowdown_;                      // per rank: its compute's slowdown
};

}  // namespace trainsim::models
