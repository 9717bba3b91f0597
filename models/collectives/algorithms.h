// Every collective operation lowered to transfers on a cluster's fabric, by algorithm, in two
// forms that agree when nothing else contends: a Collective running as flows on the FlowNetwork,
// and an analytic time. A picker chooses, per operation and size, the algorithm with the smallest
// analytic time, the way NCCL's tuning model picks among its algorithms (latency per algorithm plus
// per-hop latencies, bandwidth per algorithm).
//
// Participants are all GPUs of the cluster, in rank order (node-major). Sizes follow nccl-tests:
// `bytes` is the larger of one rank's send and receive buffers (collective_op.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/flow_network.h"
#include "models/collectives/collective.h"
#include "models/collectives/collective_op.h"
#include "models/collectives/collective_tuning.h"
#include "models/collectives/ring_collective.h"
#include "models/hardware/cluster_spec.h"
#include "models/hardware/cluster_topology.h"

namespace trainsim::models {

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  double bytes = 0.0;
  int root = 0;  // broadcast and reduce
  // The protocol to use; unset: the algorithm's fastest configured protocol for this size.
  std::optional<Protocol> protocol;
};

// Algorithms that can run `op` on `nodes` nodes of this cluster, in the order the picker tries
// them (the first wins ties).
std::vector<Algorithm> applicable_algorithms(CollectiveOp op, const ClusterSpec& cluster,
                                             int nodes);
bool is_applicable(Algorithm algorithm, CollectiveOp op, const ClusterSpec& cluster, int nodes);

// Size-independent parts of analytic times (ring shapes), reused over a size sweep. Valid for
// one (cluster, topology, router) triple.
struct AnalyticCache {
  std::map<std::string, RingShape> rings;
};

// Analytic time of the request, software latency included, all participants joining at once.
Time analytic_collective_time(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache = nullptr);

// The request as flows. Objects referenced must outlive the simulation's run.
std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterSpec& cluster,
                                                 const ClusterTopology& topology,
                                                 const CollectiveRequest& request);

// The applicable algorithm with the smallest analytic time for `op` of `bytes`, and that time.
struct PickedAlgorithm {
  Algorithm algorithm;
  Protocol protocol;
  Time analytic_time;
};

// The algorithm's fastest configured protocol for the request, and its analytic time.
PickedAlgorithm pick_protocol(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache = nullptr);
PickedAlgorithm pick_algorithm(Router& router, const ClusterSpec& cluster,
                               const ClusterTopology& topology, CollectiveOp op, double bytes,
                               AnalyticCache* cache = nullptr);

// All-to-all with uneven sizes: bytes[src][dst] over all GPUs of the topology, with the direct
// algorithm's tuning (software latency, efficiency, channel caps). kDirect: one flow per pair.
// kTwoD: as NCCL sends across nodes through the peer on the destination's rail (PXN): data for
// GPU (m, j) leaves node n from GPU (n, j), which the sender reaches over the node's fabric; the
// two legs are pipelined (concurrent flows), aggregated per (sender, proxy) and (proxy,
// destination). pick_alltoallv_algorithm() chooses kTwoD on multi-node NVSwitch clusters.
Algorithm pick_alltoallv_algorithm(const ClusterSpec& cluster, const ClusterTopology& topology);
std::shared_ptr<const class CollectivePlan> alltoallv_plan(
    const ClusterSpec& cluster, const ClusterTopology& topology,
    const std::vector<std::vector<double>>& bytes, Algorithm algorithm = Algorithm::kDirect);
std::unique_ptr<Collective> make_alltoallv(Simulation& simulation, FlowNetwork& network,
                                           const ClusterSpec& cluster,
                                           const ClusterTopology& topology,
                                           const std::vector<std::vector<double>>& bytes,
                                           Algorithm algorithm = Algorithm::kDirect);
Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    const std::vector<std::vector<double>>& bytes,
                    Algorithm algorithm = Algorithm::kDirect);

// Ring all-reduce of `bytes` among some GPUs (`vertices`, in ring order), with the ring's tuning.
std::unique_ptr<Collective> make_group_all_reduce(Simulation& simulation, FlowNetwork& network,
                                                  const ClusterSpec& cluster,
                                                  const std::vector<VertexId>& vertices,
                                                  double bytes);
Time group_all_reduce_time(Router& router, const ClusterSpec& cluster,
                           const std::vector<VertexId>& vertices, double bytes);

}  // namespace trainsim::models
