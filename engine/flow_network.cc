#include "engine/flow_network.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "engine/check.h"
#include "engine/slot_pool.h"

namespace trainsim {

FlowNetwork::FlowNetwork(Simulation& simulation, const Topology& topology)
    : FlowNetwork(simulation, std::make_shared<Router>(topology)) {}

FlowNetwork::FlowNetwork(Simulation& simulation, std::shared_ptr<Router> router)
    : sim_(simulation),
      topology_(router->topology()),
      router_(std::move(router)),
      links_(topology_.link_count()) {
  for (LinkId l = 0; l < links_.size(); ++l) {
    links_[l].capacity = topology_.link(l).bandwidth_bytes_per_s;
  }
}

FlowId FlowNetwork::allocate() {
  ++in_use_count_;
  const FlowId id = take_slot(flows_, free_flows_);
  if (callbacks_.size() < flows_.size()) {
    callbacks_.resize(flows_.size());
    serial_.resize(flows_.size(), 0);
    bottleneck_.resize(flows_.size(), kNoBottleneck);
  }
  return id;
}

void FlowNetwork::reserve(std::size_t flows) {
  const std::size_t free = free_flows_.size();
  if (flows <= free) return;
  const std::size_t needed = flows_.size() + (flows - free);
  if (needed <= flows_.capacity()) return;
  const std::size_t capacity = std::max(needed, 2 * flows_.capacity());
  flows_.reserve(capacity);
  callbacks_.reserve(capacity);
  serial_.reserve(capacity);
  bottleneck_.reserve(capacity);
}

void FlowNetwork::schedule_completion(FlowId id, Time at) {
  FlowState& f = flows_[id];
  if (f.completion_scheduled) {
    sim_.reschedule(f.completion, at);
  } else {
    f.completion = sim_.schedule_at(at, [this, id] { transmitted(id); });
    f.completion_scheduled = true;
  }
}

FlowId FlowNetwork::start(VertexId src, VertexId dst, double bytes, Callback on_arrived,
                          Callback on_transmitted, double rate_cap) {
  return start(router_->route(src, dst), bytes, std::move(on_arrived), std::move(on_transmitted),
               rate_cap);
}

FlowId FlowNetwork::start(RouteId route, double bytes, Callback on_arrived, Callback on_transmitted,
                          double rate_cap) {
  TRAINSIM_ASSERT(bytes >= 0.0, "flow with negative bytes");
  TRAINSIM_ASSERT(rate_cap > 0.0, "flow rate cap must be positive");
  const FlowId id = allocate();
  FlowState& f = flows_[id];
  callbacks_[id] = FlowCallbacks{std::move(on_arrived), std::move(on_transmitted)};
  f.remaining_bytes = bytes;
  f.rate = 0.0;
  f.rate_cap = rate_cap;
  f.route = route;
  f.in_use = true;
  f.completion = EventHandle{};
  f.completion_scheduled = false;
  f.active = false;
  f.bundle = false;
  ++counters_.flows_started;
  if (bytes == 0.0 || router_->links(route).empty()) {
    // Nothing to share: transmitted at once (as an event, never inside the caller).
    schedule_completion(id, sim_.now() + (latency_first_ ? router_->latency(route) : 0));
  } else if (latency_first_ && router_->latency(route) > 0) {
    f.completion = sim_.schedule_in(router_->latency(route), [this, id] { activate(id); });
  } else {
    activate(id);
  }
  return id;
}

FlowId FlowNetwork::start_bundle(RouteId route, double bytes,
                                 std::shared_ptr<const BundleLinks> links, Callback on_arrived,
                                 Callback on_transmitted, double rate_cap) {
  TRAINSIM_ASSERT(links != nullptr && (!links->shared.empty() || !links->mirrored.empty()),
                  "a bundle names the links that hold its members alike");
  // (start() solves nothing before it returns: a solve is an event of its own.)
  const FlowId id = start(route, bytes, std::move(on_arrived), std::move(on_transmitted), rate_cap);
  flows_[id].bundle = true;
  bundles_[id] = std::move(links);
  return id;
}

void FlowNetwork::check_bundle(std::uint32_t local, LinkId link, std::uint32_t j) {
  if (bundle_apart_) return;
  const BundleLinks& b = *flow_bundle_[local];
  if (std::binary_search(b.shared.begin(), b.shared.end(), link)) return;
  if (std::binary_search(b.mirrored.begin(), b.mirrored.end(), link)) {
    bool bundles_only = true;
    for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1] && bundles_only; ++k) {
      const std::uint32_t i = link_flows_[k];
      bundles_only = flow_dead_[i] || flow_bundle_[i] != nullptr;
    }
    if (bundles_only) return;
  }
  bundle_apart_ = true;
  if (on_bundle_apart_) on_bundle_apart_();
}

void FlowNetwork::activate(FlowId id) {
  FlowState& f = flows_[id];
  f.last_update = sim_.now();
  compact_valid_ = false;  // the compact copy lacks this flow
  set_bottleneck(id, kNoBottleneck);
  if (flow_observer_) flow_observer_(f.route, f.remaining_bytes, true);
  const auto route = router_->links(f.route);
  f.active = true;
  // A flow that finds every link of its route free (and crosses each once) has them to itself:
  // max-min gives it the least capacity on the route, or its cap, as a solve would, and nothing
  // else changes. Its links are not marked for a solve; a flow joining one of them later marks
  // it, and the solve then takes this flow in.
  bool alone = true;
  for (const LinkId l : route) {
    alone = alone && links_[l].live == 0;
    ++links_[l].live;  // (so that a link the route crosses twice is seen taken)
  }
  const std::uint32_t serial = serial_[id];
  for (const LinkId l : route) {
    LinkState& link = links_[l];
    if (link.flows.empty()) {
      link.active_index = static_cast<std::uint32_t>(active_links_.size());
      active_links_.push_back(l);
    }
    link.flows.push_back(LinkEntry{id, serial});
    if (!alone) mark_dirty(l);
  }
  f.active_index = static_cast<std::uint32_t>(active_flows_.size());
  active_flows_.push_back(id);
  if (active_bits_.size() <= id / 64) active_bits_.resize(id / 64 + 1, 0);
  active_bits_[id / 64] |= std::uint64_t{1} << (id % 64);
  counters_.max_active_flows =
      std::max<std::uint64_t>(counters_.max_active_flows, active_flows_.size());
  if (alone) {
    f.rate = std::min(f.rate_cap, router_->bottleneck_bandwidth(f.route));
    for (const LinkId l : route) set_allocated(l, f.rate);
    raise_max_rate(f.route, f.rate);
    schedule_completion(id, time_after(sim_.now(), transfer_time(f.remaining_bytes, f.rate)));
  } else if (solve_quantum_ > 0) {
    // Start at once with what is still free on the route, and leave the full solve (which may
    // change every rate in the component) to the quantum boundary. A flow that finds a link full
    // waits for that solve.
    double rate = f.rate_cap;
    if (router_->repeats(f.route)) {
      // A link the route crosses k times takes k times the rate: a k-th of what is free there.
      for (const auto& [l, times] : router_->crossings(f.route)) {
        rate = std::min(rate, (links_[l].capacity - links_[l].allocated) / times);
      }
    } else {
      for (const LinkId l : route) {
        rate = std::min(rate, links_[l].capacity - links_[l].allocated);
      }
    }
    // Free capacity below a millionth of the link is rounding left over from the rates given.
    if (rate > 1e-6 * router_->bottleneck_bandwidth(f.route)) {
      f.rate = rate;
      for (const LinkId l : route) {
        links_[l].allocated += rate;
        allocated_changed(l);
      }
      raise_max_rate(f.route, rate);
      schedule_completion(id, time_after(sim_.now(), transfer_time(f.remaining_bytes, rate)));
    }
    request_solve(/*immediate=*/false);
  } else {
    request_solve(/*immediate=*/true);
  }
}

void FlowNetwork::transmitted(FlowId id) {
  FlowState& f = flows_[id];
  f.completion_scheduled = false;
  if (f.bundle) {
    bundles_.erase(id);
    f.bundle = false;
  }
  if (f.active) {
    f.active = false;
    set_bottleneck(id, kNoBottleneck);
    ++serial_[id];  // its entries on the links' lists are finished ones from now on
    if (flow_observer_) flow_observer_(f.route, 0.0, false);
    // (A flow outside the copy is not listed there at its local index, which is another
    // copy's: ids leave the copy only by finishing, and are taken again only by starting flows,
    // which make a new copy.)
    if (compact_valid_ && f.local < component_flows_.size() && component_flows_[f.local] == id) {
      flow_dead_[f.local] = 1;
      dead_locals_.push_back(f.local);
    }
    for (const LinkId l : router_->links(f.route)) {
      LinkState& link = links_[l];
      // A link with capacity to spare is no flow's bottleneck, so taking this flow off it
      // changes no other rate: every other flow keeps its own bottleneck (a full link this flow
      // did not cross, where no rate is above its own) or its cap, which is what makes rates
      // max-min. Only a full link (to rounding) is marked for a solve.
      const bool full = link.allocated >= link.capacity * (1.0 - kFullLink);
      link.allocated = link.live == 1 ? 0.0 : std::max(0.0, link.allocated - f.rate);
      allocated_changed(l);
      --link.live;
      ++link.dead;
      if (link.live > 0) {
        // Swept when the finished entries outnumber the live ones: O(1) per entry overall.
        if (link.dead > link.live) {
          std::erase_if(link.flows, [this](const LinkEntry& e) { return !is_live(e); });
          link.dead = 0;
        }
        if (full) mark_dirty(l);
      } else {
        link.flows.clear();
        link.dead = 0;
        link.max_rate = 0.0;
        const LinkId last = active_links_.back();
        active_links_[link.active_index] = last;
        links_[last].active_index = link.active_index;
        active_links_.pop_back();
      }
    }
    const FlowId last = active_flows_.back();
    active_flows_[f.active_index] = last;
    flows_[last].active_index = f.active_index;
    active_flows_.pop_back();
    active_bits_[id / 64] &= ~(std::uint64_t{1} << (id % 64));
    if (!dirty_links_.empty()) request_solve(/*immediate=*/false);
  }
  const Time latency = router_->latency(f.route);
  Callback on_transmitted = std::move(callbacks_[id].on_transmitted);
  Callback on_arrived = std::move(callbacks_[id].on_arrived);
  callbacks_[id] = FlowCallbacks{};
  f.in_use = false;
  free_flows_.push_back(id);
  --in_use_count_;
  ++counters_.flows_completed;
  if (on_transmitted) on_transmitted();
  if (!on_arrived) return;
  if (latency == 0 || latency_first_) {
    on_arrived();
  } else {
    sim_.schedule_in(latency, std::move(on_arrived));
  }
}

void FlowNetwork::mark_dirty(LinkId link) {
  if (!links_[link].dirty) {
    links_[link].dirty = true;
    dirty_links_.push_back(link);
  }
}

void FlowNetwork::request_solve(bool immediate) {
  // Runs after every event already scheduled for this instant, so simultaneous starts and
  // completions are solved together; freed bandwidth waits for the next quantum boundary.
  Time delay = 0;
  if (!immediate && solve_quantum_ > 0) {
    delay = (solve_quantum_ - sim_.now() % solve_quantum_) % solve_quantum_;
  }
  if (solve_pending_) {
    if (sim_.queue().time_of(solve_event_) > sim_.now() + delay)
      sim_.reschedule(solve_event_, sim_.now() + delay);
    return;
  }
  solve_pending_ = true;
  solve_event_ = sim_.schedule_in(delay, [this] { solve(); });
}

double FlowNetwork::rate(FlowId id) const {
  TRAINSIM_ASSERT(id < flows_.size() && flows_[id].in_use, "rate of an inactive flow");
  return flows_[id].rate;
}

RouteId FlowNetwork::route_of(FlowId id) const {
  TRAINSIM_ASSERT(id < flows_.size() && flows_[id].in_use, "route of an inactive flow");
  return flows_[id].route;
}

Time FlowNetwork::uncontended_time(RouteId route, double bytes) const {
  const Time latency = router_->latency(route);
  if (bytes == 0.0 || router_->links(route).empty()) return latency;
  return latency + transfer_time(bytes, router_->bottleneck_bandwidth(route));
}

void FlowNetwork::solve() {
  solve_pending_ = false;
  // A dirty link whose flows have all finished since it was marked changes no rate: the flows
  // that shared another link with them marked that one when they finished.
  std::erase_if(dirty_links_, [this](LinkId l) {
    if (links_[l].live > 0) return false;
    links_[l].dirty = false;
    return true;
  });
  if (dirty_links_.empty()) return;
  solve_links_.assign(dirty_links_.begin(), dirty_links_.end());
  ++epoch_;
  // Solving more flows than the dirty links reach gives them the rates they have (components do
  // not interact, and a flow whose rate stays is left alone), so when the last search found
  // nearly every active flow in the component, the next few solves skip it, as long as the
  // active flows have not grown by more than a tenth since (flows started since may stand apart:
  // a ring's next step).
  constexpr int kSearchEvery = 8;
  // The compact copy of the last solve serves again when flows have only finished since (few
  // enough that skipping them costs less than a new copy) and every dirty link is in it: that
  // solve took a whole component (or every active flow), and finishing flows only split it, so
  // the flows it still lists are what the dirty links reach, and maybe more. No search is needed:
  // the local filling's part stays within what the dirty links reach, and costs what it holds,
  // not the copy (a full filling of more flows gives the others the rates they have).
  const bool compact_usable = compact_valid_ && dead_locals_.size() * 4 < component_flows_.size() &&
                              std::all_of(dirty_links_.begin(), dirty_links_.end(),
                                          [this](LinkId l) { return in_compact(l); });
  const bool reuse = compact_usable;
  if (!reuse && last_solve_took_most_ && 9 * active_flows_.size() <= 10 * searched_active_ &&
      ++solves_without_search_ < kSearchEvery) {
    take_all_active();
  } else if (!reuse) {
    solves_without_search_ = 0;
    collect_component();
    last_solve_took_most_ = 10 * component_flows_.size() > 9 * active_flows_.size();
    searched_active_ = active_flows_.size();
  }
  if (reuse) {
    ++counters_.compact_reuses;
    for (const LinkId l : dirty_links_) links_[l].dirty = false;
    dirty_links_.clear();
  }
  // Everything on the dirty links finished meanwhile (a reused copy has live flows).
  if (component_flows_.empty()) return;
  ++counters_.solves;
  const std::size_t live_in_copy = component_flows_.size() - (reuse ? dead_locals_.size() : 0);
  const Time now = sim_.now();
  if (!reuse && component_alone_) {
    counters_.flows_solved += live_in_copy;
    rate_lone_flows(now);
    return;
  }
  if (!reuse) {
    build_compact();
    compact_valid_ = true;
    dead_locals_.clear();
    flow_dead_.assign(component_flows_.size(), 0);
  }
  const bool local = fill_local();
  if (!local) fill_component();
  counters_.flows_solved += local ? part_flows_.size() : live_in_copy;
  // On a reused copy, or after a local filling, only the links of flows that finished or changed
  // rate since the last solve need their allocations summed again: the others' flows and rates
  // are those of that sum.
  touched_links_.clear();
  if (reuse) {
    for (std::size_t d = dead_seen_; d < dead_locals_.size(); ++d) touch_links_of(dead_locals_[d]);
  }
  dead_seen_ = dead_locals_.size();
  // Completion events move together (the queue re-heaps at once when many move), in the order
  // one by one would move them: a flow without an event gets its new one in that order too.
  moves_.clear();
  auto give_rate = [&](std::uint32_t i) {
    const double rate = flow_rate_[i];
    TRAINSIM_ASSERT(rate > 0.0, "flow given a zero rate");
    // A flow whose rate stays keeps its completion event; its bytes are brought up to date only
    // when its rate changes.
    if (rate == compact_rate_[i]) return;
    if (local) {
      const double change = rate - std::max(compact_rate_[i], 0.0);
      for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
        link_change_[flow_links_[k]] += change;
      }
    }
    compact_rate_[i] = rate;
    if (reuse || local) touch_links_of(i);
    rerate(component_flows_[i], rate, now);
  };
  if (local) {
    // (Only the part's flows have new rates; in the copy's order, as a full filling gives them:
    // the last round of the filling sorted them.)
    for (const std::uint32_t i : part_flows_) give_rate(i);
  } else {
    for (std::uint32_t i = 0; i < component_flows_.size(); ++i) {
      if (!flow_dead_[i]) give_rate(i);
    }
  }
  sim_.reschedule_all(moves_);
  if (on_rate_changes_exceeded_ &&
      static_cast<double>(counters_.flows_rerated) >
          rate_change_first_ + rate_change_per_second_ * to_seconds(now)) {
    Callback exceeded = std::move(on_rate_changes_exceeded_);
    on_rate_changes_exceeded_ = {};
    exceeded();
  }
  // The component's links carry its flows alone: their allocations, summed afresh (on the
  // solver's compact copy: link -> flows, the rates just given, finished flows left out), in
  // link order (as a link observer sees them). After a local filling, a link of many flows takes
  // the change in its part flows' rates instead: walking its flows would cost more than the
  // filling (the sum errs by about 1e-16 of the capacity per change, far below kFullLink).
  constexpr std::uint32_t kSumAfreshUpTo = 32;
  const bool touched_only = reuse || local;
  if (touched_only) std::sort(touched_links_.begin(), touched_links_.end());
  const std::size_t summed = touched_only ? touched_links_.size() : component_links_.size();
  for (std::size_t t = 0; t < summed; ++t) {
    const std::uint32_t j = touched_only ? touched_links_[t] : static_cast<std::uint32_t>(t);
    link_touched_[j] = 0;
    const double change = link_change_[j];
    link_change_[j] = 0.0;
    if (local && link_first_[j + 1] - link_first_[j] > kSumAfreshUpTo) {
      const LinkId l = component_links_[j];
      set_allocated(l, std::max(0.0, links_[l].allocated + change));
      continue;
    }
    double allocated = 0.0;
    for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1]; ++k) {
      const std::uint32_t i = link_flows_[k];
      if (!flow_dead_[i]) allocated += compact_rate_[i];
    }
    set_allocated(component_links_[j], allocated);
  }
}

void FlowNetwork::rerate(FlowId id, double rate, Time now) {
  FlowState& f = flows_[id];
  f.remaining_bytes = std::max(0.0, f.remaining_bytes - f.rate * to_seconds(now - f.last_update));
  f.last_update = now;
  f.rate = rate;
  ++counters_.flows_rerated;
  const Time at = time_after(now, transfer_time(f.remaining_bytes, f.rate));
  if (f.completion_scheduled) {
    moves_.emplace_back(f.completion, at);
  } else {
    sim_.reschedule_all(moves_);
    moves_.clear();
    schedule_completion(id, at);
  }
}

void FlowNetwork::rate_lone_flows(Time now) {
  // Each flow has every link of its route to itself: max-min gives it the least capacity on
  // its route (or its cap), as the filling's first pass would, with no copy to make.
  compact_valid_ = false;
  moves_.clear();
  for (const FlowId id : component_flows_) {
    const FlowState& f = flows_[id];
    // (Each link appears once on the route, so this is the least capacity on it.)
    const double rate = std::min(f.rate_cap, router_->bottleneck_bandwidth(f.route));
    TRAINSIM_ASSERT(rate > 0.0, "flow given a zero rate");
    set_bottleneck(id, kNoBottleneck);  // (a flow joining it marks its links for the next solve)
    if (f.completion_scheduled && rate == f.rate) continue;
    raise_max_rate(f.route, rate);
    rerate(id, rate, now);
  }
  sim_.reschedule_all(moves_);
  for (const LinkId l : component_links_) {
    // (A dirty link may have lost its flows since; it has one live entry at most.)
    const LinkState& link = links_[l];
    double rate = 0.0;
    for (const LinkEntry& e : link.flows) {
      if (is_live(e)) rate = flows_[e.flow].rate;
    }
    set_allocated(l, rate);
  }
}

void FlowNetwork::touch_links_of(std::uint32_t local_flow) {
  for (std::uint32_t k = flow_first_[local_flow]; k < flow_first_[local_flow + 1]; ++k) {
    const std::uint32_t j = flow_links_[k];
    if (!link_touched_[j]) {
      link_touched_[j] = 1;
      touched_links_.push_back(j);
    }
  }
}

void FlowNetwork::take_all_active() {
  for (const LinkId l : dirty_links_) links_[l].dirty = false;
  dirty_links_.clear();
  // In id order, so the walks over the flows' records go through memory in order.
  component_flows_.clear();
  for (std::size_t w = 0; w < active_bits_.size(); ++w) {
    for (std::uint64_t bits = active_bits_[w]; bits != 0; bits &= bits - 1) {
      component_flows_.push_back(static_cast<FlowId>(w * 64 + std::countr_zero(bits)));
    }
  }
  component_links_ = active_links_;
  component_alone_ = false;  // not known
}

void FlowNetwork::collect_component() {
  component_flows_.clear();
  component_links_.clear();
  link_stack_.clear();
  component_alone_ = true;
  for (const LinkId l : dirty_links_) {
    links_[l].dirty = false;
    if (links_[l].component_mark != epoch_) {
      links_[l].component_mark = epoch_;
      link_stack_.push_back(l);
    }
  }
  dirty_links_.clear();
  while (!link_stack_.empty()) {
    const LinkId l = link_stack_.back();
    link_stack_.pop_back();
    component_links_.push_back(l);
    if (links_[l].live > 1) component_alone_ = false;
    for (const LinkEntry& e : links_[l].flows) {
      if (!is_live(e)) continue;
      FlowState& f = flows_[e.flow];
      if (f.component_mark == epoch_) continue;
      f.component_mark = epoch_;
      component_flows_.push_back(e.flow);
      for (const LinkId h : router_->links(f.route)) {
        if (links_[h].component_mark != epoch_) {
          links_[h].component_mark = epoch_;
          link_stack_.push_back(h);
        }
      }
    }
  }
  // In id order, as take_all_active() lists them: a component's flows are then filled in the
  // same order whether it is solved alone or among others, to the last bit.
  if (component_flows_.size() * 16 > active_flows_.size()) {
    component_flows_.clear();
    for (std::size_t w = 0; w < active_bits_.size(); ++w) {
      for (std::uint64_t bits = active_bits_[w]; bits != 0; bits &= bits - 1) {
        const auto id = static_cast<FlowId>(w * 64 + std::countr_zero(bits));
        if (flows_[id].component_mark == epoch_) component_flows_.push_back(id);
      }
    }
  } else {
    std::sort(component_flows_.begin(), component_flows_.end());
  }
}

void FlowNetwork::build_compact() {
  // A compact copy of the component, indexed locally: flow -> links from the routes, link ->
  // flows by transposing it (one entry per appearance), so the filling runs in cache.
  const std::size_t nf = component_flows_.size();
  const std::size_t nl = component_links_.size();
  if (local_of_link_.size() < links_.size()) local_of_link_.resize(links_.size());
  for (std::size_t j = 0; j < nl; ++j) {
    local_of_link_[component_links_[j]] = static_cast<std::uint32_t>(j);
  }
  flow_first_.resize(nf + 1);
  flow_links_.clear();
  flow_cap_.resize(nf);
  compact_rate_.resize(nf);
  flow_bottleneck_.resize(nf);
  in_part_.assign(nf, 0);
  flow_fixed_.assign(nf, 1);
  flow_rate_.resize(nf);
  part_link_mark_.assign(nl, 0);
  link_change_.assign(nl, 0.0);
  copy_unrated_ = true;
  link_touched_.assign(nl, 0);
  link_first_.assign(nl + 1, 0);
  compact_capped_ = 0;
  for (std::size_t i = 0; i < nf; ++i) {
    // The flows' records and routes are spread over memory: ask for them a few flows ahead.
    if (i + 8 < nf) __builtin_prefetch(&flows_[component_flows_[i + 8]]);
    if (i + 4 < nf)
      __builtin_prefetch(router_->links(flows_[component_flows_[i + 4]].route).data());
    FlowState& f = flows_[component_flows_[i]];
    if (f.rate_cap != kUncapped) ++compact_capped_;
    f.local = static_cast<std::uint32_t>(i);
    flow_first_[i] = static_cast<std::uint32_t>(flow_links_.size());
    flow_cap_[i] = f.rate_cap;
    compact_rate_[i] = f.completion_scheduled ? f.rate : -1.0;  // a flow without one gets one
    const LinkId b = bottleneck_[component_flows_[i]];
    flow_bottleneck_[i] = b == kNoBottleneck || b == kCapBound ? b : local_of_link_[b];
    for (const LinkId l : router_->links(f.route)) {
      const std::uint32_t j = local_of_link_[l];
      flow_links_.push_back(j);
      ++link_first_[j + 1];
    }
  }
  flow_first_[nf] = static_cast<std::uint32_t>(flow_links_.size());
  flow_bundle_.clear();
  if (!bundles_.empty()) {
    flow_bundle_.assign(nf, nullptr);
    for (std::size_t i = 0; i < nf; ++i) {
      const FlowId id = component_flows_[i];
      if (flows_[id].bundle) flow_bundle_[i] = bundles_.at(id).get();
    }
  }
  for (std::size_t j = 0; j < nl; ++j) link_first_[j + 1] += link_first_[j];
  link_flows_.resize(flow_links_.size());
  link_unfixed_.resize(nl);
  for (std::size_t j = 0; j < nl; ++j) link_unfixed_[j] = link_first_[j];  // fill cursor
  for (std::size_t i = 0; i < nf; ++i) {
    for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
      link_flows_[link_unfixed_[flow_links_[k]]++] = static_cast<std::uint32_t>(i);
    }
  }
  mark_shadowed_links();
}

void FlowNetwork::mark_shadowed_links() {
  // A link whose flows are exactly another link's, with more capacity (or as much and a higher
  // id), never fixes a flow: at every point of the filling it has as many unfixed flows and at
  // least as much capacity left as that link (the same rates come off both), so its fair share is
  // never the smaller, and on a tie the lower id is taken first. Once that link fixes its flows,
  // this one has none left. The filling leaves such links out (on a GPUDirect path the PCIe link
  // to the NIC carries exactly the NIC's flows: a third of a network flow's links); the same
  // fixings happen in the same order. Each flow's links are reordered to list the others first.
  const std::size_t nf = component_flows_.size();
  const std::size_t nl = component_links_.size();
  constexpr std::uint32_t kShadowMinFlows = 8;
  link_shadowed_.assign(nl, 0);
  bool any = false;
  for (std::uint32_t j = 0; j < nl; ++j) {
    const std::uint32_t first = link_first_[j];
    const std::uint32_t count = link_first_[j + 1] - first;
    // On a link of a few flows the search costs about what leaving it out saves (a ring's links
    // carry one or two, and its copies are filled once).
    if (count < kShadowMinFlows) continue;
    const double capacity = links_[component_links_[j]].capacity;
    // A link with the same flows is on the route of each of them: the first one's will do,
    // unless it is long (a bundle of flows from many nodes).
    constexpr std::uint32_t kShadowLongestRoute = 64;
    const std::uint32_t f = link_flows_[first];
    if (flow_first_[f + 1] - flow_first_[f] > kShadowLongestRoute) continue;
    for (std::uint32_t k = flow_first_[f]; k < flow_first_[f + 1]; ++k) {
      const std::uint32_t m = flow_links_[k];
      if (m == j || link_first_[m + 1] - link_first_[m] != count) continue;
      const double other = links_[component_links_[m]].capacity;
      if (!(other < capacity || (other == capacity && component_links_[m] < component_links_[j])))
        continue;
      if (!std::equal(link_flows_.begin() + first, link_flows_.begin() + first + count,
                      link_flows_.begin() + link_first_[m])) {
        continue;
      }
      link_shadowed_[j] = 1;
      any = true;
      break;
    }
  }
  fill_end_.resize(nf);
  if (!any) {
    for (std::size_t i = 0; i < nf; ++i) fill_end_[i] = flow_first_[i + 1];
    return;
  }
  std::vector<std::uint32_t> shadowed;
  for (std::size_t i = 0; i < nf; ++i) {
    std::uint32_t kept = flow_first_[i];
    shadowed.clear();
    for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
      const std::uint32_t j = flow_links_[k];
      if (link_shadowed_[j]) {
        shadowed.push_back(j);
      } else {
        flow_links_[kept++] = j;
      }
    }
    fill_end_[i] = kept;
    std::copy(shadowed.begin(), shadowed.end(), flow_links_.begin() + kept);
  }
}

double FlowNetwork::fair_share(std::uint32_t j) const {
  return std::max(link_remaining_[j], 0.0) / static_cast<double>(link_unfixed_[j]);
}

void FlowNetwork::fix_flow(std::uint32_t i, double rate, std::uint32_t held) {
  flow_fixed_[i] = 1;
  flow_rate_[i] = rate;
  flow_bottleneck_[i] = held;
  for (std::uint32_t k = flow_first_[i]; k < fill_end_[i]; ++k) {
    link_remaining_[flow_links_[k]] -= rate;
    --link_unfixed_[flow_links_[k]];
  }
}

template <typename FixLink>
void FlowNetwork::fill_by_shares(const std::vector<std::uint32_t>& links, FixLink&& fix_link) {
  using Entry = std::pair<double, std::uint32_t>;
  const auto greater = std::greater<Entry>{};
  auto& caps = cap_heap_;
  std::make_heap(caps.begin(), caps.end(), greater);
  auto& heap = share_heap_;
  heap.clear();
  for (const std::uint32_t j : links) {
    if (link_unfixed_[j] > 0) heap.emplace_back(fair_share(j), component_links_[j]);
  }
  std::make_heap(heap.begin(), heap.end(), greater);
  // Fair shares only grow as flows are fixed, so each link keeps one heap entry whose key is a
  // lower bound of its share: a popped entry whose share has grown goes back with the new value;
  // one whose share is still its key is the smallest share of all. Ties between equal shares go
  // to the lower link id.
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const auto [key, link] = heap.back();
    const std::uint32_t j = local_of_link_[link];
    heap.pop_back();
    if (link_unfixed_[j] == 0) continue;
    const double share = fair_share(j);
    if (share > key) {
      heap.emplace_back(share, link);
      std::push_heap(heap.begin(), heap.end(), greater);
      continue;
    }
    while (!caps.empty() && flow_fixed_[caps.front().second]) {
      std::pop_heap(caps.begin(), caps.end(), greater);
      caps.pop_back();
    }
    if (!caps.empty() && caps.front().first < share) {
      // A flow's own cap binds before any link: fix it alone, and look at this link again.
      const std::uint32_t i = caps.front().second;
      std::pop_heap(caps.begin(), caps.end(), greater);
      caps.pop_back();
      fix_flow(i, flow_cap_[i], kCapBound);
      heap.emplace_back(share, link);
      std::push_heap(heap.begin(), heap.end(), greater);
      continue;
    }
    fix_link(j, link, share);
  }
}

void FlowNetwork::fill_component() {
  // On the compact copy; flows that finished since it was made are fixed at 0 from the start.
  const std::size_t nf = component_flows_.size();
  const std::size_t nl = component_links_.size();
  flow_rate_.assign(nf, 0.0);
  flow_fixed_.assign(flow_dead_.begin(), flow_dead_.end());
  link_remaining_.resize(nl);
  link_capacity_.resize(nl);
  link_count_.resize(nl);
  for (std::size_t j = 0; j < nl; ++j) {
    link_capacity_[j] = link_remaining_[j] = links_[component_links_[j]].capacity;
    link_count_[j] = link_first_[j + 1] - link_first_[j];
  }
  for (const std::uint32_t i : dead_locals_) {
    for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
      --link_count_[flow_links_[k]];
    }
  }
  link_unfixed_.assign(link_count_.begin(), link_count_.end());
  for (std::size_t j = 0; j < nl; ++j) {
    if (link_shadowed_[j]) link_unfixed_[j] = 0;  // never a bottleneck: left out
  }

  // Only caps that may bind go on the heap. Every flow gets at least
  //   lower_f = min(cap_f, min over its links of C_l / n_l)
  // (the filling level at which a link saturates is at least C_l / n_l), so on every link it
  // crosses it gets at most upper_f = C_l - (sum of the others' lower bounds). A cap at or above
  // upper_f never binds: leaving it out changes nothing (not even the order of the fixing). The
  // bounds are summed in the same pass as the fast path below, when the copy has capped flows.
  const bool bounds = compact_capped_ > 0;
  if (bounds) {
    flow_lower_.resize(nf);
    link_lower_sum_.assign(nl, 0.0);
    link_even_share_.resize(nl);
    for (std::size_t j = 0; j < nl; ++j) {
      link_even_share_[j] = link_capacity_[j] / static_cast<double>(std::max(link_count_[j], 1u));
    }
  }
  // Fast path: a flow alone on every link of its route gets the smallest capacity on it (or its
  // cap). Such flows are common (ring steps, point-to-point traffic) and need no heap.
  using Entry = std::pair<double, std::uint32_t>;
  auto& caps = cap_heap_;
  caps.clear();
  for (std::uint32_t i = 0; i < nf; ++i) {
    if (flow_fixed_[i]) continue;  // finished
    double rate = flow_cap_[i];
    double lower = flow_cap_[i];
    std::uint32_t held = kCapBound;
    bool alone = true;
    for (std::uint32_t k = flow_first_[i]; k < fill_end_[i]; ++k) {
      const std::uint32_t j = flow_links_[k];
      if (link_count_[j] != 1) {
        alone = false;
        if (!bounds) break;
      }
      if (link_remaining_[j] < rate) {
        rate = link_remaining_[j];
        held = j;
      }
      if (bounds) lower = std::min(lower, link_even_share_[j]);
    }
    if (bounds) {
      flow_lower_[i] = lower;
      for (std::uint32_t k = flow_first_[i]; k < fill_end_[i]; ++k) {
        link_lower_sum_[flow_links_[k]] += lower;
      }
    }
    if (alone) {
      fix_flow(i, rate, held);
      if (held != kCapBound) links_[component_links_[held]].level = rate;
    } else if (flow_cap_[i] != kUncapped) {
      caps.emplace_back(flow_cap_[i], i);
    }
  }
  if (!caps.empty()) {
    std::erase_if(caps, [&](const Entry& e) {
      const std::uint32_t i = e.second;
      double upper = kUncapped, largest = 0.0;
      for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
        const std::uint32_t j = flow_links_[k];
        const double capacity = link_capacity_[j];
        // (A link left out has the bound of the link it shadows, or a larger one.)
        if (k < fill_end_[i])
          upper = std::min(upper, capacity - link_lower_sum_[j] + flow_lower_[i]);
        largest = std::max(largest, capacity);
      }
      // Margin for rounding in the sums: absolute, at the scale of the links' capacities (a sum
      // over n flows errs by about n x 1e-16 of it).
      return e.first > upper + 1e-9 * largest;
    });
  }
  every_link_.resize(nl);
  std::iota(every_link_.begin(), every_link_.end(), std::uint32_t{0});
  fill_by_shares(every_link_, [&](std::uint32_t j, LinkId link, double share) {
    const std::uint32_t last = link_first_[j + 1];
    for (std::uint32_t k = link_first_[j]; k < last; ++k) {
      // The link's flows sit anywhere in the copy: ask for their records a few flows ahead.
      if (k + 8 < last) __builtin_prefetch(&flow_first_[link_flows_[k + 8]]);
      if (k + 4 < last) __builtin_prefetch(flow_links_.data() + flow_first_[link_flows_[k + 4]]);
      const std::uint32_t i = link_flows_[k];
      if (flow_fixed_[i]) continue;
      if (!flow_bundle_.empty() && flow_bundle_[i]) check_bundle(i, link, j);
      fix_flow(i, share, j);
    }
    links_[link].level = share;
  });
  // Each flow's bottleneck, for the local fillings that follow; each link's largest rate.
  for (std::size_t j = 0; j < nl; ++j) {
    LinkState& l = links_[component_links_[j]];
    l.held = 0;
    double largest = 0.0;
    for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1]; ++k) {
      largest = std::max(largest, flow_rate_[link_flows_[k]]);  // (0 for a finished flow)
    }
    l.max_rate = largest;
  }
  for (std::uint32_t i = 0; i < nf; ++i) {
    TRAINSIM_ASSERT(flow_fixed_[i], "flow left without a rate by the solver");
    if (flow_dead_[i]) continue;
    const std::uint32_t held = flow_bottleneck_[i];
    const LinkId b = held == kCapBound ? kCapBound : component_links_[held];
    bottleneck_[component_flows_[i]] = b;
    if (b != kCapBound) ++links_[b].held;
  }
}

void FlowNetwork::add_to_part(std::uint32_t i) {
  if (flow_dead_[i] || in_part_[i]) return;
  in_part_[i] = 1;
  part_flows_.push_back(i);
  // Solved again: its old bottleneck (on its route) counts it apart from the flows it still holds.
  part_held_before_[i] = flow_bottleneck_[i];
  const double old = std::max(compact_rate_[i], 0.0);
  for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
    const std::uint32_t j = flow_links_[k];
    if (!part_link_mark_[j]) {
      part_link_mark_[j] = 1;
      part_links_.push_back(j);
      part_count_[j] = 0;
      part_old_[j] = 0.0;
      part_held_[j] = 0;
    }
    ++part_count_[j];
    part_old_[j] += old;
  }
  if (flow_bottleneck_[i] < kCapBound) ++part_held_[flow_bottleneck_[i]];
}

bool FlowNetwork::fill_local() {
  // Max-min rates are the feasible ones where every flow has a bottleneck: a full link on which
  // no flow has a larger rate (or its cap holds it). Flows finishing or starting on some links
  // leave every other flow's bottleneck as it was unless the rates on it change, so only part of
  // the flows needs new rates: those on the links marked for this solve (where flows finished
  // or started) and those with no bottleneck yet. The part is filled as a whole component would
  // be, on the capacity the others leave. Then a flow outside it joins when the new rates undo
  // its bottleneck (the link is no longer full, or a part flow now exceeds it there), or when it
  // exceeds the part flows a link holds; the part is filled again, until no flow joins. What
  // comes out is the max-min allocation a full filling gives, to rounding (rates within
  // kSameRate of each other count as equal). Each round costs the part's flows and links: the
  // others are seen through each link's allocation, its held flows' count and level, and a
  // bound on its rates; a link's flows are walked only when that bound or level says a flow
  // there may have to join.
  constexpr double kSameRate = 1e-12;
  constexpr int kMostRounds = 16;
  const std::size_t nf = component_flows_.size();
  const std::size_t nl = component_links_.size();
  const std::size_t live = nf - dead_locals_.size();
  part_count_.resize(nl);
  part_held_.resize(nl);
  part_slot_.resize(nl);
  part_held_before_.resize(nf);
  part_old_.resize(nl);
  part_new_.resize(nl);
  part_largest_.resize(nl);
  part_link_changed_.resize(nl);
  link_remaining_.resize(nl);
  link_unfixed_.resize(nl);
  link_share_.resize(nl);
  part_flows_.clear();
  part_links_.clear();
  for (const LinkId l : solve_links_) {
    if (!in_compact(l)) continue;
    const std::uint32_t j = local_of_link_[l];
    for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1]; ++k) add_to_part(link_flows_[k]);
  }
  // (A copy the last solve filled has none: flows left it since, none joined.)
  if (copy_unrated_) {
    for (std::uint32_t i = 0; i < nf; ++i) {
      if (compact_rate_[i] < 0.0 || flow_bottleneck_[i] == kNoBottleneck) add_to_part(i);
    }
  }
  copy_unrated_ = false;
  // Left as they are between solves: flow_fixed_ 1 (every flow has its rate), in_part_ and
  // part_link_mark_ 0; flow_rate_ is read for the part's flows only.
  auto clear_part = [&] {
    for (const std::uint32_t i : part_flows_) in_part_[i] = 0;
    for (const std::uint32_t j : part_links_) part_link_mark_[j] = 0;
  };
  auto& caps = cap_heap_;
  for (int round = 0;; ++round) {
    if (2 * part_flows_.size() > live || round == kMostRounds) {
      clear_part();
      return false;
    }
    // What the flows outside the part leave on each link, and the part's flows there.
    for (const std::uint32_t j : part_links_) {
      const LinkState& link = links_[component_links_[j]];
      const double others =
          link.live > part_count_[j] ? std::max(0.0, link.allocated - part_old_[j]) : 0.0;
      link_remaining_[j] = link.capacity - others;
      link_unfixed_[j] = link_shadowed_[j] ? 0 : part_count_[j];  // (never a bottleneck)
    }
    // The part's flows on each of its links (link -> flows, in the copy's order), so a link's
    // filling walks those and not all of its flows.
    std::sort(part_flows_.begin(), part_flows_.end());
    part_first_.assign(part_links_.size() + 1, 0);
    for (std::uint32_t p = 0; p < part_links_.size(); ++p) {
      part_slot_[part_links_[p]] = p;
      part_first_[p + 1] = part_first_[p] + part_count_[part_links_[p]];
    }
    part_cursor_.assign(part_first_.begin(), part_first_.end() - 1);
    part_entries_.resize(part_first_.back());
    for (const std::uint32_t i : part_flows_) {
      for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
        part_entries_[part_cursor_[part_slot_[flow_links_[k]]]++] = i;
      }
    }
    caps.clear();
    for (const std::uint32_t i : part_flows_) {
      flow_fixed_[i] = 0;
      if (flow_cap_[i] != kUncapped) caps.emplace_back(flow_cap_[i], i);
    }
    // The filling of fill_component(), on the part.
    fixing_links_.clear();
    fill_by_shares(part_links_, [&](std::uint32_t j, LinkId, double share) {
      link_share_[j] = share;
      fixing_links_.push_back(j);
      const std::uint32_t p = part_slot_[j];
      for (std::uint32_t k = part_first_[p]; k < part_first_[p + 1]; ++k) {
        const std::uint32_t i = part_entries_[k];
        if (!flow_fixed_[i]) fix_flow(i, share, j);
      }
    });
    for (const std::uint32_t i : part_flows_) {
      TRAINSIM_ASSERT(flow_fixed_[i], "flow left without a rate by the local filling");
    }
    // The part's new rates on each of its links.
    for (const std::uint32_t j : part_links_) {
      part_new_[j] = part_largest_[j] = 0.0;
      part_link_changed_[j] = 0;
    }
    for (const std::uint32_t i : part_flows_) {
      const double rate = flow_rate_[i];
      const bool changed = rate != compact_rate_[i];
      for (std::uint32_t k = flow_first_[i]; k < flow_first_[i + 1]; ++k) {
        const std::uint32_t j = flow_links_[k];
        part_new_[j] += rate;
        part_largest_[j] = std::max(part_largest_[j], rate);
        part_link_changed_[j] |= static_cast<char>(changed);
      }
    }
    joining_.clear();
    // A flow outside the part above the share at which a link holds part flows.
    for (const std::uint32_t j : fixing_links_) {
      const LinkState& link = links_[component_links_[j]];
      const double bound = link_share_[j] * (1.0 + kSameRate);
      if (link.live == part_count_[j] || link.max_rate <= bound) continue;
      for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1]; ++k) {
        const std::uint32_t i = link_flows_[k];
        if (!in_part_[i] && !flow_dead_[i] && compact_rate_[i] > bound) joining_.push_back(i);
      }
    }
    // A flow outside the part held by a link where part flows changed rate: the link must still
    // be full, and no part flow above it.
    for (const std::uint32_t j : part_links_) {
      const LinkState& link = links_[component_links_[j]];
      if (!part_link_changed_[j] || link.held == part_held_[j]) continue;  // (none outside)
      const double others = std::max(0.0, link.allocated - part_old_[j]);
      const bool full = others + part_new_[j] >= link.capacity * (1.0 - kFullLink);
      if (full && part_largest_[j] <= link.level * (1.0 + kSameRate)) continue;
      for (std::uint32_t k = link_first_[j]; k < link_first_[j + 1]; ++k) {
        const std::uint32_t i = link_flows_[k];
        if (!in_part_[i] && !flow_dead_[i] && flow_bottleneck_[i] == j) joining_.push_back(i);
      }
    }
    if (joining_.empty()) break;
    for (const std::uint32_t i : joining_) add_to_part(i);
  }
  // Every flow has its bottleneck: the part's are recorded (and each link's level and bound on
  // its rates where it holds part flows), and bundles checked where they are held, as a full
  // filling does.
  for (const std::uint32_t j : part_links_) {
    LinkState& link = links_[component_links_[j]];
    link.max_rate = std::max(link.max_rate, part_largest_[j]);
  }
  for (const std::uint32_t j : fixing_links_) {
    LinkState& link = links_[component_links_[j]];
    link.level = link_share_[j];
    link.max_rate = link_share_[j] * (1.0 + kSameRate);
  }
  for (const std::uint32_t i : part_flows_) {
    const std::uint32_t held = flow_bottleneck_[i];
    if (held != part_held_before_[i]) {
      set_bottleneck(component_flows_[i], held == kCapBound ? kCapBound : component_links_[held]);
    }
    if (held != kCapBound && !flow_bundle_.empty() && flow_bundle_[i]) {
      check_bundle(i, component_links_[held], held);
    }
  }
  clear_part();
  ++counters_.local_solves;
  return true;
}

}  // namespace trainsim
