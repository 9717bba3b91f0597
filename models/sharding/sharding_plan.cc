#include "models/sharding/sharding_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "engine/check.h"
#include "models/config/config_error.h"

namespace trainsim::models {

namespace {

constexpr double kIdBytes = 8.0;        // int64 ids
constexpr double kGradientBytes = 4.0;  // fp32 embedding gradients

struct TableCost {
  double lookups = 0, unique = 0;
};

// Cost of serving `draws` lookups restricted to popularity ranks > hot on one shard holding the
// given fraction of the rows (spread by hash).
double hbm_seconds(double bytes, double bandwidth) {
  return bandwidth > 0 ? bytes / bandwidth : 0.0;
}

}  // namespace

std::string_view strategy_name(ShardingStrategy strategy) {
  switch (strategy) {
    case ShardingStrategy::kTableWise:
      return "table_wise";
    case ShardingStrategy::kRowWise:
      return "row_wise";
    case ShardingStrategy::kColumnWise:
      return "column_wise";
    case ShardingStrategy::kTableRowWise:
      return "table_row_wise";
    case ShardingStrategy::kDataParallel:
      return "data_parallel";
  }
  return "?";
}

const std::vector<ShardingStrategy>& all_strategies() {
  static const std::vector<ShardingStrategy> all = {
      ShardingStrategy::kTableWise, ShardingStrategy::kRowWise, ShardingStrategy::kColumnWise,
      ShardingStrategy::kTableRowWise, ShardingStrategy::kDataParallel};
  return all;
}

std::optional<ShardingStrategy> parse_strategy(std::string_view name) {
  for (const ShardingStrategy s : all_strategies()) {
    if (strategy_name(s) == name) return s;
  }
  return std::nullopt;
}

double ShardCosts::imbalance() const {
  double most = 0.0, total = 0.0;
  for (const RankLoad& r : ranks) {
    most = std::max(most, r.lookups);
    total += r.lookups;
  }
  return total > 0 ? most / (total / static_cast<double>(ranks.size())) : 1.0;
}

double ShardCosts::cross_group_bytes() const {
  const int size = static_cast<int>(ranks.size()) / std::max(1, groups);
  double bytes = 0.0;
  for (std::size_t a = 0; a < id_bytes.size(); ++a) {
    for (std::size_t b = 0; b < id_bytes.size(); ++b) {
      if (static_cast<int>(a) / size != static_cast<int>(b) / size)
        bytes += id_bytes[a][b] + embedding_bytes[a][b];
    }
  }
  return bytes;
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
  ShardCosts costs;
  costs.groups = groups;
  costs.ranks.assign(world, RankLoad{});
  const bool matrices = !context.loads_only;
  if (matrices) {
    costs.id_bytes.assign(world, std::vector<double>(world, 0.0));
    costs.embedding_bytes.assign(world, std::vector<double>(world, 0.0));
  }
  const double b = context.batch_per_gpu;
  const double cb = dtype_bytes(context.communication_dtype);
  const double sync_bytes = dtype_bytes(context.sync_dtype);
  const GpuSpec& gpu = context.gpu;
  const double stream_bw = gpu.hbm_bandwidth_bytes_per_s * gpu.hbm_efficiency;
  // Per-rank state accumulated per table; the same for every group (replicas).
  std::vector<RankLoad> local(group);
  const int side = matrices ? group : 0;
  std::vector<std::vector<double>> ids(side, std::vector<double>(side, 0.0));
  std::vector<std::vector<double>> embeddings(side, std::vector<double>(side, 0.0));
  std::vector<double> replica_unique_bytes(group, 0.0);

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
    const double rb = t.row_bytes();
    const double hot = std::min(p.hot_rows, t.rows);
    const double hot_mass = t.access.mass(1, hot);
    const double cold_mass = 1.0 - hot_mass;
    const double draws = b * group * t.pooling;  // lookups into the group's shards
    const double all_draws = draws * groups;     // over all replicas
    const double state_per_row = t.dim * model.embedding_optimizer.state_bytes_per_parameter;

    auto serve = [&](int r, double lookups, double unique, double width_fraction,
                     double rows_held) {
      RankLoad& l = local[r];
      const double row = rb * width_fraction;
      l.lookups += lookups;
      l.unique_rows += unique;
      const double read = lookups * row;
      l.lookup_bytes += read;
      l.lookup_seconds +=
          hbm_seconds(read, gpu.hbm_bandwidth_bytes_per_s * gpu.embedding_efficiency_at(row));
      // Backward: gradients scattered per lookup, then each distinct row and its optimizer state
      // read and written once.
      const double update = lookups * t.dim * width_fraction * kGradientBytes +
                            unique * 2 * (row + state_per_row * width_fraction);
      l.update_bytes += update;
      l.update_seconds += hbm_seconds(update, stream_bw);
      l.parameter_bytes += rows_held * row;
      l.optimizer_bytes += rows_held * state_per_row * width_fraction;
    };

    // Hot rows: replicated everywhere, looked up locally, gradients all-reduced over all GPUs.
    if (hot > 0) {
      const double local_lookups = b * t.pooling * hot_mass;
      for (int r = 0; r < group; ++r) {
        serve(r, local_lookups, t.access.expected_unique(b * t.pooling, 1, hot), 1.0, hot);
      }
      costs.global_sync_bytes += hot * t.dim * sync_bytes;
    }
    const double cold_unique = t.access.expected_unique(draws, hot + 1, t.rows);
    const double cold_unique_all = t.access.expected_unique(all_draws, hot + 1, t.rows);
    // Each requesting GPU sends the owner its ids for this table (the share `id_share` of them
    // that the owner holds) and gets back, for a pooled table, one (partial) pooled vector per
    // sample, `share_of_output` of them; for a sequence table, the row of every id it sent.
    auto exchange = [&](int owner, int requester, double id_share, double width_fraction,
                        double share_of_output) {
      if (!matrices) return;
      ids[requester][owner] += b * t.pooling * id_share * kIdBytes;
      const double vectors = t.sequence ? t.pooling * id_share : share_of_output;
      embeddings[owner][requester] += b * vectors * t.dim * width_fraction * cb;
    };

    switch (p.strategy) {
      case ShardingStrategy::kTableWise: {
        TRAINSIM_ASSERT(p.ranks.size() == 1, "table-wise needs one GPU");
        const int o = p.ranks[0];
        serve(o, draws * cold_mass, cold_unique, 1.0, t.rows - hot);
        replica_unique_bytes[o] += cold_unique_all * t.dim * sync_bytes;
        for (int r = 0; r < group; ++r) exchange(o, r, cold_mass, 1.0, 1.0);
        break;
      }
      case ShardingStrategy::kRowWise:
      case ShardingStrategy::kTableRowWise: {
        const int shards = static_cast<int>(p.ranks.size());
        std::vector<double> mass = t.access.hashed_shard_mass(shards, context.hash_salt + ti);
        std::vector<double> unique =
            t.access.hashed_shard_unique(shards, draws, context.hash_salt + ti);
        std::vector<double> unique_all =
            t.access.hashed_shard_unique(shards, all_draws, context.hash_salt + ti);
        // Remove the replicated hot rows from the shards that hash them.
        for (double k = 1; k <= hot; k += 1) {
          const int s = AccessDistribution::shard_of(k, shards, context.hash_salt + ti);
          const double pk = t.access.probability(k);
          mass[s] -= pk;
          unique[s] -= -std::expm1(draws * std::log1p(-pk));
          unique_all[s] -= -std::expm1(all_draws * std::log1p(-pk));
        }
        for (int s = 0; s < shards; ++s) {
          const int o = p.ranks[s];
          serve(o, draws * std::max(0.0, mass[s]), std::max(0.0, unique[s]), 1.0,
                (t.rows - hot) / shards);
          replica_unique_bytes[o] += std::max(0.0, unique_all[s]) * t.dim * sync_bytes;
          for (int r = 0; r < group; ++r) {
            if (p.strategy == ShardingStrategy::kRowWise) {
              // Every shard returns a partial sum for every sample.
              exchange(o, r, std::max(0.0, mass[s]), 1.0, 1.0);
            } else {
              // Table-row-wise: partial sums are reduce-scattered inside the owning node first
              // (each owner then returns 1/shards of the samples), then sent on.
              exchange(o, r, std::max(0.0, mass[s]), 1.0, 1.0 / shards);
            }
          }
          if (matrices && p.strategy == ShardingStrategy::kTableRowWise && !t.sequence) {
            for (const int other : p.ranks) {
              if (other != o) embeddings[o][other] += b * group * t.dim * cb / (shards * shards);
            }
          }
        }
        break;
      }
      case ShardingStrategy::kColumnWise: {
        const int shards = static_cast<int>(p.ranks.size());
        if (t.dim % shards != 0) {
          throw ConfigError(t.location, "column-wise sharding of table '" + t.name + "' over " +
                                            std::to_string(shards) + " GPUs needs dim " +
                                            std::to_string(t.dim) + " to be a multiple of " +
                                            std::to_string(shards));
        }
        for (const int o : p.ranks) {
          serve(o, draws * cold_mass, cold_unique, 1.0 / shards, t.rows - hot);
          replica_unique_bytes[o] += cold_unique_all * t.dim / shards * sync_bytes;
          for (int r = 0; r < group; ++r) exchange(o, r, cold_mass, 1.0 / shards, 1.0);
        }
        break;
      }
      case ShardingStrategy::kDataParallel: {
        // A full copy everywhere: local lookups, gradients of the whole table all-reduced.
        for (int r = 0; r < group; ++r) {
          serve(r, b * t.pooling * cold_mass,
                t.access.expected_unique(b * t.pooling, hot + 1, t.rows), 1.0, t.rows - hot);
        }
        costs.global_sync_bytes += (t.rows - hot) * t.dim * sync_bytes;
        break;
      }
    }
  }

  // Dense network (replicated), activations and all-to-all buffers, then the same for every group.
  const double dense_params = model.dense_parameters();
  for (int g = 0; g < groups; ++g) {
    for (int r = 0; r < group; ++r) {
      RankLoad l = local[r];
      l.dense_bytes = dense_params * (4.0 + model.dense_optimizer.state_bytes_per_parameter);
      l.activation_bytes = b * model.activation_bytes_per_example();
      for (int o = 0; o < side; ++o) {
        l.buffer_bytes += ids[r][o] + ids[o][r] + embeddings[r][o] + embeddings[o][r];
        costs.id_bytes[g * group + r][g * group + o] = ids[r][o];
        costs.embedding_bytes[g * group + r][g * group + o] = embeddings[r][o];
      }
      if (groups > 1) l.replica_sync_bytes = replica_unique_bytes[r];
      costs.ranks[g * group + r] = l;
    }
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

namespace {

std::vector<int> all_ranks(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Expected embedding seconds of a whole table on one GPU, and its bytes (parameters + state).
struct TableWeight {
  double seconds = 0.0;
  double bytes = 0.0;
};

// Expected embedding seconds and bytes on each shard (in placement order) of one table placed
// alone.
std::vector<TableWeight> shard_weights(const EmbeddingTableSpec& t, const ShardingContext& c,
                                       int group, const TablePlacement& placement) {
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
  std::vector<TableWeight> weights;
  for (const int r : placement.ranks) {
    const RankLoad& l = costs.ranks[r];
    weights.push_back({embedding_seconds(l), l.parameter_bytes + l.optimizer_bytes});
  }
  return weights;
}

TableWeight table_weight(const EmbeddingTableSpec& t, const ShardingContext& c, int group,
                         double hot) {
  return shard_weights(t, c, group, TablePlacement{ShardingStrategy::kTableWise, {0}, hot})[0];
}

// Memory every GPU needs whatever the plan: the dense network with its optimizer state, and
// activations.
double fixed_bytes(const ShardingContext& c) {
  return c.model->dense_parameters() * (4.0 + c.model->dense_optimizer.state_bytes_per_parameter) +
         c.batch_per_gpu * c.model->activation_bytes_per_example();
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
    }
  }
  if (!table_wise.empty()) {
    std::vector<double> load(group, 0.0), used(group, fixed_bytes(c));
    place_table_wise(plan, table_wise, c, group, hot_rows, load, used);
  }
  return plan;
}

ShardingPlan greedy_plan(const ShardingContext& c, int group_size, double hot_rows) {
  const int group = group_size > 0 ? group_size : c.world;
  const int node = std::min(c.gpus_per_node, group);
  const int nodes = group / node;
  ShardingPlan plan;
  plan.name = std::string("greedy") +
              (group < c.world ? " (2D, groups of " + std::to_string(group) + ")" : "");
  plan.group_size = group;
  plan.tables.resize(c.model->tables.size());
  // A table is split when one GPU would carry more than its share of the embedding work, or too
  // much memory: row-wise over the GPUs of one node (table-row-wise) when the group spans nodes,
  // which keeps the partial sums on NVLink, else row-wise over the group. The rest are placed
  // whole (table-wise), largest predicted time first, onto the least loaded GPU that has room.
  double total_seconds = 0.0;
  std::vector<TableWeight> weights;
  for (const auto& t : c.model->tables) {
    weights.push_back(table_weight(t, c, group, hot_rows));
    total_seconds += weights.back().seconds;
  }
  std::vector<double> load(group, 0.0), used(group, fixed_bytes(c));
  std::vector<std::size_t> whole;
  std::vector<std::size_t> split;
  for (std::size_t ti = 0; ti < weights.size(); ++ti) {
    const bool heavy = weights[ti].seconds > total_seconds / group ||
                       weights[ti].bytes > 0.5 * c.gpu.hbm_capacity_bytes;
    (heavy && group > 1 ? split : whole).push_back(ti);
  }
  std::stable_sort(split.begin(), split.end(), [&](std::size_t a, std::size_t b) {
    return weights[a].seconds > weights[b].seconds;
  });
  // Split tables go, heaviest first, where they raise the most loaded GPU least. Their per-GPU
  // cost is computed for the actual split (dedup and skew per shard), not as an even share.
  for (const std::size_t ti : split) {
    const EmbeddingTableSpec& table = c.model->tables[ti];
    // Candidates: row-wise over the GPUs of one node (table-row-wise) or over the whole
    // single-node group, and column-wise over the GPUs of one node (every shard sees every
    // lookup, so skew does not unbalance it, but each lookup touches every shard).
    struct Option {
      TablePlacement placement;
      std::vector<TableWeight> shards;
    };
    std::vector<Option> options;
    const auto node_ranks = [&](int n, int count) {
      std::vector<int> ranks;
      for (int i = 0; i < count; ++i) ranks.push_back(n * node + i);
      return ranks;
    };
    int columns = std::min(node, table.dim);
    while (table.dim % columns != 0) --columns;
    for (const ShardingStrategy strategy :
         {ShardingStrategy::kRowWise, ShardingStrategy::kColumnWise}) {
      if (strategy == ShardingStrategy::kColumnWise && columns < 2) continue;
      const ShardingStrategy rows =
          nodes > 1 ? ShardingStrategy::kTableRowWise : ShardingStrategy::kRowWise;
      const ShardingStrategy s = strategy == ShardingStrategy::kRowWise ? rows : strategy;
      const int count = strategy == ShardingStrategy::kColumnWise ? columns : node;
      // Shard costs depend only on the shard index, not on which GPUs hold them: compute once.
      const std::vector<TableWeight> shards =
          shard_weights(table, c, group, TablePlacement{s, node_ranks(0, count), hot_rows});
      for (int n = 0; n < nodes; ++n)
        options.push_back({TablePlacement{s, node_ranks(n, count), hot_rows}, shards});
    }
    const auto peak = [&](const Option& o) {
      double p = 0.0;
      for (std::size_t i = 0; i < o.shards.size(); ++i)
        p = std::max(p, load[o.placement.ranks[i]] + o.shards[i].seconds);
      return p;
    };
    std::size_t best = 0;
    for (std::size_t o = 1; o < options.size(); ++o)
      if (peak(options[o]) < peak(options[best])) best = o;
    const Option& chosen = options[best];
    plan.tables[ti] = chosen.placement;
    for (std::size_t i = 0; i < chosen.shards.size(); ++i) {
      load[chosen.placement.ranks[i]] += chosen.shards[i].seconds;
      used[chosen.placement.ranks[i]] += chosen.shards[i].bytes;
    }
  }
  place_table_wise(plan, whole, c, group, hot_rows, load, used);
  return plan;
}

}  // namespace trainsim::models
