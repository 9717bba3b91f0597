#include "models/collectives/flat_collectives.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "engine/check.h"
#include "engine/symmetry.h"
#include "models/collectives/algorithms.h"
#include "models/collectives/ring_collective.h"

namespace trainsim::models {

namespace {

// Ring steps of the operation over p ranks (0 for an all-to-all).
int ring_steps(CollectiveOp op, int p) {
  return op == CollectiveOp::kAllReduce ? 2 * (p - 1) : p - 1;
}

RingOrders rank_order(int p) {
  RingOrders order(1, std::vector<int>(p));
  std::iota(order[0].begin(), order[0].end(), 0);
  return order;
}

RingSchedule flat_ring_schedule(CollectiveOp op, int p, double bytes) {
  RingSchedule s{ring_steps(op, p), bytes / p};
  s.rendezvous = true;
  return s;
}

ByteMatrix uniform_matrix(int p, double bytes) {
  ByteMatrix m(p);
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      if (a != b) m.add(a, b, bytes / p);
    }
  }
  return m;
}

class FlatAllToAll final : public Collective {
 public:
  FlatAllToAll(FlowNetwork& network, const ClusterTopology& topology, ByteMatrix bytes)
      : network_(network),
        vertices_(topology.gpu_vertices),
        gpus_per_node_(topology.gpus_per_node),
        bytes_(std::move(bytes)),
        left_(vertices_.size(), 0),
        done_(vertices_.size()),
        joined_(vertices_.size(), false) {
    TRAINSIM_ASSERT(static_cast<std::size_t>(bytes_.size()) == vertices_.size(),
                    "byte matrix does not match the GPUs");
    for (int a = 0; a < bytes_.size(); ++a) {
      for (const ByteMatrix::Entry& e : bytes_.row(a)) {
        if (e.to == a) continue;
        ++left_[a];
        ++left_[e.to];
      }
    }
  }

  void join(int rank, std::function<void()> done) override {
    TRAINSIM_ASSERT(!joined_[rank], "rank joined twice");
    joined_[rank] = true;
    done_[rank] = std::move(done);
    for (const ByteMatrix::Entry& e : bytes_.row(rank)) {
      if (e.to == rank) continue;
      const int to = e.to;
      network_.start(vertices_[rank], vertices_[to], e.bytes, [this, rank, to] {
        settle(rank);
        settle(to);
      });
    }
    check_done(rank);
  }

  // With `alone`, the messages fall into classes that move as one (engine/symmetry.h: every
  // message of a class has the bytes and route latency of its class's representative and meets
  // links of the same kinds), and one message per class is sent, its arrival standing for every
  // message of the class. The classes tried, coarsest first: by the kind of the two ends' nodes
  // (nodes whose ranks send and receive the same bytes are of one kind, e.g. every node but the
  // one holding a hot GPU), their local ranks, whether they share a node, the route's latency and
  // its hops; else, for an exchange that repeats every t nodes (rank a + tg sends b + tg what a
  // sends b, g GPUs per node; the fewest such t), the messages of ranks [0, tg), each standing
  // for its counterparts in every block of t nodes. When neither holds, every message is sent.
  void join_all(int participants, const std::function<void(int)>& done, bool alone) override {
    const int p = static_cast<int>(vertices_.size());
    TRAINSIM_ASSERT(participants == p, "join_all is for every rank");
    // As for the ring: exact max-min sharing only (no solve quantum).
    if (!alone || network_.solve_quantum() != 0 || !reduce()) {
      Collective::join_all(participants, done, alone);
      return;
    }
    for (int r = 0; r < p; ++r) {
      TRAINSIM_ASSERT(!joined_[r], "rank joined twice");
      joined_[r] = true;
      done_[r] = [done, r] { done(r); };
    }
    for (std::size_t c = 0; c + 1 < member_first_.size(); ++c) {
      const Message& m = members_[member_first_[c]];
      network_.start(class_route_[c], m.bytes, [this, c] {
        for (std::size_t i = member_first_[c]; i < member_first_[c + 1]; ++i) {
          settle(members_[i].from);
          settle(members_[i].to);
        }
      });
    }
    for (int r = 0; r < p; ++r) check_done(r);
  }

 private:
  struct Message {
    int from;
    int to;
    double bytes;
  };

  // Sorts the messages into classes that move as one (see join_all): members_ by class from
  // member_first_[c], and class_route_[c]. False when no classes fewer than the messages hold.
  bool reduce() {
    const int p = static_cast<int>(vertices_.size());
    const int g = gpus_per_node_;
    if (g <= 0 || p % g != 0) return false;
    std::vector<Message> messages;
    std::vector<RouteId> routes;
    Router& router = network_.router();
    for (int a = 0; a < p; ++a) {
      for (const ByteMatrix::Entry& e : bytes_.row(a)) {
        if (e.to == a) continue;
        messages.push_back({a, e.to, e.bytes});
        routes.push_back(router.route(vertices_[a], vertices_[e.to]));
      }
    }
    std::vector<std::uint32_t> class_of;
    std::vector<std::uint32_t> representative;
    if (classes_by_node_kind(messages, routes, class_of, representative) &&
        keep_classes(messages, routes, class_of, representative)) {
      return true;
    }
    // The fewest nodes after which the bytes repeat; where their routes do not (ECMP's hash),
    // more nodes seldom mend it, and each try costs a pass over every message.
    for (int s = g; s < p; s += g) {
      if (p % s != 0 || !repeats_every(s)) continue;
      classes_by_period(messages, s, class_of, representative);
      return keep_classes(messages, routes, class_of, representative);
    }
    return false;
  }

  // Classes by (kind of the sender's node, sender's local rank, kind of the receiver's node,
  // receiver's local rank, same node, route latency and hops); false when that is one message
  // per class.
  bool classes_by_node_kind(const std::vector<Message>& messages,
                            const std::vector<RouteId>& routes,
                            std::vector<std::uint32_t>& class_of,
                            std::vector<std::uint32_t>& representative) const {
    const int p = static_cast<int>(vertices_.size());
    const int g = gpus_per_node_;
    // A node's kind: its ranks' bytes sent and received (each sorted), in local order.
    std::vector<std::vector<double>> sent(p), received(p);
    for (const Message& m : messages) {
      sent[m.from].push_back(m.bytes);
      received[m.to].push_back(m.bytes);
    }
    std::map<std::vector<double>, int> kinds;
    std::vector<int> kind_of(p / g);
    std::vector<double> key;
    for (int n = 0; n < p / g; ++n) {
      key.clear();
      for (int r = n * g; r < (n + 1) * g; ++r) {
        for (auto* list : {&sent[r], &received[r]}) {
          std::sort(list->begin(), list->end());
          key.push_back(static_cast<double>(list->size()));
          key.insert(key.end(), list->begin(), list->end());
        }
      }
      kind_of[n] = kinds.emplace(key, static_cast<int>(kinds.size())).first->second;
    }
    std::map<std::tuple<int, int, int, int, bool, Time, std::size_t>, std::uint32_t> index;
    class_of.assign(messages.size(), 0);
    representative.clear();
    for (std::size_t f = 0; f < messages.size(); ++f) {
      const int a = messages[f].from;
      const int b = messages[f].to;
      const Router& router = network_.router();
      const auto [it, added] =
          index.emplace(std::tuple{kind_of[a / g], a % g, kind_of[b / g], b % g, a / g == b / g,
                                   router.latency(routes[f]), router.links(routes[f]).size()},
                        static_cast<std::uint32_t>(representative.size()));
      if (added) representative.push_back(static_cast<std::uint32_t>(f));
      class_of[f] = it->second;
    }
    return representative.size() < messages.size();
  }

  // Classes by position in a block of s ranks: a message from a to b stands in the class of
  // (a mod s, b less the same shift).
  void classes_by_period(const std::vector<Message>& messages, int s,
                         std::vector<std::uint32_t>& class_of,
                         std::vector<std::uint32_t>& representative) const {
    const int p = static_cast<int>(vertices_.size());
    std::vector<std::int64_t> class_index(static_cast<std::size_t>(s) * p, -1);
    class_of.assign(messages.size(), 0);
    representative.clear();
    for (std::size_t f = 0; f < messages.size(); ++f) {
      const int a = messages[f].from;
      const int shift = a - a % s;
      const std::size_t key =
          static_cast<std::size_t>(a % s) * p + (messages[f].to - shift + p) % p;
      if (class_index[key] < 0) {
        class_index[key] = static_cast<std::int64_t>(representative.size());
        representative.push_back(static_cast<std::uint32_t>(f));
      }
      class_of[f] = static_cast<std::uint32_t>(class_index[key]);
    }
  }

  // Keeps the classes when every message has its representative's bytes and the classes move as
  // one on these routes (engine/symmetry.h).
  bool keep_classes(const std::vector<Message>& messages, const std::vector<RouteId>& routes,
                    const std::vector<std::uint32_t>& class_of,
                    const std::vector<std::uint32_t>& representative) {
    for (std::size_t f = 0; f < messages.size(); ++f) {
      if (messages[f].bytes != messages[representative[class_of[f]]].bytes) return false;
    }
    const auto found = class_routes(network_.router(), routes, class_of, representative);
    if (!found) return false;
    class_route_ = *found;
    member_first_.assign(representative.size() + 1, 0);
    for (const std::uint32_t c : class_of) ++member_first_[c + 1];
    for (std::size_t c = 0; c < representative.size(); ++c) {
      member_first_[c + 1] += member_first_[c];
    }
    members_.resize(messages.size());
    std::vector<std::size_t> next(member_first_.begin(), member_first_.end() - 1);
    // The representative first in its class (its bytes are the class's).
    for (std::size_t c = 0; c < representative.size(); ++c) {
      members_[next[c]++] = messages[representative[c]];
    }
    for (std::size_t f = 0; f < messages.size(); ++f) {
      if (representative[class_of[f]] != f) members_[next[class_of[f]]++] = messages[f];
    }
    return true;
  }

  // Whether rank a + s sends rank b + s what a sends b, for every a and b (mod P).
  bool repeats_every(int s) const {
    const int p = static_cast<int>(vertices_.size());
    for (int a = 0; a < p; ++a) {
      const int shifted = (a + s) % p;
      if (bytes_.row(a).size() != bytes_.row(shifted).size()) return false;
      for (const ByteMatrix::Entry& e : bytes_.row(a)) {
        if (bytes_(shifted, (e.to + s) % p) != e.bytes) return false;
      }
    }
    return true;
  }

  void settle(int rank) {
    --left_[rank];
    check_done(rank);
  }
  void check_done(int rank) {
    if (left_[rank] == 0 && joined_[rank] && done_[rank]) {
      auto done = std::move(done_[rank]);
      done_[rank] = nullptr;
      done();
    }
  }

  FlowNetwork& network_;
  std::vector<VertexId> vertices_;
  int gpus_per_node_;
  ByteMatrix bytes_;
  std::vector<int> left_;  // messages from and to the rank not yet arrived
  std::vector<std::function<void()>> done_;
  std::vector<bool> joined_;
  // After a join_all that found classes: each class's messages (its representative first) from
  // member_first_[c], and the route of its one message.
  std::vector<Message> members_;
  std::vector<std::size_t> member_first_;
  std::vector<RouteId> class_route_;
};

}  // namespace

bool has_flat_form(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
         op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllToAll;
}

std::unique_ptr<Collective> make_flat_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterTopology& topology, CollectiveOp op,
                                                 double bytes) {
  TRAINSIM_ASSERT(has_flat_form(op), "no flat form of this collective");
  const int p = topology.gpu_count();
  if (op == CollectiveOp::kAllToAll) {
    return make_flat_alltoallv(simulation, network, topology, uniform_matrix(p, bytes));
  }
  if (p == 1) return std::make_unique<AnalyticCollective>(simulation, 1, 0);
  return std::make_unique<RingCollective>(simulation, network, topology.gpu_vertices, rank_order(p),
                                          flat_ring_schedule(op, p, bytes));
}

std::unique_ptr<Collective> make_flat_alltoallv(Simulation&, FlowNetwork& network,
                                                const ClusterTopology& topology, ByteMatrix bytes) {
  return std::make_unique<FlatAllToAll>(network, topology, std::move(bytes));
}

Time flat_collective_time(Router& router, const ClusterTopology& topology, CollectiveOp op,
                          double bytes) {
  TRAINSIM_ASSERT(has_flat_form(op), "no flat form of this collective");
  const int p = topology.gpu_count();
  if (op == CollectiveOp::kAllToAll) {
    return flat_alltoallv_time(router, topology, uniform_matrix(p, bytes));
  }
  if (p == 1) return 0;
  return ring_collective_time(router, topology.gpu_vertices, rank_order(p),
                              flat_ring_schedule(op, p, bytes));
}

Time flat_alltoallv_time(Router& router, const ClusterTopology& topology, const ByteMatrix& bytes) {
  std::vector<Stream> streams;
  Time latency = 0;
  for (int a = 0; a < bytes.size(); ++a) {
    for (const ByteMatrix::Entry& e : bytes.row(a)) {
      if (e.to == a) continue;
      const RouteId route = router.route(topology.gpu_vertices[a], topology.gpu_vertices[e.to]);
      Stream s;
      const auto links = router.links(route);
      s.links.assign(links.begin(), links.end());
      s.bytes_per_byte = e.bytes;
      streams.push_back(std::move(s));
      latency = std::max(latency, router.latency(route));
    }
  }
  if (streams.empty()) return 0;
  return latency + time_from_seconds(stage_seconds(topology.topology, streams, 1.0));
}

}  // namespace trainsim::models
