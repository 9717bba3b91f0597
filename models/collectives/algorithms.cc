#include "models/collectives/algorithms.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "engine/check.h"
#include "models/collectives/collective_plan.h"
#include "models/collectives/ring_collective.h"

namespace trainsim::models {

namespace {

int default_ring_channels(const ClusterSpec& cluster) { return std::max(1, cluster.nic.count); }

// A ring step by step (every step a flow), or as a stream when that would be too many flows.
std::unique_ptr<Collective> make_ring(Simulation& simulation, FlowNetwork& network,
                                      const std::vector<VertexId>& vertices, RingOrders rings,
                                      RingSchedule schedule, Time software_latency) {
  const double flows = static_cast<double>(schedule.steps) * vertices.size() * rings.size();
  if (flows > kStepByStepRingFlows) {
    return std::make_unique<StreamingRingCollective>(simulation, network, vertices, rings, schedule,
                                                     software_latency);
  }
  return std::make_unique<RingCollective>(simulation, network, vertices, std::move(rings), schedule,
                                          software_latency);
}

// Rings of a node-rotated family repeat after `distinct` channels (one per local GPU): channels
// beyond that are identical rings, which share links exactly like one ring carrying their
// combined data and throughput. Merge them (fewer flows, same times).
AlgorithmTuning::Channels merged_rings(AlgorithmTuning::Channels channels, int distinct) {
  if (channels.count <= distinct) return channels;
  const double total = channels.total_cap();
  channels.count = std::max(1, distinct);
  channels.rate_cap = total / channels.count;
  return channels;
}

// One ring collective on a group of participants.
struct RingPart {
  std::vector<int> members;  // participant indices, in base ring order
  RingOrders rings;          // over positions in `members`
  RingSchedule schedule;
};

// Rings over the given members (rank ids), rotated inside each node by channel, like
// make_node_rings but for any subset that is node-major with equal members per node.
RingOrders rotated_rings(int groups, int per_group, int channels) {
  return make_node_rings(groups, per_group, channels);
}

// A collective made of phases: each participant runs its group's collective of phase 1, then of
// phase 2, ... (hierarchical all-reduce).
class PhasedCollective final : public Collective {
 public:
  struct Group {
    std::unique_ptr<Collective> collective;
    std::vector<int> members;  // participants, by position in the group
  };
  PhasedCollective(Simulation& sim, int participants, Time software_latency)
      : sim_(sim), software_latency_(software_latency), done_(participants) {}
  void add_phase(std::vector<Group> groups) {
    std::vector<std::pair<int, int>> where(done_.size(), {-1, -1});
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (std::size_t i = 0; i < groups[g].members.size(); ++i) {
        where[groups[g].members[i]] = {static_cast<int>(g), static_cast<int>(i)};
      }
    }
    phases_.push_back(std::move(groups));
    position_.push_back(std::move(where));
  }
  void join(int participant, std::function<void()> done) override {
    done_[participant] = std::move(done);
    sim_.schedule_in(software_latency_, [this, participant] { run_phase(participant, 0); });
  }

 private:
  void run_phase(int participant, std::size_t phase) {
    if (phase == phases_.size()) {
      auto done = std::move(done_[participant]);
      done();
      return;
    }
    const auto [group, index] = position_[phase][participant];
    TRAINSIM_ASSERT(group >= 0, "participant missing from a phase");
    phases_[phase][group].collective->join(
        index, [this, participant, phase] { run_phase(participant, phase + 1); });
  }

  Simulation& sim_;
  Time software_latency_;
  std::vector<std::function<void()>> done_;
  std::vector<std::vector<Group>> phases_;
  std::vector<std::vector<std::pair<int, int>>> position_;
};

std::vector<VertexId> vertices_of(const ClusterTopology& t, const std::vector<int>& members) {
  std::vector<VertexId> v;
  for (const int m : members) v.push_back(t.gpu_vertices[m]);
  return v;
}

// Hierarchical all-reduce: phase groups (members) and their ring schedules.
struct HierarchicalPhase {
  std::vector<std::vector<int>> groups;
  RingSchedule schedule;
  int channels = 1;
  bool inside_node = true;
};

std::vector<HierarchicalPhase> hierarchical_phases(const ClusterSpec& cluster, int nodes,
                                                   double bytes, const AlgorithmTuning& tuning) {
  const int g = cluster.gpus_per_node;
  const double wire = bytes / tuning.efficiency;
  std::vector<HierarchicalPhase> phases(3);
  // Phase 1 and 3: reduce-scatter then all-gather of the whole buffer inside each node, G-1 steps
  // of S / (C G). Phase 2: all-reduce of the node's 1/G shard among the same local index.
  const auto intra = merged_rings(tuning.channels(wire, default_ring_channels(cluster)), g);
  const auto inter = merged_rings(tuning.channels(wire / g, 1), 1);
  const int intra_channels = intra.count;
  const int inter_channels = inter.count;
  for (int p : {0, 2}) {
    phases[p].channels = intra_channels;
    phases[p].schedule =
        RingSchedule{g - 1, wire / (static_cast<double>(intra_channels) * g), intra.rate_cap};
    for (int n = 0; n < nodes; ++n) {
      std::vector<int> members(g);
      std::iota(members.begin(), members.end(), n * g);
      phases[p].groups.push_back(members);
    }
  }
  phases[1].inside_node = false;
  phases[1].channels = inter_channels;
  phases[1].schedule = ring_all_reduce_schedule(wire / g, nodes, inter_channels);
  phases[1].schedule.rate_cap = inter.rate_cap;
  for (int local = 0; local < g; ++local) {
    std::vector<int> members;
    for (int n = 0; n < nodes; ++n) members.push_back(n * g + local);
    phases[1].groups.push_back(members);
  }
  return phases;
}

RingOrders phase_rings(const HierarchicalPhase& phase, std::size_t members) {
  return phase.inside_node ? rotated_rings(1, static_cast<int>(members), phase.channels)
                           : rotated_rings(static_cast<int>(members), 1, phase.channels);
}

// Plans for the plan-based algorithms.
std::shared_ptr<CollectivePlan> build_plan(const ClusterSpec& cluster,
                                           const ClusterTopology& topology,
                                           const CollectiveRequest& request,
                                           const AlgorithmTuning& tuning) {
  const int p = topology.gpu_count();
  const int g = topology.gpus_per_node;
  const int nodes = topology.nodes;
  const double wire = request.bytes / tuning.efficiency;
  const double chunk = cluster.collectives.pipeline_chunk_bytes;
  auto plan = std::make_shared<CollectivePlan>(p);
  auto gpu = [&](int rank) { return topology.gpu_vertices[rank]; };
  auto transfer = [&](int from, int to, double bytes, double cap) {
    PlanTransfer t;
    t.from = gpu(from);
    t.to = gpu(to);
    t.bytes = bytes;
    t.sender = from;
    t.receiver = to;
    t.rate_cap = cap;
    return t;
  };

  switch (request.algorithm) {
    case Algorithm::kRing: {
      // Broadcast / reduce: a pipelined chain per channel along the rotated ring from the root
      // (broadcast) or towards it (reduce).
      const auto ch = merged_rings(tuning.channels(wire, default_ring_channels(cluster)), g);
      const int channels = ch.count;
      const RingOrders rings = make_node_rings(nodes, g, channels);
      for (const auto& ring : rings) {
        const auto root_at = std::find(ring.begin(), ring.end(), request.root) - ring.begin();
        std::vector<int> chain;
        for (int i = 0; i < p; ++i) chain.push_back(ring[(root_at + i) % p]);
        if (request.op == CollectiveOp::kReduce) std::reverse(chain.begin(), chain.end());
        std::vector<PipelinedTransfer> upstream;
        for (int i = 0; i + 1 < p; ++i) {
          const auto hop =
              add_pipelined(*plan, transfer(chain[i], chain[i + 1], wire / channels, ch.rate_cap),
                            chunk, upstream);
          upstream = {hop};
        }
      }
      break;
    }
    case Algorithm::kTree: {
      // Double binary tree: two trees, each moving half the buffer up (reduce) and down
      // (broadcast), pipelined in chunks. Inside a node the GPUs form a chain towards a member GPU
      // (local 0 for tree A, local G-1 for tree B); members form a binary tree over the nodes,
      // heap-ordered, tree B shifted by one node so that leaves of one are inner nodes of the
      // other.
      // Each tree carries half the channels' throughput.
      const double cap = tuning.channels(wire, 2).total_cap() / 2;
      for (int tree = 0; tree < 2; ++tree) {
        auto local_of = [&](int depth_in_chain) {
          return tree == 0 ? depth_in_chain : g - 1 - depth_in_chain;
        };
        auto node_at = [&](int position) { return tree == 0 ? position : (position + 1) % nodes; };
        auto rank_of = [&](int node, int chain_index) { return node * g + local_of(chain_index); };
        // parent[rank] and children[rank] of this tree.
        std::vector<int> parent(p, -1);
        std::vector<std::vector<int>> children(p);
        for (int pos = 0; pos < nodes; ++pos) {
          const int node = node_at(pos);
          for (int c = 1; c < g; ++c) {
            parent[rank_of(node, c)] = rank_of(node, c - 1);
          }
          if (pos > 0) parent[rank_of(node, 0)] = rank_of(node_at((pos - 1) / 2), 0);
        }
        for (int r = 0; r < p; ++r) {
          if (parent[r] >= 0) children[parent[r]].push_back(r);
        }
        // Up: children before parents (deepest first): order ranks by decreasing depth.
        std::vector<int> depth(p, 0);
        std::vector<int> order(p);
        std::iota(order.begin(), order.end(), 0);
        for (int r = 0; r < p; ++r) {
          for (int a = parent[r]; a >= 0; a = parent[a]) ++depth[r];
        }
        std::stable_sort(order.begin(), order.end(),
                         [&](int a, int b) { return depth[a] > depth[b]; });
        const double half = wire / 2;
        // Pipelined, every stream of the tree runs at once and shares links (one stage). Too small
        // to pipeline, transfers run store-and-forward: a rank sends up once its subtree is done
        // (stage = subtree height), and down once its parent has the result (stage by depth).
        const bool pipelined = half > 2 * chunk;
        const int max_depth = *std::max_element(depth.begin(), depth.end());
        std::vector<int> height(p, 0);
        for (const int r : order) {
          if (parent[r] >= 0) height[parent[r]] = std::max(height[parent[r]], height[r] + 1);
        }
        std::vector<PipelinedTransfer> up(p);
        for (const int r : order) {
          if (parent[r] < 0) continue;
          std::vector<PipelinedTransfer> upstream;
          for (const int c : children[r]) upstream.push_back(up[c]);
          PlanTransfer t = transfer(r, parent[r], half, cap);
          t.stage = pipelined ? 0 : static_cast<std::uint32_t>(height[r]);
          up[r] = add_pipelined(*plan, t, chunk, upstream);
        }
        // Down: parents before children.
        std::vector<PipelinedTransfer> down(p);
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          const int r = *it;
          if (parent[r] < 0) continue;
          std::vector<PipelinedTransfer> upstream;
          if (parent[parent[r]] < 0) {
            // The root forwards once the reduction is complete: after all its children's data.
            for (const int c : children[parent[r]]) upstream.push_back(up[c]);
          } else {
            upstream.push_back(down[parent[r]]);
          }
          PlanTransfer t = transfer(parent[r], r, half, cap);
          t.stage = pipelined ? 0 : static_cast<std::uint32_t>(p + max_depth + depth[r]);
          down[r] = add_pipelined(*plan, t, chunk, upstream);
        }
      }
      break;
    }
    case Algorithm::kNvls: {
      // Each GPU pushes its buffer into the switch, which reduces and multicasts the result back:
      // per GPU, S up and S down its NVLink, pipelined in chunks.
      TRAINSIM_ASSERT(nodes == 1 && !topology.nvswitch_vertices.empty(),
                      "NVLS needs one NVSwitch node");
      const VertexId sw = topology.nvswitch_vertices[0];
      const double cap = tuning.channels(wire, 1).total_cap();
      std::vector<PipelinedTransfer> ups;
      for (int r = 0; r < p; ++r) {
        PlanTransfer t = transfer(r, r, wire, cap);
        t.to = sw;
        t.receiver = -1;
        ups.push_back(add_pipelined(*plan, t, chunk, {}));
      }
      for (int r = 0; r < p; ++r) {
        PlanTransfer t = transfer(r, r, wire, cap);
        t.from = sw;
        t.sender = -1;
        add_pipelined(*plan, t, chunk, ups);
      }
      break;
    }
    case Algorithm::kDirect: {
      // Every rank sends bytes / P to every other rank at once, one flow per pair.
      const double cap = tuning.channels(wire / p, 1).total_cap();
      for (int a = 0; a < p; ++a) {
        for (int b = 0; b < p; ++b) {
          if (a != b) plan->add(transfer(a, b, wire / p, cap));
        }
      }
      break;
    }
    case Algorithm::kTwoD: {
      // Phase 1 (inside the node): rank (n, i) hands rank (n, j) the data for local index j on
      // every node, N x bytes / P. Phase 2 (across nodes): rank (n, j) sends rank (m, j) what its
      // node holds for it, G x bytes / P, once all of phase 1 has reached it.
      const double cap = tuning.channels(wire / p, 1).total_cap();
      std::vector<std::vector<TransferId>> into(p);
      for (int a = 0; a < p; ++a) {
        for (int j = 0; j < g; ++j) {
          const int b = (a / g) * g + j;
          if (b == a) continue;
          PlanTransfer t = transfer(a, b, wire / p * nodes, cap);
          into[b].push_back(plan->add(t));
        }
      }
      for (int a = 0; a < p; ++a) {
        for (int m = 0; m < nodes; ++m) {
          const int b = m * g + a % g;
          if (b == a) continue;
          PlanTransfer t = transfer(a, b, wire / p * g, cap);
          t.stage = 1;
          const TransferId id = plan->add(t);
          for (const TransferId before : into[a]) plan->after_arrival(before, id);
        }
      }
      break;
    }
    case Algorithm::kP2p: {
      // nccl-tests sendrecv: every rank sends its buffer to the next and receives from the
      // previous.
      const double cap = tuning.channels(wire, 1).total_cap();
      for (int a = 0; a < p; ++a) {
        if (p > 1) plan->add(transfer(a, (a + 1) % p, wire, cap));
      }
      break;
    }
    case Algorithm::kHierarchical:
      TRAINSIM_ASSERT(false, "hierarchical is not a single plan");
  }
  plan->finalize();
  return plan;
}

bool uses_ring_driver(const CollectiveRequest& r) {
  return r.algorithm == Algorithm::kRing &&
         (r.op == CollectiveOp::kAllReduce || r.op == CollectiveOp::kAllGather ||
          r.op == CollectiveOp::kReduceScatter);
}

RingPart ring_part(const ClusterSpec& cluster, const ClusterTopology& topology,
                   const CollectiveRequest& request, const AlgorithmTuning& tuning) {
  const int p = topology.gpu_count();
  const double wire = request.bytes / tuning.efficiency;
  RingPart part;
  part.members.resize(p);
  std::iota(part.members.begin(), part.members.end(), 0);
  const auto ch =
      merged_rings(tuning.channels(wire, default_ring_channels(cluster)), topology.gpus_per_node);
  const int channels = ch.count;
  part.rings = make_node_rings(topology.nodes, topology.gpus_per_node, channels);
  if (request.op == CollectiveOp::kAllReduce) {
    part.schedule = ring_all_reduce_schedule(wire, p, channels);
  } else {
    part.schedule = RingSchedule{p - 1, wire / (static_cast<double>(channels) * p)};
  }
  part.schedule.rate_cap = ch.rate_cap;
  return part;
}

}  // namespace

bool is_applicable(Algorithm algorithm, CollectiveOp op, const ClusterSpec& cluster, int nodes) {
  switch (algorithm) {
    case Algorithm::kRing:
      return op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
             op == CollectiveOp::kReduceScatter || op == CollectiveOp::kBroadcast ||
             op == CollectiveOp::kReduce;
    case Algorithm::kTree:
      return op == CollectiveOp::kAllReduce;
    case Algorithm::kNvls:
      return op == CollectiveOp::kAllReduce && nodes == 1 &&
             cluster.intra_node.fabric == IntraNodeFabric::kNvSwitch && cluster.intra_node.nvls;
    case Algorithm::kHierarchical:
      return op == CollectiveOp::kAllReduce && nodes > 1 && cluster.gpus_per_node > 1;
    case Algorithm::kDirect:
      return op == CollectiveOp::kAllToAll;
    case Algorithm::kTwoD:
      return op == CollectiveOp::kAllToAll && nodes > 1 && cluster.gpus_per_node > 1;
    case Algorithm::kP2p:
      return op == CollectiveOp::kSendRecv;
  }
  return false;
}

std::vector<Algorithm> applicable_algorithms(CollectiveOp op, const ClusterSpec& cluster,
                                             int nodes) {
  std::vector<Algorithm> out;
  for (const Algorithm a : all_algorithms()) {
    if (is_applicable(a, op, cluster, nodes)) out.push_back(a);
  }
  return out;
}

namespace {

Time analytic_time_with(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                        const CollectiveRequest& request, const AlgorithmTuning& tuning,
                        const std::string& cache_prefix, AnalyticCache* cache) {
  // Ring shapes depend on the group and channel count only; cache them when asked to.
  RingShape uncached;
  auto shape = [&](const std::string& key, const std::vector<VertexId>& vertices,
                   const RingOrders& rings) -> const RingShape& {
    if (!cache) return uncached = ring_shape(router, vertices, rings);
    auto it = cache->rings.find(key);
    if (it == cache->rings.end()) {
      it = cache->rings.emplace(key, ring_shape(router, vertices, rings)).first;
    }
    return it->second;
  };
  if (topology.gpu_count() == 1) return tuning.software_latency;
  if (uses_ring_driver(request)) {
    const RingPart part = ring_part(cluster, topology, request, tuning);
    const std::string key = cache_prefix + "all/" + std::to_string(part.rings.size());
    return tuning.software_latency +
           ring_collective_time(shape(key, topology.gpu_vertices, part.rings), part.schedule);
  }
  if (request.algorithm == Algorithm::kHierarchical) {
    Time total = tuning.software_latency;
    int phase_index = 0;
    for (const auto& phase : hierarchical_phases(cluster, topology.nodes, request.bytes, tuning)) {
      Time slowest = 0;
      int group = 0;
      const RingShape* previous = nullptr;
      Time previous_time = 0;
      for (const auto& members : phase.groups) {
        const std::string key = cache_prefix + "h" + std::to_string(phase_index) + "/" +
                                std::to_string(group++) + "/" + std::to_string(phase.channels);
        const RingShape& group_shape =
            shape(key, vertices_of(topology, members), phase_rings(phase, members.size()));
        // Groups on a symmetric fabric have equal shapes: evaluate each distinct shape once.
        if (!previous || !(previous->channels == group_shape.channels) || !cache) {
          previous_time = ring_collective_time(group_shape, phase.schedule);
        }
        previous = cache ? &group_shape : nullptr;
        slowest = std::max(slowest, previous_time);
      }
      total += slowest;
      ++phase_index;
    }
    return total;
  }
  return tuning.software_latency +
         plan_time(router, *build_plan(cluster, topology, request, tuning));
}

}  // namespace

PickedAlgorithm pick_protocol(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache) {
  TRAINSIM_ASSERT(is_applicable(request.algorithm, request.op, cluster, topology.nodes),
                  "algorithm does not apply");
  const std::vector<Protocol> candidates = request.protocol
                                               ? std::vector<Protocol>{*request.protocol}
                                               : cluster.collectives.protocols(request.algorithm);
  PickedAlgorithm best{request.algorithm, candidates.front(), kTimeMax};
  for (const Protocol p : candidates) {
    // Ring shapes do not depend on the protocol (only on links and channel counts): share them.
    const Time t = analytic_time_with(router, cluster, topology, request,
                                      cluster.collectives.of(request.algorithm, p), "", cache);
    if (t < best.analytic_time) best = {request.algorithm, p, t};
  }
  return best;
}

Time analytic_collective_time(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache) {
  return pick_protocol(router, cluster, topology, request, cache).analytic_time;
}

std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterSpec& cluster,
                                                 const ClusterTopology& topology,
                                                 const CollectiveRequest& request) {
  const Protocol protocol = pick_protocol(network.router(), cluster, topology, request).protocol;
  const AlgorithmTuning tuning = cluster.collectives.of(request.algorithm, protocol);
  if (topology.gpu_count() == 1) {
    return std::make_unique<AnalyticCollective>(simulation, 1, tuning.software_latency);
  }
  if (uses_ring_driver(request)) {
    RingPart part = ring_part(cluster, topology, request, tuning);
    return make_ring(simulation, network, topology.gpu_vertices, std::move(part.rings),
                     part.schedule, tuning.software_latency);
  }
  if (request.algorithm == Algorithm::kHierarchical) {
    auto phased = std::make_unique<PhasedCollective>(simulation, topology.gpu_count(),
                                                     tuning.software_latency);
    for (const auto& phase : hierarchical_phases(cluster, topology.nodes, request.bytes, tuning)) {
      std::vector<PhasedCollective::Group> groups;
      for (const auto& members : phase.groups) {
        groups.push_back(
            {std::make_unique<RingCollective>(simulation, network, vertices_of(topology, members),
                                              phase_rings(phase, members.size()), phase.schedule),
             members});
      }
      phased->add_phase(std::move(groups));
    }
    return phased;
  }
  return std::make_unique<PlanCollective>(
      simulation, network, build_plan(cluster, topology, request, tuning), tuning.software_latency);
}

PickedAlgorithm pick_algorithm(Router& router, const ClusterSpec& cluster,
                               const ClusterTopology& topology, CollectiveOp op, double bytes,
                               AnalyticCache* cache) {
  const auto candidates = applicable_algorithms(op, cluster, topology.nodes);
  TRAINSIM_ASSERT(!candidates.empty(), "no algorithm for this collective");
  PickedAlgorithm best{candidates.front(), Protocol::kSimple, kTimeMax};
  for (const Algorithm a : candidates) {
    CollectiveRequest request;
    request.op = op;
    request.algorithm = a;
    request.bytes = bytes;
    const PickedAlgorithm picked = pick_protocol(router, cluster, topology, request, cache);
    if (picked.analytic_time < best.analytic_time) best = picked;
  }
  return best;
}

Algorithm pick_alltoallv_algorithm(const ClusterSpec& cluster, const ClusterTopology& topology) {
  return topology.nodes > 1 && topology.gpus_per_node > 1 &&
                 cluster.intra_node.fabric == IntraNodeFabric::kNvSwitch
             ? Algorithm::kTwoD
             : Algorithm::kDirect;
}

std::shared_ptr<const CollectivePlan> alltoallv_plan(const ClusterSpec& cluster,
                                                     const ClusterTopology& topology,
                                                     const std::vector<std::vector<double>>& bytes,
                                                     Algorithm algorithm) {
  const int p = topology.gpu_count();
  const int g = topology.gpus_per_node;
  TRAINSIM_ASSERT(static_cast<int>(bytes.size()) == p, "byte matrix does not match the GPUs");
  TRAINSIM_ASSERT(algorithm == Algorithm::kDirect || algorithm == Algorithm::kTwoD,
                  "all-to-all runs direct or 2D");
  const AlgorithmTuning tuning = cluster.collectives.of(Algorithm::kDirect);
  // Bytes per (sender, receiver) flow, row-major.
  std::vector<double> flows(static_cast<std::size_t>(p) * p, 0.0);
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      const double v = bytes[a][b];
      if (a == b || v <= 0.0) continue;
      if (algorithm == Algorithm::kDirect || a / g == b / g) {
        flows[static_cast<std::size_t>(a) * p + b] += v;
      } else {
        const int proxy = (a / g) * g + b % g;
        if (proxy != a) flows[static_cast<std::size_t>(a) * p + proxy] += v;
        flows[static_cast<std::size_t>(proxy) * p + b] += v;
      }
    }
  }
  const double largest = *std::max_element(flows.begin(), flows.end());
  const double cap = tuning.channels(largest / tuning.efficiency, 1).total_cap();
  auto plan = std::make_shared<CollectivePlan>(p);
  for (int a = 0; a < p; ++a) {
    for (int b = 0; b < p; ++b) {
      const double v = flows[static_cast<std::size_t>(a) * p + b];
      if (v <= 0.0) continue;
      PlanTransfer t;
      t.from = topology.gpu_vertices[a];
      t.to = topology.gpu_vertices[b];
      t.bytes = v / tuning.efficiency;
      t.sender = a;
      t.receiver = b;
      t.rate_cap = cap;
      plan->add(t);
    }
  }
  plan->finalize();
  return plan;
}

std::unique_ptr<Collective> make_alltoallv(Simulation& simulation, FlowNetwork& network,
                                           const ClusterSpec& cluster,
                                           const ClusterTopology& topology,
                                           const std::vector<std::vector<double>>& bytes,
                                           Algorithm algorithm) {
  return std::make_unique<PlanCollective>(
      simulation, network, alltoallv_plan(cluster, topology, bytes, algorithm),
      cluster.collectives.of(Algorithm::kDirect).software_latency);
}

Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    const std::vector<std::vector<double>>& bytes, Algorithm algorithm) {
  return cluster.collectives.of(Algorithm::kDirect).software_latency +
         plan_time(router, *alltoallv_plan(cluster, topology, bytes, algorithm));
}

namespace {

// One ring over the group: GPUs of different nodes share no links, and repeated rotations of a
// single ring merge into one (merged_rings).
std::pair<RingOrders, RingSchedule> group_ring(const ClusterSpec& cluster, std::size_t members,
                                               double bytes) {
  const AlgorithmTuning tuning = cluster.collectives.of(Algorithm::kRing);
  const double wire = bytes / tuning.efficiency;
  const auto ch = merged_rings(tuning.channels(wire, default_ring_channels(cluster)), 1);
  RingOrders rings = make_node_rings(static_cast<int>(members), 1, ch.count);
  RingSchedule schedule = ring_all_reduce_schedule(wire, static_cast<int>(members), ch.count);
  schedule.rate_cap = ch.rate_cap;
  return {rings, schedule};
}

}  // namespace

std::unique_ptr<Collective> make_group_all_reduce(Simulation& simulation, FlowNetwork& network,
                                                  const ClusterSpec& cluster,
                                                  const std::vector<VertexId>& vertices,
                                                  double bytes) {
  auto [rings, schedule] = group_ring(cluster, vertices.size(), bytes);
  return make_ring(simulation, network, vertices, std::move(rings), schedule,
                   cluster.collectives.of(Algorithm::kRing).software_latency);
}

Time group_all_reduce_time(Router& router, const ClusterSpec& cluster,
                           const std::vector<VertexId>& vertices, double bytes) {
  const auto [rings, schedule] = group_ring(cluster, vertices.size(), bytes);
  return cluster.collectives.of(Algorithm::kRing).software_latency +
         ring_collective_time(router, vertices, rings, schedule);
}

}  // namespace trainsim::models
