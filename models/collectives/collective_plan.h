// A collective as a DAG of transfers between vertices of the fabric, with the dependencies of the
// algorithm that produced it. A transfer starts once its sender and receiver have joined the
// collective (plus the algorithm's software latency) and every transfer it depends on has arrived
// (data dependency) or has been transmitted (the sender finishes one send before the next).
// The same plan runs two ways:
//   PlanCollective    every transfer a flow on the FlowNetwork (contention is real)
//   plan_time()       fixed alpha-beta cost per transfer: route latency + the time the most
//                     loaded link of its route needs for all bytes of its stage; equal to the
//                     flow model for equal transfers when nothing else contends.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/flow_network.h"
#include "engine/huge_page_allocator.h"
#include "models/collectives/collective.h"
#include "models/collectives/exchange_classes.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {

using TransferId = std::uint32_t;

struct PlanTransfer {
  VertexId from = 0;
  VertexId to = 0;
  double bytes = 0.0;
  int sender = -1;          // participant that must have joined (-1: none, e.g. a switch)
  int receiver = -1;        // participant that receives (-1: none)
  std::uint32_t stage = 0;  // transfers of one stage are assumed concurrent by plan_time()
  double rate_cap = FlowNetwork::kUncapped;
};

class CollectivePlan {
 public:
  explicit CollectivePlan(int participants) : participants_(participants) {}

  TransferId add(const PlanTransfer& transfer);
  // `after` starts only once `before` has arrived / has been transmitted. Dependencies point
  // forward (before < after), so plans are acyclic by construction.
  void after_arrival(TransferId before, TransferId after);
  void after_transmission(TransferId before, TransferId after);

  // Freezes the plan: builds the successor lists. Call once, after the last add.
  void finalize();

  int participants() const { return participants_; }
  // Participants that are the ranks of a cluster, node after node, this many to a node (0: not
  // so): PlanCollective::join_all may then run a plan without dependencies by classes.
  void set_gpus_per_node(int gpus) { gpus_per_node_ = gpus; }
  int gpus_per_node() const { return gpus_per_node_; }
  // Whether no transfer waits for another.
  bool independent() const { return arrival_.after.empty() && transmission_.after.empty(); }
  std::size_t size() const { return transfers_.size(); }
  const PlanTransfer& transfer(TransferId id) const { return transfers_[id]; }
  std::span<const TransferId> arrival_successors(TransferId id) const {
    return successors(arrival_, id);
  }
  std::span<const TransferId> transmission_successors(TransferId id) const {
    return successors(transmission_, id);
  }
  const BigVector<std::uint32_t>& dependency_counts() const { return dependencies_; }

 private:
  // Successor lists of every transfer in one array (CSR), built by finalize().
  struct Successors {
    std::vector<std::pair<TransferId, TransferId>> edges;  // (before, after) until finalize()
    std::vector<std::uint32_t> begin;
    std::vector<TransferId> after;
  };
  std::span<const TransferId> successors(const Successors& s, TransferId id) const;
  static void build(Successors& s, std::size_t n);

  int participants_;
  int gpus_per_node_ = 0;
  BigVector<PlanTransfer> transfers_;
  Successors arrival_;
  Successors transmission_;
  BigVector<std::uint32_t> dependencies_;
  bool finalized_ = false;
};

// Adds a transfer of `bytes` that is pipelined behind `upstream` transfers in chunks of `chunk`
// bytes: its first chunk may leave once the first chunk of every upstream transfer has arrived,
// and its last chunk only after all upstream data has arrived. Modelled as three transfers (head
// chunk, body, tail chunk) so that a chain of k hops takes about k (chunk/B + alpha) + bytes/B,
// with the slowest hop setting the rate. Returns the pipelined transfer's (head, last) ids.
struct PipelinedTransfer {
  TransferId head;
  TransferId last;
};
PipelinedTransfer add_pipelined(CollectivePlan& plan, PlanTransfer transfer, double chunk,
                                const std::vector<PipelinedTransfer>& upstream);

// Every transfer's route on `router`, by transfer id: looked up once for a plan that runs many
// times (each step's all-to-all of the same bytes), valid wherever that router is.
using PlanRoutes = BigVector<RouteId>;
std::shared_ptr<const PlanRoutes> route_plan(Router& router, const CollectivePlan& plan);
// Whether two plans' transfers go between the same vertices in the same order, so that one's
// routes serve the other (a step's id all-to-all and its gradients' go between the same GPUs).
bool same_endpoints(const CollectivePlan& a, const CollectivePlan& b);

// Transfers that run as one flow per bundle (FlowNetwork::start_bundle): on a cluster whose nodes
// fall into classes that do the same (StepRunner::represent_nodes), a transfer between a node of
// its own class and a node of a class of several, or inside a node of a class of several, with
// its counterparts on every other node of that class (the same local GPUs, bytes, cap and route
// latency). The bundle's route lists every member's links, so it loads the fabric as they all
// would; the network says when its members would not move at one rate.
struct PlanBundles {
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  ExchangeClasses bundles;  // members (the representative node's transfer first) and routes
  // Per bundle: the links every member crosses, and the members' own (their nodes').
  std::vector<std::shared_ptr<const FlowNetwork::BundleLinks>> links;
  BigVector<std::uint32_t> bundle_of;  // by transfer: its bundle, or kNone (a flow of its own)
  std::size_t size() const { return bundles.size(); }
};
// The bundles of an independent plan between the ranks of `topology` (a transfer's sender and
// receiver are its ends' ranks; none for a plan whose transfers wait for others, or with no
// bundle of two members or more). `representative[n]`: the first node of node n's class;
// `routes` the plan's routes on `router`. `same_ends`: the bundles of a plan between the same
// ends on the same routes (a step's gradients go where its ids went), taken as they are when
// this plan's members are alike too.
std::shared_ptr<const PlanBundles> bundle_plan(
    Router& router, const CollectivePlan& plan, const PlanRoutes& routes,
    std::span<const int> representative, const ClusterTopology& topology,
    std::shared_ptr<const PlanBundles> same_ends = nullptr);

// Runs a plan as flows. Participants join with Collective::join(). `routes`: the plan's routes on
// the network's router, from route_plan() (looked up here when null). `bundles`: transfers that
// run as one flow per bundle (bundle_plan(), on the same router), each once all its members are
// released.
class PlanCollective final : public Collective {
 public:
  PlanCollective(Simulation& simulation, FlowNetwork& network,
                 std::shared_ptr<const CollectivePlan> plan, Time software_latency,
                 std::shared_ptr<const PlanRoutes> routes = nullptr,
                 std::shared_ptr<const PlanBundles> bundles = nullptr);
  void join(int participant, std::function<void()> done) override;
  // With `alone`, a plan whose transfers wait for none other, between the ranks of a cluster
  // (CollectivePlan::gpus_per_node), on a network solved exactly (no solve quantum): its
  // transfers fall into classes that move as one (exchange_classes.h), and one flow per class
  // stands for every transfer of the class. Otherwise, or when no classes hold, as join().
  void join_all(int participants, const std::function<void(int)>& done, bool alone) override;
  const std::shared_ptr<const PlanRoutes>& routes() const { return routes_; }

 private:
  void release(TransferId id);
  void start(TransferId id);
  // Group c's one flow (of classes_, or of bundles_ with its `links`), standing for each of its
  // transfers.
  void start_group(const ExchangeClasses& groups, std::size_t c,
                   std::shared_ptr<const FlowNetwork::BundleLinks> links = nullptr);
  // The transfer's last byte arrived (its receiver's part) or left (its sender's): the
  // transfers that wait for that are released, and the participant's obligation met.
  void finished(TransferId id, bool arrived);
  void settle(int participant);

  Simulation& sim_;
  FlowNetwork& network_;
  std::shared_ptr<const CollectivePlan> plan_;
  Time software_latency_;
  std::shared_ptr<const PlanRoutes> routes_;
  BigVector<std::uint32_t> waiting_;  // per transfer: dependencies + joins still missing
  std::vector<std::vector<TransferId>> gated_by_;  // per participant: transfers awaiting its join
  std::vector<std::uint32_t> obligations_;  // per participant: sends + receives not yet finished
  std::vector<std::function<void()>> done_;
  std::vector<bool> joined_;
  std::optional<ExchangeClasses> classes_;  // after a join_all by classes
  std::shared_ptr<const PlanBundles> bundles_;
  std::vector<std::uint32_t> bundle_waiting_;  // per bundle: members not yet released
};

// Analytic time of a plan when every participant joins at time 0 (software latency not included);
// `routes` as route_plan() gives them on `router` (looked up here when null).
Time plan_time(Router& router, const CollectivePlan& plan, const PlanRoutes* routes = nullptr);

}  // namespace trainsim::models
