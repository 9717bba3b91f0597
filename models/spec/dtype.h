// Numeric formats for compute and communication, with their sizes.
#pragma once

#include <optional>
#include <string_view>

#include "models/spec/enum_names.h"

namespace trainsim::models {

enum class Dtype { kFp32, kTf32, kBf16, kFp16, kFp8 };

const EnumNames<Dtype>& dtype_names();
std::string_view dtype_name(Dtype dtype);
std::optional<Dtype> parse_dtype(std::string_view name);
// Bytes per element as stored and communicated (TF32 is stored as FP32).
double dtype_bytes(Dtype dtype);

}  // namespace trainsim::models
