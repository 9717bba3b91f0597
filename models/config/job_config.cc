#include "models/config/job_config.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <tuple>

#include <yaml-cpp/yaml.h>

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/param_table.h"
#include "models/config/runtime_params.h"

namespace trainsim::models {

namespace {

using P = Params<JobSpec>;
using JobParam = Param<JobSpec>;

std::optional<YAML::Node> optional_dtype(const std::optional<Dtype>& d) {
  if (!d) return std::nullopt;
  return yaml_text(std::string(dtype_name(*d)));
}

std::vector<JobParam> batch_params() {
  JobParam per_gpu = P::custom(
      {.key = "batch_per_gpu", .type = "whole number", .range = "> 0",
       .default_text = "required (or global_batch)",
       .help = "examples per GPU per step: the global batch grows with the GPUs (weak scaling)"},
      [](const ConfigNode& n, JobSpec& job) {
        job.batch_per_gpu = static_cast<double>(n.positive_integer());
        job.batch_location = n.location();
      },
      [](const JobSpec& job) -> std::optional<YAML::Node> {
        if (!job.batch_per_gpu) return std::nullopt;
        return yaml_text(format_whole(*job.batch_per_gpu));
      });
  JobParam global = P::custom(
      {.key = "global_batch", .type = "whole number", .range = "> 0",
       .default_text = "required (or batch_per_gpu)",
       .help = "examples per step over all GPUs: fixed as the GPUs grow (strong scaling)"},
      [](const ConfigNode& n, JobSpec& job) {
        if (job.batch_per_gpu) n.fail("give batch_per_gpu or global_batch, not both");
        job.global_batch = static_cast<double>(n.positive_integer());
        job.batch_location = n.location();
      },
      [](const JobSpec& job) -> std::optional<YAML::Node> {
        if (!job.global_batch) return std::nullopt;
        return yaml_text(format_whole(*job.global_batch));
      });
  global.absent = [](MapReader& map, JobSpec& job) {
    if (!job.batch_per_gpu) map.fail_missing("batch_per_gpu", "or global_batch");
  };
  return {per_gpu, global};
}

// A plan in TorchRec's shape (torchrec.distributed.types.ShardingPlan: per module, per table, a
// ParameterSharding of sharding_type, compute_kernel, ranks and sharding_spec), as the document
// itself or under its `plan` key (beside a `tables` list, as `trainsim shard --torchrec` writes).
JobParam torchrec_plan_param() {
  return P::custom(
      {.key = "sharding.torchrec_plan",
       .type = "file",
       .default_text = "none",
       .help = "a TorchRec ShardingPlan (JSON or YAML: {module: {table: {sharding_type, "
               "compute_kernel, ranks}}}, relative to the job file) whose tables are placed as it "
               "says (ranks are the sharding group's GPUs; compute_kernel fused_uvm and "
               "fused_uvm_caching keep the table in host memory); written back as sharding.plan"},
      [](const ConfigNode& n, JobSpec& job) {
        const std::filesystem::path base = std::filesystem::path(n.file()).parent_path();
        const std::string path = (base / n.as_string()).lexically_normal().string();
        ConfigNode doc = [&] {
          try {
            return ConfigNode::load_file(path);
          } catch (const ConfigError& e) {
            n.fail(std::string(e.what()));
          }
        }();
        if (!doc.is_map()) doc.fail("expected a TorchRec ShardingPlan: a map of modules");
        {
          MapReader top(doc);
          if (top.has("plan")) doc = top.required("plan");
        }
        MapReader modules(doc);
        for (const std::string& module : modules.keys()) {
          const ConfigNode tables = modules.required(module);
          MapReader params(tables);
          for (const std::string& name : params.keys()) {
            const ConfigNode item = params.required(name);
            MapReader m(item);
            PlannedTable t;
            t.location = item.location();
            t.table = name;
            t.strategy = m.required("sharding_type").as_enum(strategy_names());
            if (auto kernel = m.optional("compute_kernel")) {
              const std::string k = kernel->as_string();
              if (k == "fused_uvm") {
                t.storage = EmbeddingStorage::kUvm;
              } else if (k == "fused_uvm_caching") {
                t.storage = EmbeddingStorage::kUvmCaching;
              } else if (k == "fused" || k == "dense" || k == "quant") {
                t.storage = EmbeddingStorage::kHbm;
              } else {
                kernel->fail("must be dense, fused, quant, fused_uvm or fused_uvm_caching "
                             "(TorchRec's EmbeddingComputeKernel), got '" + k + "'");
              }
            }
            for (const ConfigNode& r : m.required("ranks").items()) {
              const std::int64_t id = r.as_integer();
              if (id < 0) r.fail("ranks start at 0");
              t.gpus.push_back(static_cast<int>(id));
            }
            (void)m.optional("sharding_spec");  // the shards follow from the type and ranks
            m.finish();
            for (const PlannedTable& other : job.plan) {
              if (other.table == t.table) item.fail("table '" + t.table + "' is planned twice");
            }
            job.plan.push_back(t);
          }
        }
      },
      [](const JobSpec&) -> std::optional<YAML::Node> { return std::nullopt; });
}

JobParam plan_param() {
  JobParam p = P::custom(
      {.key = "sharding.plan", .type = "list of {table, strategy, gpus, hot_rows, storage}",
       .default_text = "none (required with strategy: plan)",
       .help = "tables placed as listed, overriding strategy for them"},
      [](const ConfigNode& plan, JobSpec& job) {
        for (const ConfigNode& item : plan.items()) {
          MapReader m(item);
          PlannedTable t;
          t.location = item.location();
          t.table = m.required("table").as_string();
          t.strategy = m.required("strategy").as_enum(strategy_names());
          if (auto gpus = m.optional("gpus")) {
            for (const ConfigNode& g : gpus->items()) {
              const std::int64_t id = g.as_integer();
              if (id < 0) g.fail("GPU ids start at 0");
              t.gpus.push_back(static_cast<int>(id));
            }
          }
          if (auto hot = m.optional("hot_rows")) t.hot_rows = hot->as_number();
          if (auto storage = m.optional("storage")) t.storage = storage->as_enum(storage_names());
          m.finish();
          job.plan.push_back(t);
        }
      },
      [](const JobSpec& job) -> std::optional<YAML::Node> {
        if (job.plan.empty()) return std::nullopt;
        YAML::Node list(YAML::NodeType::Sequence);
        for (const PlannedTable& t : job.plan) {
          YAML::Node table(YAML::NodeType::Map);
          table.SetStyle(YAML::EmitterStyle::Flow);
          table["table"] = yaml_text(t.table);
          table["strategy"] = yaml_text(std::string(strategy_name(t.strategy)));
          if (!t.gpus.empty()) table["gpus"] = yaml_flow_list(t.gpus);
          if (t.hot_rows) table["hot_rows"] = yaml_text(format_plain(*t.hot_rows));
          if (t.storage) table["storage"] = yaml_text(std::string(storage_names().name(*t.storage)));
          list.push_back(table);
        }
        return list;
      });
  p.absent = [](MapReader& map, JobSpec& job) {
    if (job.sharding == "plan" && job.plan.empty()) {
      map.fail_missing("plan", "strategy: plan lists the tables (or names a torchrec_plan)");
    }
  };
  return p;
}

std::vector<JobParam> sharding_params() {
  JobParam section = P::section({.key = "sharding", .help = "how the embedding tables are placed"});
  section.read = [](const ConfigNode& n, JobSpec& job) { job.sharding_location = n.location(); };
  const std::string strategies = "best, greedy, hugectr, torchrec, plan, " + strategy_names().choices();
  return {
      section,
      P::custom({.key = "sharding.strategy", .type = "name", .range = strategies,
                 .default_text = "greedy",
                 .help = "best: at each node count the fastest plan of those `trainsim shard` "
                         "ranks (simulated with the analytic network); greedy: trainsim's "
                         "planner; hugectr: HugeCTR's MLPerf planner (hotness and a cost per "
                         "table shard, hottest tables split); torchrec: TorchRec's planner "
                         "(options enumerated, proposed, partitioned, the best rated) on "
                         "trainsim's costs; plan: the tables in plan as listed, "
                         "the others greedy; or one strategy for every table"},
                [strategies](const ConfigNode& n, JobSpec& job) {
                  job.sharding = n.as_string();
                  if (job.sharding != "best" && job.sharding != "greedy" &&
                      job.sharding != "hugectr" && job.sharding != "torchrec" &&
                      job.sharding != "plan" && !parse_strategy(job.sharding)) {
                    n.fail("must be " + strategies + ", got '" + job.sharding + "'");
                  }
                },
                [](const JobSpec& job) -> std::optional<YAML::Node> { return yaml_text(job.sharding); }),
      P::custom({.key = "sharding.group", .type = "all, node or a whole number",
                 .default_text = "all",
                 .help = "GPUs per sharding group; smaller than the job: each group holds every "
                         "table (2D) and the groups all-reduce the gradients of rows they touched"},
                [](const ConfigNode& n, JobSpec& job) {
                  const std::string g = n.as_string();
                  job.group = g == "all"    ? ShardingGroup::world()
                              : g == "node" ? ShardingGroup::node()
                                            : ShardingGroup::of(static_cast<int>(n.positive_integer()));
                },
                [](const JobSpec& job) -> std::optional<YAML::Node> {
                  switch (job.group.kind) {
                    case ShardingGroup::Kind::kWorld:
                      return yaml_text("all");
                    case ShardingGroup::Kind::kNode:
                      return yaml_text("node");
                    case ShardingGroup::Kind::kGpus:
                      break;
                  }
                  return yaml_text(std::to_string(job.group.gpus));
                }),
      P::number({.key = "sharding.hot_rows",
                 .help = "replicate this many hottest rows of every table on every GPU (looked up "
                         "locally, their gradients all-reduced over all GPUs)"},
                [](auto& s) -> auto& { return s.hot_rows; }, "not negative",
                [](double v) { return v >= 0; }),
      P::quantity({.key = "sharding.data_parallel_below", .default_text = "0 B (none)",
                   .help = "strategy hugectr: tables smaller than this (rows x (row + optimizer "
                           "state)) are replicated on every GPU",
                   .source = "HugeCTR's MLPerf configurations: 0.008 GB on one node, 0.0125 GB on "
                             "8 and 16 (DP_SHARDING_THRESHOLD)"},
                  Dimension::kBytes, WriteUnit{1e9, "GB"},
                  [](auto& s) -> auto& { return s.data_parallel_below_bytes; }, false),
      P::choice({.key = "sharding.storage",
                 .help = "where the tables' rows live (FBGEMM's kernels): hbm; uvm: host memory, "
                         "every looked-up row read over the GPU's host link; uvm_caching: host "
                         "memory with an HBM cache of cache_load_factor of the rows, the rows a "
                         "batch misses copied in (and as many evicted rows written back) before "
                         "its lookup"},
                storage_names(), [](auto& s) -> auto& { return s.storage; }),
      P::fraction({.key = "sharding.cache_load_factor", .default_text = "0.2",
                   .help = "storage uvm_caching: the share of a table's rows its HBM cache holds",
                   .source = "TorchRec's planner (UVM_CACHING_RATIO) and FBGEMM's benchmarks "
                             "(--cache-load-factor): 0.2"},
                  [](auto& s) -> auto& { return s.cache_load_factor; }),
      torchrec_plan_param(),
      plan_param(),
      P::item({.key = "sharding.plan[].table", .type = "text", .default_text = "required",
               .help = "a table of the model"}),
      P::item({.key = "sharding.plan[].strategy", .type = "name",
               .range = strategy_names().choices(), .default_text = "required",
               .help = "how that table is sharded"}),
      P::item({.key = "sharding.plan[].gpus", .type = "list of GPU ids", .range = ">= 0",
               .default_text = "as the strategy places it", .help = "ids inside the sharding group"}),
      P::item({.key = "sharding.plan[].hot_rows", .type = "number", .default_text = "sharding.hot_rows",
               .help = "hot rows replicated for that table"}),
      P::item({.key = "sharding.plan[].storage", .type = "name", .range = storage_names().choices(),
               .default_text = "sharding.storage", .help = "where that table's rows live"}),
  };
}

JobParam algorithm_param(std::string key, std::string range, std::string help,
                         std::optional<Algorithm>& (*field)(JobSpec&),
                         bool (*allowed)(Algorithm)) {
  return P::custom(
      {.key = std::move(key), .type = "name", .range = range, .default_text = "auto",
       .help = std::move(help)},
      [field, allowed, range](const ConfigNode& n, JobSpec& job) {
        const std::string name = n.as_string();
        if (name == "auto") return;
        const auto algorithm = parse_algorithm(name);
        if (!algorithm || !allowed(*algorithm)) n.fail("must be " + range + ", got '" + name + "'");
        field(job) = algorithm;
      },
      [field](const JobSpec& job) -> std::optional<YAML::Node> {
        const auto& a = field(const_cast<JobSpec&>(job));
        return yaml_text(a ? std::string(algorithm_name(*a)) : std::string("auto"));
      });
}

std::vector<JobParam> communication_params() {
  return {
      P::section({.key = "communication", .help = "payload formats and algorithms"}),
      P::custom({.key = "communication.embedding_dtype", .type = "name",
                 .range = dtype_names().choices(), .default_text = "the model's precision.communication",
                 .help = "embedding all-to-all payload"},
                [](const ConfigNode& n, JobSpec& job) {
                  job.embedding_communication = n.as_enum(dtype_names());
                },
                [](const JobSpec& job) { return optional_dtype(job.embedding_communication); }),
      P::choice({.key = "communication.embedding_sync_dtype",
                 .help = "payload of the embedding-gradient all-reduces (2D replicas, hot rows)"},
                dtype_names(), [](auto& s) -> auto& { return s.embedding_sync; }),
      algorithm_param("communication.all_reduce", "auto, " + algorithm_names().choices(),
                      "dense gradient all-reduce algorithm; auto: NCCL's choice",
                      [](JobSpec& j) -> std::optional<Algorithm>& { return j.all_reduce_algorithm; },
                      [](Algorithm) { return true; }),
      algorithm_param("communication.all_to_all", "auto, direct or 2d",
                      "auto: through the peer on the destination's rail across NVSwitch nodes (as "
                      "NCCL's PXN), else direct",
                      [](JobSpec& j) -> std::optional<Algorithm>& { return j.all_to_all_algorithm; },
                      [](Algorithm a) { return a == Algorithm::kDirect || a == Algorithm::kTwoD; }),
  };
}

std::vector<JobParam> overlap_params() {
  return {
      P::section({.key = "overlap",
                  .help = "for a dense model these replace its gradient_all_reduce settings"}),
      P::custom({.key = "overlap.gradient_all_reduce", .type = "flag",
                 .default_text = "true (dense: the model's)",
                 .help = "all-reduce dense gradient buckets during backward"},
                [](const ConfigNode& n, JobSpec& job) { job.overlap_gradient_all_reduce = n.as_bool(); },
                [](const JobSpec& job) -> std::optional<YAML::Node> {
                  if (!job.overlap_gradient_all_reduce) return std::nullopt;
                  return yaml_flag(*job.overlap_gradient_all_reduce);
                }),
      P::flag({.key = "overlap.async_weight_gradients",
               .help = "a recommender's weight-gradient GEMMs run off the critical path, so the "
                       "gradient all-to-all starts once the data gradients reach the "
                       "interaction (false: TorchRec's default; HugeCTR's MLPerf runs set it, "
                       "async_wgrad)"},
              [](auto& s) -> auto& { return s.async_weight_gradients; }),
      P::flag({.key = "overlap.prefetch_ids",
               .default_text = "true (TorchRec and HugeCTR)",
               .help = "a recommender's next batch is copied and its ids sent to their shards "
                       "during this step, on a prefetch stream beside this step's collectives "
                       "(TorchRec's TrainPipelineSparseDist; HugeCTR's "
                       "train_inter_iteration_overlap); false: at the start of its own step"},
              [](auto& s) -> auto& { return s.prefetch_ids; }),
      P::flag({.key = "overlap.cuda_graphs",
               .help = "a recommender's step is replayed as a CUDA graph: no host launch cost "
                       "for its kernels and collectives (false: TorchRec's pipelines; HugeCTR's "
                       "MLPerf runs set use_cuda_graph)"},
              [](auto& s) -> auto& { return s.cuda_graphs; }),
      P::whole({.key = "overlap.buckets", .default_text = "2 (dense: the model's)",
                .help = "buckets of the top part's backward (the bottom MLP adds one); for a dense "
                        "model, its equal gradient buckets"},
               [](auto& s) -> auto& { return s.gradient_buckets; }, 1, 1024),
  };
}

std::vector<JobParam> evaluation_params() {
  JobParam every = P::custom(
      {.key = "evaluation.every", .type = "epochs or examples", .range = "> 0",
       .help = "training between two evaluations: '0.05 epoch' (of the model's dataset.examples) "
               "or '200000000 examples'",
       .source = "MLPerf DLRM-DCNv2: every 0.05 epoch"},
      [](const ConfigNode& n, JobSpec& job) {
        std::istringstream in(n.as_string());
        double value = 0;
        std::string unit, rest;
        in >> value >> unit;
        const bool read = !in.fail();
        in >> rest;
        if (read && !(value > 0)) n.fail("must be positive, got '" + n.as_string() + "'");
        const bool epochs = unit == "epoch" || unit == "epochs";
        if (!read || !rest.empty() || !(epochs || unit == "examples") || !std::isfinite(value)) {
          n.fail("must be a number of epochs ('0.05 epoch') or examples ('200000000 examples'), "
                 "got '" + n.as_string() + "'");
        }
        job.evaluation.every = value;
        job.evaluation.every_in_epochs = epochs;
        job.evaluation.every_location = n.location();
      },
      [](const JobSpec& job) -> std::optional<YAML::Node> {
        if (!job.evaluation.configured) return std::nullopt;
        return yaml_text(format_plain(job.evaluation.every) +
                         (job.evaluation.every_in_epochs ? " epoch" : " examples"));
      });
  every.required = true;
  every.why = "an evaluation needs its interval";
  JobParam examples = P::whole(
      {.key = "evaluation.examples", .help = "examples of one evaluation (the evaluation set)",
       .source = "MLPerf DLRM-DCNv2: 89,137,319"},
      [](auto& s) -> auto& { return s.evaluation.examples; });
  examples.required = true;
  examples.why = "an evaluation needs its size";
  return {
      configured_section<JobSpec>(
          {.key = "evaluation",
           .help = "periodic evaluation: forward-only steps between training steps, not "
                   "overlapped with them (without it: none)"},
          [](auto& s) -> auto& { return s.evaluation; }),
      every,
      examples,
      P::whole({.key = "evaluation.global_batch", .default_text = "the training's global batch",
                .help = "examples per evaluation step over all GPUs",
                .source = "MLPerf DLRM-DCNv2: 262,144"},
               [](auto& s) -> auto& { return s.evaluation.global_batch; }),
  };
}

ParamTable<JobSpec> make_job_params() {
  std::vector<JobParam> params = name_params<JobSpec>("job");
  const auto add = [&params](std::vector<JobParam> more) {
    for (JobParam& p : more) params.push_back(std::move(p));
  };
  // The files a job names, with where it names them (a file that cannot be opened is reported
  // there).
  for (auto [key, path, where] :
       {std::tuple{"cluster", &JobSpec::cluster, &JobSpec::cluster_location},
        std::tuple{"model", &JobSpec::model, &JobSpec::model_location}}) {
    JobParam p = P::text(
        {.key = key, .default_text = "--" + std::string(key) + ", else the shipped default",
         .help = "default " + std::string(key) +
                 " file (relative: to the job file's folder, then the current directory, then "
                 "the source tree)"},
        [path = path](auto& s) -> auto& { return s.*path; });
    p.read = [path = path, where = where](const ConfigNode& n, JobSpec& job) {
      job.*path = n.as_string();
      job.*where = n.location();
    };
    params.push_back(std::move(p));
  }
  add(batch_params());
  add(sharding_params());
  add(communication_params());
  add(overlap_params());
  add(dataloader_params<JobSpec>([](auto& s) -> auto& { return s.dataloader; }));
  add(checkpoint_params<JobSpec>([](auto& s) -> auto& { return s.checkpoint; }));
  add(evaluation_params());
  params.push_back(P::custom(
      {.key = "target_quality", .type = "number", .default_text = "the model's convergence.target",
       .help = "time-to-quality target"},
      [](const ConfigNode& n, JobSpec& job) {
        job.target_quality = n.as_number();
        job.target_location = n.location();
      },
      [](const JobSpec& job) -> std::optional<YAML::Node> {
        if (!job.target_quality) return std::nullopt;
        return yaml_text(format_plain(*job.target_quality));
      }));
  return ParamTable<JobSpec>("Job (configs/jobs/*.yaml)", std::move(params), JobSpec{});
}

const ParamTable<JobSpec>& job_params() {
  static const ParamTable<JobSpec> table = make_job_params();
  return table;
}

}  // namespace

ParamTableDoc job_param_doc() { return job_params().doc(); }

JobSpec load_job_spec(const std::string& path, const std::vector<YamlSetting>& settings) {
  return job_params().load(ConfigNode::load_file(path, settings));
}

void write_job_yaml(std::ostream& stream, const JobSpec& job,
                    const std::vector<std::string>& header) {
  YAML::Emitter out;
  job_params().write(out, job);
  for (const std::string& line : header) stream << "# " << line << "\n";
  stream << out.c_str() << "\n";
}

std::string job_yaml_with_plan(const JobSpec& job, const ShardingPlan& plan,
                               const RecsysModelSpec& model,
                               const std::vector<std::string>& header) {
  std::vector<std::string> names;
  for (const auto& t : model.tables) names.push_back(t.name);
  JobSpec planned = job_with_plan(job, plan, names);
  planned.name += "-planned";
  planned.description.clear();  // the job's own describes its sharding, not this plan
  std::ostringstream text;
  write_job_yaml(text, planned, header);
  return text.str();
}

}  // namespace trainsim::models
