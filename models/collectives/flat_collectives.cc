#include "models/collectives/flat_collectives.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "engine/check.h"
#include "models/collectives/algorithms.h"
#include "models/collectives/exchange_classes.h"
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

  // With `alone`, the messages fall into classes that move as one (exchange_classes.h), and one
  // message per class is sent, its arrival standing for every message of the class. When no
  // classes hold, every message is sent.
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
    for (std::size_t c = 0; c < classes_.size(); ++c) {
      const ExchangeMessage& m = messages_[classes_.members[classes_.first[c]]];
      network_.start(classes_.routes[c], m.bytes, [this, c] {
        for (std::size_t i = classes_.first[c]; i < classes_.first[c + 1]; ++i) {
          settle(messages_[classes_.members[i]].from);
          settle(messages_[classes_.members[i]].to);
        }
      });
    }
    for (int r = 0; r < p; ++r) check_done(r);
  }

 private:
  // Sorts the messages into classes that move as one (see join_all); false when none hold.
  bool reduce() {
    const int p = static_cast<int>(vertices_.size());
    std::vector<RouteId> routes;
    Router& router = network_.router();
    for (int a = 0; a < p; ++a) {
      for (const ByteMatrix::Entry& e : bytes_.row(a)) {
        if (e.to == a) continue;
        messages_.push_back({a, e.to, e.bytes});
        routes.push_back(router.route(vertices_[a], vertices_[e.to]));
      }
    }
    auto found = exchange_classes(router, p, gpus_per_node_, messages_, routes,
                                  [this](int s) { return bytes_.repeats_every(s); });
    if (!found) return false;
    classes_ = std::move(*found);
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
  // After a join_all that found classes: the messages and their classes.
  std::vector<ExchangeMessage> messages_;
  ExchangeClasses classes_;
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
