#include "models/config/model_config.h"

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/runtime_config.h"

namespace trainsim::models {

DenseModelSpec parse_dense_model_spec(const ConfigNode& root) {
  MapReader map(root);
  DenseModelSpec model;
  model.source_file = root.file();
  model.name = map.required("name").as_string();
  if (auto kind = map.optional("kind")) {
    if (kind->as_string() != "dense") kind->fail("a dense model file has kind: dense");
  }
  if (auto d = map.optional("description")) model.description = d->as_string();
  model.flops_per_example = map.required("flops_per_example").positive_quantity(Dimension::kFlops);
  if (auto f = map.optional("backward_flops_fraction")) {
    model.backward_flops_fraction = f->as_number();
    if (!(model.backward_flops_fraction >= 0.0 && model.backward_flops_fraction < 1.0)) {
      f->fail("must be in [0, 1), got " + f->as_string());
    }
  }
  model.parameter_bytes = map.required("parameter_bytes").positive_quantity(Dimension::kBytes);
  model.batch_per_gpu = static_cast<int>(map.required("batch_per_gpu").positive_integer());
  const ConfigNode dtype = map.required("compute_dtype");
  model.compute_dtype = parse_dtype_node(dtype);
  model.compute_dtype_location = dtype.location();
  if (auto ar = map.optional("gradient_all_reduce")) {
    MapReader ar_map(*ar);
    if (auto overlap = ar_map.optional("overlap_with_backward")) {
      model.overlap_all_reduce = overlap->as_bool();
    }
    if (auto algorithm = ar_map.optional("algorithm")) {
      const std::string name = algorithm->as_string();
      if (name != "auto") {
        model.all_reduce_algorithm = parse_algorithm(name);
        if (!model.all_reduce_algorithm) {
          algorithm->fail("unknown algorithm '" + name +
                          "' (auto, ring, tree, nvls, hierarchical)");
        }
        model.all_reduce_algorithm_location = algorithm->location();
      }
    }
    if (auto buckets = ar_map.optional("buckets")) {
      model.gradient_buckets = static_cast<int>(buckets->positive_integer());
      if (model.gradient_buckets > 1024) buckets->fail("at most 1024 buckets");
    }
    ar_map.finish();
  }
  if (auto d = map.optional("dataset")) model.dataset = parse_dataset(*d);
  if (auto c = map.optional("convergence")) model.convergence = parse_convergence(*c);
  map.finish();
  return model;
}

DenseModelSpec load_dense_model_spec(const std::string& path) {
  return parse_dense_model_spec(ConfigNode::load_file(path));
}

void check_compute_dtype(Dtype dtype, const SourceLocation& where, const ClusterSpec& cluster) {
  if (!cluster.gpu.peak_flops_per_s.count(dtype)) {
    throw ConfigError(where, "the GPU of cluster '" + cluster.name + "' (" + cluster.gpu.model +
                                 ", " + cluster.source_file + ") has no peak_flops for " +
                                 std::string(dtype_name(dtype)));
  }
}

}  // namespace trainsim::models
