#include "engine/flow_network.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "engine/check.h"
#include "engine/slot_pool.h"

namespace trainsim {

FlowNetwork::FlowNetwork(Simulation& simulation, const Topology& topology)
    : sim_(simulation), topology_(topology), router_(topology), links_(topology.link_count()) {
  for (LinkId l = 0; l < links_.size(); ++l) {
    links_[l].capacity = topology.link(l).bandwidth_bytes_per_s;
  }
}

FlowId FlowNetwork::allocate() {
  ++in_use_count_;
  return take_slot(flows_, free_flows_);
}

FlowId FlowNetwork::start(VertexId src, VertexId dst, double bytes, Callback on_arrived,
                          Callback on_transmitted, double rate_cap) {
  return start(router_.route(src, dst), bytes, std::move(on_arrived), std::move(on_transmitted),
               rate_cap);
}

FlowId FlowNetwork::start(RouteId route, double bytes, Callback on_arrived, Callback on_transmitted,
                          double rate_cap) {
  TRAINSIM_ASSERT(bytes >= 0.0, "flow with negative bytes");
  TRAINSIM_ASSERT(rate_cap > 0.0, "flow rate cap must be positive");
  const FlowId id = allocate();
  FlowState& f = flows_[id];
  f.on_arrived = std::move(on_arrived);
  f.on_transmitted = std::move(on_transmitted);
  f.remaining_bytes = bytes;
  f.rate = 0.0;
  f.rate_cap = rate_cap;
  f.route = route;
  f.in_use = true;
  f.completion = EventHandle{};
  f.slots.clear();
  ++counters_.flows_started;
  if (bytes == 0.0 || router_.links(route).empty()) {
    // Nothing to share: transmitted at once (as an event, never inside the caller).
    f.completion = sim_.schedule_in(latency_first_ ? router_.latency(route) : 0,
                                    [this, id] { transmitted(id); });
  } else if (latency_first_ && router_.latency(route) > 0) {
    f.completion = sim_.schedule_in(router_.latency(route), [this, id] { activate(id); });
  } else {
    activate(id);
  }
  return id;
}

void FlowNetwork::activate(FlowId id) {
  FlowState& f = flows_[id];
  f.last_update = sim_.now();
  const auto route = router_.links(f.route);
  f.slots.resize(route.size());
  for (std::size_t i = 0; i < route.size(); ++i) {
    LinkState& link = links_[route[i]];
    f.slots[i] = static_cast<std::uint32_t>(link.flows.size());
    link.flows.push_back(id);
    link.positions.push_back(static_cast<std::uint32_t>(i));
    mark_dirty(route[i]);
  }
  ++bandwidth_phase_count_;
  counters_.max_active_flows =
      std::max<std::uint64_t>(counters_.max_active_flows, bandwidth_phase_count_);
  if (solve_quantum_ > 0) {
    // Start at once at a provisional rate, an equal share of the busiest link, and leave the
    // full solve (which may change every rate in the component) to the quantum boundary.
    double rate = f.rate_cap;
    for (const LinkId l : route) {
      rate = std::min(rate, links_[l].capacity / static_cast<double>(links_[l].flows.size()));
    }
    f.rate = rate;
    f.completion =
        sim_.schedule_in(transfer_time(f.remaining_bytes, rate), [this, id] { transmitted(id); });
    request_solve(/*immediate=*/false);
  } else {
    request_solve(/*immediate=*/true);
  }
}

void FlowNetwork::transmitted(FlowId id) {
  FlowState& f = flows_[id];
  if (!f.slots.empty()) {
    const auto route = router_.links(f.route);
    for (std::size_t i = 0; i < route.size(); ++i) {
      LinkState& link = links_[route[i]];
      const std::uint32_t slot = f.slots[i];
      // The last appearance on the link takes this one's slot; its flow learns the new slot at
      // its position on its route (O(1) even for a route as long as a whole ring).
      const FlowId moved = link.flows.back();
      const std::uint32_t moved_position = link.positions.back();
      link.flows[slot] = moved;
      link.positions[slot] = moved_position;
      link.flows.pop_back();
      link.positions.pop_back();
      f.slots[i] = std::numeric_limits<std::uint32_t>::max();  // this appearance is gone
      if (!(moved == id && moved_position == i)) flows_[moved].slots[moved_position] = slot;
      if (!link.flows.empty()) mark_dirty(route[i]);
    }
    --bandwidth_phase_count_;
    if (!dirty_links_.empty()) request_solve(/*immediate=*/false);
  }
  const Time latency = router_.latency(f.route);
  Callback on_transmitted = std::move(f.on_transmitted);
  Callback on_arrived = std::move(f.on_arrived);
  f.on_transmitted = nullptr;
  f.on_arrived = nullptr;
  f.in_use = false;
  f.slots.clear();
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
  const Time latency = router_.latency(route);
  if (bytes == 0.0 || router_.links(route).empty()) return latency;
  return latency + transfer_time(bytes, router_.bottleneck_bandwidth(route));
}

double FlowNetwork::fair_share(const LinkState& link) const {
  return std::max(link.remaining_capacity, 0.0) / static_cast<double>(link.unfixed);
}

void FlowNetwork::solve() {
  solve_pending_ = false;
  if (dirty_links_.empty()) return;
  ++epoch_;
  collect_component();
  if (component_flows_.empty()) return;  // everything on the dirty links finished meanwhile
  ++counters_.solves;
  const Time now = sim_.now();
  for (const FlowId id : component_flows_) {
    FlowState& f = flows_[id];
    f.remaining_bytes = std::max(0.0, f.remaining_bytes - f.rate * to_seconds(now - f.last_update));
    f.last_update = now;
  }
  fill_component();
  for (const FlowId id : component_flows_) {
    FlowState& f = flows_[id];
    TRAINSIM_ASSERT(f.frozen_mark == epoch_, "flow left without a rate by the solver");
    TRAINSIM_ASSERT(f.new_rate > 0.0, "flow given a zero rate");
    if (f.new_rate == f.rate && sim_.pending(f.completion)) continue;
    f.rate = f.new_rate;
    ++counters_.flows_rerated;
    const Time done = now + transfer_time(f.remaining_bytes, f.rate);
    if (sim_.pending(f.completion)) {
      sim_.reschedule(f.completion, done);
    } else {
      f.completion = sim_.schedule_at(done, [this, id] { transmitted(id); });
    }
  }
}

void FlowNetwork::collect_component() {
  component_flows_.clear();
  component_links_.clear();
  link_stack_.clear();
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
    for (const FlowId id : links_[l].flows) {
      FlowState& f = flows_[id];
      if (f.component_mark == epoch_) continue;
      f.component_mark = epoch_;
      component_flows_.push_back(id);
      for (const LinkId other : router_.links(f.route)) {
        if (links_[other].component_mark != epoch_) {
          links_[other].component_mark = epoch_;
          link_stack_.push_back(other);
        }
      }
    }
  }
  // The visit order follows event order and is deterministic; the filling breaks ties between
  // equal shares by link id, so its result does not depend on it anyway.
}

void FlowNetwork::fill_component() {
  using Entry = std::pair<double, LinkId>;
  auto& heap = share_heap_;
  heap.clear();
  const auto greater = std::greater<Entry>{};
  // Fast path: a flow alone on every link of its route gets the smallest capacity on it (or its
  // cap). Such flows are common (ring steps, point-to-point traffic) and need no heap.
  auto& caps = cap_heap_;
  caps.clear();
  for (const FlowId id : component_flows_) {
    FlowState& f = flows_[id];
    double rate = f.rate_cap;
    bool alone = true;
    for (const LinkId l : router_.links(f.route)) {
      if (links_[l].flows.size() != 1) {
        alone = false;
        break;
      }
      rate = std::min(rate, links_[l].capacity);
    }
    if (alone) {
      f.frozen_mark = epoch_;
      f.new_rate = rate;
    } else if (f.rate_cap != kUncapped) {
      caps.emplace_back(f.rate_cap, id);
    }
  }
  std::make_heap(caps.begin(), caps.end(), std::greater<std::pair<double, FlowId>>{});
  for (const LinkId l : component_links_) {
    LinkState& link = links_[l];
    link.remaining_capacity = link.capacity;
    link.unfixed = static_cast<std::uint32_t>(link.flows.size());
    // A fast-path flow is its links' only flow: nothing left to share there.
    if (link.unfixed == 1 && flows_[link.flows[0]].frozen_mark == epoch_) link.unfixed = 0;
    if (link.unfixed > 0) heap.emplace_back(fair_share(link), l);
  }
  std::make_heap(heap.begin(), heap.end(), greater);
  const auto cap_greater = std::greater<std::pair<double, FlowId>>{};
  // Fixes flow `id` at `rate`, taking it off its links.
  auto fix = [&](FlowId id, double rate) {
    FlowState& f = flows_[id];
    f.frozen_mark = epoch_;
    f.new_rate = rate;
    for (const LinkId other : router_.links(f.route)) {
      LinkState& link = links_[other];
      link.remaining_capacity -= rate;
      --link.unfixed;
    }
  };
  // Fair shares only grow as flows are fixed, so each link keeps one heap entry whose key is a
  // lower bound of its share: a popped entry whose share has grown goes back with the new value;
  // one whose share is still its key is the smallest share of all.
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const auto [key, l] = heap.back();
    heap.pop_back();
    LinkState& link = links_[l];
    if (link.unfixed == 0) continue;
    const double share = fair_share(link);
    if (share > key) {
      heap.emplace_back(share, l);
      std::push_heap(heap.begin(), heap.end(), greater);
      continue;
    }
    while (!caps.empty() && flows_[caps.front().second].frozen_mark == epoch_) {
      std::pop_heap(caps.begin(), caps.end(), cap_greater);
      caps.pop_back();
    }
    if (!caps.empty() && caps.front().first < share) {
      // A flow's own cap binds before any link: fix it alone, and look at this link again.
      const FlowId id = caps.front().second;
      std::pop_heap(caps.begin(), caps.end(), cap_greater);
      caps.pop_back();
      fix(id, flows_[id].rate_cap);
      heap.emplace_back(share, l);
      std::push_heap(heap.begin(), heap.end(), greater);
      continue;
    }
    for (const FlowId id : link.flows) {
      if (flows_[id].frozen_mark != epoch_) fix(id, share);
    }
  }
}

}  // namespace trainsim
