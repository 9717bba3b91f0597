// Flow-level cross-check against SimGrid: every pure max-min row of the SimGrid 3.32 reference
// (validation/simgrid/*.csv) rerun on the same platform with trainsim's flow engine and its
// message-by-message ring, and matched within 0.1%. The platform: N nodes of 8 GPUs, each GPU with
// an NVSwitch port of 450 GB/s and 0.5 us per direction and a NIC of 50 GB/s and 1 us per
// direction; an ideal crossbar, or leaves of 4 nodes with one uplink each of 1600/K GB/s and 1 us.
// As in SimGrid, every message waits its route latency, then shares bandwidth by max-min.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/flow_network.h"
#include "models/collectives/flat_collectives.h"
#include "models/collectives/ring_collective.h"
#include "models/hardware/cluster_topology.h"
#include "tests/simgrid_reference.h"

namespace trainsim::models {
namespace {

using simgrid::kSimGridDir;
using simgrid::SimGridRow;

ClusterSpec platform(int nodes, double oversubscription) {
  ClusterSpec c;
  c.name = "simgrid";
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.gpu.model = "G";
  c.intra_node.gpu_link = LinkClassSpec{450e9, 500 * kNanosecond, 1.0};
  c.nic.count = 8;
  c.nic.link = LinkClassSpec{50e9, kMicrosecond, 1.0};
  c.nic.gpu_link = LinkClassSpec{1e18, 0, 1.0};  // the GPU-NIC attachment costs nothing
  for (int g = 0; g < 8; ++g) c.nic.gpus.push_back({g});
  if (oversubscription > 0) {
    c.network.topology = NetworkTopology::kFatTree;
    c.network.nodes_per_leaf = 4;
    c.network.spines = 1;  // one uplink per leaf, the aggregate of its spine links
    c.network.oversubscription = oversubscription;
    c.network.switch_latency = kMicrosecond;
  }
  return c;
}

struct Harness {
  explicit Harness(int nodes, double oversubscription = 0)
      : spec(platform(nodes, oversubscription)),
        topology(build_cluster_topology(spec, nodes)),
        network(sim, topology.topology) {
    network.set_latency_first(true);
  }
  int gpus() const { return topology.gpu_count(); }
  VertexId gpu(int rank) const { return topology.gpu_vertices[rank]; }

  ClusterSpec spec;
  ClusterTopology topology;
  Simulation sim;
  FlowNetwork network;
};

RingSchedule rendezvous(int steps, double chunk) {
  RingSchedule s{steps, chunk};
  s.rendezvous = true;
  return s;
}

// Flat ring all-reduce of `bytes` over all GPUs in rank order; returns each GPU's finish time.
// `alone`: nothing else runs, so the ring may run one representative per class of positions.
std::unique_ptr<RingCollective> flat_ring(Harness& h, double bytes, std::vector<Time>& done,
                                          bool alone = false) {
  const int p = h.gpus();
  RingOrders order(1);
  for (int r = 0; r < p; ++r) order[0].push_back(r);
  auto ring = std::make_unique<RingCollective>(h.sim, h.network, h.topology.gpu_vertices, order,
                                               rendezvous(2 * (p - 1), bytes / p));
  done.assign(p, 0);
  ring->join_all(
      p, [&h, &done](int r) { done[r] = h.sim.now(); }, alone);
  return ring;
}

// The same ring run for one representative per class of positions: the same finish times to the
// picosecond. Returns the positions it simulated.
int expect_reduced_ring_same(int nodes, double oversubscription, double bytes,
                             const std::vector<Time>& whole, const std::string& what) {
  Harness h(nodes, oversubscription);
  std::vector<Time> done;
  auto ring = flat_ring(h, bytes, done, /*alone=*/true);
  h.sim.run();
  EXPECT_EQ(done, whole) << what;
  return ring->simulated_positions();
}

// All-to-all: every GPU posts a message to every other at once; sizes[src] bytes each. Records
// each GPU's finish (all its sends and receives delivered) and send-done time.
struct AllToAll {
  std::vector<Time> finish;
  std::vector<Time> send_done;
  std::vector<int> left_sends;
  std::vector<int> left_all;
};
std::unique_ptr<AllToAll> all_to_all(Harness& h, const std::vector<double>& sizes) {
  const int p = h.gpus();
  auto a = std::make_unique<AllToAll>();
  a->finish.assign(p, 0);
  a->send_done.assign(p, 0);
  a->left_sends.assign(p, p - 1);
  a->left_all.assign(p, 2 * (p - 1));
  AllToAll* s = a.get();
  for (int src = 0; src < p; ++src) {
    for (int dst = 0; dst < p; ++dst) {
      if (src == dst) continue;
      h.network.start(h.gpu(src), h.gpu(dst), sizes[src], [&h, s, src, dst] {
        const Time now = h.sim.now();
        if (--s->left_sends[src] == 0) s->send_done[src] = now;
        if (--s->left_all[src] == 0) s->finish[src] = now;
        if (--s->left_all[dst] == 0) s->finish[dst] = now;
      });
    }
  }
  return a;
}

// The same exchange through the flat all-to-all with one message per class of messages that
// move as one: every GPU's finish the same to the picosecond. Returns the messages it sent.
std::uint64_t expect_classes_same(int nodes, double oversubscription,
                                  const std::vector<double>& sizes, const std::vector<Time>& whole,
                                  const std::string& what) {
  Harness h(nodes, oversubscription);
  const int p = h.gpus();
  ByteMatrix bytes(p);
  for (int src = 0; src < p; ++src) {
    for (int dst = 0; dst < p; ++dst) {
      if (src != dst) bytes.add(src, dst, sizes[src]);
    }
  }
  bytes.consolidate();
  auto exchange = make_flat_alltoallv(h.sim, h.network, h.topology, std::move(bytes));
  std::vector<Time> finish(p, 0);
  exchange->join_all(
      p, [&h, &finish](int r) { finish[r] = h.sim.now(); }, /*alone=*/true);
  h.sim.run();
  EXPECT_EQ(finish, whole) << what;
  return h.network.counters().flows_started;
}

double max_of(const std::vector<Time>& v) {
  Time m = 0;
  for (const Time t : v) m = std::max(m, t);
  return to_seconds(m);
}
double mean_of(const std::vector<Time>& v) {
  double sum = 0;
  for (const Time t : v) sum += to_seconds(t);
  return sum / v.size();
}

void expect_close(double trainsim, const std::string& simgrid, const std::string& what) {
  ASSERT_FALSE(simgrid.empty()) << what;
  const double reference = std::stod(simgrid);
  EXPECT_NEAR(trainsim / reference, 1.0, 1e-3)
      << what << ": trainsim " << trainsim << " s, SimGrid " << reference << " s";
}

TEST(SimGridCheck, CrossbarRingHierarchicalAndAllToAll) {
  int compared = 0;
  for (const SimGridRow& row : simgrid::read_simgrid_csv(kSimGridDir + "results.csv")) {
    if (row.at("model") != "ideal" || row.at("variant") != "base" || row.at("status") != "ok") {
      continue;
    }
    const std::string scenario = row.at("scenario");
    const int n = std::stoi(row.at("N"));
    const double bytes = std::stod(row.at("bytes"));
    const std::string what = scenario + " N=" + row.at("N");
    Harness h(n);
    const int p = h.gpus();
    if (scenario == "ring") {
      std::vector<Time> done;
      auto ring = flat_ring(h, bytes, done);
      h.sim.run();
      expect_close(max_of(done), row.at("sim_time_s"), what);
      // Every node does what the one before it did: one node's positions stand for all.
      EXPECT_EQ(expect_reduced_ring_same(n, 0, bytes, done, what), n == 1 ? 1 : 8) << what;
    } else if (scenario == "hier") {
      // Reduce-scatter in each node, all-reduce among one local rank's GPUs, all-gather; each
      // GPU moves to the next phase when its own part of the previous one is done.
      std::vector<std::unique_ptr<RingCollective>> rings;
      std::vector<std::vector<int>> member_index(3, std::vector<int>(p, 0));
      std::vector<std::vector<RingCollective*>> ring_of(3, std::vector<RingCollective*>(p));
      auto node_ring = [&](int phase) {
        for (int node = 0; node < n; ++node) {
          std::vector<VertexId> v;
          for (int l = 0; l < 8; ++l) v.push_back(h.gpu(node * 8 + l));
          rings.push_back(std::make_unique<RingCollective>(
              h.sim, h.network, v, make_node_rings(1, 8, 1), rendezvous(7, bytes / 8)));
          for (int l = 0; l < 8; ++l) {
            ring_of[phase][node * 8 + l] = rings.back().get();
            member_index[phase][node * 8 + l] = l;
          }
        }
      };
      node_ring(0);
      if (n > 1) {
        for (int l = 0; l < 8; ++l) {
          std::vector<VertexId> v;
          for (int node = 0; node < n; ++node) v.push_back(h.gpu(node * 8 + l));
          rings.push_back(
              std::make_unique<RingCollective>(h.sim, h.network, v, make_node_rings(n, 1, 1),
                                               rendezvous(2 * (n - 1), bytes / (8.0 * n))));
          for (int node = 0; node < n; ++node) {
            ring_of[1][node * 8 + l] = rings.back().get();
            member_index[1][node * 8 + l] = node;
          }
        }
      }
      node_ring(2);
      std::vector<Time> done(p, 0);
      std::function<void(int, int)> enter = [&](int rank, int phase) {
        if (phase == 1 && n == 1) phase = 2;
        if (phase == 3) {
          done[rank] = h.sim.now();
          return;
        }
        ring_of[phase][rank]->join(member_index[phase][rank],
                                   [&enter, rank, phase] { enter(rank, phase + 1); });
      };
      for (int r = 0; r < p; ++r) enter(r, 0);
      h.sim.run();
      expect_close(max_of(done), row.at("sim_time_s"), what);
    } else if (scenario == "a2a") {
      auto a = all_to_all(h, std::vector<double>(p, bytes / p));
      h.sim.run();
      expect_close(max_of(a->finish), row.at("sim_time_s"), what);
      // 56 classes within a node and 64 between two nodes.
      EXPECT_EQ(expect_classes_same(n, 0, std::vector<double>(p, bytes / p), a->finish, what),
                n == 1 ? 56u : 120u)
          << what;
    } else {
      continue;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 23);  // ring and hier at N = 1..128, a2a at N = 1..64
}

TEST(SimGridCheck, FatTreeAndContention) {
  int compared = 0;
  for (const SimGridRow& row : simgrid::read_simgrid_csv(kSimGridDir + "results_contention.csv")) {
    if (!simgrid::is_max_min_row(row)) continue;
    const bool crossbar = row.at("fabric") == "crossbar";
    const std::string scenario = row.at("scenario");
    const int n = std::stoi(row.at("N"));
    const double k = crossbar ? 0 : std::stod(row.at("oversub_K"));
    const std::string what = scenario + " " + row.at("fabric") + " K=" + row.at("oversub_K") + " " +
                             row.at("model") + " N=" + row.at("N");
    Harness h(n, k);
    const int p = h.gpus();
    const double ring_bytes = std::stod(row.at("ring_bytes"));
    const double a2a_bytes = std::stod(row.at("a2a_bytes"));
    std::vector<Time> ring_done;
    std::unique_ptr<RingCollective> ring;
    std::unique_ptr<AllToAll> a2a;
    if (scenario == "ring" || scenario == "ring_a2a") ring = flat_ring(h, ring_bytes, ring_done);
    if (scenario == "a2a" || scenario == "ring_a2a") {
      a2a = all_to_all(h, std::vector<double>(p, a2a_bytes / p));
    }
    if (scenario == "a2a_skew") {
      std::vector<double> sizes(p, a2a_bytes / p);
      const double hot = std::stod(row.at("hot_factor"));
      for (int node = 0; node < n; ++node) sizes[node * 8] *= hot;
      a2a = all_to_all(h, sizes);
    }
    h.sim.run();
    expect_close(to_seconds(h.sim.now()), row.at("sim_time_s"), what + " end");
    if (ring) expect_close(max_of(ring_done), row.at("ring_time_s"), what + " ring");
    if (scenario == "ring") {
      // On the fat tree the ring repeats every leaf of 4 nodes (32 positions).
      const int positions = expect_reduced_ring_same(n, k, ring_bytes, ring_done, what);
      EXPECT_EQ(positions, crossbar || n <= 4 ? 8 : 32) << what;
    }
    if (a2a) expect_close(max_of(a2a->finish), row.at("a2a_time_s"), what + " a2a");
    if (scenario == "a2a" || scenario == "a2a_skew") {
      std::vector<double> sizes(p, a2a_bytes / p);
      if (scenario == "a2a_skew") {
        for (int node = 0; node < n; ++node) sizes[node * 8] *= std::stod(row.at("hot_factor"));
      }
      const std::uint64_t sent = expect_classes_same(n, k, sizes, a2a->finish, what);
      EXPECT_LT(sent, static_cast<std::uint64_t>(p) * (p - 1)) << what;
    }
    if (a2a && !row.at("a2a_mean_send_done_s").empty()) {
      expect_close(mean_of(a2a->send_done), row.at("a2a_mean_send_done_s"), what + " send done");
      expect_close(mean_of(a2a->finish), row.at("a2a_mean_finish_s"), what + " mean finish");
    }
    ++compared;
  }
  EXPECT_EQ(compared, 37);  // every max-min row of the file
}

}  // namespace
}  // namespace trainsim::models
