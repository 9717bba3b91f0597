// How embedding tables are placed on GPUs: the strategies, and a plan (one placement per table
// inside sharding groups of GPUs). Plain data; models/sharding plans and costs them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/spec/enum_names.h"

namespace trainsim::models {

// TorchRec's names (torchrec.distributed.types.ShardingType): table_wise, row_wise, column_wise,
// table_row_wise, table_column_wise (column shards, each whole on a GPU of one node), grid_shard
// (a column block per node, each row-wise over that node's GPUs), data_parallel.
enum class ShardingStrategy {
  kTableWise,
  kRowWise,
  kColumnWise,
  kTableRowWise,
  kDataParallel,
  kTableColumnWise,
  kGridShard,
};

const EnumNames<ShardingStrategy>& strategy_names();
std::string_view strategy_name(ShardingStrategy strategy);
std::optional<ShardingStrategy> parse_strategy(std::string_view name);
const std::vector<ShardingStrategy>& all_strategies();

// Where a table's rows live, as FBGEMM's table-batched kernels place them (TorchRec's compute
// kernels FUSED, FUSED_UVM, FUSED_UVM_CACHING): in HBM; in host memory, every looked-up row read
// over the GPU's host link (unified memory); or in host memory with an HBM cache of some of the
// rows, the rows a batch misses copied in (and the evicted ones written back) before the lookup.
enum class EmbeddingStorage { kHbm, kUvm, kUvmCaching };
const EnumNames<EmbeddingStorage>& storage_names();  // "hbm", "uvm", "uvm_caching"

struct TablePlacement {
  ShardingStrategy strategy = ShardingStrategy::kTableWise;
  // Group-local ranks holding the table's shards: one for table-wise, the group (or a node of it)
  // for row-wise and table-row-wise, k for column-wise, all for data-parallel.
  std::vector<int> ranks;
  double hot_rows = 0;  // most popular rows replicated on every GPU
  // Where the table's rows live when the plan says (a planner moved the table to host memory,
  // or a job's plan lists it); unset: the table's own storage (the job's sharding.storage).
  std::optional<EmbeddingStorage> storage = std::nullopt;
};

struct ShardingPlan {
  std::string name;
  int group_size = 0;  // GPUs per sharding group; the world size without 2D sharding
  std::vector<TablePlacement> tables;  // one per model table, same order
};

}  // namespace trainsim::models
