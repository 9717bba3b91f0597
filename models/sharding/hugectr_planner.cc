#include "models/sharding/hugectr_planner.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace trainsim::models {

namespace {

struct Candidate {
  double max_cost = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int>> buckets;  // per GPU, the tables it holds a shard of, in order
  std::vector<int> splits;                // per table; 0: data-parallel
};

class HugectrPlanner {
 public:
  HugectrPlanner(const ShardingContext& context, int buckets, const HugectrPlannerOptions& o)
      : model_(*context.model), buckets_(buckets), ratio_(o.comm_cost_ratio) {
    // HBM against the link a shard's exchange crosses: NVLink on one node, the network (per GPU)
    // across nodes; over mem_comm_work_ratio 8/2. Without bandwidths: the v3.1 configurations'
    // MEM_COMM_BW_RATIO (7 on one node, 67 across nodes).
    const double link = o.hierarchical ? context.network_bytes_per_s : context.local_bytes_per_s;
    if (ratio_ <= 0) {
      ratio_ = link > 0 ? context.gpu.hbm_bandwidth_bytes_per_s / link / 4.0
                        : (o.hierarchical ? 67.0 : 7.0) / 4.0;
    }
    const int gpus_per_bucket = o.hierarchical ? context.gpus_per_node : 1;
    cap_ = std::min(o.memory_cap_bytes, context.gpu.hbm_capacity_bytes) * gpus_per_bucket;
    splits_.assign(model_.tables.size(), 1);
    for (std::size_t t = 0; t < model_.tables.size(); ++t) {
      const double bytes = table_bytes(t);
      if (bytes < o.data_parallel_below_bytes) {
        splits_[t] = 0;  // replicated: its memory comes off every GPU
        cap_ -= bytes;
      }
    }
    max_iterations_ = o.max_iterations;
  }

  Candidate run() {
    Candidate best = uniform_candidate();
    for (int it = 0; it < max_iterations_; ++it) {
      int failed = -1;
      Candidate c = place(failed);
      if (failed >= 0) {
        if (!split(failed)) break;
        continue;
      }
      if (c.max_cost < best.max_cost) best = c;
      if (!split(hottest_splittable())) break;
    }
    return best;
  }

 private:
  double hotness(std::size_t t) const { return model_.tables[t].pooling / splits_[t]; }
  double table_bytes(std::size_t t) const {
    return model_.tables[t].rows * model_.row_state_bytes(model_.tables[t]);
  }

  // Step (1): every model-parallel table split over every GPU.
  Candidate uniform_candidate() const {
    Candidate c;
    c.buckets.assign(buckets_, {});
    c.splits = splits_;
    double cost = 0;
    for (std::size_t t = 0; t < splits_.size(); ++t) {
      if (splits_[t] == 0) continue;
      c.splits[t] = buckets_;
      cost += model_.tables[t].pooling / buckets_ + ratio_;
      for (auto& b : c.buckets) b.push_back(static_cast<int>(t));
    }
    c.max_cost = cost;
    return c;
  }

  // Shards hottest first (ties in table order), each on the cheapest GPU (the first of equals)
  // without a shard of its table and with memory for it; `failed` names a table that did not fit.
  Candidate place(int& failed) const {
    std::vector<int> shards;
    for (std::size_t t = 0; t < splits_.size(); ++t) {
      for (int k = 0; k < splits_[t]; ++k) shards.push_back(static_cast<int>(t));
    }
    std::stable_sort(shards.begin(), shards.end(),
                     [this](int a, int b) { return hotness(a) > hotness(b); });
    Candidate c;
    c.buckets.assign(buckets_, {});
    c.splits = splits_;
    std::vector<double> cost(buckets_, 0.0), memory(buckets_, 0.0);
    for (const int t : shards) {
      const double bytes = table_bytes(t) / splits_[t];
      int chosen = -1;
      for (int g = 0; g < buckets_; ++g) {
        const auto& held = c.buckets[g];
        if (std::find(held.begin(), held.end(), t) != held.end()) continue;
        if (memory[g] + bytes > cap_) continue;
        if (chosen < 0 || cost[g] < cost[chosen]) chosen = g;
      }
      if (chosen < 0) {
        failed = t;
        return c;
      }
      c.buckets[chosen].push_back(t);
      cost[chosen] += hotness(t) + ratio_;
      memory[chosen] += bytes;
    }
    c.max_cost = *std::max_element(cost.begin(), cost.end());
    return c;
  }

  int hottest_splittable() const {
    int best = -1;
    for (std::size_t t = 0; t < splits_.size(); ++t) {
      if (splits_[t] == 0 || splits_[t] * 2 > buckets_) continue;
      if (best < 0 || hotness(t) > hotness(best)) best = static_cast<int>(t);
    }
    return best;
  }

  bool split(int t) {
    if (t < 0 || splits_[t] * 2 > buckets_) return false;
    splits_[t] *= 2;
    return true;
  }

  const RecsysModelSpec& model_;
  const int buckets_;
  double ratio_;
  double cap_ = 0;
  int max_iterations_ = 20;
  std::vector<int> splits_;
};

}  // namespace

ShardingPlan hugectr_plan(const ShardingContext& context, int group_size, double hot_rows,
                          const HugectrPlannerOptions& options) {
  const int group = group_size > 0 ? group_size : context.world;
  const int per_bucket = options.hierarchical ? context.gpus_per_node : 1;
  const Candidate best = HugectrPlanner(context, group / per_bucket, options).run();
  ShardingPlan plan;
  plan.name = options.hierarchical ? "hugectr (per node)" : "hugectr";
  plan.group_size = group;
  const std::size_t tables = context.model->tables.size();
  plan.tables.resize(tables);
  std::vector<int> all(group);
  std::iota(all.begin(), all.end(), 0);
  for (std::size_t t = 0; t < tables; ++t) {
    TablePlacement& p = plan.tables[t];
    p.hot_rows = hot_rows;
    if (best.splits[t] == 0) {
      p.strategy = ShardingStrategy::kDataParallel;
      p.ranks = all;
      continue;
    }
    for (std::size_t b = 0; b < best.buckets.size(); ++b) {
      const auto& held = best.buckets[b];
      if (std::find(held.begin(), held.end(), static_cast<int>(t)) == held.end()) continue;
      for (int g = 0; g < per_bucket; ++g) p.ranks.push_back(static_cast<int>(b) * per_bucket + g);
    }
    // One GPU: table-wise. Whole nodes (hier_auto): table-row-wise, HugeCTR's hierarchical
    // exchange (partial sums reduced inside each node, then sent on the requesters' rails).
    // Otherwise (one node's GPUs, flat exchange) row-wise over them.
    p.strategy = p.ranks.size() == 1    ? ShardingStrategy::kTableWise
                 : options.hierarchical ? ShardingStrategy::kTableRowWise
                                        : ShardingStrategy::kRowWise;
  }
  return plan;
}

}  // namespace trainsim::models
