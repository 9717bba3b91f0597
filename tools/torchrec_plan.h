// A trainsim sharding plan in TorchRec's terms, for a team to hand back to its planner: the
// tables as TorchRec's EmbeddingBagConfig list (name, num_embeddings, embedding_dim,
// feature_names, pooling, data_type, with the ids per sample as `pooling_factor`, the planner's
// ParameterConstraints, and the access distribution as `access`, trainsim's own), and the plan as
// TorchRec's ShardingPlan (per module, per table: sharding_type, compute_kernel, ranks and the
// shards' offsets, sizes and placements). A job reads the plan back with sharding.torchrec_plan,
// a model the tables with embedding.tables: FILE.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/spec/recsys_model.h"
#include "models/spec/sharding_spec.h"

namespace trainsim::cli {

// The module the plan's tables belong to (the FQN of an EmbeddingBagCollection).
inline constexpr const char* kTorchrecModule = "embedding_bag_collection";

// {"tables": [...], "plan": {module: {table: ParameterSharding}}}. Throws UsageError for a 2D
// plan (sharding groups smaller than the world have no ShardingPlan form).
nlohmann::ordered_json torchrec_plan_json(const models::ShardingPlan& plan,
                                          const models::RecsysModelSpec& model, int world,
                                          int gpus_per_node);

}  // namespace trainsim::cli
