#include "models/config/model_config.h"

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/param_table.h"
#include "models/config/runtime_params.h"

namespace trainsim::models {

namespace {

using P = Params<DenseModelSpec>;
using DenseParam = Param<DenseModelSpec>;

DenseParam required(DenseParam p) {
  p.required = true;
  return p;
}

// gradient_all_reduce.algorithm and the job's communication.all_reduce: auto or an algorithm.
DenseParam all_reduce_algorithm_param() {
  return P::custom(
      {.key = "gradient_all_reduce.algorithm", .type = "name",
       .range = "auto, " + algorithm_names().choices(), .default_text = "auto",
       .help = "auto: what NCCL's tuner picks for each bucket's size"},
      [](const ConfigNode& n, DenseModelSpec& m) {
        const std::string name = n.as_string();
        if (name == "auto") return;
        m.all_reduce_algorithm = parse_algorithm(name);
        if (!m.all_reduce_algorithm) {
          n.fail("unknown algorithm '" + name + "' (auto, " + algorithm_names().choices() + ")");
        }
        m.all_reduce_algorithm_location = n.location();
      },
      [](const DenseModelSpec& m) -> std::optional<YAML::Node> {
        return yaml_text(m.all_reduce_algorithm ? std::string(algorithm_name(*m.all_reduce_algorithm))
                                                : std::string("auto"));
      });
}

ParamTable<DenseModelSpec> make_dense_params() {
  std::vector<DenseParam> params = name_params<DenseModelSpec>("model");
  params.push_back(P::custom(
      {.key = "kind", .type = "name", .range = "dense", .default_text = "dense",
       .help = "dense (this table) or recsys"},
      [](const ConfigNode& n, DenseModelSpec&) {
        if (n.as_string() != "dense") n.fail("a dense model file has kind: dense");
      },
      [](const DenseModelSpec&) -> std::optional<YAML::Node> { return yaml_text("dense"); }));
  DenseParam compute = P::choice({.key = "compute_dtype",
                                  .help = "number format of the GEMMs; the cluster's GPU must list a "
                                          "peak for it"},
                                 dtype_names(), [](auto& s) -> auto& { return s.compute_dtype; });
  compute = P::checked(compute, [](const ConfigNode& n, DenseModelSpec& m) {
    m.compute_dtype_location = n.location();
  });
  compute.required = true;
  for (DenseParam p : {
           required(P::quantity({.key = "flops_per_example",
                                 .help = "forward + backward FLOP for one example"},
                                Dimension::kFlops, WriteUnit{1e9, "GFLOP"},
                                [](auto& s) -> auto& { return s.flops_per_example; })),
           P::number({.key = "backward_flops_fraction", .default_text = "2/3",
                      .help = "share of those FLOP in backward (backward costs about twice the "
                              "forward)"},
                     [](auto& s) -> auto& { return s.backward_flops_fraction; }, "in [0, 1)",
                     [](double v) { return v >= 0.0 && v < 1.0; }),
           required(P::quantity({.key = "parameter_bytes",
                                 .help = "size of the parameters; gradients of this size are "
                                         "all-reduced every step"},
                                Dimension::kBytes, kBytesUnit,
                                [](auto& s) -> auto& { return s.parameter_bytes; })),
           required(P::whole({.key = "batch_per_gpu", .help = "examples per GPU per step"},
                             [](auto& s) -> auto& { return s.batch_per_gpu; })),
           compute,
           P::section({.key = "gradient_all_reduce", .help = "how the gradients are all-reduced"}),
           P::flag({.key = "gradient_all_reduce.overlap_with_backward",
                    .help = "all-reduce gradient buckets while backward runs"},
                   [](auto& s) -> auto& { return s.overlap_all_reduce; }),
           all_reduce_algorithm_param(),
           P::whole({.key = "gradient_all_reduce.buckets",
                     .help = "equal gradient buckets when overlapping"},
                    [](auto& s) -> auto& { return s.gradient_buckets; }, 1, 1024),
       }) {
    params.push_back(std::move(p));
  }
  for (DenseParam& p : dataset_params<DenseModelSpec>([](auto& s) -> auto& { return s.dataset; })) {
    params.push_back(std::move(p));
  }
  for (DenseParam& p :
       convergence_params<DenseModelSpec>([](auto& s) -> auto& { return s.convergence; })) {
    params.push_back(std::move(p));
  }
  return ParamTable<DenseModelSpec>("Dense model (configs/models/*.yaml without kind: recsys)",
                                    std::move(params), DenseModelSpec{});
}

const ParamTable<DenseModelSpec>& dense_params() {
  static const ParamTable<DenseModelSpec> table = make_dense_params();
  return table;
}

}  // namespace

ParamTableDoc dense_model_param_doc() { return dense_params().doc(); }

DenseModelSpec parse_dense_model_spec(const ConfigNode& root) {
  return dense_params().load(root);
}

void write_dense_model_yaml(std::ostream& stream, const DenseModelSpec& model) {
  YAML::Emitter out;
  dense_params().write(out, model);
  stream << out.c_str() << "\n";
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
