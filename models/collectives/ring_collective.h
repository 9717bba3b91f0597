// Step-by-step ring collectives, every step of every participant a flow: the buffer is split over C
// channels, each a ring through all P participants in its own order. Each channel moves its share
// in a number of steps, sending one chunk to the next participant per step: all-reduce takes
// 2(P-1) steps (P-1 reduce-scatter, P-1 all-gather) of bytes / (C P); all-gather and
// reduce-scatter P-1 steps of the same chunk. A participant sends step k+1 once it has received
// step k from its predecessor and its own step-k chunk has left it (transmitted), or, with
// rendezvous sends (MPI, SimGrid's s4u put/get), once that chunk has arrived.
//
// This is the message-by-message ring of MPI libraries and of flow-level simulators such as
// SimGrid (the cross-check in validation/simgrid); NCCL's pipelined rings are modelled as streams
// in algorithms.h. Uncontended, with every hop alike, an all-reduce takes 2(P-1)(alpha + S/(P B))
// where alpha is the hop latency and B the bandwidth each participant has for it.
#pragma once

#include <functional>
#include <vector>

#include "engine/flow_network.h"
#include "models/collectives/collective.h"

namespace trainsim::models {

// Ring orders, one per channel: each a permutation of participant indices [0, participants).
using RingOrders = std::vector<std::vector<int>>;

// Rings over `nodes` x `gpus_per_node` participants (index = node * gpus_per_node + local): ring c
// visits each node's GPUs starting at local index c (mod gpus_per_node), nodes in order, so
// different channels leave a node from different GPUs (and hence NICs).
RingOrders make_node_rings(int nodes, int gpus_per_node, int channels);

struct RingSchedule {
  int steps = 0;                             // per channel
  double chunk_bytes = 0.0;                  // sent per step per channel
  double rate_cap = FlowNetwork::kUncapped;  // per flow (one channel's throughput limit)
  bool rendezvous = false;                   // a send completes when it has arrived
};

// All-reduce of `bytes` over P participants and C channels: 2(P-1) steps of bytes / (C P).
RingSchedule ring_all_reduce_schedule(double bytes, int participants, int channels);

class RingCollective final : public Collective {
 public:
  // `vertices[i]` is participant i's vertex. Runs as flows on `network`; a participant starts
  // sending `software_latency` after it joins.
  RingCollective(Simulation& simulation, FlowNetwork& network,
                 const std::vector<VertexId>& vertices, RingOrders rings, RingSchedule schedule,
                 Time software_latency = 0);
  void join(int participant, std::function<void()> done) override;
  // With `alone`, a ring that repeats itself every d positions of every channel (each hop's
  // route meets links of the same kinds as the hop d positions on: engine/symmetry.h), as a
  // flat ring over identical nodes does with d GPUs per node, is simulated for positions
  // [0, d) of each channel only, position d - 1 sending to position 0 over the route of its
  // class; every participant finishes when its class's representative does, at the same time as
  // in the whole ring. Otherwise, when no such d < P exists or the network has a solve quantum,
  // the whole ring runs.
  void join_all(int participants, const std::function<void(int)>& done, bool alone) override;
  // Positions per channel the ring simulates: d after a join_all that found a period, else P.
  int simulated_positions() const { return period_; }

 private:
  struct Position {
    int participant;
    RouteId route_to_next;
    int sent = 0;
    int received = 0;
    bool sending = false;
  };
  void try_send(int channel, int position);
  void on_transmitted(int channel, int position);
  void on_arrived(int channel, int position);
  void position_progressed(int channel, int position);
  void check_done(int participant);
  void start_sending(int participant);

  Simulation& sim_;
  FlowNetwork& network_;
  RingSchedule schedule_;
  Time software_latency_;
  // Positions [0, d) of every channel, each sending over its class's route, when the whole
  // ring (kept in full_positions_) repeats every d positions.
  bool reduce_to_period();

  std::vector<std::vector<Position>> positions_;       // [channel][position in ring]
  std::vector<std::vector<Position>> full_positions_;  // the whole ring, once reduced
  int period_ = 0;                                     // positions_ per channel
  std::vector<std::vector<int>> position_of_;          // [participant][channel]
  std::vector<bool> joined_;
  std::vector<std::function<void()>> done_;
  std::vector<int> channels_left_;
};

// Analytic time of the same ring collective, all participants joining together: each hop gets a
// fixed alpha-beta cost, alpha = its route latency and beta-term = chunk / (bandwidth share) at
// its busiest link, a link carrying n of a step's flows giving each bandwidth / n. The ring
// schedule above is then evaluated exactly (send k+1 after transmitting, or with rendezvous
// delivering, k and receiving k). With
// hops alike this is 2(P-1)(alpha + S/(P B)); it equals the flow model to the picosecond whenever
// nothing contends and shares stay constant.
Time ring_collective_time(Router& router, const std::vector<VertexId>& vertices,
                          const RingOrders& rings, const RingSchedule& schedule);

// The size-independent part of that computation, to reuse over a size sweep: per distinct
// channel (channels whose hop sequences are rotations of each other are kept once), each hop's
// bandwidth share (bytes/s, infinite for an empty route) and route latency.
struct RingShape {
  struct Hop {
    double share;
    Time latency;
    bool operator==(const Hop&) const = default;
  };
  std::vector<std::vector<Hop>> channels;
};
RingShape ring_shape(Router& router, const std::vector<VertexId>& vertices,
                     const RingOrders& rings);
Time ring_collective_time(const RingShape& shape, const RingSchedule& schedule);

}  // namespace trainsim::models
