#include "models/spec/sharding_spec.h"

namespace trainsim::models {

const EnumNames<ShardingStrategy>& strategy_names() {
  static const EnumNames<ShardingStrategy> names = {
      {ShardingStrategy::kTableWise, "table_wise"},
      {ShardingStrategy::kRowWise, "row_wise"},
      {ShardingStrategy::kColumnWise, "column_wise"},
      {ShardingStrategy::kTableRowWise, "table_row_wise"},
      {ShardingStrategy::kDataParallel, "data_parallel"},
      {ShardingStrategy::kTableColumnWise, "table_column_wise"},
      {ShardingStrategy::kGridShard, "grid_shard"}};
  return names;
}

const EnumNames<EmbeddingStorage>& storage_names() {
  static const EnumNames<EmbeddingStorage> names = {{EmbeddingStorage::kHbm, "hbm"},
                                                    {EmbeddingStorage::kUvm, "uvm"},
                                                    {EmbeddingStorage::kUvmCaching, "uvm_caching"}};
  return names;
}

std::string_view strategy_name(ShardingStrategy strategy) {
  return strategy_names().name(strategy);
}
std::optional<ShardingStrategy> parse_strategy(std::string_view name) {
  return strategy_names().parse(name);
}
const std::vector<ShardingStrategy>& all_strategies() { return strategy_names().values(); }

}  // namespace trainsim::models
