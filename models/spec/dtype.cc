#include "models/spec/dtype.h"

namespace trainsim::models {

const EnumNames<Dtype>& dtype_names() {
  static const EnumNames<Dtype> names = {{Dtype::kFp32, "fp32"},
                                         {Dtype::kTf32, "tf32"},
                                         {Dtype::kBf16, "bf16"},
                                         {Dtype::kFp16, "fp16"},
                                         {Dtype::kFp8, "fp8"}};
  return names;
}

std::string_view dtype_name(Dtype dtype) { return dtype_names().name(dtype); }
std::optional<Dtype> parse_dtype(std::string_view name) { return dtype_names().parse(name); }

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
