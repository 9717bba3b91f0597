// The scale scenario: flow-level simulation of (a) a flat ring all-reduce over every GPU of a
// large cluster, every ring step as real flows, and (b) an all-to-all with one flow per GPU pair.
// Prints simulated time, flow and event counts, wall time and peak memory.
//
//   scale_scenario ring     [--cluster FILE] [--bytes B] [--whole]
//   scale_scenario alltoall [--cluster FILE] [--bytes B] [--whole]
//
// The ring runs one node's positions when the ring repeats node after node, and the all-to-all
// one node's messages when the exchange does, with the same times as the whole ring or exchange
// (Collective::join_all); `--whole` runs every position or message.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "engine/flow_network.h"
#include "models/collectives/flat_collectives.h"
#include "models/collectives/ring_collective.h"
#include "models/config/cluster_config.h"
#include "models/hardware/cluster_topology.h"

namespace {

using namespace trainsim;
using namespace trainsim::models;

// Peak resident memory of this process (Linux), in MiB.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0.0;
}

int usage() {
  std::cerr << "usage: scale_scenario ring|alltoall [--cluster FILE] [--bytes BYTES] [--whole]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string scenario = argv[1];
  std::string cluster_path = std::string(TRAINSIM_SOURCE_DIR) + "/bench/configs/scale-128x8.yaml";
  double bytes = scenario == "ring" ? 256.0 * kMiB : 64.0 * kMiB;
  bool whole = false;
  for (int i = 2; i < argc; i += 2) {
    if (std::strcmp(argv[i], "--whole") == 0) {
      whole = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) return usage();
    if (std::strcmp(argv[i], "--cluster") == 0) {
      cluster_path = argv[i + 1];
    } else if (std::strcmp(argv[i], "--bytes") == 0) {
      bytes = std::stod(argv[i + 1]);
    } else {
      return usage();
    }
  }
  if (scenario != "ring" && scenario != "alltoall") return usage();

  const auto wall_start = std::chrono::steady_clock::now();
  ClusterSpec spec;
  try {
    spec = load_cluster_spec(cluster_path);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  const ClusterTopology cluster = build_cluster_topology(spec, spec.nodes);
  Simulation sim;
  FlowNetwork network(sim, cluster.topology);
  const int gpus = cluster.gpu_count();
  int done = 0;

  std::unique_ptr<RingCollective> ring;
  std::unique_ptr<Collective> exchange;
  if (scenario == "ring") {
    ring = std::make_unique<RingCollective>(sim, network, cluster.gpu_vertices,
                                            make_node_rings(spec.nodes, spec.gpus_per_node, 1),
                                            ring_all_reduce_schedule(bytes, gpus, 1));
    ring->join_all(
        gpus, [&done](int) { ++done; }, /*alone=*/!whole);
  } else {
    const double per_pair = bytes / (gpus - 1);
    ByteMatrix matrix(gpus);
    for (int src = 0; src < gpus; ++src) {
      for (int dst = 0; dst < gpus; ++dst) {
        if (src != dst) matrix.add(src, dst, per_pair);
      }
    }
    matrix.consolidate();
    exchange = make_flat_alltoallv(sim, network, cluster, std::move(matrix));
    exchange->join_all(
        gpus, [&done](int) { ++done; }, /*alone=*/!whole);
  }
  const auto run_start = std::chrono::steady_clock::now();
  sim.run();
  const auto wall_end = std::chrono::steady_clock::now();

  const auto& c = network.counters();
  const double wall = std::chrono::duration<double>(wall_end - wall_start).count();
  const double run = std::chrono::duration<double>(wall_end - run_start).count();
  std::printf("scenario            %s\n", scenario.c_str());
  std::printf("cluster             %s (%d GPUs)\n", spec.name.c_str(), gpus);
  std::printf("bytes               %.0f\n", bytes);
  std::printf("simulated time      %.6f ms\n", to_milliseconds(sim.now()));
  if (ring) {
    std::printf("ring positions      %d of %d per channel simulated\n", ring->simulated_positions(),
                gpus);
  }
  std::printf("flows               %llu (peak %llu concurrent)\n",
              static_cast<unsigned long long>(c.flows_started),
              static_cast<unsigned long long>(c.max_active_flows));
  std::printf("max-min solves      %llu (%llu flows solved, %llu rate updates)\n",
              static_cast<unsigned long long>(c.solves),
              static_cast<unsigned long long>(c.flows_solved),
              static_cast<unsigned long long>(c.flows_rerated));
  std::printf("events              %llu\n",
              static_cast<unsigned long long>(sim.events_processed()));
  std::printf("ranks done          %d\n", done);
  std::printf("wall time           %.3f s (simulation %.3f s)\n", wall, run);
  std::printf("peak memory         %.1f MiB\n", peak_rss_mib());
  return 0;
}
