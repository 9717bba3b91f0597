// A DLRM-like recommender: embedding tables looked up by sparse ids, a dense network of layers
// (bottom MLP over dense features, a feature interaction, a top MLP, optionally transformer blocks
// over a sequence of user-history embeddings), optimizers and precisions. FLOPs and bytes per
// example are derived from the layer shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/spec/access_distribution.h"
#include "models/spec/config_error.h"
#include "models/spec/dtype.h"
#include "models/spec/enum_names.h"
#include "models/spec/runtime_spec.h"
#include "models/spec/sharding_spec.h"

namespace trainsim::models {

struct EmbeddingTableSpec {
  std::string name;
  double rows = 0;
  int dim = 0;
  Dtype dtype = Dtype::kFp32;  // storage
  double pooling = 1;          // ids per sample (pooling factor / multi-hot size)
  bool sequence = false;       // ids form a sequence (not pooled), fed to the transformer
  AccessDistribution access = AccessDistribution::uniform(1);
  std::string access_file;  // a histogram's file, as the model file's directory resolves it
  SourceLocation location;
  // Where the rows live and, for a cached table, the share of its rows the HBM cache holds: the
  // job's sharding section sets them (sharding.storage, sharding.cache_load_factor).
  EmbeddingStorage storage = EmbeddingStorage::kHbm;
  double cache_load_factor = 0.2;

  double row_bytes() const { return dim * dtype_bytes(dtype); }
  double bytes() const { return rows * row_bytes(); }
};

enum class InteractionKind { kDot, kDcnV2, kConcat };
const EnumNames<InteractionKind>& interaction_names();  // "dot", "dcnv2", "concat"

struct TransformerSpec {
  int layers = 0;
  int d_model = 0;
  int heads = 1;
  int ffn = 0;
  int sequence_length = 0;  // tokens per example (the sequence table's pooling)
  std::string sequence_table;
};

enum class OptimizerKind { kSgd, kAdagrad, kAdam };
const EnumNames<OptimizerKind>& optimizer_names();  // "sgd", "adagrad", "adam"

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double state_bytes_per_parameter = 0.0;  // SGD 0, Adagrad 4 (one fp32), Adam 8 (two fp32)
};

// One matrix multiply of the dense network, per training step on one GPU: (M x K) by (K x N).
struct Gemm {
  std::string layer;
  double m = 0, n = 0, k = 0;
  double flops() const { return 2 * m * n * k; }
  // Trainable weights (N x K plus a bias of N); attention score and value products have none.
  double parameters() const;
};

struct RecsysModelSpec {
  std::string name;
  std::string description;
  std::string source_file;
  int dense_features = 0;
  std::vector<EmbeddingTableSpec> tables;
  std::vector<int> bottom_mlp;
  InteractionKind interaction = InteractionKind::kDot;
  int cross_layers = 0;  // DCNv2
  int low_rank = 0;      // DCNv2
  std::vector<int> top_mlp;
  std::optional<TransformerSpec> transformer;
  OptimizerSpec embedding_optimizer;
  OptimizerSpec dense_optimizer;
  Dtype compute_dtype = Dtype::kBf16;
  Dtype communication_dtype = Dtype::kFp32;  // embedding all-to-all payload
  Dtype gradient_dtype = Dtype::kFp32;       // dense gradient all-reduce payload
  SourceLocation compute_dtype_location;
  DatasetSpec dataset;
  ConvergenceSpec convergence;

  // Width of the vector entering the interaction / the top MLP.
  int interaction_input_width() const;
  int top_input_width() const;
  // The forward GEMMs of one step for `batch` examples on one GPU (backward costs twice these).
  std::vector<Gemm> forward_gemms(double batch) const;
  double dense_parameters() const;
  // Dense parameters as fp32 master weights plus their optimizer state.
  double dense_state_bytes() const;
  // One embedding row with its optimizer state.
  double row_state_bytes(const EmbeddingTableSpec& table) const;
  // Everything a checkpoint holds: the dense state and every table row with its state.
  double state_bytes() const;
  // Activation bytes kept for backward per example (layer outputs in the compute format).
  double activation_bytes_per_example() const;
  // Bytes of one example's input: dense features, ids (int64), label.
  double input_bytes_per_example() const;
  double embedding_rows() const;
};

}  // namespace trainsim::models
