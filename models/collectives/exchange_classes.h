// The messages of an exchange that all start at once, alone on the fabric (an all-to-all), sorted
// into classes that move as one (engine/symmetry.h: every message of a class has the bytes, rate
// cap and route latency of its class's representative and meets links of the same kinds), so
// that one flow per class, on a route that loads the links as the whole class does, arrives when
// every message of the class would.
//
// The classes tried, coarsest first: by the kind of the two ends' nodes (nodes whose ranks send
// and receive the same bytes are of one kind, e.g. every node but the one holding a hot GPU),
// their local ranks, whether they share a node, the route's latency and its hops; else, for an
// exchange that repeats every t nodes (rank a + tg sends b + tg what a sends b, g GPUs per node;
// the fewest such t), the messages of ranks [0, tg), each standing for its counterparts in every
// block of t nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/flow_network.h"
#include "engine/routing.h"

namespace trainsim::models {

struct ExchangeMessage {
  int from = 0;  // ranks, node after node, gpus_per_node to a node
  int to = 0;
  double bytes = 0.0;
  double rate_cap = FlowNetwork::kUncapped;
};

struct ExchangeClasses {
  // The messages (indices), class after class, each class's representative first.
  std::vector<std::uint32_t> members;
  // Class c's members: members[first[c]] .. members[first[c + 1] - 1].
  std::vector<std::size_t> first;
  // The route of class c's one flow.
  std::vector<RouteId> routes;
  std::size_t size() const { return routes.size(); }
};

// `routes[m]`: message m's route on `router`. `repeats_every(s)`: whether rank a + s sends rank
// b + s what a sends b for every a and b (mod `ranks`); null to try node kinds only. Nothing when
// no classes fewer than the messages hold.
std::optional<ExchangeClasses> exchange_classes(Router& router, int ranks, int gpus_per_node,
                                                std::span<const ExchangeMessage> messages,
                                                std::span<const RouteId> routes,
                                                const std::function<bool(int)>& repeats_every);

}  // namespace trainsim::models
