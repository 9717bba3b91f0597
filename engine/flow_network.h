// Flow-level network model. A flow moves a number of bytes along a route of directed links. It
// transmits at once, sharing the bandwidth of every link on its route with the other active flows
// by max-min fairness; when its last byte has left the sender ("transmitted") it frees the links,
// and that byte arrives after the route's latency (paid once per flow). A lone flow thus takes
// latency + bytes / bottleneck bandwidth. A sender may start its next transfer as soon as the
// previous one is transmitted, without waiting for the latency, as pipelined protocols do.
//
// Max-min fairness (progressive filling): rates r_f must satisfy, for every link l with capacity
// C_l,  sum over flows f crossing l of r_f <= C_l,  r_f <= cap_f,  and no rate can grow without
// shrinking a rate that is already smaller or equal. The solver finds the smallest of the link
// fair shares C_l' / n_l (remaining capacity over flows not yet fixed) and the caps of flows not
// yet fixed; it fixes that link's flows at its share (or that flow at its cap), removes them from
// their other links, and repeats. Each flow is then bottlenecked at some link or at its cap.
//
// Incremental update: a flow that starts on links no other flow is using has them to itself and
// is rated at once (the least capacity on its route, or its cap), with no solve; otherwise
// starting a flow only marks the links of its route dirty. A finishing flow marks only the links
// of its route that were full: every other flow is held either by its cap or by a full link
// where no rate is above its own, and a link with capacity to spare holds none, so taking a flow
// off it changes no other rate (an incast's flows finishing do not re-solve the senders' NICs).
// All changes at one instant are batched into a single solve, over the connected component of
// flows reachable from the dirty links that still carry flows, through shared links (the flows
// whose rates can change); flows outside it keep their rates and completion events. When the last
// component held nearly every active flow, the search is skipped and every active flow taken
// (every eighth solve searches again, to notice when the traffic splits).
//
// Local filling: within the component, only the flows whose rates change need new ones. Each
// flow keeps its bottleneck (the full link where no rate is above its own, or its cap), and each
// link the rate of the flows it holds and a bound on every rate on it. A solve fills only a part
// of the component: the flows of the dirty links and those without a rate, on the capacity the
// others leave. A flow outside the part joins it when the new rates undo its bottleneck (that
// link is no longer full, or a part flow is now above it there) or when it is above the share at
// which a link holds part flows; the part is then filled again, until none joins. Every flow then
// has a bottleneck, which makes the rates max-min, the same as a full filling gives (to rounding).
// A part that grows past half of the component is filled whole instead. An all-to-all whose
// flows finish one by one re-solves the few hundred flows of the NIC a finished flow leaves, not
// the tens of thousands of the fabric. A flow whose rate changes
// has its remaining bytes brought up to date and its completion event moved (all of a solve's
// moves at once: the event queue re-heaps when they are many). The filling runs on a compact copy
// of the component (flow -> links and link -> flows), and a flow's rate cap enters it only when it
// may bind (when it is below the flow's upper bound from the other flows' guaranteed shares).
// When flows have only finished since that copy was made (fewer than a quarter of it) and the
// dirty links are all in it, the next solve uses the same copy, with the finished flows left
// out, instead of searching and making a new one (the local filling's part lies within the dirty
// links' component, wherever else the copy reaches). A
// component whose flows each have every link of their route to themselves (a ring's steps) needs
// no copy: each gets the least capacity on its route, or its cap. A link that carries exactly
// the flows of a narrower one (the PCIe link from a GPU to its NIC and the NIC's own port) can
// never be the bottleneck, and the filling leaves it out: the same flows are fixed in the same
// order.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/huge_page_allocator.h"
#include "engine/routing.h"
#include "engine/simulation.h"

namespace trainsim {

using FlowId = std::uint32_t;

struct FlowNetworkCounters {
  std::uint64_t flows_started = 0;
  std::uint64_t flows_completed = 0;
  std::uint64_t solves = 0;
  std::uint64_t flows_solved = 0;      // flows given rates by solves (a part or a component)
  std::uint64_t flows_rerated = 0;     // rate changes applied by solves
  std::uint64_t max_active_flows = 0;  // most flows sharing bandwidth at one time
  std::uint64_t compact_reuses = 0;    // solves on the last solve's compact copy (flows only left)
  std::uint64_t local_solves = 0;      // solves that gave new rates to part of the copy only
};

class FlowNetwork {
 public:
  using Callback = std::function<void()>;

  // Both must outlive the network, and the network must outlive the simulation's run.
  FlowNetwork(Simulation& simulation, const Topology& topology);
  // Routes from `router` (on the topology it was made for), which other networks may share: a
  // route computed for one of them is not computed again (route ids are the router's). The
  // networks must run one at a time.
  FlowNetwork(Simulation& simulation, std::shared_ptr<Router> router);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a flow of `bytes` (>= 0) on `route`. `on_transmitted` (optional) runs when its last
  // byte has left the sender, `on_arrived` when that byte arrives, a route latency later. The
  // returned id is valid until transmission ends and may be reused afterwards.
  // `rate_cap` (bytes/s) bounds the flow's rate on top of what the links give it, like a private
  // link of that capacity (a sender that cannot go faster, e.g. one GPU thread block).
  FlowId start(RouteId route, double bytes, Callback on_arrived, Callback on_transmitted = {},
               double rate_cap = kUncapped);
  FlowId start(VertexId src, VertexId dst, double bytes, Callback on_arrived,
               Callback on_transmitted = {}, double rate_cap = kUncapped);

  // A flow that stands for several flows of the same bytes and cap starting at the same instant
  // (a node's transfer and its counterparts on the other nodes of its class): `route` lists
  // every member's links (add_route; a link k members cross appears k times), so the one flow
  // loads the links as the members would, each member at its rate. The members keep one rate in
  // the max-min solution as long as each solve fixes the flow at a link where all of them are
  // held alike: a link every member crosses (`shared`), or one of a member's own links
  // (`mirrored`: each member crosses its own counterpart of it) that carries bundles only, whose
  // members' counterparts load the counterparts alike. Held at another link (a switch's link
  // that some members' routes take, or a member's own link that a flow of its own also crosses),
  // the members could drift apart: the network then calls the callback set_on_bundle_apart()
  // gave, once, and carries on (the caller decides what to do with a run that no longer stands
  // for its members).
  struct BundleLinks {
    std::vector<LinkId> shared;    // sorted
    std::vector<LinkId> mirrored;  // sorted
  };
  FlowId start_bundle(RouteId route, double bytes, std::shared_ptr<const BundleLinks> links,
                      Callback on_arrived, Callback on_transmitted = {},
                      double rate_cap = kUncapped);
  void set_on_bundle_apart(Callback callback) { on_bundle_apart_ = std::move(callback); }
  bool bundle_apart() const { return bundle_apart_; }

  static constexpr double kUncapped = std::numeric_limits<double>::infinity();
  // A link whose flows' rates add up to within this fraction of its capacity is full (the
  // rates are sums of shares, exact to rounding).
  static constexpr double kFullLink = 1e-7;

  // Current rate in bytes/s of a flow that is still transmitting (0 before the first solve).
  double rate(FlowId id) const;
  // Route of a flow that is still transmitting.
  RouteId route_of(FlowId id) const;
  std::size_t active_flow_count() const { return in_use_count_; }
  // A hint: `flows` more flows are about to start, so their state is allocated at once (a
  // collective of a million transfers would otherwise grow it step by step).
  void reserve(std::size_t flows);

  // Alpha-beta time of a flow alone on its route: latency + bytes / bottleneck bandwidth. The flow
  // model gives exactly this (to the picosecond) when nothing else shares the route.
  Time uncontended_time(RouteId route, double bytes) const;

  // Solve quantum: the bandwidth a finishing flow frees is handed to the others at the next
  // multiple of `quantum` instead of at once, so completions close together are solved together.
  // A new flow starts at once with the bandwidth still free on its route (the least over its
  // links of capacity less the rates already given there; none on a full link) and the full
  // solve waits for the boundary too, so chains of transfers are not delayed and no link ever
  // carries more than its capacity. 0 (the default) is exact; otherwise rates differ from
  // max-min for less than one quantum.
  void set_solve_quantum(Time quantum) { solve_quantum_ = quantum; }
  Time solve_quantum() const { return solve_quantum_; }

  // A bound on the solver's work: once the solves have changed more than
  //   first + per_second x (simulated seconds so far)
  // flow rates (counters().flows_rerated), the network calls `exceeded`, once, and carries on
  // (the caller decides whether to stop: an exact run that would cost too much, say).
  void set_rate_change_limit(double first, double per_second, Callback exceeded) {
    rate_change_first_ = first;
    rate_change_per_second_ = per_second;
    on_rate_changes_exceeded_ = std::move(exceeded);
  }

  // Latency first (SimGrid's semantics): a flow waits its route latency before it takes any
  // bandwidth, and arrives when its last byte is transmitted. The default pays the latency after
  // transmission. A lone flow takes latency + bytes / bottleneck either way; under contention the
  // two differ by when the latency is paid. Set before starting flows.
  void set_latency_first(bool on) { latency_first_ = on; }

  // Called with a link, the time and the bandwidth its flows are given (bytes/s) whenever that
  // changes (for a trace's utilisation tracks). Optional.
  using LinkObserver = std::function<void(LinkId, Time, double)>;
  void set_link_observer(LinkObserver observer) { link_observer_ = std::move(observer); }
  // Called when a flow starts taking bandwidth on its route (`begins`, with its bytes) and when it
  // stops (its last byte transmitted), e.g. to see whose traffic meets on a link. Optional.
  using FlowObserver = std::function<void(RouteId route, double bytes, bool begins)>;
  void set_flow_observer(FlowObserver observer) { flow_observer_ = std::move(observer); }

  Router& router() { return *router_; }
  // The same router, shared: a holder of route ids keeps the router they belong to alive.
  const std::shared_ptr<Router>& shared_router() const { return router_; }
  const Topology& topology() const { return topology_; }
  const FlowNetworkCounters& counters() const { return counters_; }

 private:
  // A flow's state; its callbacks live apart so walks over flows touch compact records (one
  // cache line each).
  struct FlowState {
    double remaining_bytes = 0.0;  // as of last_update
    double rate = 0.0;
    double rate_cap = kUncapped;
    Time last_update = 0;
    EventHandle completion;
    std::uint64_t component_mark = 0;
    RouteId route = 0;
    std::uint32_t active_index = 0;  // in active_flows_ while it takes bandwidth
    std::uint32_t local = 0;         // its index in the solver's compact copy
    bool in_use = false;
    bool completion_scheduled = false;  // `completion` is its transmission event
    bool active = false;                // takes bandwidth on its route's links
    bool bundle = false;                // started by start_bundle (bundles_ has its links)
  };
  static_assert(sizeof(FlowState) <= 64);
  struct FlowCallbacks {
    Callback on_arrived;
    Callback on_transmitted;
  };
  // A flow on a link's list, as of one activation: the entry is live while the flow's serial
  // (serial_) is still `serial`. Finished flows' entries are left behind and swept out of the
  // list once they outnumber the live ones (or all at once when none is left), so a flow that
  // finishes writes nothing but its own links' counts.
  struct LinkEntry {
    FlowId flow;
    std::uint32_t serial;
  };
  struct LinkState {
    std::vector<LinkEntry> flows;  // one entry per appearance on a flow's route; some finished
    std::uint32_t live = 0;        // entries of flows still taking bandwidth
    std::uint32_t dead = 0;        // the others
    double capacity = 0.0;
    double allocated = 0.0;  // the rates of the flows on it (one term per appearance)
    std::uint64_t component_mark = 0;
    std::uint32_t active_index = 0;  // in active_links_ while it carries a flow
    // Flows whose bottleneck it is (bottleneck_), the rate they were given there, and a bound
    // on every rate on it (raised as rates are given, set afresh by a full filling).
    std::uint32_t held = 0;
    double level = 0.0;
    double max_rate = 0.0;
    bool dirty = false;
  };
  bool is_live(const LinkEntry& e) const { return serial_[e.flow] == e.serial; }
  void set_bottleneck(FlowId id, std::uint32_t held) {
    const std::uint32_t old = bottleneck_[id];
    if (old < kCapBound) --links_[old].held;
    bottleneck_[id] = held;
    if (held < kCapBound) ++links_[held].held;
  }
  void raise_max_rate(RouteId route, double rate) {
    for (const LinkId l : router_->links(route)) {
      links_[l].max_rate = std::max(links_[l].max_rate, rate);
    }
  }

  FlowId allocate();
  void activate(FlowId id);
  void transmitted(FlowId id);
  void schedule_completion(FlowId id, Time at);
  void mark_dirty(LinkId link);
  void request_solve(bool immediate);
  void solve();
  void collect_component();
  void take_all_active();
  void touch_links_of(std::uint32_t local_flow);
  // A flow's new rate as of `now`: its bytes brought up to date, its completion event moved
  // (queued in moves_) or scheduled.
  void rerate(FlowId id, double rate, Time now);
  // Solves a component whose every flow is alone on every link of its route.
  void rate_lone_flows(Time now);
  void build_compact();
  // Marks the compact copy's links that can never be a bottleneck (link_shadowed_) and lists
  // them last on each flow's links (fill_end_).
  void mark_shadowed_links();
  void fill_component();
  // The fair share the copy's local link j has left for its unfixed flows.
  double fair_share(std::uint32_t j) const;
  // Fixes local flow i at `rate`, held there by local link `held` (or kCapBound), taking it off
  // the links it fills.
  void fix_flow(std::uint32_t i, double rate, std::uint32_t held);
  // Progressive filling of the copy's local `links` (those with unfixed flows), with the capped
  // flows on cap_heap_: pops the link with the smallest fair share and calls
  // fix_link(local link, link id, share), which fixes the flows it holds; a cap below that share
  // is fixed first, alone.
  template <typename FixLink>
  void fill_by_shares(const std::vector<std::uint32_t>& links, FixLink&& fix_link);
  // Max-min on part of the compact copy: the flows of the links marked for this solve and
  // those with no rate or bottleneck yet, with every other flow's rate held, growing the part by
  // the flows whose bottleneck the new rates undo, until every flow has one. False when the part
  // grows to half of the copy (fill_component() then does it all).
  bool fill_local();
  // Puts live local flow i in the local fill's part (once).
  void add_to_part(std::uint32_t i);

  Simulation& sim_;
  const Topology& topology_;
  std::shared_ptr<Router> router_;
  BigVector<FlowState> flows_;
  BigVector<FlowCallbacks> callbacks_;  // by flow id
  // By flow id: bumped when the flow stops taking bandwidth, which retires its link entries. A
  // retired entry stays until its list is swept or empties; it would pass for live again only
  // if its id were used 2^32 more times meanwhile.
  BigVector<std::uint32_t> serial_;
  std::vector<FlowId> free_flows_;
  std::vector<LinkState> links_;
  std::vector<LinkId> dirty_links_;
  std::vector<FlowId> active_flows_;        // flows taking bandwidth, in no particular order
  std::vector<std::uint64_t> active_bits_;  // the same as a bit per flow id
  std::vector<LinkId> active_links_;        // links carrying at least one of them
  std::size_t in_use_count_ = 0;
  bool solve_pending_ = false;
  bool last_solve_took_most_ = false;  // the last search found nearly every active flow
  bool component_alone_ = false;       // the search found each flow alone on its links
  int solves_without_search_ = 0;
  std::size_t searched_active_ = 0;  // active flows at the last search
  EventHandle solve_event_;
  Time solve_quantum_ = 0;
  double rate_change_first_ = 0.0;
  double rate_change_per_second_ = 0.0;
  Callback on_rate_changes_exceeded_;
  bool latency_first_ = false;
  std::uint64_t epoch_ = 0;
  // Scratch space reused by every solve: the component's flows and links (global ids), and the
  // solver's compact copy of them indexed locally (flow -> links and link -> flows, CSR).
  BigVector<FlowId> component_flows_;
  std::vector<LinkId> component_links_;
  std::vector<LinkId> link_stack_;
  std::vector<std::uint32_t> local_of_link_;  // by global link id; valid for component links
  BigVector<std::uint32_t> flow_first_, flow_links_;
  BigVector<std::uint32_t> link_first_, link_flows_;
  BigVector<double> flow_cap_, flow_rate_;
  // Where each flow's links that the filling needs end in flow_links_ (the shadowed ones follow).
  BigVector<std::uint32_t> fill_end_;
  std::vector<char> link_shadowed_;
  BigVector<char> flow_fixed_;
  // Each flow's bottleneck as of the solve that gave its rate: the link where it is among the
  // largest on a full link (global id by flow id; local index in the compact copy), kCapBound
  // for a flow held at its cap, kNoBottleneck for a rate no solve gave.
  static constexpr std::uint32_t kNoBottleneck = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t kCapBound = kNoBottleneck - 1;
  BigVector<LinkId> bottleneck_;
  BigVector<std::uint32_t> flow_bottleneck_;
  // The links marked for this solve, and the local fill's part: its flows and links.
  std::vector<LinkId> solve_links_;
  BigVector<char> in_part_;
  std::vector<std::uint32_t> part_flows_, part_links_, fixing_links_, joining_;
  std::vector<std::uint32_t> every_link_;  // 0, 1, ...: every local link, for a full filling
  std::vector<char> part_link_mark_, part_link_changed_;
  bool copy_unrated_ = false;  // the compact copy is new: flows without a rate may be in it
  std::vector<std::uint32_t> part_count_;      // the part's flows on each link (per appearance)
  std::vector<std::uint32_t> part_held_;       // the part's flows each link held before the solve
  BigVector<std::uint32_t> part_held_before_;  // each part flow's bottleneck then (local)
  // The part's flows by link, CSR over part_links_ (part_slot_: a link's place there).
  std::vector<std::uint32_t> part_slot_, part_first_, part_cursor_, part_entries_;
  std::vector<double> part_old_, part_new_, part_largest_, link_share_;
  // The compact copy holds a whole component, or every active flow, and none has started since
  // it was made; those finished since are marked dead, by local index.
  bool compact_valid_ = false;
  bool in_compact(LinkId l) const {
    return l < local_of_link_.size() && local_of_link_[l] < component_links_.size() &&
           component_links_[local_of_link_[l]] == l;
  }
  BigVector<char> flow_dead_;
  std::vector<std::uint32_t> dead_locals_;
  std::vector<std::uint32_t> link_count_;  // flows on each link, dead ones left out
  std::size_t compact_capped_ = 0;         // flows with a rate cap in the copy
  std::vector<double> link_even_share_;    // capacity / link_count_
  BigVector<double> compact_rate_;  // each flow's rate as of the last solve (-1: no event yet)
  std::vector<char> link_touched_;
  std::vector<double> link_change_;  // in its flows' rates, this solve (after a local filling)
  std::vector<std::uint32_t> touched_links_;  // by a finished or re-rated flow, this solve
  std::size_t dead_seen_ = 0;                 // dead_locals_ as of the last solve
  std::vector<double> link_remaining_, link_capacity_;
  std::vector<double> flow_lower_, link_lower_sum_;
  std::vector<std::uint32_t> link_unfixed_;
  std::vector<std::pair<double, std::uint32_t>> share_heap_;
  std::vector<std::pair<double, std::uint32_t>> cap_heap_;
  std::vector<EventQueue::Move> moves_;
  FlowNetworkCounters counters_;
  // Bundles in flight: the links that hold each one's members alike; by local index in the
  // compact copy, those of its flows (null for a plain flow; empty when no bundle is in flight).
  std::unordered_map<FlowId, std::shared_ptr<const BundleLinks>> bundles_;
  std::vector<const BundleLinks*> flow_bundle_;
  Callback on_bundle_apart_;
  bool bundle_apart_ = false;
  // Called when a solve fixes bundle `local` at `link` (local index `j`): whether its members
  // are all held there alike.
  void check_bundle(std::uint32_t local, LinkId link, std::uint32_t j);
  LinkObserver link_observer_;
  FlowObserver flow_observer_;
  void allocated_changed(LinkId l) {
    if (link_observer_) link_observer_(l, sim_.now(), links_[l].allocated);
  }
  // A solve's allocation of a link (the observer hears of it when it changes).
  void set_allocated(LinkId l, double allocated) {
    if (links_[l].allocated != allocated) {
      links_[l].allocated = allocated;
      allocated_changed(l);
    }
  }
};

}  // namespace trainsim
