#include "tools/torchrec_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "tools/cli.h"

namespace trainsim::cli {

namespace {

using Json = nlohmann::ordered_json;

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

Json shard(double row_offset, double col_offset, double rows, double cols, int rank) {
  return Json{
      {"shard_offsets", {static_cast<long long>(row_offset), static_cast<long long>(col_offset)}},
      {"shard_sizes", {static_cast<long long>(rows), static_cast<long long>(cols)}},
      {"placement", "rank:" + std::to_string(rank) + "/cuda:" + std::to_string(rank)}};
}

// Rows split into k blocks as TorchRec's row-wise sharding does (ceil-sized blocks, the last
// shorter).
void row_blocks(Json& specs, double rows, double col_offset, double cols,
                const std::vector<int>& ranks) {
  const double k = static_cast<double>(ranks.size());
  const double block = std::ceil(rows / k);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double offset = block * static_cast<double>(i);
    specs.push_back(
        shard(offset, col_offset, std::max(0.0, std::min(block, rows - offset)), cols, ranks[i]));
  }
}

Json access_json(const models::EmbeddingTableSpec& t) {
  Json a{{"distribution", std::string(t.access.kind_name())}};
  if (t.access.kind_name() == "zipf") a["alpha"] = t.access.alpha();
  if (t.access.kind_name() == "histogram") a["file"] = t.access_file;
  if (t.access.kind_name() == "hot_set") {
    a["hot_rows"] = t.access.hot_rows();
    a["hot_mass"] = t.access.hot_mass();
  }
  if (t.access.ids_per_sample() > 1) a["multi_hot"] = "derived";
  return a;
}

}  // namespace

Json torchrec_plan_json(const models::ShardingPlan& plan, const models::RecsysModelSpec& model,
                        int world, int gpus_per_node) {
  gpus_per_node = std::max(1, gpus_per_node);
  if (plan.group_size > 0 && plan.group_size < world) {
    throw UsageError("plan '" + plan.name + "' is 2D (sharding groups of " +
                     std::to_string(plan.group_size) +
                     " GPUs): TorchRec's ShardingPlan has no form for it");
  }
  // Built apart and put in at the end: an ordered_json object keeps its members in a vector, so
  // a reference into it does not survive adding another.
  Json tables = Json::array();
  Json params = Json::object();
  for (std::size_t i = 0; i < model.tables.size(); ++i) {
    const models::EmbeddingTableSpec& t = model.tables[i];
    tables.push_back(Json{{"name", t.name},
                          {"num_embeddings", static_cast<long long>(t.rows)},
                          {"embedding_dim", t.dim},
                          {"feature_names", {t.name}},
                          {"pooling", t.sequence ? "NONE" : "SUM"},
                          {"data_type", upper(models::dtype_name(t.dtype))},
                          {"pooling_factor", t.pooling},
                          {"access", access_json(t)}});
    const models::TablePlacement& p = plan.tables[i];
    Json s;
    Json specs = Json::array();
    s["sharding_type"] = std::string(models::strategy_name(p.strategy));
    const bool dp = p.strategy == models::ShardingStrategy::kDataParallel;
    const models::EmbeddingStorage storage = p.storage.value_or(t.storage);
    s["compute_kernel"] = storage == models::EmbeddingStorage::kUvm          ? "fused_uvm"
                          : storage == models::EmbeddingStorage::kUvmCaching ? "fused_uvm_caching"
                          : dp                                               ? "dense"
                                                                             : "fused";
    s["ranks"] = p.ranks;
    if (!dp) {
      const double rows = t.rows, dim = t.dim;
      const auto k = static_cast<double>(p.ranks.size());
      switch (p.strategy) {
        case models::ShardingStrategy::kTableWise:
          specs.push_back(shard(0, 0, rows, dim, p.ranks.front()));
          break;
        case models::ShardingStrategy::kColumnWise:
        case models::ShardingStrategy::kTableColumnWise:
          for (std::size_t c = 0; c < p.ranks.size(); ++c) {
            specs.push_back(shard(0, dim / k * static_cast<double>(c), rows, dim / k, p.ranks[c]));
          }
          break;
        case models::ShardingStrategy::kRowWise:
        case models::ShardingStrategy::kTableRowWise:
          row_blocks(specs, rows, 0, dim, p.ranks);
          break;
        case models::ShardingStrategy::kGridShard: {
          // A column block per node holding the table, its rows over that node's GPUs.
          std::vector<std::vector<int>> nodes;
          for (const int r : p.ranks) {
            auto it = std::find_if(nodes.begin(), nodes.end(), [&](const std::vector<int>& n) {
              return n.front() / gpus_per_node == r / gpus_per_node;
            });
            if (it == nodes.end()) {
              nodes.push_back({r});
            } else {
              it->push_back(r);
            }
          }
          const double cols = dim / static_cast<double>(nodes.size());
          for (std::size_t b = 0; b < nodes.size(); ++b) {
            row_blocks(specs, rows, cols * static_cast<double>(b), cols, nodes[b]);
          }
          break;
        }
        case models::ShardingStrategy::kDataParallel:
          break;
      }
      s["sharding_spec"] = std::move(specs);
    }
    params[t.name] = std::move(s);
  }
  Json out;
  out["tables"] = std::move(tables);
  out["plan"][kTorchrecModule] = std::move(params);
  return out;
}

}  // namespace trainsim::cli
