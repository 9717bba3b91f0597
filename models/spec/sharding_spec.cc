#include "models/spec/sharding_spec.h"

namespace trainsim::models {

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

}  // namespace trainsim::models
