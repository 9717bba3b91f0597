// A model file holds either a data-parallel dense model or a recommender.
#pragma once

#include <string>
#include <variant>

#include "models/spec/dense_model.h"
#include "models/spec/recsys_model.h"

namespace trainsim::models {

using ModelSpec = std::variant<DenseModelSpec, RecsysModelSpec>;

inline const std::string& model_name(const ModelSpec& model) {
  return std::visit([](const auto& m) -> const std::string& { return m.name; }, model);
}
inline const std::string& model_source_file(const ModelSpec& model) {
  return std::visit([](const auto& m) -> const std::string& { return m.source_file; }, model);
}

}  // namespace trainsim::models
