#include "engine/symmetry.h"

#include <algorithm>
#include <bit>
#include <map>
#include <utility>

#include "engine/check.h"

namespace trainsim {

std::optional<std::vector<RouteId>> class_routes(Router& router, std::span<const RouteId> routes,
                                                 std::span<const std::uint32_t> class_of,
                                                 std::span<const std::uint32_t> representative) {
  TRAINSIM_ASSERT(routes.size() == class_of.size(), "one class per flow");
  const std::size_t classes = representative.size();
  for (std::size_t c = 0; c < classes; ++c) {
    TRAINSIM_ASSERT(representative[c] < routes.size() && class_of[representative[c]] == c,
                    "a representative belongs to its class");
  }
  // Every appearance of a link on a route, with the class of the flow: sorted, a link's run gives
  // how many times each class crosses it.
  std::vector<std::pair<LinkId, std::uint32_t>> uses;
  for (std::size_t f = 0; f < routes.size(); ++f) {
    TRAINSIM_ASSERT(class_of[f] < classes, "class out of range");
    for (const LinkId l : router.links(routes[f])) uses.emplace_back(l, class_of[f]);
  }
  std::sort(uses.begin(), uses.end());
  // Each link's kind: its capacity and its (class, appearances) pairs, interned.
  const Topology& topology = router.topology();
  std::vector<std::uint32_t> kind_of(topology.link_count(), 0);
  std::vector<std::uint32_t> run_of(topology.link_count(), 0);  // where the link's run starts
  std::map<std::vector<std::uint64_t>, std::uint32_t> kinds;
  std::vector<std::uint64_t> key;
  for (std::size_t i = 0; i < uses.size();) {
    const LinkId l = uses[i].first;
    key.assign(1, std::bit_cast<std::uint64_t>(topology.link(l).bandwidth_bytes_per_s));
    run_of[l] = static_cast<std::uint32_t>(i);
    while (i < uses.size() && uses[i].first == l) {
      const std::uint32_t c = uses[i].second;
      std::uint64_t count = 0;
      for (; i < uses.size() && uses[i].first == l && uses[i].second == c; ++i) ++count;
      key.push_back(c);
      key.push_back(count);
    }
    kind_of[l] = kinds.emplace(key, static_cast<std::uint32_t>(kinds.size())).first->second;
  }
  const auto kinds_on = [&](RouteId route) {
    std::vector<std::uint32_t> found;
    for (const LinkId l : router.links(route)) found.push_back(kind_of[l]);
    std::sort(found.begin(), found.end());
    return found;
  };
  std::vector<std::vector<std::uint32_t>> class_kinds(classes);
  for (std::size_t c = 0; c < classes; ++c) class_kinds[c] = kinds_on(routes[representative[c]]);
  for (std::size_t f = 0; f < routes.size(); ++f) {
    const RouteId own = routes[representative[class_of[f]]];
    if (routes[f] == own) continue;
    if (router.latency(routes[f]) != router.latency(own) ||
        kinds_on(routes[f]) != class_kinds[class_of[f]]) {
      return std::nullopt;
    }
  }
  // The links the representatives cross; a class's route keeps its representative's links in
  // order, then adds the appearances its other flows make on these links.
  std::vector<LinkId> shown;
  for (std::size_t c = 0; c < classes; ++c) {
    for (const LinkId l : router.links(routes[representative[c]])) shown.push_back(l);
  }
  std::sort(shown.begin(), shown.end());
  shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
  // How many times each class's flows cross each of those links, by class.
  std::vector<std::vector<std::pair<LinkId, std::size_t>>> crossings(classes);
  for (const LinkId l : shown) {
    for (std::size_t i = run_of[l]; i < uses.size() && uses[i].first == l;) {
      const std::uint32_t c = uses[i].second;
      std::size_t count = 0;
      for (; i < uses.size() && uses[i].first == l && uses[i].second == c; ++i) ++count;
      crossings[c].emplace_back(l, count);
    }
  }
  std::vector<RouteId> out(classes);
  std::vector<LinkId> links, sorted_own;
  for (std::size_t c = 0; c < classes; ++c) {
    const RouteId own = routes[representative[c]];
    const auto own_links = router.links(own);
    links.assign(own_links.begin(), own_links.end());
    sorted_own = links;
    std::sort(sorted_own.begin(), sorted_own.end());
    for (const auto& [l, count] : crossings[c]) {
      const auto [lo, hi] = std::equal_range(sorted_own.begin(), sorted_own.end(), l);
      for (auto k = static_cast<std::size_t>(hi - lo); k < count; ++k) links.push_back(l);
    }
    out[c] = links.size() == own_links.size() ? own : router.add_route(links, router.latency(own));
  }
  return out;
}

}  // namespace trainsim
