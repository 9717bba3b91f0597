#include "models/spec/dtype.h"

namespace trainsim::models {

std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kTf32:
      return "tf32";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp8:
      return "fp8";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype d : {Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kFp32:
    case Dtype::kTf32:
      return 4.0;
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2.0;
    case Dtype::kFp8:
      return 1.0;
  }
  return 4.0;
}

}  // namespace trainsim::models
