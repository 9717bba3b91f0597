// Collectives on the modelled fabric, structured as NCCL runs them (nccl_tuner.h decides which
// algorithm and protocol, and how many channels): each operation is lowered to pipelined streams,
// and evaluated in two forms that agree exactly when nothing else contends: as flows on the
// FlowNetwork (contention with other traffic is real), or analytically (the same streams sharing
// the links by max-min fairness, on their own).
//
// A stream is one channel's data path: a ring channel's 2(P-1) steps around all P ranks, a tree
// channel's chains and tree edges, a GPU's NVLS traffic to and from the switch. NCCL forwards the
// data of a step as its slices arrive, so once the pipeline is full every hop of a channel moves
// data at the same rate, that of its slowest hop: a stream is one flow across the links of all its
// hops (a link its hops cross twice counts twice), carrying what each hop carries, with the
// channel's throughput cap (NCCL's per-channel limits). The time of an operation is then
//   host launch + NCCL's latency (per-hop latencies by link type and protocol, counted along the
//   data path: it grows with the ring's length, logarithmically for trees) + the time the streams
//   need at their max-min rates.
// All-to-all and send/recv are NCCL's grouped point-to-point operations: one flow per
// (sender, receiver) pair, through the GPU on the destination's rail across nodes (PXN), with the
// channels NCCL gives a peer and their throughput cap.
//
// Participants are all GPUs of the cluster in rank order (node-major). Sizes follow nccl-tests:
// `bytes` is the larger of one rank's send and receive buffers (collective_op.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/flow_network.h"
#include "models/collectives/collective.h"
#include "models/collectives/nccl_tuner.h"
#include "models/hardware/cluster_topology.h"
#include "models/spec/byte_matrix.h"
#include "models/spec/cluster_spec.h"
#include "models/spec/collective_op.h"
#include "models/spec/collective_tuning.h"

namespace trainsim::models {

struct CollectiveRequest {
  CollectiveRequest() = default;
  CollectiveRequest(CollectiveOp op, Algorithm algorithm, double bytes, int root = 0)
      : op(op), algorithm(algorithm), bytes(bytes), root(root) {}

  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  double bytes = 0.0;
  int root = 0;  // broadcast and reduce
  // The protocol to use; unset: the one NCCL's tuner picks for this algorithm and size.
  std::optional<Protocol> protocol;
  // GPUs one host thread drives (nccl-tests -g): their launches add up.
  int gpus_per_thread = 1;
};

// Algorithms that can run `op` on `nodes` nodes of this cluster (NCCL's enable rules, the
// cluster's hardware; NCCL_ALGO is not applied here).
std::vector<Algorithm> applicable_algorithms(CollectiveOp op, const ClusterSpec& cluster,
                                             int nodes);
bool is_applicable(Algorithm algorithm, CollectiveOp op, const ClusterSpec& cluster, int nodes);

// Size-independent work reused over a size sweep: NCCL's view of the communicator and the
// lowered streams per shape. Valid for one (cluster, topology, router) triple.
struct LoweredCollective;
struct AnalyticCache {
  std::optional<NcclComm> comm;
  std::map<std::string, double> seconds_per_byte;
  // The streams behind each entry of seconds_per_byte, until prepare_flow_collective() takes
  // them to run as flows without lowering the same collective again.
  std::map<std::string, std::shared_ptr<const LoweredCollective>> lowered;
};

// Analytic time of the request, all participants joining at once.
Time analytic_collective_time(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache = nullptr);

// The request as flows. Objects referenced must outlive the simulation's run.
std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 const ClusterSpec& cluster,
                                                 const ClusterTopology& topology,
                                                 const CollectiveRequest& request);
// The same in two parts, for a request that runs many times (a training step's all-reduce of the
// same bytes, step after step): the request lowered once (NCCL's streams and their routes on the
// network's router, or its point-to-point plan), then as many collectives as wanted from it, on
// any network that shares that router.
struct FlowCollectiveShape;
// `cache`: the analytic cache of the same router, whose lowered streams serve when it has them.
std::shared_ptr<const FlowCollectiveShape> prepare_flow_collective(
    FlowNetwork& network, const ClusterSpec& cluster, const ClusterTopology& topology,
    const CollectiveRequest& request, AnalyticCache* cache = nullptr);
std::unique_ptr<Collective> make_flow_collective(Simulation& simulation, FlowNetwork& network,
                                                 std::shared_ptr<const FlowCollectiveShape> shape);

struct PickedAlgorithm {
  Algorithm algorithm;
  Protocol protocol;
  Time analytic_time;
};

// The protocol NCCL's tuner picks for the request's algorithm (unless it names one), and the
// analytic time (0 without `with_time`: a caller that simulates the flows does not need it).
PickedAlgorithm pick_protocol(Router& router, const ClusterSpec& cluster,
                              const ClusterTopology& topology, const CollectiveRequest& request,
                              AnalyticCache* cache = nullptr, bool with_time = true);
// What NCCL runs for `op` of `bytes` (its tuner's choice among the enabled algorithms and
// protocols, under the cluster's NCCL_ALGO / NCCL_PROTO), and its analytic time (likewise).
PickedAlgorithm pick_algorithm(Router& router, const ClusterSpec& cluster,
                               const ClusterTopology& topology, CollectiveOp op, double bytes,
                               AnalyticCache* cache = nullptr, int gpus_per_thread = 1,
                               bool with_time = true);

// A byte matrix as an all-to-all reads it: what src sends dst is matrix(src, dst), or
// matrix(dst, src) when `transposed` (the backward all-to-all sends the forward's bytes the other
// way, without a transposed copy). Refers to the matrix; it must outlive the view.
class ByteMatrixView {
 public:
  ByteMatrixView(const ByteMatrix& matrix, bool transposed = false)  // NOLINT
      : matrix_(&matrix), transposed_(transposed) {}
  int size() const { return matrix_->size(); }
  // The matrix as stored: its row i holds (i, j), or (j, i) when transposed.
  bool transposed() const { return transposed_; }
  const ByteMatrix& matrix() const { return *matrix_; }

 private:
  const ByteMatrix* matrix_;
  bool transposed_;
};

// All-to-all with uneven sizes: bytes(src, dst) over all GPUs of the topology, as grouped
// point-to-point. kDirect: one flow per pair, each GPU on its own NIC. kTwoD: across nodes
// through the peer on the destination's rail (PXN): data for GPU (m, j) leaves node n from GPU
// (n, j), which the sender reaches over the node's fabric; the two legs are pipelined
// (concurrent flows), aggregated per (sender, proxy) and (proxy, destination).
// pick_alltoallv_algorithm() chooses what NCCL does (PXN on multi-node NVSwitch clusters).
// `per_node`: the bytes stay inside nodes and each node runs them on a communicator of its own
// GPUs (as many at once as there are nodes), whose channels all serve NVLink peers.
Algorithm pick_alltoallv_algorithm(const ClusterSpec& cluster, const ClusterTopology& topology);
std::shared_ptr<const class CollectivePlan> alltoallv_plan(const ClusterSpec& cluster,
                                                           const ClusterTopology& topology,
                                                           ByteMatrixView bytes,
                                                           Algorithm algorithm = Algorithm::kDirect,
                                                           bool per_node = false);
std::unique_ptr<Collective> make_alltoallv(Simulation& simulation, FlowNetwork& network,
                                           const ClusterSpec& cluster,
                                           const ClusterTopology& topology, ByteMatrixView bytes,
                                           Algorithm algorithm = Algorithm::kDirect,
                                           bool per_node = false);
Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    ByteMatrixView bytes, Algorithm algorithm = Algorithm::kDirect,
                    bool per_node = false);
// The same from a plan alltoallv_plan() made (for `per_node` as given there), so one plan can
// serve every all-to-all of the same bytes, and from its routes on the network's router
// (route_plan(); looked up when null).
std::unique_ptr<Collective> make_alltoallv(
    Simulation& simulation, FlowNetwork& network, const ClusterSpec& cluster,
    const ClusterTopology& topology, std::shared_ptr<const class CollectivePlan> plan,
    bool per_node, std::shared_ptr<const BigVector<RouteId>> routes = nullptr,
    std::shared_ptr<const struct PlanBundles> bundles = nullptr);
Time alltoallv_time(Router& router, const ClusterSpec& cluster, const ClusterTopology& topology,
                    const class CollectivePlan& plan, bool per_node,
                    const BigVector<RouteId>* routes = nullptr);

// Ring all-reduce of `bytes` among some GPUs (`vertices`, in ring order, one per node: an NCCL
// communicator of one GPU per node), as NCCL runs it.
std::unique_ptr<Collective> make_group_all_reduce(Simulation& simulation, FlowNetwork& network,
                                                  const ClusterSpec& cluster,
                                                  const std::vector<VertexId>& vertices,
                                                  double bytes);
Time group_all_reduce_time(Router& router, const ClusterSpec& cluster,
                           const std::vector<VertexId>& vertices, double bytes);

// The lowering itself, for tests and tools: streams (each a chain of hops, as explicit links)
// in stages, and the fixed latency.
struct Stream {
  std::vector<LinkId> links;    // every hop's links, in order; repeats load a link again
  double bytes_per_byte = 0.0;  // bytes each hop carries per byte of the operation
  double rate_cap = FlowNetwork::kUncapped;  // bytes/s
};
struct LoweredCollective {
  std::vector<std::vector<Stream>> stages;  // a stage starts once the previous one has finished
  Time latency = 0;                         // host launch + NCCL's latency, paid once
};
LoweredCollective lower_collective(Router& router, const ClusterSpec& cluster,
                                   const ClusterTopology& topology, const NcclComm& comm,
                                   const CollectiveRequest& request, Protocol protocol);
// Seconds the streams of one stage need for `bytes`, sharing links by max-min fairness, each
// finishing frees its share for the others (water filling).
double stage_seconds(const Topology& topology, const std::vector<Stream>& streams, double bytes);

}  // namespace trainsim::models
