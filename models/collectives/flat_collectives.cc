#include "models/collectives/flat_collectives.h"

#include <algorithm>
#include <numeric>
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

  // With `alone`, an exchange that repeats itself every t nodes (the same bytes from rank a + tg
  // to b + tg as from a to b, g GPUs per node, and every message's route meeting links of the
  // same kinds as its counterpart's: engine/symmetry.h) sends only the messages of ranks
  // [0, tg), each standing for its counterparts in every block of t nodes; they arrive together.
  void join_all(int participants, const std::function<void(int)>& done, bool alone) override {
    const int p = static_cast<int>(vertices_.size());
    TRAINSIM_ASSERT(participants == p, "join_all is for every rank");
    if (!alone || !reduce_to_period()) {
      Collective::join_all(participants, done, alone);
      return;
    }
    for (int r = 0; r < p; ++r) {
      TRAINSIM_ASSERT(!joined_[r], "rank joined twice");
      joined_[r] = true;
      done_[r] = [done, r] { done(r); };
    }
    for (const Representative& m : representatives_) {
      network_.start(m.route, m.bytes, [this, from = m.from, to = m.to] {
        for (int a = from, b = to; a < static_cast<int>(vertices_.size()); a += period_) {
          settle(a);
          settle(b);
          b = (b + period_) % static_cast<int>(vertices_.size());
        }
      });
    }
    for (int r = 0; r < p; ++r) check_done(r);
  }
  // Ranks whose messages a join_all sent (tg), or every rank.
  int simulated_ranks() const {
    return representatives_.empty() ? static_cast<int>(vertices_.size()) : period_;
  }

 private:
  struct Representative {
    int from;
    int to;
    double bytes;
    RouteId route;
  };
  // Finds the fewest nodes t after which the exchange repeats, and the route of each class of
  // messages (representatives_, period_ = tg ranks); false when only the whole exchange does.
  bool reduce_to_period() {
    const int p = static_cast<int>(vertices_.size());
    const int g = gpus_per_node_;
    if (g <= 0 || p % g != 0) return false;
    Router& router = network_.router();
    std::vector<RouteId> routes;
    std::vector<std::uint32_t> class_of;
    std::vector<std::uint32_t> representative;
    std::vector<std::int64_t> class_index;
    for (int s = g; s < p; s += g) {
      if (p % s != 0 || !repeats_every(s)) continue;
      if (routes.empty()) {
        for (int a = 0; a < p; ++a) {
          for (const ByteMatrix::Entry& e : bytes_.row(a)) {
            if (e.to != a) routes.push_back(router.route(vertices_[a], vertices_[e.to]));
          }
        }
      }
      // A message from a to b stands in the class of (a mod s, b less the same shift).
      class_index.assign(static_cast<std::size_t>(s) * p, -1);
      class_of.clear();
      representative.clear();
      for (int a = 0; a < p; ++a) {
        const int shift = a - a % s;
        for (const ByteMatrix::Entry& e : bytes_.row(a)) {
          if (e.to == a) continue;
          const std::size_t key = static_cast<std::size_t>(a % s) * p + (e.to - shift + p) % p;
          if (class_index[key] < 0) {
            class_index[key] = static_cast<std::int64_t>(representative.size());
            representative.push_back(static_cast<std::uint32_t>(class_of.size()));
          }
          class_of.push_back(static_cast<std::uint32_t>(class_index[key]));
        }
      }
      const auto found = class_routes(router, routes, class_of, representative);
      if (!found) continue;
      representatives_.clear();
      std::size_t f = 0;
      for (int a = 0; a < s; ++a) {
        for (const ByteMatrix::Entry& e : bytes_.row(a)) {
          if (e.to == a) continue;
          representatives_.push_back({a, e.to, e.bytes, (*found)[class_of[f]]});
          ++f;
        }
      }
      period_ = s;
      return true;
    }
    return false;
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
  std::vector<Representative> representatives_;  // after a join_all that found a period
  int period_ = 0;                               // ranks per block that repeats
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
