#include "engine/routing.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "engine/check.h"
#include "engine/simulation.h"

namespace trainsim {

Router::Router(const Topology& topology)
    : topology_(topology), by_destination_(topology.route_by_destination()) {
  const std::size_t n = topology.vertex_count();
  transit_.resize(n);
  for (VertexId v = 0; v < n; ++v) transit_[v] = topology.vertex(v).transit;
  const auto& links = topology.links();
  // Counting sort by vertex; link ids ascend within a vertex.
  const auto build = [&](Adjacency& a, bool out) {
    a.begin.assign(n + 1, 0);
    for (const Link& l : links) ++a.begin[(out ? l.from : l.to) + 1];
    for (std::size_t v = 0; v < n; ++v) a.begin[v + 1] += a.begin[v];
    a.links.resize(links.size());
    a.far.resize(links.size());
    std::vector<std::uint32_t> fill(a.begin.begin(), a.begin.end() - 1);
    for (LinkId l = 0; l < links.size(); ++l) {
      const std::uint32_t k = fill[out ? links[l].from : links[l].to]++;
      a.links[k] = l;
      a.far[k] = out ? links[l].to : links[l].from;
    }
  };
  build(out_, true);
  build(in_, false);
  for (auto* stamp : {&forward_stamp_, &backward_stamp_, &beyond_stamp_}) stamp->assign(n, 0);
  for (auto* hops : {&forward_hops_, &backward_hops_, &beyond_hops_}) hops->assign(n, 0);
  tree_stamp_.assign(n, 0);
  tree_hops_.assign(n, 0);
  choice_stamp_.assign(n, 0);
  choice_first_.assign(n, 0);
  choice_count_.assign(n, 0);
  tree_work_ = links.size();
}

Router::~Router() = default;

int Router::search(VertexId src, VertexId dst) {
  if (++search_ == 0) {  // the stamps wrapped around: clear them
    for (auto* stamp : {&forward_stamp_, &backward_stamp_, &beyond_stamp_}) {
      std::fill(stamp->begin(), stamp->end(), 0);
    }
    search_ = 1;
  }
  const auto backward = [&](VertexId v) { return backward_stamp_[v] == search_; };
  // A vertex a route may pass through: a transit vertex, or the source (only at its start).
  const auto forwards = [&](VertexId v) { return transit_[v] || v == src; };
  forward_stamp_[src] = search_;
  forward_hops_[src] = 0;
  backward_stamp_[dst] = search_;
  backward_hops_[dst] = 0;
  frontier_.assign(1, src);  // forward
  level_.assign(1, dst);     // backward
  // Every backward level's vertices, level by level (backward_first_[d] is where level d starts).
  backward_list_.assign(1, dst);
  backward_first_.assign({0, 1});
  int forward_levels = 0, backward_levels = 0;
  bool met = false;
  const auto degree = [&](const std::vector<VertexId>& vertices, const Adjacency& a) {
    std::size_t sum = 0;
    for (const VertexId v : vertices) sum += a.begin[v + 1] - a.begin[v];
    return sum;
  };
  // Grows one side by a whole level: the vertices `a` leads to from `level` that this side has not
  // seen and `enters` lets in, `levels + 1` hops from its end; the searches meet at one the other
  // side has seen.
  const auto grow = [&](std::vector<VertexId>& level, const Adjacency& a,
                        std::vector<std::uint32_t>& stamp, std::vector<std::int32_t>& hops,
                        int& levels, const std::vector<std::uint32_t>& other, auto enters) {
    next_.clear();
    for (const VertexId v : level) {
      run_work_ += a.begin[v + 1] - a.begin[v];
      for (std::uint32_t k = a.begin[v]; k < a.begin[v + 1]; ++k) {
        const VertexId u = a.far[k];
        if (stamp[u] == search_ || !enters(u)) continue;
        stamp[u] = search_;
        hops[u] = levels + 1;
        met = met || other[u] == search_;
        if (transit_[u]) next_.push_back(u);
      }
    }
    ++levels;
    level.swap(next_);
  };
  while (!met) {
    if (frontier_.empty() || level_.empty()) return -1;
    // One whole level of the side with fewer links to follow. Forward, a route may end at the
    // destination but pass through transit vertices only; backward, it may start at the source.
    if (degree(frontier_, out_) <= degree(level_, in_)) {
      grow(frontier_, out_, forward_stamp_, forward_hops_, forward_levels, backward_stamp_,
           [&](VertexId u) { return transit_[u] || u == dst; });
    } else {
      grow(level_, in_, backward_stamp_, backward_hops_, backward_levels, forward_stamp_, forwards);
      backward_list_.insert(backward_list_.end(), level_.begin(), level_.end());
      backward_first_.push_back(static_cast<std::uint32_t>(backward_list_.size()));
    }
  }
  // The searches met as soon as a level reached a vertex the other side had seen, and levels
  // are whole: every shortest path crosses the last forward level at a vertex `backward_levels`
  // hops from the destination (a shorter path would have met them a level earlier). From those
  // vertices on, the walk back needs the hops from the source of the vertices nearer the
  // destination: a vertex `h` hops from the source and `length - h` from the destination is on a
  // shortest path exactly when a vertex of the level before links to it.
  met_forward_ = forward_levels;
  const int length = forward_levels + backward_levels;
  if (backward_levels == 0) return length;
  // frontier_ holds the last forward level's vertices that forward (a transit destination is
  // met at 0 backward levels, handled above).
  // Each level's vertices carry a beyond stamp with their hops (those of the meeting level are
  // never read as such: at_hops() answers from the forward stamps up to met_forward_).
  next_.clear();
  for (const VertexId v : frontier_) {
    if (backward(v) && backward_hops_[v] == backward_levels) {
      next_.push_back(v);
      beyond_stamp_[v] = search_;
      beyond_hops_[v] = forward_levels;
    }
  }
  const auto take = [&](VertexId u, int hops) {
    beyond_stamp_[u] = search_;
    beyond_hops_[u] = hops;
    level_.push_back(u);
  };
  for (int h = forward_levels; h < length; ++h) {
    level_.clear();
    // The next level: the vertices length - h - 1 hops from the destination that a vertex of
    // this level links to. Found from whichever side has fewer links to follow: this level's
    // links out (a spine's lead to every leaf of its rail) or those into that backward level.
    const int want = length - h - 1;
    const auto candidates =
        std::span<const VertexId>(backward_list_)
            .subspan(backward_first_[want], backward_first_[want + 1] - backward_first_[want]);
    std::size_t into = 0;
    for (const VertexId u : candidates) into += in_.begin[u + 1] - in_.begin[u];
    if (into < degree(next_, out_)) {
      for (const VertexId u : candidates) {
        for (std::uint32_t k = in_.begin[u]; k < in_.begin[u + 1]; ++k) {
          const VertexId w = in_.far[k];
          if (beyond_stamp_[w] == search_ && beyond_hops_[w] == h) {
            take(u, h + 1);
            break;
          }
        }
      }
    } else {
      for (const VertexId w : next_) {
        for (std::uint32_t k = out_.begin[w]; k < out_.begin[w + 1]; ++k) {
          const VertexId u = out_.far[k];
          if (!backward(u) || backward_hops_[u] != want || beyond_stamp_[u] == search_) continue;
          take(u, h + 1);
        }
      }
    }
    next_.swap(level_);
  }
  return length;
}

void Router::grow_tree(VertexId src) {
  if (++tree_search_ == 0) {  // the stamps wrapped around: clear them
    std::fill(tree_stamp_.begin(), tree_stamp_.end(), 0);
    tree_search_ = 1;
  }
  tree_src_ = src;
  tree_work_ = 0;
  tree_stamp_[src] = tree_search_;
  tree_hops_[src] = 0;
  // Level by level from the source; a route ends at any vertex but passes through transit ones
  // only, so only those (and the source) lead further.
  frontier_.assign(1, src);
  for (int hops = 1; !frontier_.empty(); ++hops) {
    next_.clear();
    for (const VertexId v : frontier_) {
      tree_work_ += out_.begin[v + 1] - out_.begin[v];
      for (std::uint32_t k = out_.begin[v]; k < out_.begin[v + 1]; ++k) {
        const VertexId u = out_.far[k];
        if (tree_stamp_[u] == tree_search_) continue;
        tree_stamp_[u] = tree_search_;
        tree_hops_[u] = hops;
        if (transit_[u]) next_.push_back(u);
      }
    }
    frontier_.swap(next_);
  }
}

bool Router::at_hops(VertexId v, int hops) const {
  if (hops <= met_forward_) return forward_stamp_[v] == search_ && forward_hops_[v] == hops;
  return beyond_stamp_[v] == search_ && beyond_hops_[v] == hops;
}

RouteId Router::route(VertexId src, VertexId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  TRAINSIM_ASSERT(src < transit_.size() && dst < transit_.size(), "route to an unknown vertex");

  // A full search from the source costs about as many links followed as the last one did (at
  // first: every link); once the pairwise searches from one source in a row have followed that
  // many, the full search is taken for the rest of the run. Like renting skis until their price is
  // paid, this costs at most about twice the better choice made knowing the run's length.
  if (src != run_src_) {
    run_src_ = src;
    run_work_ = 0;
    if (++choice_run_ == 0) {  // the stamps wrapped around: clear them
      std::fill(choice_stamp_.begin(), choice_stamp_.end(), 0);
      choice_run_ = 1;
    }
    choice_links_.clear();
  }
  const bool tree = src != dst && (src == tree_src_ || run_work_ >= tree_work_);
  if (tree && src != tree_src_) grow_tree(src);
  const int hops = src == dst ? 0
                   : tree     ? (tree_stamp_[dst] == tree_search_ ? tree_hops_[dst] : -1)
                              : search(src, dst);
  if (hops < 0) {
    throw RoutingError("no route from " + topology_.vertex(src).name + " to " +
                       topology_.vertex(dst).name);
  }
  const auto length = static_cast<std::uint32_t>(hops);
  const std::uint64_t first = route_links_.size();
  route_links_.resize(first + length);
  Time latency = 0;
  double bottleneck = std::numeric_limits<double>::infinity();
  VertexId v = dst;
  // Routing by destination: the destination's index (-1 until the first choice) and the product
  // of the choices made so far.
  std::int64_t destination_index = -1;
  std::uint64_t choices = 1;
  for (std::uint32_t hop = length; hop > 0; --hop) {
    // The links into v from a vertex one hop nearer the source, in link id order.
    const auto nearer = [&](std::uint32_t k) {
      return tree ? tree_at_hops(in_.far[k], static_cast<int>(hop) - 1)
                  : at_hops(in_.far[k], static_cast<int>(hop) - 1);
    };
    if (choice_stamp_[v] != choice_run_) {
      choice_stamp_[v] = choice_run_;
      choice_first_[v] = static_cast<std::uint32_t>(choice_links_.size());
      for (std::uint32_t k = in_.begin[v]; k < in_.begin[v + 1]; ++k) {
        if (nearer(k)) choice_links_.push_back(k);
      }
      choice_count_[v] = static_cast<std::uint32_t>(choice_links_.size()) - choice_first_[v];
    }
    const std::uint32_t* const choice = choice_links_.data() + choice_first_[v];
    const std::size_t count = choice_count_[v];
    TRAINSIM_ASSERT(count > 0, "broken shortest-path search");
    std::size_t pick = 0;
    if (count > 1 && !by_destination_) {
      pick = mix64(key ^ mix64(hop)) % count;
    } else if (count > 1) {
      if (destination_index < 0) {
        destination_index = 0;
        if (v != dst) {
          const auto first_out = out_.links.begin() + out_.begin[v];
          const auto last_out = out_.links.begin() + out_.begin[v + 1];
          destination_index =
              std::lower_bound(first_out, last_out, route_links_[first + hop]) - first_out;
        }
      }
      pick =
          static_cast<std::size_t>(static_cast<std::uint64_t>(destination_index) / choices % count);
      choices *= count;
    }
    const LinkId link = in_.links[choice[pick]];
    route_links_[first + hop - 1] = link;
    latency += topology_.link(link).latency;
    bottleneck = std::min(bottleneck, topology_.link(link).bandwidth_bytes_per_s);
    v = topology_.link(link).from;
  }
  TRAINSIM_ASSERT(v == src, "route does not start at its source");
  const auto id = static_cast<RouteId>(routes_.size());
  routes_.push_back(RouteInfo{first, length, false, latency, bottleneck});
  cache_.emplace(key, id);
  return id;
}

std::span<const std::pair<LinkId, std::uint32_t>> Router::crossings(RouteId id) const {
  const auto found = crossings_at_.find(id);
  TRAINSIM_ASSERT(found != crossings_at_.end(), "crossings of a route that does not repeat");
  return {crossings_.data() + found->second.first, found->second.second};
}

RouteId Router::add_route(std::span<const LinkId> links, std::optional<Time> latency) {
  Time sum = 0;
  double bottleneck = std::numeric_limits<double>::infinity();
  bool repeats = false;
  // Each link's appearances, counted in place (a bundle's route lists thousands of links).
  if (appearances_.size() < topology_.link_count()) appearances_.resize(topology_.link_count(), 0);
  std::vector<std::pair<LinkId, std::uint32_t>> crossed;
  for (const LinkId l : links) {
    TRAINSIM_ASSERT(l < topology_.link_count(), "route over an unknown link");
    if (appearances_[l]++ == 0) crossed.emplace_back(l, 0);
  }
  for (auto& [l, times] : crossed) {
    times = std::exchange(appearances_[l], 0);
    repeats = repeats || times > 1;
    const Link& link = topology_.link(l);
    sum += link.latency * static_cast<Time>(times);
    bottleneck = std::min(bottleneck, link.bandwidth_bytes_per_s / static_cast<double>(times));
  }
  const Time route_latency = latency.value_or(sum);
  std::uint64_t hash = mix64(links.size());
  for (const LinkId l : links) hash = mix64(hash ^ l);
  for (auto [it, end] = explicit_.equal_range(hash); it != end; ++it) {
    const auto existing = this->links(it->second);
    if (std::equal(existing.begin(), existing.end(), links.begin(), links.end()) &&
        routes_[it->second].latency == route_latency) {
      return it->second;
    }
  }
  const std::uint64_t first = route_links_.size();
  route_links_.insert(route_links_.end(), links.begin(), links.end());
  const auto id = static_cast<RouteId>(routes_.size());
  routes_.push_back(RouteInfo{first, static_cast<std::uint32_t>(links.size()), repeats,
                              route_latency, bottleneck});
  explicit_.emplace(hash, id);
  if (repeats) {
    crossings_at_.emplace(id, std::pair{crossings_.size(), crossed.size()});
    crossings_.insert(crossings_.end(), crossed.begin(), crossed.end());
  }
  return id;
}

}  // namespace trainsim
