#include "models/sharding/torchrec_estimator.h"

#include <algorithm>

namespace trainsim::models {

namespace {

// constants.py; bandwidths in GiB/s.
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kHbmMemBw = 897 * kGiB;
constexpr double kIntraNodeBandwidth = 600 * kGiB;
constexpr double kCrossNodeBandwidth = 12.5 * kGiB;
constexpr double kHbmToDdrMemBw = 32 * kGiB;
constexpr double kIdBytes = 8;                     // BIGINT_DTYPE
constexpr double kMinReadElements = 32;            // max(D, 32)
constexpr double kBwdComputeMultiplier = 2;        // BWD_COMPUTE_MULTIPLIER
constexpr double kBatchedCopyPerfFactor = 2.455;   // BATCHED_COPY_PERF_FACTOR
constexpr double kDpElementwisePerfFactor = 9.22;  // DP_ELEMENTWISE_KERNELS_PERF_FACTOR

// FULL_BLOCK_EMB_DIM 128, HALF_BLOCK_PENALTY 1.15, QUARTER_BLOCK_PENALTY 1.75.
double block_penalty(double dim) { return dim >= 128 ? 1.0 : dim >= 64 ? 1.15 : 1.75; }

// Each of `holders` gets one shard's estimate.
void add_to(std::vector<TorchrecPerf>& ranks, const std::vector<int>& holders,
            const TorchrecPerf& perf) {
  for (const int r : holders) {
    ranks[r].fwd_compute += perf.fwd_compute;
    ranks[r].fwd_comms += perf.fwd_comms;
    ranks[r].bwd_compute += perf.bwd_compute;
    ranks[r].bwd_comms += perf.bwd_comms;
    ranks[r].prefetch += perf.prefetch;
  }
}

}  // namespace

TorchrecTopology TorchrecTopology::defaults() {
  return {kHbmMemBw, kIntraNodeBandwidth, kCrossNodeBandwidth, kHbmToDdrMemBw};
}

TorchrecTopology TorchrecTopology::of(const ShardingContext& context) {
  // What the context does not give (a node without NICs, say) stays TorchRec's default.
  const TorchrecTopology d = defaults();
  auto or_default = [](double v, double fallback) { return v > 0 ? v : fallback; };
  return {or_default(context.gpu.hbm_bandwidth_bytes_per_s, d.hbm_bytes_per_s),
          or_default(context.local_bytes_per_s, d.intra_node_bytes_per_s),
          or_default(context.network_bytes_per_s, d.cross_node_bytes_per_s),
          or_default(context.host_link_bytes_per_s, d.hbm_to_ddr_bytes_per_s)};
}

std::vector<TorchrecPerf> torchrec_estimate(const ShardingPlan& plan,
                                            const ShardingContext& context,
                                            const TorchrecTopology& topo) {
  const RecsysModelSpec& model = *context.model;
  const int world = plan.group_size > 0 ? plan.group_size : context.world;
  const int local = std::min(world, context.gpus_per_node);
  const double b = context.batch_per_gpu;
  const double a2a_bytes = dtype_bytes(context.communication_dtype);
  // kernel_bw_lookup on CUDA: FUSED at HBM; FUSED_UVM at HBM_TO_DDR / 10; FUSED_UVM_CACHING at
  // (ratio HBM + (1 - ratio) HBM_TO_DDR) / 10, the ratio its cache load factor (costed as FUSED
  // only under a prefetch pipeline, which trainsim does not model for caches).
  auto device_bw_of = [&topo](const EmbeddingTableSpec& t) {
    switch (t.storage) {
      case EmbeddingStorage::kHbm:
        break;
      case EmbeddingStorage::kUvm:
        return topo.hbm_to_ddr_bytes_per_s / 10;
      case EmbeddingStorage::kUvmCaching:
        return (t.cache_load_factor * topo.hbm_bytes_per_s +
                (1 - t.cache_load_factor) * topo.hbm_to_ddr_bytes_per_s) /
               10;
    }
    return topo.hbm_bytes_per_s;
  };
  // A cached table's prefetch: expected misses (miss rate x distinct ids of the `lookups`) x D x
  // s over HBM_TO_DDR, per shard that sees `lookups`.
  auto prefetch_of = [&topo](const EmbeddingTableSpec& t, double lookups, double dim) {
    if (t.storage != EmbeddingStorage::kUvmCaching) return 0.0;
    const double unique = t.access.expected_unique(lookups);
    const double miss = t.access.lru_miss_ratio(lookups, t.cache_load_factor * t.rows, 1, t.rows);
    return miss * unique * dim * dtype_bytes(t.dtype) / topo.hbm_to_ddr_bytes_per_s;
  };
  // BasicCommsBandwidths: inside a node while the collective's ranks fit in one, else across;
  // all-reduce across nodes at one NIC per GPU of the node.
  auto comm_bw = [&](int ranks) {
    return ranks <= context.gpus_per_node ? topo.intra_node_bytes_per_s
                                          : topo.cross_node_bytes_per_s;
  };
  const double all_reduce_bw = topo.cross_node_bytes_per_s * local;
  std::vector<TorchrecPerf> ranks(world);
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const TablePlacement& p = plan.tables[i];
    EmbeddingTableSpec moved;
    const EmbeddingTableSpec& t = placed_table(model.tables[i], p, moved);
    const double s = dtype_bytes(t.dtype);
    const double inputs = t.pooling * b;
    const double outputs = t.sequence ? inputs : b;
    const auto shards = static_cast<double>(p.ranks.size());
    const double device_bw = device_bw_of(t);
    switch (p.strategy) {
      case ShardingStrategy::kTableWise:
      case ShardingStrategy::kColumnWise:
      case ShardingStrategy::kTableColumnWise: {
        // One rank serves every rank's batch for its columns (TW, CW, TWCW).
        const double dim = p.strategy == ShardingStrategy::kTableWise ? t.dim : t.dim / shards;
        TorchrecPerf perf;
        perf.fwd_compute =
            (inputs * world * kIdBytes + inputs * world * std::max(dim, kMinReadElements) * s +
             outputs * world * dim * a2a_bytes) *
            block_penalty(dim) / device_bw;
        perf.fwd_comms = outputs * world * dim * a2a_bytes / comm_bw(world);
        perf.bwd_compute = kBwdComputeMultiplier * perf.fwd_compute;
        perf.bwd_comms = perf.fwd_comms;
        perf.prefetch = prefetch_of(t, inputs * world, dim);
        add_to(ranks, p.ranks, perf);
        break;
      }
      case ShardingStrategy::kGridShard: {
        // A TWRW estimate per column block (one per node holding the table), of its columns.
        const double blocks = std::max(1.0, shards / local);
        const double dim = t.dim / blocks;
        const double out_bytes = outputs * world * dim * a2a_bytes;
        const double hosts = static_cast<double>(world) / local;
        TorchrecPerf perf;
        perf.fwd_compute =
            (inputs * world / local * kIdBytes +
             inputs * world / local * std::max(dim, kMinReadElements) * s + out_bytes) /
            device_bw;
        perf.fwd_comms = out_bytes / topo.intra_node_bytes_per_s +
                         outputs * hosts * dim * a2a_bytes / comm_bw(static_cast<int>(hosts));
        perf.bwd_compute = kBwdComputeMultiplier * perf.fwd_compute +
                           out_bytes * kBatchedCopyPerfFactor / device_bw;
        perf.bwd_comms = perf.fwd_comms;
        perf.prefetch = prefetch_of(t, inputs * world, dim) / local;
        add_to(ranks, p.ranks, perf);
        break;
      }
      case ShardingStrategy::kRowWise:
      case ShardingStrategy::kTableRowWise: {
        // Each of the shards sees its share of every rank's ids (uniform), returns partial sums
        // for every sample: reduce-scattered over the shards' ranks (TWRW: inside the node, then
        // an all-to-all over the nodes), the gradients all-gathered back, with a batched copy.
        const bool twrw = p.strategy == ShardingStrategy::kTableRowWise;
        const double out_bytes = outputs * world * t.dim * a2a_bytes;
        TorchrecPerf perf;
        perf.fwd_compute =
            (inputs * world / shards * kIdBytes +
             inputs * world / shards * std::max<double>(t.dim, kMinReadElements) * s + out_bytes) /
            device_bw;
        const double hosts = static_cast<double>(world) / local;
        // TWRW's inter-host all-to-all is over one rank per host, and TorchRec picks its
        // bandwidth by that rank count (intra-node while there are no more hosts than GPUs in
        // one), as written.
        perf.fwd_comms =
            twrw ? out_bytes / topo.intra_node_bytes_per_s +
                       outputs * hosts * t.dim * a2a_bytes / comm_bw(static_cast<int>(hosts))
                 : out_bytes / comm_bw(world);
        perf.bwd_compute = kBwdComputeMultiplier * perf.fwd_compute +
                           out_bytes * kBatchedCopyPerfFactor / device_bw;
        perf.bwd_comms = perf.fwd_comms;
        // The prefetch over the shards: /W for RW, /Wl for TWRW.
        perf.prefetch = prefetch_of(t, inputs * world, t.dim) / shards;
        add_to(ranks, p.ranks, perf);
        break;
      }
      case ShardingStrategy::kDataParallel: {
        // Every rank looks up its own batch; the table's gradients are all-reduced, and the
        // optimizer runs elementwise over the whole table.
        const double table_bytes = t.rows * t.dim * s;
        const double n = std::min(static_cast<double>(world) / local, 2.0);
        double reduce = table_bytes * (2 * n - 1) / n / all_reduce_bw;
        if (world > 2 * local) reduce *= 2;
        TorchrecPerf perf;
        perf.fwd_compute =
            (inputs * kIdBytes + inputs * t.dim * s + outputs * t.dim * s) / device_bw;
        perf.bwd_compute = kBwdComputeMultiplier * perf.fwd_compute +
                           table_bytes * kDpElementwisePerfFactor / device_bw;
        perf.bwd_comms = reduce;
        perf.prefetch = prefetch_of(t, inputs, t.dim);
        add_to(ranks, p.ranks, perf);
        break;
      }
    }
  }
  return ranks;
}

double torchrec_rating(const ShardingPlan& plan, const ShardingContext& context,
                       const TorchrecTopology& topology) {
  double most = 0;
  for (const TorchrecPerf& p : torchrec_estimate(plan, context, topology)) {
    most = std::max(most, p.total());
  }
  return most;
}

}  // namespace trainsim::models
