#include "models/sharding/sharding_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <span>

#include "engine/check.h"
#include "models/sharding/embedding_kernels.h"
#include "models/sharding/hugectr_planner.h"
#include "models/spec/config_error.h"

namespace trainsim::models {

namespace {

constexpr double kIdBytes = kEmbeddingIdBytes;

struct TableCost {
  double lookups = 0, unique = 0;
};

}  // namespace

double ShardCosts::imbalance() const {
  double most = 0.0, total = 0.0;
  for (const RankLoad& r : ranks) {
    most = std::max(most, r.lookups);
    total += r.lookups;
  }
  return total > 0 ? most / (total / static_cast<double>(ranks.size())) : 1.0;
}

namespace {

// One sharding group's per-rank loads and all-to-all bytes, summed table by table (every group
// is alike: the replicas of 2D sharding hold the same shards).
struct GroupCosts {
  GroupCosts(const ShardingContext& c, int group_size, int group_count)
      : context(c),
        model(*c.model),
        group(group_size),
        groups(group_count),
        matrices(!c.loads_only),
        batch(c.batch_per_gpu),
        communication_bytes(dtype_bytes(c.communication_dtype)),
        sync_bytes(dtype_bytes(c.sync_dtype)),
        local(group_size),
        ids(matrices ? group_size : 0),
        embeddings(matrices ? group_size : 0),
        replica_unique_bytes(group_size, 0.0),
        gpus_per_node(std::max(1, c.gpus_per_node)),
        node_of(group_size) {
    // (Counted rather than divided: the moves below ask for millions of GPUs' nodes.)
    for (int r = 0, node = 0, local_index = 0; r < group_size; ++r) {
      node_of[r] = node;
      if (++local_index == gpus_per_node) {
        local_index = 0;
        ++node;
      }
    }
  }
  // Local index of GPU r in its node.
  int local_of(int r) const { return r - node_of[r] * gpus_per_node; }

  const ShardingContext& context;
  const RecsysModelSpec& model;
  const int group, groups;
  const bool matrices;
  const double batch, communication_bytes, sync_bytes;
  std::vector<RankLoad> local;
  ByteMatrix ids, embeddings;  // (src, dst) inside the group
  // Reduced inside nodes before `embeddings`: sized by the first table-row-wise table (it stays
  // empty without one).
  ByteMatrix partials;
  std::vector<double> replica_unique_bytes;  // gradients synchronised across replicas
  double global_sync_bytes = 0;              // all-reduced over all GPUs
  const int gpus_per_node;
  std::vector<int> node_of;  // per GPU of the group
};

// One table's lookups, updates, memory and all-to-all bytes on the GPUs of its placement.
class TableCosts {
 public:
  TableCosts(GroupCosts& g, const EmbeddingTableSpec& t, const TablePlacement& p)
      : g_(g),
        t_(t),
        p_(p),
        hot_(std::min(p.hot_rows, t.rows)),
        // (Not below 0 when the hot rows are the whole table and their mass rounds above 1.)
        cold_mass_(std::max(0.0, 1.0 - t.access.mass(1, hot_))),
        draws_(g.batch * g.group * t.pooling),
        all_draws_(draws_ * g.groups),
        state_per_row_(t.dim * g.model.embedding_optimizer.state_bytes_per_parameter) {}

  // Adds the table, the `index`-th of the model (its hash salt), to the group's costs.
  void add(std::size_t index) {
    if (hot_ > 0) add_hot_rows();
    cold_unique_ = t_.access.expected_unique(draws_, hot_ + 1, t_.rows);
    // Rows touched over all replicas: only 2D plans synchronise them.
    cold_unique_all_ =
        g_.groups > 1 ? t_.access.expected_unique(all_draws_, hot_ + 1, t_.rows) : 0.0;
    switch (p_.strategy) {
      case ShardingStrategy::kTableWise: {
        TRAINSIM_ASSERT(p_.ranks.size() == 1, "table-wise needs one GPU");
        const int o = p_.ranks[0];
        serve(o, draws_ * cold_mass_, cold_unique_, 1.0, g_.batch * g_.group, t_.rows - hot_,
              residence(draws_, t_.rows - hot_));
        g_.replica_unique_bytes[o] += cold_unique_all_ * t_.dim * g_.sync_bytes;
        for (int r = 0; r < g_.group; ++r) exchange(o, r, cold_mass_, 1.0, 1.0);
        break;
      }
      case ShardingStrategy::kRowWise:
      case ShardingStrategy::kTableRowWise:
        add_row_shards(g_.context.hash_salt + index);
        break;
      case ShardingStrategy::kColumnWise:
      case ShardingStrategy::kTableColumnWise:
        add_column_shards();
        break;
      case ShardingStrategy::kGridShard:
        add_grid_shards(g_.context.hash_salt + index);
        break;
      case ShardingStrategy::kDataParallel: {
        // A full copy everywhere: local lookups, gradients of the whole table all-reduced.
        const double b = g_.batch;
        const double unique = t_.access.expected_unique(b * t_.pooling, hot_ + 1, t_.rows);
        const Residence where = residence(b * t_.pooling, t_.rows - hot_);
        replicated_ = true;
        for (int r = 0; r < g_.group; ++r)
          serve(r, b * t_.pooling * cold_mass_, unique, 1.0, b, t_.rows - hot_, where);
        replicated_ = false;
        g_.global_sync_bytes += (t_.rows - hot_) * t_.dim * g_.sync_bytes;
        break;
      }
    }
  }

 private:
  // Where the rows a GPU serves live, and for a cached table the share of a batch's distinct
  // rows its cache misses.
  struct Residence {
    EmbeddingStorage storage = EmbeddingStorage::kHbm;
    double miss_ratio = 0;
  };
  // The table's own storage, its cache holding the load factor of `rows` rows looked up
  // `lookups` times per step (the rows of the shards that share those lookups).
  Residence residence(double lookups, double rows) const {
    Residence where{t_.storage, 0.0};
    if (where.storage == EmbeddingStorage::kUvmCaching) {
      where.miss_ratio =
          t_.access.lru_miss_ratio(lookups, t_.cache_load_factor * rows, hot_ + 1, t_.rows);
    }
    return where;
  }

  // GPU r serves `lookups` (`unique` distinct rows) of `width_fraction` of the row for `samples`
  // samples (a pooled vector each) and holds `rows_held` rows, stored as `where` says; counted
  // as replicated work too while `replicated_` is set.
  void serve(int r, double lookups, double unique, double width_fraction, double samples,
             double rows_held, const Residence& where) {
    RankLoad& l = g_.local[r];
    const double lookup_before = l.lookup_seconds, update_before = l.update_seconds;
    serve_kernels(l, lookups, unique, width_fraction, samples, rows_held, where);
    if (replicated_) {
      l.replicated_lookup_seconds += l.lookup_seconds - lookup_before;
      l.replicated_update_seconds += l.update_seconds - update_before;
    }
  }

  void serve_kernels(RankLoad& l, double lookups, double unique, double width_fraction,
                     double samples, double rows_held, const Residence& where) {
    const GpuSpec& gpu = g_.context.gpu;
    EmbeddingKernelWork work;
    work.lookups = lookups;
    work.outputs = t_.sequence ? lookups : samples;
    work.unique_rows = unique;
    work.row_bytes = t_.row_bytes() * width_fraction;
    work.output_bytes = t_.dim * width_fraction * g_.communication_bytes;
    work.state_bytes = state_per_row_ * width_fraction;
    work.element_bytes = dtype_bytes(t_.dtype);
    l.lookups += lookups;
    l.unique_rows += unique;
    l.lookup_bytes += tbe_forward_bytes(work);
    l.update_bytes += tbe_backward_bytes(work);
    const double forward = tbe_forward_seconds(work, gpu);
    const double backward = tbe_backward_seconds(work, gpu);
    if (where.storage == EmbeddingStorage::kHbm) {
      l.lookup_seconds += forward;
      l.update_seconds += backward;
      l.parameter_bytes += rows_held * work.row_bytes;
      l.optimizer_bytes += rows_held * work.state_bytes;
      return;
    }
    const double host = g_.context.host_link_bytes_per_s;
    if (!(host > 0)) {
      throw ConfigError(t_.location, "table '" + t_.name +
                                         "' lives in host memory (sharding.storage " +
                                         std::string(storage_names().name(where.storage)) +
                                         "), but the cluster gives no GPU host link bandwidth "
                                         "(gpu.host_to_device_bandwidth)");
    }
    l.host_bytes += rows_held * (work.row_bytes + work.state_bytes);
    if (where.storage == EmbeddingStorage::kUvm) {
      // The forward kernel reads every looked-up row over the host link, the backward reads and
      // writes every distinct row and its state there (reads and writes in opposite directions,
      // at once); each kernel takes the longer of its HBM and host-link times.
      const double read = lookups * work.row_bytes;
      const double update = unique * (work.row_bytes + work.state_bytes);
      l.lookup_seconds += std::max(forward, read / host);
      l.update_seconds += std::max(backward, update / host);
      l.host_link_bytes += read + 2 * update;
      return;
    }
    // Cached: before the lookup, the rows the batch misses are copied in and as many evicted
    // rows (updated, so dirty) written back, both directions at once; the kernels then run on
    // HBM. The optimizer state stays in host memory (FBGEMM keeps a cached table's momentum in
    // unified memory, uncached): the backward reads and writes each distinct row's there.
    const double copied = unique * where.miss_ratio * work.row_bytes;
    const double state = unique * work.state_bytes;
    l.lookup_seconds += forward + copied / host;
    l.update_seconds += std::max(backward, state / host);
    l.parameter_bytes += t_.cache_load_factor * rows_held * work.row_bytes;
    l.host_link_bytes += 2 * copied + 2 * state;
  }

  // All-to-all bytes from GPU `from` to GPU `to` (of the group), counted per GPU by whether they
  // stay in the node.
  void move(int from, int to, double bytes) {
    if (bytes <= 0.0) return;
    if (from == to) {
      g_.local[from].sent_self += bytes;
      return;
    }
    if (g_.node_of[from] == g_.node_of[to]) {
      g_.local[from].sent_local += bytes;
      g_.local[to].received_local += bytes;
    } else {
      g_.local[from].sent_remote += bytes;
      g_.local[to].received_remote += bytes;
    }
  }

  // Each requesting GPU sends the owner its ids for this table (the share `id_share` of them that
  // the owner holds) and gets back, for a pooled table, one (partial) pooled vector per sample,
  // `share_of_output` of them; for a sequence table, the row of every id it sent.
  void exchange(int owner, int requester, double id_share, double width_fraction,
                double share_of_output) {
    const double b = g_.batch;
    const double vectors = t_.sequence ? t_.pooling * id_share : share_of_output;
    send_ids(requester, owner, id_share);
    move_embeddings(owner, requester,
                    b * vectors * t_.dim * width_fraction * g_.communication_bytes);
  }

  // Called for every requester of the group in turn with the same share (a batch draws every
  // table's ids alike on every GPU), so every requester's row of the id matrix is the same:
  // requester 0's is built here and copied to the others once every table is in.
  void send_ids(int requester, int owner, double id_share) {
    const double bytes = g_.batch * t_.pooling * id_share * kIdBytes;
    move(requester, owner, bytes);
    if (g_.matrices && requester == 0) g_.ids.add(0, owner, bytes);
  }

  void move_embeddings(int from, int to, double bytes) {
    move(from, to, bytes);
    if (g_.matrices) g_.embeddings.add(from, to, bytes);
  }

  // Partial sums reduced inside a node before the exchange (table-row-wise).
  void move_partial(int from, int to, double bytes) {
    move(from, to, bytes);
    if (!g_.matrices) return;
    if (g_.partials.empty()) g_.partials = ByteMatrix(g_.group);
    g_.partials.add(from, to, bytes);
  }

  // Hot rows: replicated everywhere, looked up locally, gradients all-reduced over all GPUs.
  void add_hot_rows() {
    const double b = g_.batch;
    const double local_lookups = b * t_.pooling * t_.access.mass(1, hot_);
    const double unique = t_.access.expected_unique(b * t_.pooling, 1, hot_);
    // Replicated hot rows stay in HBM whatever the table's storage.
    replicated_ = true;
    for (int r = 0; r < g_.group; ++r) serve(r, local_lookups, unique, 1.0, b, hot_, Residence{});
    replicated_ = false;
    g_.global_sync_bytes += hot_ * t_.dim * g_.sync_bytes;
  }

  void add_row_shards(std::uint64_t salt) {
    // Table-row-wise (pooled tables): the shards of each node reduce their partial sums there
    // first, then the node's reduced sums go out on the requesters' rails (reduced_exchange).
    add_row_shards(salt, p_.ranks, 1.0,
                   p_.strategy == ShardingStrategy::kTableRowWise && !t_.sequence);
  }

  // Rows hashed over `ranks`, each shard holding `width` of every row's columns.
  void add_row_shards(std::uint64_t salt, const std::vector<int>& ranks, double width,
                      bool reduce_in_node) {
    const int shards = static_cast<int>(ranks.size());
    std::vector<double> mass = t_.access.hashed_shard_mass(shards, salt);
    std::vector<double> unique = t_.access.hashed_shard_unique(shards, draws_, salt);
    std::vector<double> unique_all = g_.groups > 1
                                         ? t_.access.hashed_shard_unique(shards, all_draws_, salt)
                                         : std::vector<double>(shards, 0.0);
    // Remove the replicated hot rows from the shards that hash them.
    for (double k = 1; k <= hot_; k += 1) {
      const int s = AccessDistribution::shard_of(k, shards, salt);
      const double pk = t_.access.probability(k);
      mass[s] -= pk;
      unique[s] -= -std::expm1(draws_ * std::log1p(-pk));
      if (g_.groups > 1) unique_all[s] -= -std::expm1(all_draws_ * std::log1p(-pk));
    }
    // Each shard caches its share of the rows and sees its share of the lookups: the table's
    // miss ratio (hashing spreads the popular rows evenly).
    const Residence where = residence(draws_, t_.rows - hot_);
    for (int s = 0; s < shards; ++s) {
      const int o = ranks[s];
      serve(o, draws_ * std::max(0.0, mass[s]), std::max(0.0, unique[s]), width,
            g_.batch * g_.group, (t_.rows - hot_) / shards, where);
      g_.replica_unique_bytes[o] += std::max(0.0, unique_all[s]) * t_.dim * width * g_.sync_bytes;
      // Row-wise: every shard returns a partial sum for every sample.
      for (int r = 0; r < g_.group; ++r) {
        if (reduce_in_node) {
          send_ids(r, o, std::max(0.0, mass[s]));
        } else {
          exchange(o, r, std::max(0.0, mass[s]), width, 1.0);
        }
      }
    }
    if (reduce_in_node) reduced_exchange(ranks, width);
  }

  // HugeCTR's hierarchical exchange (HierModelParallelEmbedding) and TorchRec's TWRW output
  // (TwRwPooledEmbeddingDist: a reduce-scatter inside the host, then an all-to-all among the ranks
  // of one local rank across hosts): every shard holds a partial sum for every sample of the
  // group (dense buffers, a vector per sample). Inside each owning node, shard o sends the partial
  // sums for the samples of the requesters of local index j to the node's GPU of that index (the
  // node's reducer for rail j), which adds them up; each reducer then sends every requester on
  // its rail one vector per sample (nothing when the requester is the reducer itself). A
  // requester holding rows in k nodes adds k partial sums. The backward runs it the other way:
  // the gradients go back on the rails, then are gathered to every shard of the node. `width`:
  // the share of the columns the shards hold.
  void reduced_exchange(const std::vector<int>& ranks, double width) {
    const int gpn = g_.gpus_per_node;
    std::vector<std::vector<int>> owners;  // per owning node, its shards in local-index order
    std::vector<int> node_of;
    for (const int o : ranks) {
      const int n = g_.node_of[o];
      auto it = std::find(node_of.begin(), node_of.end(), n);
      if (it == node_of.end()) {
        node_of.push_back(n);
        owners.emplace_back();
        it = node_of.end() - 1;
      }
      owners[it - node_of.begin()].push_back(o);
    }
    const double vector_bytes = t_.dim * width * g_.communication_bytes;
    for (auto& in_node : owners) {
      std::sort(in_node.begin(), in_node.end());
      // The reducer of the requesters of each local index j.
      std::vector<int> reducer(gpn);
      for (int j = 0; j < gpn; ++j) {
        reducer[j] = in_node[static_cast<std::size_t>(j) % in_node.size()];
        for (const int o : in_node) {
          if (g_.local_of(o) == j) {
            reducer[j] = o;
            break;
          }
        }
      }
      for (int r = 0; r < g_.group; ++r) {
        const int to = reducer[g_.local_of(r)];
        for (const int o : in_node) move_partial(o, to, g_.batch * vector_bytes);
        move_embeddings(to, r, g_.batch * vector_bytes);
      }
    }
  }

  // TorchRec's grid sharding: the columns split in one block per node holding the table, each
  // block row-wise over that node's GPUs (table-row-wise: reduced in the node, sent on the
  // rails).
  void add_grid_shards(std::uint64_t salt) {
    const int gpn = std::max(1, g_.context.gpus_per_node);
    std::vector<std::vector<int>> blocks;
    std::vector<int> node_of;
    for (const int o : p_.ranks) {
      auto it = std::find(node_of.begin(), node_of.end(), o / gpn);
      if (it == node_of.end()) {
        node_of.push_back(o / gpn);
        blocks.emplace_back();
        it = node_of.end() - 1;
      }
      blocks[it - node_of.begin()].push_back(o);
    }
    const int k = static_cast<int>(blocks.size());
    if (t_.dim % k != 0) {
      throw ConfigError(t_.location, "grid sharding of table '" + t_.name + "' over " +
                                         std::to_string(k) + " nodes needs dim " +
                                         std::to_string(t_.dim) + " to be a multiple of " +
                                         std::to_string(k));
    }
    for (const auto& block : blocks) add_row_shards(salt, block, 1.0 / k, !t_.sequence);
  }

  void add_column_shards() {
    const int shards = static_cast<int>(p_.ranks.size());
    if (t_.dim % shards != 0) {
      throw ConfigError(t_.location, "column-wise sharding of table '" + t_.name + "' over " +
                                         std::to_string(shards) + " GPUs needs dim " +
                                         std::to_string(t_.dim) + " to be a multiple of " +
                                         std::to_string(shards));
    }
    const Residence where = residence(draws_, t_.rows - hot_);
    for (const int o : p_.ranks) {
      serve(o, draws_ * cold_mass_, cold_unique_, 1.0 / shards, g_.batch * g_.group, t_.rows - hot_,
            where);
      g_.replica_unique_bytes[o] += cold_unique_all_ * t_.dim / shards * g_.sync_bytes;
      for (int r = 0; r < g_.group; ++r) exchange(o, r, cold_mass_, 1.0 / shards, 1.0);
    }
  }

  GroupCosts& g_;
  const EmbeddingTableSpec& t_;
  const TablePlacement& p_;
  const double hot_, cold_mass_;
  const double draws_;      // lookups into the group's shards
  const double all_draws_;  // over all replicas
  const double state_per_row_;
  double cold_unique_ = 0, cold_unique_all_ = 0;
  bool replicated_ = false;  // serving replicated rows (data-parallel, hot-row copies)
};

// Adds to each position r the all-to-all bytes it sends and receives: over its peers o in
// order, ids (r, o) + (o, r), then vectors (r, o) + (o, r), then partial sums (r, o) + (o, r)
// when there are any, each peer's terms summed before they are added. Only the peers r exchanges
// anything with are visited (the others add 0), walking r's rows and columns together.
void add_buffer_bytes(const ByteMatrix& ids, const ByteMatrix& embeddings,
                      const ByteMatrix& partials, std::vector<double>& buffer) {
  const bool with_partials = !partials.empty();
  const ByteMatrix ids_to = ids.transposed();
  const ByteMatrix embeddings_to = embeddings.transposed();
  const ByteMatrix partials_to = with_partials ? partials.transposed() : ByteMatrix();
  constexpr int kLists = 6;
  for (int r = 0; r < ids.size(); ++r) {
    using Row = std::span<const ByteMatrix::Entry>;
    const std::array<Row, kLists> lists = {ids.row(r),
                                           ids_to.row(r),
                                           embeddings.row(r),
                                           embeddings_to.row(r),
                                           with_partials ? partials.row(r) : Row(),
                                           with_partials ? partials_to.row(r) : Row()};
    std::array<std::size_t, kLists> at{};
    for (;;) {
      int peer = std::numeric_limits<int>::max();
      for (int k = 0; k < kLists; ++k) {
        if (at[k] < lists[k].size()) peer = std::min(peer, lists[k][at[k]].to);
      }
      if (peer == std::numeric_limits<int>::max()) break;
      std::array<double, kLists> v{};
      for (int k = 0; k < kLists; ++k) {
        if (at[k] < lists[k].size() && lists[k][at[k]].to == peer) v[k] = lists[k][at[k]++].bytes;
      }
      double bytes = v[0] + v[1] + v[2] + v[3];
      if (with_partials) bytes = bytes + v[4] + v[5];
      buffer[r] += bytes;
    }
  }
}

}  // namespace

const EmbeddingTableSpec& placed_table(const EmbeddingTableSpec& t, const TablePlacement& p,
                                       EmbeddingTableSpec& moved) {
  if (!p.storage || *p.storage == t.storage) return t;
  moved = t;
  moved.storage = *p.storage;
  return moved;
}

ShardCosts compute_shard_costs(const ShardingPlan& plan, const ShardingContext& context) {
  const RecsysModelSpec& model = *context.model;
  const int world = context.world;
  const int group = plan.group_size > 0 ? plan.group_size : world;
  TRAINSIM_ASSERT(plan.tables.size() == model.tables.size(), "plan does not match the model");
  if (world % group != 0) {
    throw ConfigError(model.source_file, 0, 0, "sharding.group",
                      "a sharding group of " + std::to_string(group) + " GPUs does not divide " +
                          std::to_string(world) + " GPUs");
  }
  const int groups = world / group;
  GroupCosts g(context, group, groups);
  for (std::size_t ti = 0; ti < model.tables.size(); ++ti) {
    const EmbeddingTableSpec& t = model.tables[ti];
    const TablePlacement& p = plan.tables[ti];
    for (const int r : p.ranks) {
      if (r < 0 || r >= group) {
        throw ConfigError(t.location, "sharding of table '" + t.name + "' names GPU " +
                                          std::to_string(r) + "; a sharding group has GPUs 0.." +
                                          std::to_string(group - 1));
      }
    }
    if (p.ranks.empty())
      throw ConfigError(t.location, "table '" + t.name + "' is placed on no GPU");
    EmbeddingTableSpec moved;
    TableCosts(g, placed_table(t, p, moved), p).add(ti);
  }
  g.ids.consolidate();
  if (g.matrices) {
    for (int r = 1; r < group; ++r) g.ids.append(r, g.ids.row(0));  // (TableCosts::send_ids)
  }
  g.embeddings.consolidate();
  g.partials.consolidate();

  // Dense network (replicated), activations and all-to-all buffers, then the same for every group.
  ShardCosts costs;
  costs.groups = groups;
  costs.global_sync_bytes = g.global_sync_bytes;
  costs.ranks.assign(world, RankLoad{});
  // One group: its matrices are the world's (moved at the end); replicas: one block per group.
  const bool blocks = g.matrices && groups > 1;
  if (blocks) {
    costs.id_bytes = ByteMatrix(world);
    costs.embedding_bytes = ByteMatrix(world);
    if (!g.partials.empty()) costs.partial_bytes = ByteMatrix(world);
  }
  const double dense_state = model.dense_state_bytes();
  const double activation_bytes = context.batch_per_gpu * model.activation_bytes_per_example();
  // Each position's all-to-all buffers: what it sends and receives, over every peer in order
  // (the peers it exchanges nothing with add nothing).
  std::vector<double> buffer(group);
  for (int r = 0; r < group; ++r) buffer[r] = g.local[r].buffer_bytes;
  if (g.matrices) add_buffer_bytes(g.ids, g.embeddings, g.partials, buffer);
  for (int k = 0; k < groups; ++k) {
    for (int r = 0; r < group; ++r) {
      RankLoad l = g.local[r];
      l.dense_bytes = dense_state;
      l.activation_bytes = activation_bytes;
      l.buffer_bytes = buffer[r];
      if (blocks) {
        costs.id_bytes.append(k * group + r, g.ids.row(r), k * group);
        costs.embedding_bytes.append(k * group + r, g.embeddings.row(r), k * group);
        if (!g.partials.empty()) {
          costs.partial_bytes.append(k * group + r, g.partials.row(r), k * group);
        }
      }
      if (groups > 1) l.replica_sync_bytes = g.replica_unique_bytes[r];
      // One table-batched forward call and one backward call for the sharded tables, and as
      // many for the replicated ones.
      const double launch = to_seconds(context.gpu.kernel_launch_latency);
      const bool sharded = l.lookup_seconds > l.replicated_lookup_seconds;
      const bool replicated = l.replicated_lookup_seconds > 0;
      if (l.lookups > 0 && (sharded || !replicated)) {
        l.lookup_seconds += launch;
        l.update_seconds += launch;
      }
      if (replicated) {
        l.lookup_seconds += launch;
        l.update_seconds += launch;
        l.replicated_lookup_seconds += launch;
        l.replicated_update_seconds += launch;
      }
      costs.ranks[k * group + r] = l;
    }
  }
  if (g.matrices && !blocks) {
    costs.id_bytes = std::move(g.ids);
    costs.embedding_bytes = std::move(g.embeddings);
    costs.partial_bytes = std::move(g.partials);
  }
  return costs;
}

std::vector<std::string> memory_overflows(const ShardCosts& costs, const GpuSpec& gpu) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < costs.ranks.size(); ++r) {
    const double need = costs.ranks[r].memory_bytes();
    if (need > gpu.hbm_capacity_bytes) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "GPU %zu needs %.1f GB (%.1f GB embeddings, %.1f GB optimizer state), has %.1f "
                    "GB: %.1f GB short",
                    r, need / 1e9, costs.ranks[r].parameter_bytes / 1e9,
                    costs.ranks[r].optimizer_bytes / 1e9, gpu.hbm_capacity_bytes / 1e9,
                    (need - gpu.hbm_capacity_bytes) / 1e9);
      out.push_back(line);
    }
  }
  return out;
}

std::vector<std::string> memory_overflows(const ShardCosts& costs, const ClusterSpec& cluster) {
  std::vector<std::string> out = memory_overflows(costs, cluster.gpu);
  const double host = cluster.host.memory_bytes;
  const int gpn = std::max(1, cluster.gpus_per_node);
  if (host <= 0) return out;
  for (std::size_t first = 0; first < costs.ranks.size(); first += gpn) {
    double need = 0;
    for (std::size_t r = first; r < std::min(costs.ranks.size(), first + gpn); ++r) {
      need += costs.ranks[r].host_bytes;
    }
    if (need > host) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "node %zu keeps %.1f GB of tables in host memory, has %.1f GB: %.1f GB short",
                    first / gpn, need / 1e9, host / 1e9, (need - host) / 1e9);
      out.push_back(line);
    }
  }
  return out;
}

namespace {

std::vector<int> all_ranks(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A GPU's cost for the planner: lookups and updates (skew included) and, when the context gives
// bandwidths, its all-to-all time (forward, and backward for the embeddings: twice the larger
// direction, inside the node and across nodes).
double rank_cost(const RankLoad& l, const ShardingContext& c) {
  double seconds = embedding_seconds(l);
  if (c.local_bytes_per_s > 0)
    seconds += 2 * std::max(l.sent_local, l.received_local) / c.local_bytes_per_s;
  if (c.network_bytes_per_s > 0)
    seconds += 2 * std::max(l.sent_remote, l.received_remote) / c.network_bytes_per_s;
  return seconds;
}

// Cost and memory (shards, optimizer state and all-to-all buffers) on every GPU of the group of
// one table placed alone.
struct RankCosts {
  std::vector<double> seconds;
  std::vector<double> bytes;
};

RankCosts placement_costs(const EmbeddingTableSpec& t, const ShardingContext& c, int group,
                          const TablePlacement& placement) {
  ShardingContext single = c;
  single.loads_only = true;
  RecsysModelSpec one = *c.model;
  one.tables = {t};
  single.model = &one;
  single.world = group;
  ShardingPlan plan;
  plan.group_size = group;
  plan.tables = {placement};
  const ShardCosts costs = compute_shard_costs(plan, single);
  RankCosts out;
  for (const RankLoad& l : costs.ranks) {
    out.seconds.push_back(rank_cost(l, c));
    // The all-to-all buffers the placement adds: what the GPU sends and receives, its own part
    // in both (on large groups a row-wise table's partial sums from every GPU can outgrow its
    // rows).
    out.bytes.push_back(l.parameter_bytes + l.optimizer_bytes + l.sent_local + l.sent_remote +
                        l.received_local + l.received_remote + 2 * l.sent_self);
  }
  if (costs.global_sync_bytes > 0) {
    // Replicated rows: their gradients ring-all-reduced over all GPUs every step.
    const double bw = c.world > c.gpus_per_node ? c.network_bytes_per_s : c.local_bytes_per_s;
    if (bw > 0) {
      for (double& seconds : out.seconds) seconds += 2 * costs.global_sync_bytes / bw;
    }
  }
  return out;
}

// A table's cost on one GPU and its bytes (parameters + state), placed whole on GPU 0.
struct TableWeight {
  double seconds = 0.0;
  double bytes = 0.0;
};

TableWeight table_weight(const EmbeddingTableSpec& t, const ShardingContext& c, int group,
                         double hot) {
  const RankCosts costs =
      placement_costs(t, c, group, TablePlacement{ShardingStrategy::kTableWise, {0}, hot});
  return {costs.seconds[0], costs.bytes[0]};
}

// Memory every GPU needs whatever the plan: the dense network with its optimizer state, and
// activations.
double fixed_bytes(const ShardingContext& c) {
  return c.model->dense_state_bytes() + c.batch_per_gpu * c.model->activation_bytes_per_example();
}

// Places the tables given as table-wise on the least loaded GPU that has room, largest first.
void place_table_wise(ShardingPlan& plan, const std::vector<std::size_t>& tables,
                      const ShardingContext& c, int group, double hot, std::vector<double>& load,
                      std::vector<double>& used) {
  std::vector<std::pair<TableWeight, std::size_t>> order;
  for (const std::size_t ti : tables)
    order.emplace_back(table_weight(c.model->tables[ti], c, group, hot), ti);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first.seconds > b.first.seconds; });
  for (const auto& [weight, ti] : order) {
    int best = -1;
    for (int r = 0; r < group; ++r) {
      const bool fits = used[r] + weight.bytes <= c.gpu.hbm_capacity_bytes * 0.9;
      if (fits && (best < 0 || load[r] < load[best])) best = r;
    }
    if (best < 0)
      best = static_cast<int>(std::min_element(used.begin(), used.end()) - used.begin());
    plan.tables[ti] = TablePlacement{ShardingStrategy::kTableWise, {best}, hot};
    load[best] += weight.seconds;
    used[best] += weight.bytes;
  }
}

}  // namespace

ShardingPlan uniform_plan(ShardingStrategy strategy, const ShardingContext& c, int group_size,
                          double hot_rows) {
  const int group = group_size > 0 ? group_size : c.world;
  ShardingPlan plan;
  plan.name = std::string(strategy_name(strategy)) +
              (group < c.world ? " (2D, groups of " + std::to_string(group) + ")" : "");
  plan.group_size = group;
  plan.tables.resize(c.model->tables.size());
  const int node = std::min(c.gpus_per_node, group);
  std::vector<std::size_t> table_wise;
  for (std::size_t ti = 0; ti < c.model->tables.size(); ++ti) {
    TablePlacement& p = plan.tables[ti];
    p.strategy = strategy;
    p.hot_rows = hot_rows;
    switch (strategy) {
      case ShardingStrategy::kTableWise:
        table_wise.push_back(ti);
        break;
      case ShardingStrategy::kRowWise:
      case ShardingStrategy::kDataParallel:
        p.ranks = all_ranks(group);
        break;
      case ShardingStrategy::kColumnWise: {
        // As many column shards as divide the dim, up to the group, rotating the first GPU.
        int k = std::min(group, c.model->tables[ti].dim);
        while (c.model->tables[ti].dim % k != 0) --k;
        for (int i = 0; i < k; ++i) p.ranks.push_back(static_cast<int>((ti * k + i) % group));
        break;
      }
      case ShardingStrategy::kTableRowWise: {
        // Row-wise over the GPUs of one node, nodes taken in turn.
        const int nodes = group / node;
        const int n = static_cast<int>(ti % std::max(1, nodes));
        for (int i = 0; i < node; ++i) p.ranks.push_back(n * node + i);
        break;
      }
      case ShardingStrategy::kTableColumnWise: {
        // Column shards on the GPUs of one node (as many as divide the dim), nodes in turn.
        const int nodes = group / node;
        const int n = static_cast<int>(ti % std::max(1, nodes));
        int k = std::min(node, c.model->tables[ti].dim);
        while (c.model->tables[ti].dim % k != 0) --k;
        for (int i = 0; i < k; ++i) p.ranks.push_back(n * node + i);
        break;
      }
      case ShardingStrategy::kGridShard: {
        // A column block per node (as many nodes as divide the dim), each over all its GPUs;
        // the first node rotates with the table.
        const int nodes = group / node;
        int k = std::min(nodes, c.model->tables[ti].dim);
        while (c.model->tables[ti].dim % k != 0) --k;
        for (int b = 0; b < k; ++b) {
          const int n = static_cast<int>((ti + b) % std::max(1, nodes));
          for (int i = 0; i < node; ++i) p.ranks.push_back(n * node + i);
        }
        break;
      }
    }
  }
  if (!table_wise.empty()) {
    std::vector<double> load(group, 0.0), used(group, fixed_bytes(c));
    place_table_wise(plan, table_wise, c, group, hot_rows, load, used);
  }
  return plan;
}

namespace {

// The GPUs of one sharding group as planners see them. A candidate placement of a table is costed
// once in a canonical position (GPU 0, or the first GPUs of node 0) and moved by symmetry: a GPU's
// cost depends only on its role (owner or shard i, requester in the owner's node, requester
// elsewhere).
class PlacementGeometry {
 protected:
  PlacementGeometry(const ShardingContext& c, int group, double hot_rows)
      : c_(c),
        group_(group),
        node_(std::min(c.gpus_per_node, group)),
        nodes_(group / node_),
        hot_rows_(hot_rows) {}

  enum class Where { kOneGpu, kOneNode, kGroup };
  struct Template {
    TablePlacement placement;  // canonical ranks
    Where where = Where::kGroup;
    RankCosts costs;
  };

  Template make_template(const EmbeddingTableSpec& t, ShardingStrategy s, std::vector<int> ranks,
                         Where where,
                         std::optional<EmbeddingStorage> storage = std::nullopt) const {
    TablePlacement p{s, std::move(ranks), hot_rows_, storage};
    RankCosts costs = placement_costs(t, c_, group_, p);
    return {std::move(p), where, std::move(costs)};
  }

  // Where a planner may move a table whose placements do not fit in HBM: host memory behind an
  // HBM cache, then host memory alone (TorchRec's FUSED_UVM_CACHING and FUSED_UVM kernels), for
  // a table the job keeps in HBM on a cluster whose GPUs have a host link.
  std::vector<EmbeddingStorage> offload_storages(const EmbeddingTableSpec& t) const {
    if (t.storage != EmbeddingStorage::kHbm || !(c_.host_link_bytes_per_s > 0)) return {};
    return {EmbeddingStorage::kUvmCaching, EmbeddingStorage::kUvm};
  }

  std::vector<int> node_ranks(int n, int count) const {
    std::vector<int> ranks;
    for (int i = 0; i < count; ++i) ranks.push_back(n * node_ + i);
    return ranks;
  }

  // Index into a template's canonical costs of GPU r, for the template moved to `position` (an
  // owner GPU, or a node).
  int role(const Template& tp, int position, int r) const {
    switch (tp.where) {
      case Where::kOneGpu:
        if (r == position) return 0;
        if (r / node_ == position / node_) return 1;  // a requester in the owner's node
        return node_;                                 // a requester in another node (node 1)
      case Where::kOneNode:
        return r / node_ == position ? r % node_ : node_ + r % node_;
      case Where::kGroup:
        return r;
    }
    return r;
  }

  int positions(const Template& tp) const {
    switch (tp.where) {
      case Where::kOneGpu:
        return group_;
      case Where::kOneNode:
        return nodes_;
      case Where::kGroup:
        return 1;
    }
    return 1;
  }

  const ShardingContext& c_;
  const int group_, node_, nodes_;
  const double hot_rows_;
};

// The greedy planner's state: the embedding time and memory placed on each GPU so far, and the
// candidate placements of a table.
class GreedyPlanner : PlacementGeometry {
 public:
  GreedyPlanner(const ShardingContext& c, int group, double hot_rows)
      : PlacementGeometry(c, group, hot_rows), load_(group, 0.0), used_(group, fixed_bytes(c)) {}

  // Places table `ti` where it raises the most loaded GPU least, among the candidates that fit;
  // if none fits in HBM, the same with the table in host memory behind an HBM cache, then in host
  // memory alone (when the cluster's GPUs have a host link); else where it overflows least.
  TablePlacement place(std::size_t ti, bool whole, bool split) {
    const EmbeddingTableSpec& t = c_.model->tables[ti];
    Choice best = choose(templates_of(t, whole, split, std::nullopt));
    for (const EmbeddingStorage storage : offload_storages(t)) {
      if (best.fits) break;
      Choice moved = choose(templates_of(t, whole, split, storage));
      if (moved.fits) best = std::move(moved);
    }
    const Template& tp = best.templates[best.index];
    TablePlacement placement = tp.placement;
    if (tp.where == Where::kOneGpu) {
      placement.ranks = {best.position};
    } else if (tp.where == Where::kOneNode) {
      placement.ranks = node_ranks(best.position, static_cast<int>(placement.ranks.size()));
    }
    for (int r = 0; r < group_; ++r) {
      const int i = role(tp, best.position, r);
      load_[r] += tp.costs.seconds[i];
      used_[r] += tp.costs.bytes[i];
    }
    return placement;
  }

 private:
  struct Choice {
    std::vector<Template> templates;
    std::size_t index = 0;  // the chosen template
    int position = 0;       // where it goes
    bool fits = false;
  };

  // The best position of the best template: the lowest peak load among those that fit, else the
  // lowest peak memory.
  Choice choose(std::vector<Template> templates) const {
    Choice out;
    out.templates = std::move(templates);
    bool found = false;
    double best_peak = 0.0, best_memory = 0.0;
    const double capacity = 0.9 * c_.gpu.hbm_capacity_bytes;
    std::vector<double> peaks, memories;
    for (std::size_t k = 0; k < out.templates.size(); ++k) {
      const Template& tp = out.templates[k];
      highest(tp, load_, tp.costs.seconds, peaks);
      highest(tp, used_, tp.costs.bytes, memories);
      for (int position = 0; position < positions(tp); ++position) {
        const double peak = peaks[position], memory = memories[position];
        const bool fits = memory <= capacity;
        const bool better = !found || (fits && !out.fits) ||
                            (fits == out.fits && (fits ? peak < best_peak : memory < best_memory));
        if (better) {
          found = true;
          out.index = k;
          out.position = position;
          best_peak = peak;
          best_memory = memory;
          out.fits = fits;
        }
      }
    }
    return out;
  }

  // For every position of `tp`: the largest over GPUs r of base[r] + cost[role of r] (and 0).
  // The GPUs of one role are a node's or the other nodes' (one role per local index across
  // nodes), so the largest base in each role, kept with the runner-up for the position's own
  // node or GPU, gives every position in O(group) instead of O(group^2). Exact: adding a cost
  // to the largest base gives the largest sum (rounding is monotone).
  void highest(const Template& tp, const std::vector<double>& base, const std::vector<double>& cost,
               std::vector<double>& out) const {
    const int n = positions(tp);
    out.assign(n, 0.0);
    if (tp.where == Where::kGroup || group_ % node_ != 0) {
      for (int position = 0; position < n; ++position) {
        for (int r = 0; r < group_; ++r) {
          out[position] = std::max(out[position], base[r] + cost[role(tp, position, r)]);
        }
      }
      return;
    }
    constexpr double kNone = -std::numeric_limits<double>::infinity();
    // The two largest of a set of values, and where the largest is.
    struct Top2 {
      double first = kNone, second = kNone;
      int at = -1;
      void add(double v, int i) {
        if (v > first) {
          second = first;
          first = v;
          at = i;
        } else if (v > second) {
          second = v;
        }
      }
      double without(int i) const { return i == at ? second : first; }
    };
    const auto term = [](double b, double c) { return b == kNone ? kNone : b + c; };
    if (tp.where == Where::kOneGpu) {
      // Roles: 0 the owner, 1 a GPU of its node, node_ a GPU of another node.
      std::vector<Top2> in_node(nodes_);
      Top2 nodes;
      for (int r = 0; r < group_; ++r) in_node[r / node_].add(base[r], r);
      for (int b = 0; b < nodes_; ++b) nodes.add(in_node[b].first, b);
      for (int p = 0; p < n; ++p) {
        const int b = p / node_;
        double v = std::max(0.0, base[p] + cost[0]);
        if (node_ > 1) v = std::max(v, term(in_node[b].without(p), cost[1]));
        if (nodes_ > 1) v = std::max(v, term(nodes.without(b), cost[node_]));
        out[p] = v;
      }
      return;
    }
    // kOneNode: local index i is role i in the position's node and node_ + i elsewhere.
    std::vector<Top2> across(node_);
    for (int r = 0; r < group_; ++r) across[r % node_].add(base[r], r / node_);
    for (int p = 0; p < n; ++p) {
      double v = 0.0;
      for (int i = 0; i < node_; ++i) {
        v = std::max(v, base[p * node_ + i] + cost[i]);
        if (nodes_ > 1) v = std::max(v, term(across[i].without(p), cost[node_ + i]));
      }
      out[p] = v;
    }
  }

  std::vector<Template> templates_of(const EmbeddingTableSpec& t, bool whole, bool split,
                                     std::optional<EmbeddingStorage> storage) const {
    std::vector<Template> out;
    const auto add = [&](ShardingStrategy s, std::vector<int> ranks, Where where) {
      out.push_back(make_template(t, s, std::move(ranks), where, storage));
    };
    if (whole) add(ShardingStrategy::kTableWise, {0}, Where::kOneGpu);
    if (split && group_ > 1) {
      add(nodes_ > 1 ? ShardingStrategy::kTableRowWise : ShardingStrategy::kRowWise,
          node_ranks(0, node_), nodes_ > 1 ? Where::kOneNode : Where::kGroup);
      int columns = std::min(node_, t.dim);
      while (t.dim % columns != 0) --columns;
      if (columns >= 2)
        add(ShardingStrategy::kColumnWise, node_ranks(0, columns),
            nodes_ > 1 ? Where::kOneNode : Where::kGroup);
      // Across nodes, column-wise over the whole group spreads a hot table's traffic over every
      // node's NICs.
      int wide = std::min(group_, t.dim);
      while (t.dim % wide != 0) --wide;
      if (nodes_ > 1 && wide > columns) {
        add(ShardingStrategy::kColumnWise, all_ranks(wide), Where::kGroup);
      }
    }
    // A replica in host memory on every GPU would read every row over its own host link: never.
    if (whole && split && group_ > 1 && !storage)
      add(ShardingStrategy::kDataParallel, all_ranks(group_), Where::kGroup);
    return out;
  }

  std::vector<double> load_, used_;  // per GPU: embedding seconds, bytes
};

// TorchRec's planner as its pieces work (pytorch/torchrec @ a48cef79, distributed/planner:
// enumerators.py, proposers.py, partitioners.py, perf_models.py), on trainsim's costs instead of
// its estimator's: every table's sharding options are enumerated and costed, proposals pick one
// option per table, the greedy partitioner places each proposal's shards, the plan's rating is
// its most loaded GPU, and the best rated proposal that fits is the plan.
class TorchrecPlanner : PlacementGeometry {
 public:
  TorchrecPlanner(const ShardingContext& c, int group, double hot_rows)
      : PlacementGeometry(c, group, hot_rows), capacity_(0.9 * c.gpu.hbm_capacity_bytes) {
    for (const EmbeddingTableSpec& t : c.model->tables) options_.push_back(enumerate(t, false));
  }

  ShardingPlan plan() {
    std::vector<std::size_t> choice = propose();
    // Nothing fits in HBM: the same with every option also in host memory (enumerated only
    // then: an option in host memory costs more than the same option in HBM, so it is for
    // fitting, and costing them all for every plan would triple the planner's work).
    if (!best_) {
      bool offload = false;
      for (std::size_t t = 0; t < options_.size(); ++t) {
        offload = offload || !offload_storages(c_.model->tables[t]).empty();
      }
      if (offload) {
        for (std::size_t t = 0; t < options_.size(); ++t) {
          options_[t] = enumerate(c_.model->tables[t], true);
        }
        choice = propose();
      }
    }
    ShardingPlan plan;
    plan.name = std::string("torchrec") +
                (group_ < c_.world ? " (2D, groups of " + std::to_string(group_) + ")" : "");
    plan.group_size = group_;
    plan.tables = best_ ? best_placements_ : partition(choice).placements;
    return plan;
  }

 private:
  // Runs the proposers, remembering the best rated proposal that fits; returns the greedy
  // proposer's last proposal.
  std::vector<std::size_t> propose() {
    const std::size_t tables = options_.size();
    // The greedy proposer: every table at its cheapest option, then improved.
    std::vector<std::size_t> choice(tables, 0);
    // If that does not fit: TorchRec's greedy proposer walks the table holding the most memory
    // to its next option. Here the table whose option holds the most HBM on one GPU moves to its
    // cheapest option holding less (split wider, or in host memory behind a cache, or in host
    // memory alone) until the proposal fits; then that is improved too.
    const double cheapest = rate(choice);
    if (std::isinf(cheapest)) {
      std::vector<std::size_t> smaller = choice;
      double rating = cheapest;
      while (std::isinf(rating)) {
        std::size_t heaviest = tables;
        for (std::size_t t = 0; t < tables; ++t) {
          if (lighter_option(t, smaller[t]) == options_[t].size()) continue;
          if (heaviest == tables ||
              options_[t][smaller[t]].hbm > options_[heaviest][smaller[heaviest]].hbm) {
            heaviest = t;
          }
        }
        if (heaviest == tables) break;  // every table at its lightest: nothing fits
        smaller[heaviest] = lighter_option(heaviest, smaller[heaviest]);
        rating = rate(smaller);
      }
      if (std::isfinite(rating)) improve(smaller, rating);
    }
    improve(choice, cheapest);
    // The uniform proposer: one sharding type for every table that has it (the others at their
    // cheapest option).
    for (const ShardingStrategy s : all_strategies()) {
      std::vector<std::size_t> uniform(tables, 0);
      for (std::size_t t = 0; t < tables; ++t) {
        for (std::size_t o = 0; o < options_[t].size(); ++o) {
          if (options_[t][o].strategy == s) {
            uniform[t] = o;
            break;
          }
        }
      }
      rate(uniform);
    }
    return choice;
  }

  // Table by table (the costliest option first), the next-cheapest option kept while it improves
  // the rating, or while the proposal does not fit (moving on, as TorchRec's proposer does when a
  // proposal cannot be partitioned). `current` is the rating of `choice`.
  void improve(std::vector<std::size_t>& choice, double current) {
    const std::size_t tables = choice.size();
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      bool improved = false;
      std::vector<std::size_t> order(tables);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return options_[a][choice[a]].total > options_[b][choice[b]].total;
      });
      for (const std::size_t t : order) {
        if (choice[t] + 1 >= options_[t].size()) continue;
        std::vector<std::size_t> next = choice;
        ++next[t];
        const double rating = rate(next);
        if (rating < current || std::isinf(current)) {
          choice = std::move(next);
          current = rating;
          improved = true;
        }
      }
      if (!improved) break;
    }
  }

  // Table t's cheapest option holding less HBM on one GPU than option `o` (the options' count if
  // none does).
  std::size_t lighter_option(std::size_t t, std::size_t o) const {
    for (std::size_t k = 0; k < options_[t].size(); ++k) {
      if (options_[t][k].hbm < options_[t][o].hbm) return k;  // cheapest first
    }
    return options_[t].size();
  }

  // TorchRec's smallest column-wise shard (constants.py MIN_CW_DIM); its enumerator cuts columns
  // into blocks of it.
  static constexpr int kColumnBlock = 128;
  static constexpr int kMaxPasses = 8;

  // One way to shard a table: `shards` copies of `shard` (column-wise: each a table of the
  // shard's columns placed whole), or one placement over a node or the group.
  struct Option {
    ShardingStrategy strategy;
    Template shard;
    int shards = 1;
    double total = 0;  // seconds summed over the group's GPUs, the option's own cost
    double hbm = 0;    // the most HBM it holds on one GPU (shards, state, all-to-all buffers)
  };

  double total_of(const Template& tp, int shards) const {
    double total = 0;
    for (int r = 0; r < group_; ++r) total += tp.costs.seconds[role(tp, 0, r)];
    return total * shards;
  }

  // The options of one table, cheapest first (ties in enumeration order): table-wise;
  // column-wise in blocks of 128 columns; table-row-wise over one node's GPUs; row-wise over the
  // group; each of those in HBM and, with `offload`, for a table the job keeps in HBM, in host
  // memory behind an HBM cache and in host memory alone (TorchRec's enumerator offers the FUSED,
  // FUSED_UVM_CACHING and FUSED_UVM kernels); data-parallel (in HBM) where a replica fits every
  // GPU.
  std::vector<Option> enumerate(const EmbeddingTableSpec& t, bool offload) const {
    std::vector<Option> out;
    auto add = [&](ShardingStrategy s, Template tp, int shards) {
      const double total = total_of(tp, shards);
      const double hbm = *std::max_element(tp.costs.bytes.begin(), tp.costs.bytes.end());
      out.push_back({s, std::move(tp), shards, total, hbm});
    };
    std::vector<std::optional<EmbeddingStorage>> storages{std::nullopt};
    if (offload) {
      for (const EmbeddingStorage s : offload_storages(t)) storages.emplace_back(s);
    }
    for (const auto& storage : storages) {
      add(ShardingStrategy::kTableWise,
          make_template(t, ShardingStrategy::kTableWise, {0}, Where::kOneGpu, storage), 1);
      const int blocks = t.dim / kColumnBlock;
      if (blocks >= 2 && t.dim % kColumnBlock == 0 && blocks <= group_) {
        EmbeddingTableSpec columns = t;
        columns.dim = kColumnBlock;
        add(ShardingStrategy::kColumnWise,
            make_template(columns, ShardingStrategy::kTableWise, {0}, Where::kOneGpu, storage),
            blocks);
      }
      if (nodes_ > 1) {
        add(ShardingStrategy::kTableRowWise,
            make_template(t, ShardingStrategy::kTableRowWise, node_ranks(0, node_), Where::kOneNode,
                          storage),
            1);
      }
      if (group_ > 1) {
        add(ShardingStrategy::kRowWise,
            make_template(t, ShardingStrategy::kRowWise, all_ranks(group_), Where::kGroup, storage),
            1);
      }
    }
    if (group_ > 1) {
      Template dp =
          make_template(t, ShardingStrategy::kDataParallel, all_ranks(group_), Where::kGroup);
      if (fixed_bytes(c_) + dp.costs.bytes[0] <= capacity_) {
        add(ShardingStrategy::kDataParallel, std::move(dp), 1);
      }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Option& a, const Option& b) { return a.total < b.total; });
    return out;
  }

  struct Partition {
    bool fits = true;
    double rating = 0;  // seconds on the most loaded GPU
    std::vector<TablePlacement> placements;
  };

  // The greedy partitioner: options largest first; each shard of a table on the least loaded
  // GPU with memory for it (not one already holding a shard of the table), a node's shards on
  // the least loaded node with memory, group-wide placements where they are.
  Partition partition(const std::vector<std::size_t>& choice) const {
    Partition out;
    out.placements.resize(choice.size());
    std::vector<double> load(group_, 0.0), used(group_, fixed_bytes(c_));
    std::vector<std::size_t> order(choice.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return options_[a][choice[a]].total > options_[b][choice[b]].total;
    });
    // Every GPU, the requesters too: they hold the placement's all-to-all buffers.
    auto fits_at = [&](const Template& tp, int position) {
      for (int r = 0; r < group_; ++r) {
        if (used[r] + tp.costs.bytes[role(tp, position, r)] > capacity_) return false;
      }
      return true;
    };
    auto add_at = [&](const Template& tp, int position) {
      for (int r = 0; r < group_; ++r) {
        load[r] += tp.costs.seconds[role(tp, position, r)];
        used[r] += tp.costs.bytes[role(tp, position, r)];
      }
    };
    for (const std::size_t t : order) {
      const Option& o = options_[t][choice[t]];
      TablePlacement& p = out.placements[t];
      p = o.shard.placement;
      p.strategy = o.strategy;
      if (o.shard.where == Where::kGroup) {
        if (!fits_at(o.shard, 0)) out.fits = false;
        add_at(o.shard, 0);
        continue;
      }
      p.ranks.clear();
      for (int k = 0; k < o.shards; ++k) {
        int best = -1;
        double best_load = 0;
        for (int position = 0; position < positions(o.shard); ++position) {
          if (o.shard.where == Where::kOneGpu &&
              std::find(p.ranks.begin(), p.ranks.end(), position) != p.ranks.end()) {
            continue;
          }
          if (!fits_at(o.shard, position)) continue;
          double position_load = 0;
          if (o.shard.where == Where::kOneGpu) {
            position_load = load[position];
          } else {
            for (int i = 0; i < node_; ++i) position_load += load[position * node_ + i];
          }
          if (best < 0 || position_load < best_load) {
            best = position;
            best_load = position_load;
          }
        }
        if (best < 0) {
          // Nowhere with memory for it: on the least used GPU (or node) not holding a shard of
          // the table, and the proposal does not fit.
          out.fits = false;
          const int width = o.shard.where == Where::kOneGpu ? 1 : node_;
          auto used_at = [&](int position) {
            return std::accumulate(used.begin() + position * width,
                                   used.begin() + (position + 1) * width, 0.0);
          };
          for (int position = 0; position < positions(o.shard); ++position) {
            if (width == 1 && std::find(p.ranks.begin(), p.ranks.end(), position) != p.ranks.end())
              continue;
            if (best < 0 || used_at(position) < used_at(best)) best = position;
          }
        }
        add_at(o.shard, best);
        if (o.shard.where == Where::kOneGpu) {
          p.ranks.push_back(best);
        } else {
          p.ranks = node_ranks(best, node_);
        }
      }
    }
    out.rating = *std::max_element(load.begin(), load.end());
    return out;
  }

  // The rating of a proposal (infinite if it does not fit), remembering the best so far.
  double rate(const std::vector<std::size_t>& choice) {
    Partition p = partition(choice);
    if (!p.fits) return std::numeric_limits<double>::infinity();
    if (!best_ || p.rating < best_rating_) {
      best_ = true;
      best_rating_ = p.rating;
      best_placements_ = std::move(p.placements);
    }
    return p.rating;
  }

  const double capacity_;
  std::vector<std::vector<Option>> options_;  // per table
  bool best_ = false;
  double best_rating_ = 0;
  std::vector<TablePlacement> best_placements_;
};

}  // namespace

ShardingPlan greedy_plan(const ShardingContext& c, int group_size, double hot_rows) {
  const int group = group_size > 0 ? group_size : c.world;
  const bool costs_communication = c.local_bytes_per_s > 0 || c.network_bytes_per_s > 0;
  ShardingPlan plan;
  plan.name = std::string("greedy") +
              (group < c.world ? " (2D, groups of " + std::to_string(group) + ")" : "");
  plan.group_size = group;
  plan.tables.resize(c.model->tables.size());

  // Largest predicted cost first.
  std::vector<TableWeight> weights;
  double total_seconds = 0.0;
  for (const auto& t : c.model->tables) {
    weights.push_back(table_weight(t, c, group, hot_rows));
    total_seconds += weights.back().seconds;
  }
  std::vector<std::size_t> order(c.model->tables.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return weights[a].seconds > weights[b].seconds;
  });
  GreedyPlanner planner(c, group, hot_rows);
  for (const std::size_t ti : order) {
    // Without bandwidths (communication not costed) a table stays whole unless one GPU would
    // carry more than its share of the embedding work, or too much memory; then it is split.
    const bool heavy = weights[ti].seconds > total_seconds / group ||
                       weights[ti].bytes > 0.5 * c.gpu.hbm_capacity_bytes;
    const bool split = costs_communication || (heavy && group > 1);
    plan.tables[ti] = planner.place(ti, costs_communication || !split, split);
  }
  return plan;
}

ShardingPlan torchrec_plan(const ShardingContext& context, int group_size, double hot_rows) {
  const int group = group_size > 0 ? group_size : context.world;
  return TorchrecPlanner(context, group, hot_rows).plan();
}

namespace {

// HugeCTR's planner as its train.py picks it: per GPU on one node, per node (hier_auto) on more.
HugectrPlannerOptions hugectr_options(const JobSpec& job, const ShardingContext& context,
                                      int group) {
  HugectrPlannerOptions o;
  o.hierarchical = group > context.gpus_per_node && group % context.gpus_per_node == 0;
  o.data_parallel_below_bytes = job.data_parallel_below_bytes;
  return o;
}

}  // namespace

ShardingPlan resolve_sharding(const JobSpec& job, const ShardingContext& context) {
  if (job.sharding == "best") {
    throw ConfigError(job.sharding_location,
                      "strategy best is chosen by simulating the candidates (models/workload "
                      "plan_search), not by a planner");
  }
  const int group = job.group.size(context.world, context.gpus_per_node);
  if (group > context.world || context.world % group != 0) {
    throw ConfigError(job.sharding_location, "a sharding group of " + std::to_string(group) +
                                                 " GPUs does not divide " +
                                                 std::to_string(context.world) + " GPUs");
  }
  // The tables the plan lists are placed as it says; the others by the strategy (greedy for
  // strategy: plan).
  ShardingPlan plan =
      job.sharding == "greedy" || job.sharding == "plan" ? greedy_plan(context, group, job.hot_rows)
      : job.sharding == "hugectr"
          ? hugectr_plan(context, group, job.hot_rows, hugectr_options(job, context, group))
      : job.sharding == "torchrec"
          ? torchrec_plan(context, group, job.hot_rows)
          : uniform_plan(*parse_strategy(job.sharding), context, group, job.hot_rows);
  if (job.plan.empty()) return plan;
  const RecsysModelSpec& model = *context.model;
  plan.name = "plan from " + job.source_file;
  for (const PlannedTable& t : job.plan) {
    std::size_t index = model.tables.size();
    for (std::size_t i = 0; i < model.tables.size(); ++i) {
      if (model.tables[i].name == t.table) index = i;
    }
    if (index == model.tables.size()) {
      throw ConfigError(t.location,
                        "no table named '" + t.table + "' in model '" + model.name + "'");
    }
    TablePlacement p;
    p.strategy = t.strategy;
    p.hot_rows = t.hot_rows ? *t.hot_rows : job.hot_rows;
    p.storage = t.storage;
    if (!t.gpus.empty()) {
      for (const int g : t.gpus) {
        if (g >= group) {
          throw ConfigError(t.location, "GPU " + std::to_string(g) +
                                            " is not in the sharding group (GPUs 0.." +
                                            std::to_string(group - 1) + ")");
        }
      }
      p.ranks = t.gpus;
    } else {
      ShardingPlan one = uniform_plan(t.strategy, context, group, p.hot_rows);
      p.ranks = one.tables[index].ranks;
    }
    if (t.strategy == ShardingStrategy::kTableWise && p.ranks.size() != 1) {
      throw ConfigError(t.location, "table-wise places a table on exactly one GPU");
    }
    plan.tables[index] = p;
  }
  return plan;
}

}  // namespace trainsim::models
