#include "models/spec/recsys_model.h"

#include <numeric>

namespace trainsim::models {

const EnumNames<InteractionKind>& interaction_names() {
  static const EnumNames<InteractionKind> names = {{InteractionKind::kDot, "dot"},
                                                   {InteractionKind::kDcnV2, "dcnv2"},
                                                   {InteractionKind::kConcat, "concat"}};
  return names;
}

const EnumNames<OptimizerKind>& optimizer_names() {
  static const EnumNames<OptimizerKind> names = {
      {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdagrad, "adagrad"}, {OptimizerKind::kAdam, "adam"}};
  return names;
}

namespace {

// Width of the pooled feature vectors concatenated from the tables (the sequence table counts
// once, after the transformer pools it to d_model).
int pooled_width(const RecsysModelSpec& m) {
  int width = 0;
  for (const auto& t : m.tables) width += t.dim;
  return width;
}

int features(const RecsysModelSpec& m) {
  return static_cast<int>(m.tables.size()) + (m.bottom_mlp.empty() ? 0 : 1);
}

}  // namespace

int RecsysModelSpec::interaction_input_width() const {
  return (bottom_mlp.empty() ? dense_features : bottom_mlp.back()) + pooled_width(*this);
}

int RecsysModelSpec::top_input_width() const {
  switch (interaction) {
    case InteractionKind::kDot: {
      // Pairwise dot products of the feature vectors, plus the bottom MLP output.
      const int f = features(*this);
      return f * (f - 1) / 2 + (bottom_mlp.empty() ? dense_features : bottom_mlp.back());
    }
    case InteractionKind::kDcnV2:
    case InteractionKind::kConcat:
      return interaction_input_width();
  }
  return interaction_input_width();
}

std::vector<Gemm> RecsysModelSpec::forward_gemms(double batch) const {
  std::vector<Gemm> gemms;
  int in = dense_features;
  for (std::size_t i = 0; i < bottom_mlp.size(); ++i) {
    gemms.push_back({"bottom_mlp." + std::to_string(i), batch, static_cast<double>(bottom_mlp[i]),
                     static_cast<double>(in)});
    in = bottom_mlp[i];
  }
  if (transformer) {
    const TransformerSpec& t = *transformer;
    const double tokens = batch * t.sequence_length;
    const double d = t.d_model;
    for (int l = 0; l < t.layers; ++l) {
      const std::string p = "transformer." + std::to_string(l);
      gemms.push_back({p + ".qkv", tokens, 3 * d, d});
      // Attention scores and weighted values: per example, L x L x d each (batched GEMMs).
      gemms.push_back(
          {p + ".scores", batch * t.sequence_length, static_cast<double>(t.sequence_length), d});
      gemms.push_back(
          {p + ".values", batch * t.sequence_length, d, static_cast<double>(t.sequence_length)});
      gemms.push_back({p + ".out", tokens, d, d});
      gemms.push_back({p + ".ffn_up", tokens, static_cast<double>(t.ffn), d});
      gemms.push_back({p + ".ffn_down", tokens, d, static_cast<double>(t.ffn)});
    }
  }
  const double width = interaction_input_width();
  switch (interaction) {
    case InteractionKind::kDot: {
      const double f = features(*this);
      gemms.push_back({"interaction.dot", batch * f, f, width / f});
      break;
    }
    case InteractionKind::kDcnV2:
      for (int l = 0; l < cross_layers; ++l) {
        const std::string p = "interaction.cross." + std::to_string(l);
        gemms.push_back({p + ".down", batch, static_cast<double>(low_rank), width});
        gemms.push_back({p + ".up", batch, width, static_cast<double>(low_rank)});
      }
      break;
    case InteractionKind::kConcat:
      break;
  }
  in = top_input_width();
  for (std::size_t i = 0; i < top_mlp.size(); ++i) {
    gemms.push_back({"top_mlp." + std::to_string(i), batch, static_cast<double>(top_mlp[i]),
                     static_cast<double>(in)});
    in = top_mlp[i];
  }
  return gemms;
}

double Gemm::parameters() const {
  if (layer.find(".scores") != std::string::npos || layer.find(".values") != std::string::npos ||
      layer.find("interaction.dot") != std::string::npos) {
    return 0.0;
  }
  return n * k + n;
}

double RecsysModelSpec::dense_parameters() const {
  double params = 0.0;
  for (const Gemm& g : forward_gemms(1)) params += g.parameters();
  return params;
}

double RecsysModelSpec::dense_state_bytes() const {
  return dense_parameters() * (4.0 + dense_optimizer.state_bytes_per_parameter);
}

double RecsysModelSpec::row_state_bytes(const EmbeddingTableSpec& table) const {
  return table.row_bytes() + table.dim * embedding_optimizer.state_bytes_per_parameter;
}

double RecsysModelSpec::state_bytes() const {
  double bytes = dense_state_bytes();
  for (const EmbeddingTableSpec& t : tables) bytes += t.rows * row_state_bytes(t);
  return bytes;
}

double RecsysModelSpec::activation_bytes_per_example() const {
  double values = 0.0;
  for (const Gemm& g : forward_gemms(1)) values += g.m * g.n;
  return values * dtype_bytes(compute_dtype);
}

double RecsysModelSpec::input_bytes_per_example() const {
  double ids = 0.0;
  for (const auto& t : tables) ids += t.pooling;
  return dense_features * 4.0 + ids * 8.0 + 4.0;
}

double RecsysModelSpec::embedding_rows() const {
  double rows = 0.0;
  for (const auto& t : tables) rows += t.rows;
  return rows;
}

}  // namespace trainsim::models
