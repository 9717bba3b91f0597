// Flow network costs: starting and finishing flows (events plus incremental max-min solves) for
// independent flows, and one max-min solve of many flows sharing a switch.
#include <benchmark/benchmark.h>

#include "engine/flow_network.h"

namespace trainsim {
namespace {

// n endpoints, each with an up and a down link to one switch.
Topology star(int n) {
  Topology t;
  const VertexId hub = t.add_vertex("switch", true);
  for (int i = 0; i < n; ++i) {
    const VertexId v = t.add_vertex("e" + std::to_string(i), false);
    t.add_duplex(v, hub, 50e9, kMicrosecond);
  }
  return t;
}

// Neighbour exchange: endpoint i sends to i+1, n flows at a time, each alone on its links.
// Routes are computed before timing starts; this measures flow start, solve and completion.
void BM_IndependentFlows(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  const Topology t = star(n);
  Simulation sim;
  FlowNetwork net(sim, t);
  std::vector<RouteId> routes;
  for (int i = 0; i < n; ++i) routes.push_back(net.router().route(1 + i, 1 + (i + 1) % n));
  for (auto _ : state) {
    for (const RouteId r : routes) net.start(r, 1e6, {});
    sim.run();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// Route computation: one BFS per source, then one route per destination.
void BM_RoutesAllPairs(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  const Topology t = star(n);
  for (auto _ : state) {
    Router router(t);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) benchmark::DoNotOptimize(router.route(1 + i, 1 + j));
    }
  }
  state.SetItemsProcessed(state.iterations() * n * n);
}

// All-to-all among n endpoints: n(n-1) flows in one connected component, one solve when they
// start; completions come in waves of equal rates.
void BM_AllToAll(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  const Topology t = star(n);
  for (auto _ : state) {
    Simulation sim;
    FlowNetwork net(sim, t);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (i != j) net.start(1 + i, 1 + j, 1e6 * (1 + (i + j) % 3), {});
      }
    }
    sim.run();
  }
  state.SetItemsProcessed(state.iterations() * n * (n - 1));
}

BENCHMARK(BM_IndependentFlows)->Arg(1024)->Arg(16384);
BENCHMARK(BM_RoutesAllPairs)->Arg(256)->Arg(1024);
BENCHMARK(BM_AllToAll)->Arg(32)->Arg(128);

}  // namespace
}  // namespace trainsim
