#include "models/collectives/exchange_classes.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "engine/check.h"
#include "engine/symmetry.h"

namespace trainsim::models {

namespace {

using ClassOf = std::vector<std::uint32_t>;

// Classes by (kind of the sender's node, sender's local rank, kind of the receiver's node,
// receiver's local rank, same node, route latency and hops); false when that is one message per
// class.
bool classes_by_node_kind(const Router& router, int ranks, int g,
                          std::span<const ExchangeMessage> messages,
                          std::span<const RouteId> routes, ClassOf& class_of,
                          ClassOf& representative) {
  // A node's kind: its ranks' bytes (and caps) sent and received (each sorted), in local order.
  std::vector<std::vector<std::pair<double, double>>> sent(ranks), received(ranks);
  for (const ExchangeMessage& m : messages) {
    sent[m.from].emplace_back(m.bytes, m.rate_cap);
    received[m.to].emplace_back(m.bytes, m.rate_cap);
  }
  std::map<std::vector<double>, int> kinds;
  std::vector<int> kind_of(ranks / g);
  std::vector<double> key;
  for (int n = 0; n < ranks / g; ++n) {
    key.clear();
    for (int r = n * g; r < (n + 1) * g; ++r) {
      for (auto* list : {&sent[r], &received[r]}) {
        std::sort(list->begin(), list->end());
        key.push_back(static_cast<double>(list->size()));
        for (const auto& [bytes, cap] : *list) {
          key.push_back(bytes);
          key.push_back(cap);
        }
      }
    }
    kind_of[n] = kinds.emplace(key, static_cast<int>(kinds.size())).first->second;
  }
  // Numbered in the order first met, so the classes do not depend on the map.
  using Key = std::tuple<int, int, int, int, bool, Time, std::size_t>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = 0;
      const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x9e3779b97f4a7c15ull; };
      mix(static_cast<std::uint64_t>(std::get<0>(k)));
      mix(static_cast<std::uint64_t>(std::get<1>(k)));
      mix(static_cast<std::uint64_t>(std::get<2>(k)));
      mix(static_cast<std::uint64_t>(std::get<3>(k)));
      mix(std::get<4>(k) ? 1 : 0);
      mix(static_cast<std::uint64_t>(std::get<5>(k)));
      mix(std::get<6>(k));
      return h;
    }
  };
  std::unordered_map<Key, std::uint32_t, KeyHash> index;
  class_of.assign(messages.size(), 0);
  representative.clear();
  for (std::size_t f = 0; f < messages.size(); ++f) {
    const int a = messages[f].from;
    const int b = messages[f].to;
    const auto [it, added] =
        index.emplace(Key{kind_of[a / g], a % g, kind_of[b / g], b % g, a / g == b / g,
                          router.latency(routes[f]), router.links(routes[f]).size()},
                      static_cast<std::uint32_t>(representative.size()));
    if (added) representative.push_back(static_cast<std::uint32_t>(f));
    class_of[f] = it->second;
  }
  return representative.size() < messages.size();
}

// Classes by position in a block of s ranks: a message from a to b stands in the class of
// (a mod s, b less the same shift).
void classes_by_period(int ranks, std::span<const ExchangeMessage> messages, int s,
                       ClassOf& class_of, ClassOf& representative) {
  const int p = ranks;
  std::vector<std::int64_t> class_index(static_cast<std::size_t>(s) * p, -1);
  class_of.assign(messages.size(), 0);
  representative.clear();
  for (std::size_t f = 0; f < messages.size(); ++f) {
    const int a = messages[f].from;
    const int shift = a - a % s;
    const std::size_t key = static_cast<std::size_t>(a % s) * p + (messages[f].to - shift + p) % p;
    if (class_index[key] < 0) {
      class_index[key] = static_cast<std::int64_t>(representative.size());
      representative.push_back(static_cast<std::uint32_t>(f));
    }
    class_of[f] = static_cast<std::uint32_t>(class_index[key]);
  }
}

// The classes, when every message has its representative's bytes and cap and the classes move
// as one on these routes (engine/symmetry.h).
std::optional<ExchangeClasses> kept_classes(Router& router,
                                            std::span<const ExchangeMessage> messages,
                                            std::span<const RouteId> routes,
                                            const ClassOf& class_of,
                                            const ClassOf& representative) {
  for (std::size_t f = 0; f < messages.size(); ++f) {
    const ExchangeMessage& own = messages[representative[class_of[f]]];
    if (messages[f].bytes != own.bytes || messages[f].rate_cap != own.rate_cap) {
      return std::nullopt;
    }
  }
  auto found = class_routes(router, routes, class_of, representative);
  if (!found) return std::nullopt;
  ExchangeClasses out;
  out.routes = std::move(*found);
  out.first.assign(representative.size() + 1, 0);
  for (const std::uint32_t c : class_of) ++out.first[c + 1];
  for (std::size_t c = 0; c < representative.size(); ++c) out.first[c + 1] += out.first[c];
  out.members.resize(messages.size());
  std::vector<std::size_t> next(out.first.begin(), out.first.end() - 1);
  // The representative first in its class (its bytes are the class's).
  for (std::size_t c = 0; c < representative.size(); ++c) {
    out.members[next[c]++] = representative[c];
  }
  for (std::size_t f = 0; f < messages.size(); ++f) {
    if (representative[class_of[f]] != f) {
      out.members[next[class_of[f]]++] = static_cast<std::uint32_t>(f);
    }
  }
  return out;
}

}  // namespace

std::optional<ExchangeClasses> exchange_classes(Router& router, int ranks, int gpus_per_node,
                                                std::span<const ExchangeMessage> messages,
                                                std::span<const RouteId> routes,
                                                const std::function<bool(int)>& repeats_every) {
  TRAINSIM_ASSERT(messages.size() == routes.size(), "one route per message");
  const int g = gpus_per_node;
  if (g <= 0 || ranks % g != 0) return std::nullopt;
  ClassOf class_of, representative;
  if (classes_by_node_kind(router, ranks, g, messages, routes, class_of, representative)) {
    if (auto kept = kept_classes(router, messages, routes, class_of, representative)) return kept;
  }
  if (!repeats_every) return std::nullopt;
  // The fewest nodes after which the bytes repeat; where their routes do not (ECMP's hash), more
  // nodes seldom mend it, and each try costs a pass over every message.
  for (int s = g; s < ranks; s += g) {
    if (ranks % s != 0 || !repeats_every(s)) continue;
    classes_by_period(ranks, messages, s, class_of, representative);
    return kept_classes(router, messages, routes, class_of, representative);
  }
  return std::nullopt;
}

}  // namespace trainsim::models
