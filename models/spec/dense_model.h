// A data-parallel dense model: every GPU holds all parameters, computes on its share of the batch,
// and all-reduces the gradients each step.
#pragma once

#include <string>

#include <optional>

#include "models/spec/collective_tuning.h"
#include "models/spec/config_error.h"
#include "models/spec/dtype.h"
#include "models/spec/runtime_spec.h"

namespace trainsim::models {

struct DenseModelSpec {
  std::string name;
  std::string description;
  std::string source_file;
  double flops_per_example = 0.0;              // forward + backward
  double backward_flops_fraction = 2.0 / 3.0;  // backward costs about twice the forward
  double parameter_bytes = 0.0;  // gradients of the same size are all-reduced every step
  double batch_per_gpu = 1;
  Dtype compute_dtype = Dtype::kBf16;
  SourceLocation compute_dtype_location;
  bool overlap_all_reduce = false;  // all-reduce gradient buckets while backward runs
  int gradient_buckets = 1;
  // All-reduce algorithm; unset: the fastest for each bucket's size (the picker).
  std::optional<Algorithm> all_reduce_algorithm;
  SourceLocation all_reduce_algorithm_location;
  DatasetSpec dataset;
  ConvergenceSpec convergence;
};

}  // namespace trainsim::models
