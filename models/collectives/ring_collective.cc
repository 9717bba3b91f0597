#include "models/collectives/ring_collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/check.h"
#include "engine/symmetry.h"

namespace trainsim::models {

RingOrders make_node_rings(int nodes, int gpus_per_node, int channels) {
  TRAINSIM_ASSERT(nodes >= 1 && gpus_per_node >= 1 && channels >= 1, "empty ring");
  RingOrders rings(channels);
  for (int c = 0; c < channels; ++c) {
    for (int n = 0; n < nodes; ++n) {
      for (int i = 0; i < gpus_per_node; ++i) {
        rings[c].push_back(n * gpus_per_node + (c + i) % gpus_per_node);
      }
    }
  }
  return rings;
}

RingSchedule ring_all_reduce_schedule(double bytes, int participants, int channels) {
  return RingSchedule{2 * (participants - 1),
                      bytes / (static_cast<double>(channels) * participants)};
}

RingCollective::RingCollective(Simulation& simulation, FlowNetwork& network,
                               const std::vector<VertexId>& vertices, RingOrders rings,
                               RingSchedule schedule, Time software_latency)
    : sim_(simulation),
      network_(network),
      schedule_(schedule),
      software_latency_(software_latency),
      joined_(vertices.size(), false),
      done_(vertices.size()),
      channels_left_(vertices.size(), static_cast<int>(rings.size())) {
  const int p = static_cast<int>(vertices.size());
  const int channels = static_cast<int>(rings.size());
  TRAINSIM_ASSERT(p >= 1 && channels >= 1, "ring collective needs participants and channels");
  if (p == 1) schedule_.steps = 0;
  position_of_.assign(p, std::vector<int>(channels, -1));
  positions_.resize(channels);
  for (int c = 0; c < channels; ++c) {
    TRAINSIM_ASSERT(static_cast<int>(rings[c].size()) == p, "ring is not a permutation");
    for (int i = 0; i < p; ++i) {
      const int who = rings[c][i];
      const int next = rings[c][(i + 1) % p];
      TRAINSIM_ASSERT(position_of_[who][c] == -1, "participant twice in one ring");
      position_of_[who][c] = i;
      const RouteId route = network.router().route(vertices[who], vertices[next]);
      positions_[c].push_back(Position{who, route});
    }
  }
  period_ = p;
}

void RingCollective::join(int participant, std::function<void()> done) {
  TRAINSIM_ASSERT(!done_[participant] && !joined_[participant], "participant joined twice");
  done_[participant] = std::move(done);
  if (software_latency_ == 0) {
    start_sending(participant);
  } else {
    sim_.schedule_in(software_latency_, [this, participant] { start_sending(participant); });
  }
}

void RingCollective::join_all(int participants, const std::function<void(int)>& done, bool alone) {
  const int p = static_cast<int>(joined_.size());
  TRAINSIM_ASSERT(participants == p, "join_all is for every participant");
  // The classes move as one under exact max-min sharing; a solve quantum hands bandwidth to
  // flows one by one between solves, so the whole ring runs then.
  if (!alone || schedule_.steps == 0 || network_.solve_quantum() != 0 || !reduce_to_period()) {
    Collective::join_all(participants, done, alone);
    return;
  }
  for (int i = 0; i < p; ++i) {
    TRAINSIM_ASSERT(!done_[i] && !joined_[i], "participant joined twice");
    done_[i] = [done, i] { done(i); };
  }
  const auto start = [this] {
    std::fill(joined_.begin(), joined_.end(), true);
    for (std::size_t c = 0; c < positions_.size(); ++c) {
      for (int q = 0; q < period_; ++q) try_send(static_cast<int>(c), q);
    }
  };
  if (software_latency_ == 0) {
    start();
  } else {
    sim_.schedule_in(software_latency_, start);
  }
}

bool RingCollective::reduce_to_period() {
  const int p = static_cast<int>(joined_.size());
  const int channels = static_cast<int>(positions_.size());
  std::vector<RouteId> routes;
  for (const auto& ring : positions_) {
    for (const Position& pos : ring) routes.push_back(pos.route_to_next);
  }
  std::vector<std::uint32_t> class_of(routes.size());
  std::vector<std::uint32_t> representative;
  for (int d = 1; d < p; ++d) {
    if (p % d != 0) continue;
    representative.clear();
    for (int c = 0; c < channels; ++c) {
      for (int i = 0; i < p; ++i) class_of[c * p + i] = static_cast<std::uint32_t>(c * d + i % d);
      for (int q = 0; q < d; ++q) representative.push_back(static_cast<std::uint32_t>(c * p + q));
    }
    const auto class_routes_found =
        class_routes(network_.router(), routes, class_of, representative);
    if (!class_routes_found) continue;
    full_positions_ = positions_;
    for (int c = 0; c < channels; ++c) {
      positions_[c].resize(d);
      for (int q = 0; q < d; ++q) positions_[c][q].route_to_next = (*class_routes_found)[c * d + q];
    }
    period_ = d;
    return true;
  }
  return false;
}

void RingCollective::start_sending(int participant) {
  joined_[participant] = true;
  if (schedule_.steps == 0) {
    channels_left_[participant] = 0;
    check_done(participant);
    return;
  }
  for (std::size_t c = 0; c < positions_.size(); ++c) {
    const int at = position_of_[participant][c];
    try_send(static_cast<int>(c), at);
    if (schedule_.rendezvous) {
      const int n = static_cast<int>(positions_[c].size());
      try_send(static_cast<int>(c), (at - 1 + n) % n);
    }
  }
}

void RingCollective::try_send(int channel, int position) {
  Position& pos = positions_[channel][position];
  if (!joined_[pos.participant] || pos.sending || pos.sent == schedule_.steps ||
      pos.received < pos.sent) {
    return;
  }
  if (schedule_.rendezvous) {
    // The transfer of step k starts once the receiver has started step k too (posted its
    // receive: its own step k-1 sent and received).
    const int n = static_cast<int>(positions_[channel].size());
    const Position& next = positions_[channel][(position + 1) % n];
    if (!joined_[next.participant] || next.sent < pos.sent || next.received < pos.sent) return;
  }
  pos.sending = true;
  network_.start(
      pos.route_to_next, schedule_.chunk_bytes,
      [this, channel, position] { on_arrived(channel, position); },
      [this, channel, position] { on_transmitted(channel, position); }, schedule_.rate_cap);
}

void RingCollective::on_transmitted(int channel, int position) {
  if (schedule_.rendezvous) return;  // the send completes on arrival
  Position& pos = positions_[channel][position];
  pos.sending = false;
  ++pos.sent;
  position_progressed(channel, position);
}

void RingCollective::on_arrived(int channel, int position) {
  const int n = static_cast<int>(positions_[channel].size());
  const int next = (position + 1) % n;
  if (schedule_.rendezvous) {
    Position& pos = positions_[channel][position];
    pos.sending = false;
    ++pos.sent;
  }
  ++positions_[channel][next].received;
  if (schedule_.rendezvous) {
    // Both ends progressed; so may the neighbours waiting for them to post.
    position_progressed(channel, position);
    position_progressed(channel, next);
    try_send(channel, (position - 1 + n) % n);
    return;
  }
  position_progressed(channel, next);
}

void RingCollective::position_progressed(int channel, int position) {
  const Position& pos = positions_[channel][position];
  if (pos.sent == schedule_.steps && pos.received == schedule_.steps) {
    if (full_positions_.empty()) {
      --channels_left_[pos.participant];
      check_done(pos.participant);
      return;
    }
    // Every position of the class finishes now.
    const auto& ring = full_positions_[channel];
    for (std::size_t i = static_cast<std::size_t>(position); i < ring.size(); i += period_) {
      --channels_left_[ring[i].participant];
      check_done(ring[i].participant);
    }
  } else {
    try_send(channel, position);
  }
}

void RingCollective::check_done(int participant) {
  if (channels_left_[participant] == 0 && done_[participant]) {
    auto done = std::move(done_[participant]);
    done_[participant] = nullptr;
    done();
  }
}

namespace {

using Hop = RingShape::Hop;

bool hop_less(const Hop& a, const Hop& b) {
  return a.share < b.share || (a.share == b.share && a.latency < b.latency);
}

// Start of the lexicographically least rotation of `hops` (Booth's algorithm, linear time).
std::size_t least_rotation(const std::vector<Hop>& hops) {
  const std::size_t n = hops.size();
  std::size_t i = 0, j = 1, k = 0;
  while (i < n && j < n && k < n) {
    const Hop& a = hops[(i + k) % n];
    const Hop& b = hops[(j + k) % n];
    if (a == b) {
      ++k;
      continue;
    }
    if (hop_less(b, a)) {
      i += k + 1;
    } else {
      j += k + 1;
    }
    if (i == j) ++j;
    k = 0;
  }
  return std::min(i, j);
}

// The ring schedule with fixed per-hop costs: position i sends step k at start[i]; its chunk
// leaves at start[i] + transmit[i] and reaches position i+1 a latency later. Step k+1 needs the
// chunk received and its own chunk transmitted (with rendezvous: delivered).
Time ring_finish(const std::vector<Time>& transmit, const std::vector<Hop>& hops, int steps,
                 bool rendezvous) {
  const std::size_t p = hops.size();
  std::vector<Time> start(p, 0);
  std::vector<Time> arrive(p, 0);
  std::vector<Time> delivered(p, 0);
  for (int k = 0; k < steps; ++k) {
    if (rendezvous) {
      // Step k's transfer i -> i+1 starts when both ends have started step k; a position starts
      // step k+1 once its send and its receive of step k are delivered.
      for (std::size_t i = 0; i < p; ++i) {
        delivered[i] = std::max(start[i], start[(i + 1) % p]) + transmit[i] + hops[i].latency;
      }
      for (std::size_t i = 0; i < p; ++i)
        start[i] = std::max(delivered[i], delivered[(i + p - 1) % p]);
      continue;
    }
    for (std::size_t i = 0; i + 1 < p; ++i)
      arrive[i + 1] = start[i] + transmit[i] + hops[i].latency;
    arrive[0] = start[p - 1] + transmit[p - 1] + hops[p - 1].latency;
    for (std::size_t i = 0; i < p; ++i) start[i] = std::max(start[i] + transmit[i], arrive[i]);
  }
  Time finish = 0;
  for (std::size_t i = 0; i < p; ++i) finish = std::max(finish, std::max(start[i], arrive[i]));
  return finish;
}

}  // namespace

RingShape ring_shape(Router& router, const std::vector<VertexId>& vertices,
                     const RingOrders& rings) {
  const int p = static_cast<int>(vertices.size());
  RingShape shape;
  if (p <= 1) return shape;
  // Flows per link in one step: every hop of every channel (sorted link ids, counted by range).
  std::vector<std::vector<RouteId>> routes(rings.size());
  std::vector<LinkId> used;
  for (std::size_t c = 0; c < rings.size(); ++c) {
    for (int i = 0; i < p; ++i) {
      const RouteId r = router.route(vertices[rings[c][i]], vertices[rings[c][(i + 1) % p]]);
      routes[c].push_back(r);
      for (const LinkId l : router.links(r)) used.push_back(l);
    }
  }
  std::sort(used.begin(), used.end());
  auto load_of = [&used](LinkId l) {
    const auto range = std::equal_range(used.begin(), used.end(), l);
    return static_cast<double>(range.second - range.first);
  };
  for (std::size_t c = 0; c < rings.size(); ++c) {
    std::vector<Hop> hops(p);
    for (int i = 0; i < p; ++i) {
      double share = std::numeric_limits<double>::infinity();
      for (const LinkId l : router.links(routes[c][i])) {
        // Same arithmetic as the max-min solver's fair share, so the two agree to the picosecond.
        share = std::min(share, router.topology().link(l).bandwidth_bytes_per_s / load_of(l));
      }
      hops[i] = Hop{share, router.latency(routes[c][i])};
    }
    // The schedule only depends on the cyclic sequence of hop costs: keep one channel of each
    // rotation class (the usual case on symmetric fabrics is a single class).
    std::rotate(hops.begin(), hops.begin() + static_cast<long>(least_rotation(hops)), hops.end());
    if (std::find(shape.channels.begin(), shape.channels.end(), hops) == shape.channels.end()) {
      shape.channels.push_back(std::move(hops));
    }
  }
  return shape;
}

Time ring_collective_time(const RingShape& shape, const RingSchedule& schedule) {
  if (schedule.steps == 0) return 0;
  Time finish = 0;
  std::vector<Time> transmit;
  for (const auto& hops : shape.channels) {
    transmit.resize(hops.size());
    for (std::size_t i = 0; i < hops.size(); ++i) {
      const double rate = std::min(schedule.rate_cap, hops[i].share);
      transmit[i] = std::isinf(hops[i].share) ? 0 : transfer_time(schedule.chunk_bytes, rate);
    }
    finish = std::max(finish, ring_finish(transmit, hops, schedule.steps, schedule.rendezvous));
  }
  return finish;
}

Time ring_collective_time(Router& router, const std::vector<VertexId>& vertices,
                          const RingOrders& rings, const RingSchedule& schedule) {
  if (vertices.size() <= 1 || schedule.steps == 0) return 0;
  return ring_collective_time(ring_shape(router, vertices, rings), schedule);
}

}  // namespace trainsim::models
