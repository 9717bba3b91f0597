#include "models/workload/step_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <utility>
#include <variant>

#include "engine/check.h"

namespace trainsim::models {

SharedTopology::SharedTopology(const ClusterSpec& cluster, int nodes)
    : topology(build_cluster_topology(cluster, nodes)), router(topology.topology) {}

Fabric::Fabric(const ClusterSpec& cluster, int nodes, std::uint64_t seed, Time solve_quantum,
               std::shared_ptr<SharedTopology> shared)
    : sim_(seed),
      shared_(shared ? std::move(shared) : std::make_shared<SharedTopology>(cluster, nodes)),
      // The router lives as long as the shared topology (the aliasing pointer keeps it).
      network_(sim_, std::shared_ptr<Router>(shared_, &shared_->router)),
      nics_(cluster.nic.count) {
  TRAINSIM_ASSERT(
      shared_->topology.nodes == nodes && shared_->topology.gpus_per_node == cluster.gpus_per_node,
      "a shared topology of another cluster or node count");
  network_.set_solve_quantum(solve_quantum);
  network_.set_latency_first(cluster.network.latency_first);
  slowdown_ = compute_slowdowns(cluster.stragglers, nodes, cluster.gpus_per_node,
                                sim_.rng(kStragglerStream));
}

namespace {

Time resolved_quantum(const StepSimulationOptions& options) {
  TRAINSIM_ASSERT(std::holds_alternative<Time>(options.solve_quantum),
                  "the solve quantum is resolved to a time before a step runs");
  return std::get<Time>(options.solve_quantum);
}

}  // namespace

StepRunner::StepRunner(const ClusterSpec& cluster, int nodes, const StepSimulationOptions& options,
                       bool input_copies)
    : cluster_(cluster),
      options_(options),
      own_fabric_(std::make_unique<Fabric>(cluster, nodes, options.seed, resolved_quantum(options),
                                           options.shared_topology)),
      fabric_(*own_fabric_),
      sim_(fabric_.sim()),
      topology_(fabric_.topology()),
      network_(fabric_.network()),
      cache_(&fabric_.analytic_cache()),
      all_to_all_plans_(options.all_to_all_plans) {
  init(0, input_copies);
  if (options.rate_change_limit) {
    fabric_.limit_rate_changes(*options.rate_change_limit, [this] { quantum_from_ = sim_.now(); });
  }
}

StepRunner::StepRunner(Fabric& fabric, const ClusterSpec& cluster, int first_node, int nodes,
                       const StepSimulationOptions& options, bool input_copies)
    : cluster_(cluster),
      options_(options),
      fabric_(fabric),
      sim_(fabric_.sim()),
      slice_(node_range(fabric.topology(), first_node, nodes)),
      topology_(*slice_),
      network_(fabric_.network()),
      cache_(&own_cache_) {
  // (Plans shared with other simulations are for the whole fabric, not a slice of it.)
  init(first_node * cluster.gpus_per_node, input_copies);
}

void StepRunner::init(int first_rank, bool input_copies) {
  TRAINSIM_ASSERT(options_.steps > options_.warmup_steps && options_.warmup_steps >= 0 &&
                      options_.trailing_steps >= 0,
                  "need at least one measured step");
  trace_ = std::make_shared<StepTrace>();
  steps_.resize(steps());
  last_comm_.resize(topology_.gpu_count());
  last_prefetch_.resize(topology_.gpu_count());
  for (int r = 0; r < topology_.gpu_count(); ++r) {
    slowdown_.push_back(fabric_.slowdown(first_rank + r));
    simulated_.push_back(r);
    index_.push_back(r);
  }
  trace_->gpus_per_node = cluster_.gpus_per_node;
  TaskGraph& graph = trace_->graph;
  if (input_copies) copy_stream_ = graph.add_stream("copy");
  compute_stream_ = graph.add_stream("compute");
  comm_stream_ = graph.add_stream("communication");
  if (input_copies) input_category_ = graph.add_category("input");
  compute_category_ = graph.add_category("compute");
  comm_category_ = graph.add_category("communication");
  sync_category_ = graph.add_category("sync");
  if (options_.keep_trace) record_utilisation();
}

void StepRunner::record_utilisation() {
  // The NICs (both directions) and NVLink ports of the first nodes, as a share of their rate.
  constexpr int kTracedNodes = 8;
  const Topology& t = topology_.topology;
  auto track = [&](VertexId a, VertexId b, std::string name) {
    const auto link = find_link(t, a, b);  // none: a NIC without a network (one node)
    if (!link) return;
    const LinkId l = *link;
    traced_links_.emplace(l, trace_->counters.size());
    trace_->counters.push_back({std::move(name), "% of its rate", {{0, 0.0}}});
  };
  for (int n = 0; n < std::min(topology_.nodes, kTracedNodes); ++n) {
    const std::string node = "node " + std::to_string(n);
    if (n < static_cast<int>(topology_.nic_switch_vertices.size())) {
      for (std::size_t i = 0; i < topology_.nic_switch_vertices[n].size(); ++i) {
        const std::string nic = node + " NIC " + std::to_string(i);
        track(topology_.nic_send_vertices[n][i], topology_.nic_switch_vertices[n][i], nic + " out");
        track(topology_.nic_switch_vertices[n][i], topology_.nic_receive_vertices[n][i],
              nic + " in");
      }
    }
    if (n < static_cast<int>(topology_.nvswitch_vertices.size())) {
      for (int g = 0; g < topology_.gpus_per_node; ++g) {
        const std::string gpu = node + " GPU " + std::to_string(g) + " NVLink";
        track(topology_.gpu(n, g), topology_.nvswitch_vertices[n], gpu + " out");
        track(topology_.nvswitch_vertices[n], topology_.gpu(n, g), gpu + " in");
      }
    }
  }
  network_.set_link_observer([this](LinkId l, Time at, double rate) {
    const auto it = traced_links_.find(l);
    if (it == traced_links_.end()) return;
    auto& samples = trace_->counters[it->second].samples;
    const double share = 100.0 * rate / topology_.topology.link(l).bandwidth_bytes_per_s;
    if (!samples.empty() && samples.back().first == at) {
      samples.back().second = share;
    } else if (samples.empty() || samples.back().second != share) {
      samples.emplace_back(at, share);
    }
  });
}

void StepRunner::describe(const Collective* c, CollectiveInfo info) {
  if (options_.keep_trace) info_[c] = std::move(info);
}

void StepRunner::describe_all_to_all(const Collective* c, ByteMatrixView bytes,
                                     const std::string& what) {
  if (!options_.keep_trace) return;
  constexpr std::size_t kMostArrows = 4096;  // beyond, a trace's arrows hide more than they show
  CollectiveInfo info;
  info.what = what;
  const int n = bytes.size();
  info.args.resize(n);
  // Rows of what each rank sends and of what it receives.
  const ByteMatrix other = bytes.matrix().transposed();
  const ByteMatrix& out = bytes.transposed() ? other : bytes.matrix();
  const ByteMatrix& in = bytes.transposed() ? bytes.matrix() : other;
  for (int a = 0; a < n; ++a) {
    double sent = 0, received = 0;
    int to = 0, from = 0;
    for (const ByteMatrix::Entry& e : out.row(a)) {
      if (e.to == a) continue;
      sent += e.bytes;
      ++to;
      info.pairs.emplace_back(a, e.to);
    }
    for (const ByteMatrix::Entry& e : in.row(a)) {
      if (e.to == a) continue;
      received += e.bytes;
      ++from;
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", sent);
    info.args[a].emplace_back("bytes sent", text);
    std::snprintf(text, sizeof text, "%.6g", received);
    info.args[a].emplace_back("bytes received", text);
    info.args[a].emplace_back(
        "peers", std::to_string(to) + " sent to, " + std::to_string(from) + " received from");
  }
  if (info.pairs.size() > kMostArrows) info.pairs.clear();
  describe(c, std::move(info));
}

PickedAlgorithm StepRunner::pick_all_reduce(double bytes, std::optional<Algorithm> algorithm) {
  if (algorithm) {
    CollectiveRequest request;
    request.op = CollectiveOp::kAllReduce;
    request.algorithm = *algorithm;
    request.bytes = bytes;
    return pick_protocol(network_.router(), cluster_, topology_, request, cache_);
  }
  return pick_algorithm(network_.router(), cluster_, topology_, CollectiveOp::kAllReduce, bytes,
                        cache_);
}

Collective* StepRunner::all_reduce(double bytes, const PickedAlgorithm& picked) {
  if (options_.network == NetworkModel::kFlow) {
    CollectiveRequest request;
    request.op = CollectiveOp::kAllReduce;
    request.bytes = bytes;
    request.algorithm = picked.algorithm;
    request.protocol = picked.protocol;
    // Lowered once per size, algorithm and protocol (each step all-reduces the same buckets).
    auto& shape = all_reduce_shapes_[{bytes, picked.algorithm, picked.protocol}];
    if (!shape) shape = prepare_flow_collective(network_, cluster_, topology_, request, cache_);
    keep(make_flow_collective(sim_, network_, shape), ranks());
  } else {
    keep(std::make_unique<AnalyticCollective>(sim_, ranks(), picked.analytic_time), ranks());
  }
  if (options_.keep_trace) {
    CollectiveInfo info;
    info.what = "all-reduce";
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", bytes);
    const std::vector<std::pair<std::string, std::string>> args = {
        {"bytes", text},
        {"algorithm", std::string(algorithm_names().name(picked.algorithm))},
        {"protocol", std::string(protocol_names().name(picked.protocol))},
        {"ranks", std::to_string(ranks())}};
    info.args.assign(ranks(), args);
    describe(collectives_.back().get(), std::move(info));
  }
  return collectives_.back().get();
}

Collective* StepRunner::all_to_all(ByteMatrixView bytes, Algorithm algorithm, bool per_node) {
  const AllToAllKey key{&bytes.matrix(), bytes.transposed(), algorithm, per_node};
  const bool flow = options_.network == NetworkModel::kFlow;
  // The plan and its routes: kept (and maybe made by an earlier simulation) when it is run as
  // flows or shared.
  auto kept_plan = [&]() -> AllToAllPlans::Kept {
    if (!all_to_all_plans_) all_to_all_plans_ = std::make_shared<AllToAllPlans>();
    auto& kept = all_to_all_plans_->plans[key];
    if (!kept.plan) {
      kept.plan = alltoallv_plan(cluster_, topology_, bytes, algorithm, per_node);
      ++all_to_all_plans_made_;
    }
    if (kept.router.get() == &network_.router()) return kept;
    // A plan between the same GPUs in the same order, already routed on this router, lends its
    // routes (the gradients' all-to-all goes where the ids' went).
    std::shared_ptr<const PlanRoutes> routes;
    for (const auto& [other_key, other] : all_to_all_plans_->plans) {
      if (other.routes && other.router.get() == &network_.router() &&
          same_endpoints(*other.plan, *kept.plan)) {
        routes = other.routes;
        break;
      }
    }
    if (!routes) routes = route_plan(network_.router(), *kept.plan);
    AllToAllPlans::Kept mine{kept.plan, std::move(routes), network_.shared_router()};
    if (!kept.routes) kept = mine;
    return mine;
  };
  if (flow) {
    const AllToAllPlans::Kept kept = kept_plan();
    // With classes of several nodes, a transfer and its counterparts run as one flow.
    std::shared_ptr<const PlanBundles> bundles;
    if (!representative_.empty()) {
      auto [at, made] = bundles_.try_emplace(kept.plan.get());
      if (made) {
        // A plan on the routes of an earlier one goes between the same ends: its bundles serve
        // when this plan's members are alike too.
        std::shared_ptr<const PlanBundles> same_ends;
        for (const auto& [plan, made_for] : bundles_) {
          if (made_for.routes == kept.routes && made_for.bundles) same_ends = made_for.bundles;
        }
        at->second = {kept.routes, bundle_plan(network_.router(), *kept.plan, *kept.routes,
                                               representative_, topology_, same_ends)};
      }
      bundles = at->second.bundles;
    }
    keep(make_alltoallv(sim_, network_, cluster_, topology_, kept.plan, per_node, kept.routes,
                        std::move(bundles)),
         ranks());
  } else {
    auto [at, made] = all_to_all_times_.try_emplace(key, 0);
    if (made && all_to_all_plans_) {
      const AllToAllPlans::Kept kept = kept_plan();
      at->second = alltoallv_time(network_.router(), cluster_, topology_, *kept.plan, per_node,
                                  kept.routes.get());
    } else if (made) {
      at->second =
          alltoallv_time(network_.router(), cluster_, topology_, bytes, algorithm, per_node);
      ++all_to_all_plans_made_;
    }
    keep(std::make_unique<AnalyticCollective>(sim_, ranks(), at->second), ranks());
  }
  describe_all_to_all(collectives_.back().get(), bytes,
                      std::string(per_node ? "inside each node" : "all-to-all") + ", " +
                          std::string(algorithm_names().name(algorithm)));
  return collectives_.back().get();
}

Collective* StepRunner::group_all_reduce(const std::vector<VertexId>& ring, double bytes) {
  const int participants = static_cast<int>(ring.size());
  if (options_.network == NetworkModel::kFlow) {
    keep(make_group_all_reduce(sim_, network_, cluster_, ring, bytes), participants);
  } else {
    keep(std::make_unique<AnalyticCollective>(
             sim_, participants, group_all_reduce_time(network_.router(), cluster_, ring, bytes)),
         participants);
  }
  if (options_.keep_trace) {
    CollectiveInfo info;
    info.what = "all-reduce over the replicas (ring)";
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", bytes);
    info.args.assign(ring.size(), {{"bytes", text}, {"ranks", std::to_string(ring.size())}});
    describe(collectives_.back().get(), std::move(info));
  }
  return collectives_.back().get();
}

Collective* StepRunner::keep(std::unique_ptr<Collective> collective, int participants) {
  participants_[collective.get()] = participants;
  collectives_.push_back(std::move(collective));
  return collectives_.back().get();
}

bool StepRunner::represent_nodes() {
  return represent_nodes(std::vector<int>(static_cast<std::size_t>(topology_.nodes), 0));
}

bool StepRunner::represent_nodes(std::vector<int> representative) {
  TRAINSIM_ASSERT(step_ < 0, "nodes are represented from the first step on");
  const int nodes = topology_.nodes;
  TRAINSIM_ASSERT(static_cast<int>(representative.size()) == nodes, "a representative per node");
  if (!options_.represent_nodes || !own_fabric_ || options_.keep_trace || nodes < 2 ||
      !cluster_.background_traffic.empty()) {
    return false;
  }
  for (const double s : slowdown_) {
    if (s != 1.0) return false;
  }
  const int g = topology_.gpus_per_node;
  std::vector<int> representatives;
  for (int n = 0; n < nodes; ++n) {
    const int rep = representative[n];
    TRAINSIM_ASSERT(rep >= 0 && rep <= n && representative[rep] == rep,
                    "a node's representative is the first node of its class");
    if (rep == n) representatives.push_back(n);
  }
  // The fabric and its traffic must look alike from the nodes of a class: a node stays with its
  // representative when its routes to and from every other class's representative (first GPU to
  // first GPU) have the latency and hops of the representative's (not when one shares a leaf
  // switch with the nodes that hold the shards and the other does not), and when the nodes
  // before and after it (NCCL's rings run through the nodes in order) are of the classes of the
  // representative's: a ring hop from a busy node leaves more of a NIC to the rest. The others
  // like it make a class of their own.
  // A run that shares this one's plans (the estimate before the flow run) may have split them.
  const bool split_before = all_to_all_plans_ && all_to_all_plans_->split_classes &&
                            all_to_all_plans_->split_classes->first == representative;
  std::vector<int> asked;
  if (split_before) {
    representative = all_to_all_plans_->split_classes->second;
  } else if (all_to_all_plans_) {
    asked = representative;
  }
  if (!split_before && representatives.size() > 1) {
    Router& router = network_.router();
    const std::vector<int> given = representative;
    // What node n sees: each route's latency and hops, then its ring neighbours' classes.
    using Looks = std::vector<std::int64_t>;
    auto looks = [&](int n) {
      Looks seen;
      const VertexId at = topology_.gpu_vertices[static_cast<std::size_t>(n * g)];
      for (const int o : representatives) {
        if (o == given[n]) continue;
        const VertexId other = topology_.gpu_vertices[static_cast<std::size_t>(o * g)];
        for (const RouteId route : {router.route(at, other), router.route(other, at)}) {
          seen.push_back(router.latency(route));
          seen.push_back(static_cast<std::int64_t>(router.links(route).size()));
        }
      }
      seen.push_back(given[(n + nodes - 1) % nodes]);
      seen.push_back(given[(n + 1) % nodes]);
      return seen;
    };
    std::map<int, Looks> looks_of;  // per representative
    std::map<std::pair<int, Looks>, int> split;
    for (int n = 0; n < nodes; ++n) {
      const int rep = given[n];
      if (rep == n) {
        looks_of.emplace(n, looks(n));
        continue;
      }
      Looks seen = looks(n);
      if (seen == looks_of.at(rep)) continue;
      representative[n] = split.emplace(std::pair{rep, std::move(seen)}, n).first->second;
    }
  }
  if (!split_before && all_to_all_plans_) {
    all_to_all_plans_->split_classes.emplace(std::move(asked), representative);
  }
  std::vector<std::vector<int>> stands_for(static_cast<std::size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    if (representative[n] != n) stands_for[representative[n]].push_back(n);
  }
  simulated_.clear();
  index_.assign(static_cast<std::size_t>(ranks()), -1);
  weight_.assign(static_cast<std::size_t>(ranks()), 0);
  for (int n = 0; n < nodes; ++n) {
    if (representative[n] != n) continue;
    for (int i = 0; i < g; ++i) {
      const int r = n * g + i;
      index_[r] = static_cast<int>(simulated_.size());
      simulated_.push_back(r);
      weight_[r] = static_cast<Time>(1 + stands_for[n].size());
    }
  }
  stands_for_ = std::move(stands_for);
  represent_nodes_ = true;
  // A flow mode run bundles each transfer with its counterparts on the other nodes of a class
  // (PlanBundles). Should a solve find that a bundle's members would not move at one rate, the
  // run no longer stands for them and is redone rank by rank, like a broken symmetry.
  const bool several = std::any_of(stands_for_.begin(), stands_for_.end(),
                                   [](const std::vector<int>& s) { return !s.empty(); });
  if (options_.network == NetworkModel::kFlow && several) {
    representative_ = std::move(representative);
    network_.set_on_bundle_apart([this] { break_symmetry(); });
  }
  return true;
}

void StepRunner::join_for_every_node(Collective* collective, int participant,
                                     std::function<void()> done) {
  const int participants = participants_.at(collective);
  const int nodes = topology_.nodes;
  if (participants % nodes != 0) {  // not one counterpart per node: not this job's symmetry
    break_symmetry();
    return;
  }
  const int per_node = participants / nodes;
  const int node = participant / per_node;
  // Every counterpart's part must end when the representative's does.
  auto first = std::make_shared<Time>(-1);
  auto check = [this, first] {
    if (*first < 0) {
      *first = sim_.now();
    } else if (*first != sim_.now()) {
      break_symmetry();
    }
  };
  collective->join(participant, [check, done = std::move(done)] {
    check();
    done();
  });
  for (const int other : stands_for_[node]) {
    collective->join(participant + (other - node) * per_node, check);
  }
}

void StepRunner::break_symmetry() {
  if (symmetry_broken_) return;
  symmetry_broken_ = true;
  sim_.stop();
}

void StepRunner::begin_step(int step) {
  TRAINSIM_ASSERT(step == step_ + 1 && step < steps(), "steps are built in order");
  step_ = step;
}

TaskId StepRunner::sync(const std::string& name, int rank) {
  return trace_->graph.add_task(name, rank, kNoStream, sync_category_, JoinAction{});
}

TaskId StepRunner::compute(const std::string& name, int rank, Time duration) {
  // A straggler's compute takes its slowdown times as long (cluster.stragglers).
  if (slowdown_[rank] != 1.0) {
    duration = static_cast<Time>(std::llround(static_cast<double>(duration) * slowdown_[rank]));
  }
  const TaskId id =
      trace_->graph.add_task(name, rank, compute_stream_, compute_category_, DelayAction{duration});
  steps_[step_].compute.push_back(id);
  return id;
}

TaskId StepRunner::input_copy(const std::string& name, int rank, Time duration, int for_step) {
  TRAINSIM_ASSERT(copy_stream_ != kNoStream, "this runner has no copy stream");
  const int s = for_step < 0 ? step_ : for_step;
  TRAINSIM_ASSERT(s >= step_ && s < steps(), "a copy belongs to this step or a later one");
  const TaskId id =
      trace_->graph.add_task(name, rank, copy_stream_, input_category_, DelayAction{duration});
  steps_[s].input.push_back(id);
  return id;
}

TaskId StepRunner::join(const std::string& name, int rank, Collective* collective, int participant,
                        StepCollective kind, int for_step, bool prefetch) {
  TaskGraph& graph = trace_->graph;
  const int s = for_step < 0 ? step_ : for_step;
  TRAINSIM_ASSERT(s >= step_ && s < steps(), "a join belongs to this step or a later one");
  if (prefetch && prefetch_stream_ == kNoStream) prefetch_stream_ = graph.stream("prefetch");
  CustomAction action{[collective, participant](std::function<void()> done) {
    collective->join(participant, std::move(done));
  }};
  if (represent_nodes_) {
    action.start = [this, collective, participant](std::function<void()> done) {
      join_for_every_node(collective, participant, std::move(done));
    };
  }
  const TaskId id = graph.add_task(name, rank, prefetch ? prefetch_stream_ : comm_stream_,
                                   comm_category_, std::move(action));
  std::optional<TaskId>& last = prefetch ? last_prefetch_[rank] : last_comm_[rank];
  if (last) graph.add_dependency(*last, id);
  last = id;
  StepTasks& step = steps_[s];
  const auto [it, added] = step.collective_index.emplace(collective, step.collectives.size());
  if (added) {
    step.collectives.emplace_back();
    step.kinds.push_back(kind);
    step.background.push_back(prefetch);
  }
  step.collectives[it->second].emplace_back(rank, id);
  if (const auto found = info_.find(collective); found != info_.end()) {
    const CollectiveInfo& info = found->second;
    graph.add_arg(id, "collective", info.what);
    if (participant >= 0 && participant < static_cast<int>(info.args.size())) {
      for (const auto& [key, value] : info.args[participant]) graph.add_arg(id, key, value);
    }
  }
  return id;
}

void StepRunner::trace_waits_and_flows() {
  const TaskGraph& graph = trace_->graph;
  const auto& records = trace_->records;
  for (const StepTasks& step : steps_) {
    std::vector<const Collective*> by_index(step.collectives.size(), nullptr);
    for (const auto& [c, index] : step.collective_index) by_index[index] = c;
    for (std::size_t k = 0; k < step.collectives.size(); ++k) {
      const auto& members = step.collectives[k];
      Time last = 0;
      int slowest = 0;
      for (const auto& [r, id] : members) {
        if (records[id].start >= last) {
          last = records[id].start;
          slowest = r;
        }
      }
      std::map<int, TaskId> task_of;
      for (const auto& [r, id] : members) {
        task_of[r] = id;
        if (records[id].start < last) {
          trace_->waits.push_back({r, graph.task(id).stream,
                                   "waiting for rank " + std::to_string(slowest) + " to join",
                                   records[id].start, last});
        }
      }
      const auto info = info_.find(by_index[k]);
      if (info == info_.end()) continue;
      for (const auto& [a, b] : info->second.pairs) {
        const auto from = task_of.find(a), to = task_of.find(b);
        if (from != task_of.end() && to != task_of.end()) {
          trace_->flows.push_back({from->second, to->second, "send"});
        }
      }
    }
  }
}

TaskId StepRunner::end_step(const std::string& name, int rank) {
  TRAINSIM_ASSERT(static_cast<int>(steps_[step_].end.size()) == index_[rank],
                  "each step's simulated ranks end in rank order");
  const TaskId id = sync(name, rank);
  steps_[step_].end.push_back(id);
  return id;
}

Time time_not_covered(const std::vector<std::pair<Time, Time>>& intervals, Time from, Time to) {
  Time covered = 0;
  auto it = std::lower_bound(intervals.begin(), intervals.end(), std::pair<Time, Time>{from, from});
  if (it != intervals.begin()) --it;  // one that starts before `from` may reach into it
  for (; it != intervals.end() && it->first < to; ++it) {
    covered += std::max<Time>(0, std::min(to, it->second) - std::max(from, it->first));
  }
  return std::max<Time>(0, (to - from) - covered);
}

std::array<Time, kStepCollectives> split_in_proportion(
    Time total, const std::array<Time, kStepCollectives>& weights) {
  std::array<Time, kStepCollectives> out{};
  long double sum = 0;
  for (const Time w : weights) sum += static_cast<long double>(w);
  if (sum <= 0 || total <= 0) return out;
  Time given = 0;
  int last = 0;
  for (int k = 0; k < kStepCollectives; ++k) {
    if (weights[k] == 0) continue;
    out[k] = static_cast<Time>(static_cast<long double>(total) * weights[k] / sum);
    given += out[k];
    last = k;
  }
  out[last] += total - given;
  return out;
}

bool Fabric::start_background_traffic(const std::vector<BackgroundTraffic>& traffic) {
  const ClusterTopology& topology = shared_->topology;
  const int nodes = topology.nodes;
  const int nics = nics_;
  if (nodes < 2 || nics == 0) return false;
  bool started = false;
  for (const BackgroundTraffic& b : traffic) {
    std::vector<std::pair<int, int>> pairs;
    for (int a = b.from_first; a <= std::min(b.from_last, nodes - 1); ++a) {
      for (int c = b.to_first; c <= std::min(b.to_last, nodes - 1); ++c) {
        if (a != c) pairs.emplace_back(a, c);
      }
    }
    if (pairs.empty()) continue;
    const double rate = b.bytes_per_s / static_cast<double>(pairs.size() * nics);
    for (const auto& [a, c] : pairs) {
      for (int i = 0; i < nics; ++i) {
        background_flow(topology.nic_send_vertices[a][i], topology.nic_receive_vertices[c][i],
                        rate);
      }
    }
    started = true;
  }
  return started;
}

void Fabric::background_flow(VertexId from, VertexId to, double rate) {
  // An hour of traffic at a time, started again if a run outlasts it; the run stops when the
  // steps are done.
  const RouteId route = network_.router().route(from, to);
  background_routes_.insert(route);
  network_.start(
      route, rate * 3600.0, [this, from, to, rate] { background_flow(from, to, rate); }, {}, rate);
}

void Fabric::limit_rate_changes(const StepSimulationOptions::RateChangeLimit& limit,
                                std::function<void()> switched) {
  network_.set_rate_change_limit(
      limit.first, limit.per_second,
      [this, quantum = limit.then_quantum, switched = std::move(switched)] {
        network_.set_solve_quantum(quantum);
        if (switched) switched();
      });
}

StepSimulationResult StepRunner::run() {
  TRAINSIM_ASSERT(own_fabric_ != nullptr, "a runner on a shared fabric is run with the others");
  const bool background = fabric_.start_background_traffic(cluster_.background_traffic);
  start();
  if (background) executor_->set_on_finished([this] { sim_.stop(); });
  sim_.run();
  if (symmetry_broken_) return {};
  TRAINSIM_ASSERT(executor_->finished(), "training steps did not finish (deadlock)");
  return measure();
}

void StepRunner::start(Time at, std::function<void()> on_measured) {
  TRAINSIM_ASSERT(step_ + 1 == steps(), "every step is built before the run");
  TRAINSIM_ASSERT(!executor_, "a runner starts once");
  TaskGraph& graph = trace_->graph;
  if (on_measured) {
    // On a stream of its own: it waits for nothing but the measured steps.
    const TaskId done = graph.add_task(
        "measured steps done", 0, graph.add_stream("measured"), sync_category_,
        CustomAction{[on_measured = std::move(on_measured)](std::function<void()> finish) {
          on_measured();
          finish();
        }});
    for (const TaskId end : steps_[options_.steps - 1].end) graph.add_dependency(end, done);
  }
  executor_ = std::make_unique<TaskGraphExecutor>(sim_, graph, &network_);
  started_at_ = at;
  if (at > 0) {
    sim_.schedule_at(at, [this] { executor_->start(); });
  } else {
    executor_->start();
  }
}

bool StepRunner::ran_out() const { return executor_ && executor_->finished(); }

Time StepRunner::measured_from() const {
  TRAINSIM_ASSERT(executor_, "the runner has run");
  if (options_.warmup_steps == 0) return started_at_;
  Time from = 0;
  for (const TaskId id : steps_[options_.warmup_steps - 1].end) {
    from = std::max(from, executor_->records()[id].end);
  }
  return from;
}

StepSimulationResult StepRunner::measure() {
  TRAINSIM_ASSERT(executor_, "the runner has run");
  const TaskGraph& graph = trace_->graph;
  const auto& records = executor_->records();
  for (const TaskId id : steps_[options_.steps - 1].end) {
    TRAINSIM_ASSERT(records[id].end != TaskRecord::kNotYet,
                    "the measured steps did not finish (deadlock)");
  }

  const int steps = options_.steps;
  std::vector<Time> end_of(steps, 0);  // the measured steps and the warm-up
  for (int s = 0; s < steps; ++s) {
    for (const TaskId id : steps_[s].end) end_of[s] = std::max(end_of[s], records[id].end);
  }
  StepSimulationResult result;
  const int measured = steps - options_.warmup_steps;
  const Time first = measured_from();
  result.step_time = (end_of.back() - first) / measured;

  // With represent_nodes(), the simulated ranks: each counts for the ranks it stands for, which
  // do what it does at the same instants.
  const int n = ranks();
  auto weight = [this](int r) { return weight_.empty() ? Time{1} : weight_[r]; };
  std::vector<Time> busy(n, 0), waited(n, 0), input(n, 0), transfer(n, 0);
  std::vector<std::vector<std::pair<Time, Time>>> computing(n);  // per rank, in time order
  std::array<Time, kStepCollectives> exposed_by_kind{};
  for (int s = options_.warmup_steps; s < steps; ++s) {
    for (const TaskId id : steps_[s].compute) {
      busy[graph.task(id).group] += records[id].end - records[id].start;
      computing[graph.task(id).group].emplace_back(records[id].start, records[id].end);
    }
  }
  for (auto& intervals : computing) std::sort(intervals.begin(), intervals.end());
  for (int s = options_.warmup_steps; s < steps; ++s) {
    // A collective's transfer starts when its last participant joins; the others wait for it.
    for (std::size_t c = 0; c < steps_[s].collectives.size(); ++c) {
      const auto& members = steps_[s].collectives[c];
      Time last = 0;
      for (const auto& [r, id] : members) last = std::max(last, records[id].start);
      for (const auto& [r, id] : members) {
        if (!steps_[s].background[c]) waited[r] += last - records[id].start;
        transfer[r] += records[id].end - last;
        // A prefetched collective is off the step's critical path: its uncovered time is not
        // what the step waits for.
        if (!steps_[s].background[c]) {
          exposed_by_kind[static_cast<int>(steps_[s].kinds[c])] +=
              weight(r) * time_not_covered(computing[r], last, records[id].end);
        }
      }
    }
    // Input stall: the batch's copy finishing after the previous step ended.
    for (const TaskId id : steps_[s].input) {
      const int r = graph.task(id).group;
      const Time previous_end = s > 0 ? records[step_end(s - 1, r)].end : started_at_;
      input[r] += std::max<Time>(0, records[id].end - previous_end);
    }
  }
  Time total_busy = 0, total_wait = 0, total_input = 0, total_transfer = 0;
  for (const int r : simulated_) {
    total_busy += weight(r) * busy[r];
    total_transfer += weight(r) * transfer[r];
    total_wait += weight(r) * waited[r];
    total_input += weight(r) * input[r];
    if (busy[r] > busy[result.slowest_rank]) result.slowest_rank = r;
  }
  const Time per = static_cast<Time>(measured) * n;
  StepBreakdown& b = result.breakdown;
  b.compute = total_busy / per;
  result.communication_busy = total_transfer / per;
  b.imbalance = std::min(total_wait / per, std::max<Time>(0, result.step_time - b.compute));
  b.input_stall =
      std::min(total_input / per, std::max<Time>(0, result.step_time - b.compute - b.imbalance));
  b.exposed_communication =
      std::max<Time>(0, result.step_time - b.compute - b.imbalance - b.input_stall);
  b.stall_by_collective = split_in_proportion(b.exposed_communication, exposed_by_kind);
  result.slowest_rank_compute = busy[result.slowest_rank] / measured;
  result.events = sim_.events_processed();
  result.quantum_from = quantum_from_;
  if (options_.keep_trace) {
    trace_->records = records;
    trace_waits_and_flows();
    result.trace = trace_;
  }
  return result;
}

}  // namespace trainsim::models
