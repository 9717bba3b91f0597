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
  // The class of the flow of every appearance of each link on a route, by link (counting sort),
  // sorted within each link's run: a run gives how many times each class crosses the link.
  const Topology& topology = router.topology();
  std::vector<std::uint32_t> run_of(topology.link_count() + 1, 0);  // link l: [run_of[l], [l+1])
  for (std::size_t f = 0; f < routes.size(); ++f) {
    TRAINSIM_ASSERT(class_of[f] < classes, "class out of range");
    for (const LinkId l : router.links(routes[f])) ++run_of[l + 1];
  }
  for (std::size_t l = 0; l < topology.link_count(); ++l) run_of[l + 1] += run_of[l];
  std::vector<std::uint32_t> uses(run_of.back());
  {
    std::vector<std::uint32_t> next(run_of.begin(), run_of.end() - 1);
    for (std::size_t f = 0; f < routes.size(); ++f) {
      for (const LinkId l : router.links(routes[f])) uses[next[l]++] = class_of[f];
    }
  }
  // Each link's kind: its capacity and its (class, appearances) pairs, interned.
  std::vector<std::uint32_t> kind_of(topology.link_count(), 0);
  std::map<std::vector<std::uint64_t>, std::uint32_t> kinds;
  std::vector<std::uint64_t> key;
  for (LinkId l = 0; l < topology.link_count(); ++l) {
    const auto begin = uses.begin() + run_of[l];
    const auto end = uses.begin() + run_of[l + 1];
    if (begin == end) continue;
    std::sort(begin, end);
    key.assign(1, std::bit_cast<std::uint64_t>(topology.link(l).bandwidth_bytes_per_s));
    for (auto i = begin; i != end;) {
      const auto j = std::find_if(i, end, [c = *i](std::uint32_t x) { return x != c; });
      key.push_back(*i);
      key.push_back(static_cast<std::uint64_t>(j - i));
      i = j;
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
    const auto end = uses.begin() + run_of[l + 1];
    for (auto i = uses.begin() + run_of[l]; i != end;) {
      const auto j = std::find_if(i, end, [c = *i](std::uint32_t x) { return x != c; });
      crossings[*i].emplace_back(l, static_cast<std::size_t>(j - i));
      i = j;
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
