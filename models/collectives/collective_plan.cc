#include "models/collectives/collective_plan.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "engine/check.h"

namespace trainsim::models {

TransferId CollectivePlan::add(const PlanTransfer& transfer) {
  TRAINSIM_ASSERT(transfer.sender < participants_ && transfer.receiver < participants_,
                  "transfer of an unknown participant");
  TRAINSIM_ASSERT(transfer.bytes >= 0.0, "negative transfer size");
  TRAINSIM_ASSERT(!finalized_, "plan changed after finalize()");
  transfers_.push_back(transfer);
  dependencies_.push_back(0);
  return static_cast<TransferId>(transfers_.size() - 1);
}

void CollectivePlan::after_arrival(TransferId before, TransferId after) {
  TRAINSIM_ASSERT(before < after && after < transfers_.size(), "dependency must point forward");
  arrival_.edges.emplace_back(before, after);
  ++dependencies_[after];
}

void CollectivePlan::after_transmission(TransferId before, TransferId after) {
  TRAINSIM_ASSERT(before < after && after < transfers_.size(), "dependency must point forward");
  transmission_.edges.emplace_back(before, after);
  ++dependencies_[after];
}

void CollectivePlan::build(Successors& s, std::size_t n) {
  s.begin.assign(n + 1, 0);
  for (const auto& [before, after] : s.edges) ++s.begin[before + 1];
  for (std::size_t i = 0; i < n; ++i) s.begin[i + 1] += s.begin[i];
  s.after.resize(s.edges.size());
  std::vector<std::uint32_t> fill(s.begin.begin(), s.begin.end() - 1);
  for (const auto& [before, after] : s.edges) s.after[fill[before]++] = after;
  s.edges.clear();
  s.edges.shrink_to_fit();
}

void CollectivePlan::finalize() {
  TRAINSIM_ASSERT(!finalized_, "plan finalized twice");
  build(arrival_, transfers_.size());
  build(transmission_, transfers_.size());
  finalized_ = true;
}

std::span<const TransferId> CollectivePlan::successors(const Successors& s, TransferId id) const {
  TRAINSIM_ASSERT(finalized_, "plan used before finalize()");
  return {s.after.data() + s.begin[id], s.begin[id + 1] - s.begin[id]};
}

PipelinedTransfer add_pipelined(CollectivePlan& plan, PlanTransfer transfer, double chunk,
                                const std::vector<PipelinedTransfer>& upstream) {
  const double bytes = transfer.bytes;
  if (bytes <= 2 * chunk) {
    // Too small to pipeline: store and forward.
    const TransferId only = plan.add(transfer);
    for (const auto& u : upstream) plan.after_arrival(u.last, only);
    return {only, only};
  }
  // Heads and tails run at different times from bodies: give them their own stages so the
  // analytic model does not count them as sharing links with the bodies.
  constexpr std::uint32_t kHeadStage = 1u << 30;
  constexpr std::uint32_t kTailStage = 2u << 30;
  PlanTransfer head = transfer;
  head.bytes = chunk;
  head.stage |= kHeadStage;
  const TransferId h = plan.add(head);
  for (const auto& u : upstream) plan.after_arrival(u.head, h);
  PlanTransfer body = transfer;
  body.bytes = upstream.empty() ? bytes - chunk : bytes - 2 * chunk;
  const TransferId b = plan.add(body);
  plan.after_transmission(h, b);
  if (upstream.empty()) return {h, b};
  PlanTransfer tail = transfer;
  tail.bytes = chunk;
  tail.stage |= kTailStage;
  const TransferId t = plan.add(tail);
  plan.after_transmission(b, t);
  for (const auto& u : upstream) plan.after_arrival(u.last, t);
  return {h, t};
}

PlanCollective::PlanCollective(Simulation& simulation, FlowNetwork& network,
                               std::shared_ptr<const CollectivePlan> plan, Time software_latency,
                               std::shared_ptr<const PlanRoutes> routes,
                               std::shared_ptr<const PlanBundles> bundles)
    : sim_(simulation),
      network_(network),
      plan_(std::move(plan)),
      software_latency_(software_latency),
      routes_(routes ? std::move(routes) : route_plan(network.router(), *plan_)),
      waiting_(plan_->dependency_counts()),
      gated_by_(plan_->participants()),
      obligations_(plan_->participants(), 0),
      done_(plan_->participants()),
      joined_(plan_->participants(), false) {
  // The transfers that wait for no other start together once every participant has joined.
  network_.reserve(static_cast<std::size_t>(std::count(waiting_.begin(), waiting_.end(), 0)));
  TRAINSIM_ASSERT(routes_->size() == plan_->size(), "routes of another plan");
  if (bundles) {
    TRAINSIM_ASSERT(bundles->bundle_of.size() == plan_->size(), "bundles of another plan");
    const ExchangeClasses& b = bundles->bundles;
    for (std::size_t c = 0; c < b.size(); ++c) {
      bundle_waiting_.push_back(static_cast<std::uint32_t>(b.first[c + 1] - b.first[c]));
    }
    bundles_ = std::move(bundles);
  }
  for (TransferId id = 0; id < plan_->size(); ++id) {
    const PlanTransfer& t = plan_->transfer(id);
    for (const int p : {t.sender, t.receiver}) {
      if (p < 0) continue;
      ++waiting_[id];
      gated_by_[p].push_back(id);
    }
    if (t.sender >= 0) ++obligations_[t.sender];
    if (t.receiver >= 0) ++obligations_[t.receiver];
    // A transfer between the same participant's ends waits for one join only.
    if (t.sender >= 0 && t.sender == t.receiver) {
      --waiting_[id];
      gated_by_[t.sender].pop_back();
    }
  }
}

void PlanCollective::join(int participant, std::function<void()> done) {
  TRAINSIM_ASSERT(participant >= 0 && participant < plan_->participants(), "unknown participant");
  TRAINSIM_ASSERT(!joined_[participant], "participant joined twice");
  joined_[participant] = true;
  done_[participant] = std::move(done);
  sim_.schedule_in(software_latency_, [this, participant] {
    for (const TransferId id : gated_by_[participant]) release(id);
    settle(participant);
  });
}

void PlanCollective::join_all(int participants, const std::function<void(int)>& done, bool alone) {
  const int p = plan_->participants();
  TRAINSIM_ASSERT(participants == p, "join_all is for every participant");
  const int g = plan_->gpus_per_node();
  // As for the flat exchanges: exact max-min sharing only (no solve quantum).
  if (alone && g > 0 && network_.solve_quantum() == 0 && plan_->independent()) {
    std::vector<ExchangeMessage> messages;
    messages.reserve(plan_->size());
    for (TransferId id = 0; id < plan_->size(); ++id) {
      const PlanTransfer& t = plan_->transfer(id);
      if (t.sender < 0 || t.receiver < 0 || t.sender == t.receiver) {
        messages.clear();
        break;
      }
      messages.push_back({t.sender, t.receiver, t.bytes, t.rate_cap});
    }
    if (!messages.empty()) {
      classes_ = exchange_classes(network_.router(), p, g, messages, *routes_, nullptr);
    }
  }
  if (!classes_) {
    Collective::join_all(participants, done, alone);
    return;
  }
  for (int r = 0; r < p; ++r) {
    TRAINSIM_ASSERT(!joined_[r], "participant joined twice");
    joined_[r] = true;
    done_[r] = [done, r] { done(r); };
  }
  // Every transfer starts once both its ends have joined and the software latency has passed.
  sim_.schedule_in(software_latency_, [this, p] {
    for (std::size_t c = 0; c < classes_->size(); ++c) start_group(*classes_, c);
    for (int r = 0; r < p; ++r) settle(r);
  });
}

void PlanCollective::start_group(const ExchangeClasses& groups, std::size_t c,
                                 std::shared_ptr<const FlowNetwork::BundleLinks> links) {
  const PlanTransfer& t = plan_->transfer(groups.members[groups.first[c]]);
  // (`groups` is classes_ or bundles_, which outlive the flow.)
  auto each = [this, &groups, c](bool arrived) {
    for (std::size_t i = groups.first[c]; i < groups.first[c + 1]; ++i) {
      finished(groups.members[i], arrived);
    }
  };
  FlowNetwork::Callback arrived = [each] { each(/*arrived=*/true); };
  FlowNetwork::Callback transmitted = [each] { each(/*arrived=*/false); };
  if (links) {
    network_.start_bundle(groups.routes[c], t.bytes, std::move(links), std::move(arrived),
                          std::move(transmitted), t.rate_cap);
  } else {
    network_.start(groups.routes[c], t.bytes, std::move(arrived), std::move(transmitted),
                   t.rate_cap);
  }
}

void PlanCollective::release(TransferId id) {
  TRAINSIM_ASSERT(waiting_[id] > 0, "transfer released twice");
  if (--waiting_[id] > 0) return;
  const std::uint32_t b = bundles_ ? bundles_->bundle_of[id] : PlanBundles::kNone;
  if (b == PlanBundles::kNone) {
    start(id);
  } else if (--bundle_waiting_[b] == 0) {
    start_group(bundles_->bundles, b, bundles_->links[b]);
  }
}

void PlanCollective::start(TransferId id) {
  const PlanTransfer& t = plan_->transfer(id);
  network_.start((*routes_)[id], t.bytes, [this, id] { finished(id, /*arrived=*/true); },
                 [this, id] { finished(id, /*arrived=*/false); }, t.rate_cap);
}

void PlanCollective::finished(TransferId id, bool arrived) {
  const PlanTransfer& t = plan_->transfer(id);
  for (const TransferId next :
       arrived ? plan_->arrival_successors(id) : plan_->transmission_successors(id)) {
    release(next);
  }
  const int participant = arrived ? t.receiver : t.sender;
  if (participant >= 0) {
    --obligations_[participant];
    settle(participant);
  }
}

void PlanCollective::settle(int participant) {
  if (obligations_[participant] == 0 && done_[participant]) {
    auto done = std::move(done_[participant]);
    done_[participant] = nullptr;
    done();
  }
}

std::shared_ptr<const PlanRoutes> route_plan(Router& router, const CollectivePlan& plan) {
  auto routes = std::make_shared<PlanRoutes>();
  routes->reserve(plan.size());
  for (TransferId id = 0; id < plan.size(); ++id) {
    const PlanTransfer& t = plan.transfer(id);
    routes->push_back(router.route(t.from, t.to));
  }
  return routes;
}

bool same_endpoints(const CollectivePlan& a, const CollectivePlan& b) {
  if (a.size() != b.size()) return false;
  for (TransferId id = 0; id < a.size(); ++id) {
    const PlanTransfer& x = a.transfer(id);
    const PlanTransfer& y = b.transfer(id);
    if (x.from != y.from || x.to != y.to) return false;
  }
  return true;
}

std::shared_ptr<const PlanBundles> bundle_plan(Router& router, const CollectivePlan& plan,
                                               const PlanRoutes& routes,
                                               std::span<const int> representative,
                                               const ClusterTopology& topology,
                                               std::shared_ptr<const PlanBundles> same_ends) {
  TRAINSIM_ASSERT(routes.size() == plan.size(), "routes of another plan");
  TRAINSIM_ASSERT(static_cast<int>(representative.size()) == topology.nodes, "a class per node");
  if (!plan.independent() || topology.gpus_per_node <= 0) return nullptr;
  if (same_ends) {
    TRAINSIM_ASSERT(same_ends->bundle_of.size() == plan.size(), "bundles of another plan");
    const ExchangeClasses& b = same_ends->bundles;
    bool alike = true;
    for (std::size_t c = 0; c < b.size() && alike; ++c) {
      const PlanTransfer& first = plan.transfer(b.members[b.first[c]]);
      for (std::size_t i = b.first[c] + 1; i < b.first[c + 1] && alike; ++i) {
        const PlanTransfer& t = plan.transfer(b.members[i]);
        alike = t.bytes == first.bytes && t.rate_cap == first.rate_cap;
      }
    }
    if (alike) return same_ends;
  }
  const int g = topology.gpus_per_node;
  const int nodes = topology.nodes;
  std::vector<std::uint32_t> class_size(representative.size(), 0);
  for (const int rep : representative) ++class_size[static_cast<std::size_t>(rep)];
  auto in_group = [&](int node) { return class_size[representative[node]] > 1; };
  auto node_of = [&](VertexId v) {
    return v < topology.node_of_vertex.size() ? topology.node_of_vertex[v] : -1;
  };
  // Transfers by their ends, to find the representative node's counterpart of a transfer.
  std::unordered_map<std::uint64_t, TransferId> by_ends;
  by_ends.reserve(plan.size());
  for (TransferId id = 0; id < plan.size(); ++id) {
    const PlanTransfer& t = plan.transfer(id);
    const std::uint64_t key = (std::uint64_t{t.from} << 32) | t.to;
    if (!by_ends.emplace(key, id).second) return nullptr;  // two transfers between the same ends
  }
  // Each transfer's counterpart on the representative node (itself there), or kNone; a bundle
  // needs a member on every node of its class, all alike.
  constexpr std::uint32_t kNone = PlanBundles::kNone;
  BigVector<std::uint32_t> stands_for(plan.size(), kNone);
  std::vector<std::uint32_t> members(plan.size(), 0);  // per representative transfer
  std::vector<std::uint32_t> needed(plan.size(), 0);   // its class's nodes
  std::vector<char> unlike(plan.size(), 0);            // a counterpart differs: no bundle
  for (TransferId id = 0; id < plan.size(); ++id) {
    const PlanTransfer& t = plan.transfer(id);
    const int a = t.sender, b = t.receiver;
    if (a < 0 || b < 0 || a >= topology.gpu_count() || b >= topology.gpu_count() ||
        topology.gpu_vertices[a] != t.from || topology.gpu_vertices[b] != t.to) {
      continue;  // not from one rank's GPU to another's
    }
    const bool ga = in_group(a / g), gb = in_group(b / g);
    // Between a node of its own and one of a class of several, or inside one of the latter.
    if (a / g == b / g ? !ga : ga == gb) continue;
    const int ra = ga ? representative[a / g] * g + a % g : a;
    const int rb = gb ? representative[b / g] * g + b % g : b;
    const std::uint64_t key =
        (std::uint64_t{topology.gpu_vertices[ra]} << 32) | topology.gpu_vertices[rb];
    const auto found = by_ends.find(key);
    if (found == by_ends.end()) continue;
    const TransferId rep = found->second;
    const PlanTransfer& r = plan.transfer(rep);
    if (r.bytes != t.bytes || r.rate_cap != t.rate_cap ||
        router.latency(routes[id]) != router.latency(routes[rep])) {
      unlike[rep] = 1;
    }
    stands_for[id] = rep;
    ++members[rep];
    needed[rep] = class_size[representative[(ga ? a : b) / g]];
  }
  auto bundles = std::make_shared<PlanBundles>();
  PlanBundles& out = *bundles;
  out.bundle_of.assign(plan.size(), kNone);
  // Bundle by bundle, in the order of their representative transfers; members in id order.
  std::vector<std::uint32_t> index_of(plan.size(), kNone);
  std::vector<std::vector<TransferId>> of_bundle;
  for (TransferId id = 0; id < plan.size(); ++id) {
    const std::uint32_t rep = stands_for[id];
    if (rep == kNone || members[rep] != needed[rep] || unlike[rep] || stands_for[rep] != rep) {
      continue;
    }
    if (index_of[rep] == kNone) {
      index_of[rep] = static_cast<std::uint32_t>(of_bundle.size());
      of_bundle.push_back({rep});
    }
    if (id != rep) of_bundle[index_of[rep]].push_back(id);
  }
  const Topology& fabric = router.topology();
  auto owned = [&](LinkId l) {  // a link of a node of a class of several
    const Link& link = fabric.link(l);
    for (const VertexId v : {link.from, link.to}) {
      const int n = node_of(v);
      if (n >= 0 && n < nodes && in_group(n)) return true;
    }
    return false;
  };
  std::vector<std::uint32_t> crossings(fabric.link_count(), 0);
  std::vector<LinkId> links;
  out.bundles.first.push_back(0);
  for (const std::vector<TransferId>& group : of_bundle) {
    links.clear();
    for (const TransferId id : group) {
      const auto route = router.links(routes[id]);
      links.insert(links.end(), route.begin(), route.end());
    }
    // The links every member crosses (each member's route crosses a link once at most), and
    // the members' own.
    auto held = std::make_shared<FlowNetwork::BundleLinks>();
    for (const LinkId l : links) {
      if (++crossings[l] == group.size()) held->shared.push_back(l);
    }
    for (const LinkId l : links) {
      if (crossings[l] == 0) continue;
      if (crossings[l] < group.size() && owned(l)) held->mirrored.push_back(l);
      crossings[l] = 0;
    }
    // Between one GPU's own ends, or members held nowhere alike: each a flow of its own.
    if (links.empty() || (held->shared.empty() && held->mirrored.empty())) continue;
    std::sort(held->shared.begin(), held->shared.end());
    std::sort(held->mirrored.begin(), held->mirrored.end());
    const auto index = static_cast<std::uint32_t>(out.bundles.routes.size());
    for (const TransferId id : group) {
      out.bundles.members.push_back(id);
      out.bundle_of[id] = index;
    }
    out.bundles.first.push_back(out.bundles.members.size());
    out.bundles.routes.push_back(router.add_route(links, router.latency(routes[group[0]])));
    out.links.push_back(std::move(held));
  }
  if (out.bundles.routes.empty()) return nullptr;
  return bundles;
}

Time plan_time(Router& router, const CollectivePlan& plan, const PlanRoutes* known_routes) {
  const std::size_t n = plan.size();
  // A transfer takes as long as the most loaded link on its route needs to carry its stage's
  // bytes (for equal transfers: bytes over the equal share, the max-min solver's answer; for
  // unequal ones, the time the bottleneck link stays busy). Transfers are taken stage by stage,
  // each stage's bytes summed per link in one array over all links.
  std::shared_ptr<const PlanRoutes> looked_up;
  if (!known_routes) looked_up = route_plan(router, plan);
  const PlanRoutes& routes = known_routes ? *known_routes : *looked_up;
  TRAINSIM_ASSERT(routes.size() == n, "routes of another plan");
  std::vector<std::uint32_t> stage_of(n);
  std::unordered_map<std::uint32_t, std::uint32_t> stage_index;
  for (TransferId id = 0; id < n; ++id) {
    const PlanTransfer& t = plan.transfer(id);
    stage_of[id] = stage_index.try_emplace(t.stage, static_cast<std::uint32_t>(stage_index.size()))
                       .first->second;
  }
  // Transfers grouped by stage, in id order within one (a counting sort).
  std::vector<std::uint32_t> first(stage_index.size() + 1, 0);
  for (const std::uint32_t s : stage_of) ++first[s + 1];
  for (std::size_t s = 0; s + 1 < first.size(); ++s) first[s + 1] += first[s];
  std::vector<TransferId> by_stage(n);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (TransferId id = 0; id < n; ++id) by_stage[fill[stage_of[id]]++] = id;
  }
  const Topology& topology = router.topology();
  std::vector<double> load(topology.link_count(), 0.0);
  std::vector<Time> busy(n, 0);
  for (std::size_t s = 0; s + 1 < first.size(); ++s) {
    const std::span<const TransferId> stage(by_stage.data() + first[s], first[s + 1] - first[s]);
    for (const TransferId id : stage) {
      const double bytes = plan.transfer(id).bytes;
      if (bytes == 0.0) continue;
      for (const LinkId l : router.links(routes[id])) load[l] += bytes;
    }
    for (const TransferId id : stage) {
      const PlanTransfer& t = plan.transfer(id);
      const auto links = router.links(routes[id]);
      if (t.bytes == 0.0 || links.empty()) continue;
      Time b = transfer_time(t.bytes, t.rate_cap);
      for (const LinkId l : links) {
        b = std::max(b, transfer_time(load[l], topology.link(l).bandwidth_bytes_per_s));
      }
      busy[id] = b;
    }
    for (const TransferId id : stage) {
      for (const LinkId l : router.links(routes[id])) load[l] = 0.0;
    }
  }
  std::vector<Time> ready(n, 0);
  Time finish = 0;
  for (TransferId id = 0; id < n; ++id) {
    const Time transmitted = ready[id] + busy[id];
    const Time arrived = transmitted + router.latency(routes[id]);
    finish = std::max(finish, arrived);
    for (const TransferId next : plan.transmission_successors(id)) {
      ready[next] = std::max(ready[next], transmitted);
    }
    for (const TransferId next : plan.arrival_successors(id)) {
      ready[next] = std::max(ready[next], arrived);
    }
  }
  return finish;
}

}  // namespace trainsim::models
