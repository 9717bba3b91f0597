// Flows in classes, one representative each. When a set of flows is symmetric (a ring whose every
// node does what the node before it did, a uniform exchange), the flows of a class move at one
// rate at every instant, and simulating one flow per class gives the same times as simulating
// them all, provided each representative loads the links as its whole class does.
//
// Why: in max-min progressive filling every unfixed flow grows at one level t, and a link fixes
// its flows when t reaches (capacity - load of the flows already fixed) / (appearances of the
// unfixed ones). Say a link's kind is its capacity and how many times the flows of each class
// cross it. If the classes fixed so far are whole classes, a link's level depends only on its
// kind; so if every flow of a class crosses links of the same kinds as its representative (the
// same multiset of kinds over its route), every flow of the class is fixed at the same level as
// the representative, and the classes fixed stay whole. The same holds with only some classes
// moving, and with one rate cap per class. A route's latency must be the same across its class
// too, so that the flows of a class keep starting and arriving together.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/routing.h"

namespace trainsim {

// `routes[f]` is flow f's route, `class_of[f]` its class, and `representative[c]` the flow that
// stands for class c (a flow of that class). When every flow of each class has the latency of its
// class's representative and crosses links of the same kinds (see above), returns one route per
// class: the representative's route, with each of its links, and each link another
// representative crosses, appearing as many times as the flows of the class cross it, and the
// representative's latency. One flow per class on these routes, all at once, meets the links'
// capacities exactly as every flow would. Otherwise returns nothing.
std::optional<std::vector<RouteId>> class_routes(Router& router, std::span<const RouteId> routes,
                                                 std::span<const std::uint32_t> class_of,
                                                 std::span<const std::uint32_t> representative);

}  // namespace trainsim
