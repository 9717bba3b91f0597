// Textbook collectives, every message one flow: the schedules of MPI libraries and of flow-level
// simulators such as SimGrid (the cross-check in validation/simgrid), as opposed to NCCL's
// channels and protocols (algorithms.h). No launch, protocol or per-step software cost: a message
// costs its route's latency and its bytes at the bandwidth it gets.
//   ring all-reduce: 2(P-1) steps of S/P around all P ranks in rank order; all-gather and
//     reduce-scatter: P-1 steps of S/P. Each step is a rendezvous message: a rank sends step k+1
//     once its step-k message has arrived and it has received step k. Alone on a fabric whose
//     slowest hop has latency a and bandwidth B, an all-reduce takes 2(P-1)(a + S/(P B)).
//   all-to-all: every rank posts one message to every other rank at once (bytes[src][dst]; a
//     rank's message to itself is not sent).
// A rank's part is done when all its messages have arrived and all messages to it have.
#pragma once

#include <memory>
#include <vector>

#include "engine/flow_network.h"
#include "models/collectives/collective.h"
#include "models/hardware/cluster_topology.h"
#include "models/spec/byte_matrix.h"
#include "models/spec/collective_op.h"

namespace trainsim::models {

// all_reduce, all_gather, reduce_scatter and alltoall have a flat form.
bool has_flat_form(CollectiveOp op);

// The uniform operation of nccl-tests size `bytes` over every GPU of the topology (all-to-all:
// bytes / P to each peer).
std::unique_ptr<Collective> make_flat_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterTopology& topology, CollectiveOp op,
                                                 double bytes);
// An all-to-all with its own size per (sender, receiver) pair.
std::unique_ptr<Collective> make_flat_alltoallv(Simulation& simulation, FlowNetwork& network,
                                                const ClusterTopology& topology, ByteMatrix bytes);

// The same without a simulation, the messages alone on the fabric: the ring exactly (each hop's
// alpha-beta cost, its busiest link shared by the step's messages); the all-to-all as every
// message sharing the links by max-min fairness (water filling) after the longest route latency.
Time flat_collective_time(Router& router, const ClusterTopology& topology, CollectiveOp op,
                          double bytes);
Time flat_alltoallv_time(Router& router, const ClusterTopology& topology, const ByteMatrix& bytes);

}  // namespace trainsim::models
