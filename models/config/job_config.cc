#include "models/config/job_config.h"

#include <sstream>

#include <yaml-cpp/yaml.h>

#include "models/config/cluster_config.h"
#include "models/config/config_node.h"
#include "models/config/runtime_config.h"

namespace trainsim::models {

JobSpec load_job_spec(const std::string& path, const std::vector<YamlSetting>& settings) {
  const ConfigNode root = ConfigNode::load_file(path, settings);
  MapReader map(root);
  JobSpec job;
  job.source_file = path;
  job.name = map.required("name").as_string();
  if (auto d = map.optional("description")) job.description = d->as_string();
  if (auto c = map.optional("cluster")) job.cluster = c->as_string();
  if (auto m = map.optional("model")) job.model = m->as_string();
  const auto per_gpu = map.optional("batch_per_gpu");
  const auto global = map.optional("global_batch");
  if (per_gpu && global) global->fail("give batch_per_gpu or global_batch, not both");
  if (!per_gpu && !global) map.fail_missing("batch_per_gpu", "or global_batch");
  if (per_gpu) {
    job.batch_per_gpu = static_cast<double>(per_gpu->positive_integer());
    job.batch_location = per_gpu->location();
  } else {
    job.global_batch = static_cast<double>(global->positive_integer());
    job.batch_location = global->location();
  }
  if (auto sharding = map.optional("sharding")) {
    job.sharding_location = sharding->location();
    MapReader s(*sharding);
    if (auto strategy = s.optional("strategy")) {
      job.sharding = strategy->as_string();
      if (job.sharding != "greedy" && job.sharding != "plan" && !parse_strategy(job.sharding)) {
        strategy->fail("must be greedy, plan, " + strategy_names().choices() + ", got '" +
                       job.sharding + "'");
      }
    }
    if (auto group = s.optional("group")) {
      const std::string g = group->as_string();
      if (g == "all") {
        job.group = ShardingGroup::world();
      } else if (g == "node") {
        job.group = ShardingGroup::node();
      } else {
        job.group = ShardingGroup::of(static_cast<int>(group->positive_integer()));
      }
    }
    if (auto hot = s.optional("hot_rows")) {
      job.hot_rows = hot->as_number();
      if (job.hot_rows < 0) hot->fail("must not be negative");
    }
    if (auto plan = s.optional("plan")) {
      for (const ConfigNode& item : plan->items()) {
        MapReader p(item);
        PlannedTable t;
        t.location = item.location();
        t.table = p.required("table").as_string();
        const ConfigNode strategy = p.required("strategy");
        const auto parsed = parse_strategy(strategy.as_string());
        if (!parsed) strategy.fail("unknown strategy '" + strategy.as_string() + "'");
        t.strategy = *parsed;
        if (auto gpus = p.optional("gpus")) {
          for (const ConfigNode& g : gpus->items()) {
            const std::int64_t id = g.as_integer();
            if (id < 0) g.fail("GPU ids start at 0");
            t.gpus.push_back(static_cast<int>(id));
          }
        }
        if (auto hot = p.optional("hot_rows")) t.hot_rows = hot->as_number();
        p.finish();
        job.plan.push_back(t);
      }
    } else if (job.sharding == "plan") {
      s.fail_missing("plan", "strategy: plan lists the tables");
    }
    s.finish();
  }
  if (auto comm = map.optional("communication")) {
    MapReader c(*comm);
    if (auto e = c.optional("embedding_dtype")) job.embedding_communication = parse_dtype_node(*e);
    if (auto e = c.optional("embedding_sync_dtype")) job.embedding_sync = parse_dtype_node(*e);
    if (auto a = c.optional("all_reduce")) {
      if (a->as_string() != "auto") {
        job.all_reduce_algorithm = parse_algorithm(a->as_string());
        if (!job.all_reduce_algorithm) a->fail("unknown algorithm '" + a->as_string() + "'");
      }
    }
    if (auto a = c.optional("all_to_all")) {
      if (a->as_string() != "auto") {
        job.all_to_all_algorithm = parse_algorithm(a->as_string());
        if (job.all_to_all_algorithm != Algorithm::kDirect &&
            job.all_to_all_algorithm != Algorithm::kTwoD) {
          a->fail("must be auto, direct or 2d, got '" + a->as_string() + "'");
        }
      }
    }
    c.finish();
  }
  if (auto overlap = map.optional("overlap")) {
    MapReader o(*overlap);
    if (auto g = o.optional("gradient_all_reduce")) job.overlap_gradient_all_reduce = g->as_bool();
    if (auto b = o.optional("buckets")) {
      job.gradient_buckets = static_cast<int>(b->positive_integer());
      if (*job.gradient_buckets > 1024) b->fail("at most 1024 buckets");
    }
    o.finish();
  }
  if (auto d = map.optional("dataloader")) job.dataloader = parse_dataloader(*d);
  if (auto c = map.optional("checkpoint")) job.checkpoint = parse_checkpoint(*c);
  if (auto t = map.optional("target_quality")) {
    job.target_quality = t->as_number();
    job.target_location = t->location();
  }
  map.finish();
  return job;
}

std::string job_yaml_with_plan(const JobSpec& job, const ShardingPlan& plan,
                               const RecsysModelSpec& model,
                               const std::vector<std::string>& header) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << job.name + "-planned";
  if (!job.cluster.empty()) out << YAML::Key << "cluster" << YAML::Value << job.cluster;
  if (!job.model.empty()) out << YAML::Key << "model" << YAML::Value << job.model;
  if (job.batch_per_gpu)
    out << YAML::Key << "batch_per_gpu" << YAML::Value
        << static_cast<long long>(*job.batch_per_gpu);
  if (job.global_batch)
    out << YAML::Key << "global_batch" << YAML::Value << static_cast<long long>(*job.global_batch);
  out << YAML::Key << "sharding" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "strategy" << YAML::Value << "plan";
  out << YAML::Key << "group" << YAML::Value << plan.group_size;
  out << YAML::Key << "plan" << YAML::Value << YAML::BeginSeq;
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const TablePlacement& p = plan.tables[i];
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "table" << YAML::Value << model.tables[i].name;
    out << YAML::Key << "strategy" << YAML::Value << std::string(strategy_name(p.strategy));
    out << YAML::Key << "gpus" << YAML::Value << YAML::Flow << p.ranks;
    if (p.hot_rows > 0) out << YAML::Key << "hot_rows" << YAML::Value << p.hot_rows;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  const bool sync_set = job.embedding_sync != Dtype::kFp32;
  if (job.embedding_communication || sync_set || job.all_reduce_algorithm ||
      job.all_to_all_algorithm) {
    out << YAML::Key << "communication" << YAML::Value << YAML::BeginMap;
    if (job.embedding_communication) {
      out << YAML::Key << "embedding_dtype" << YAML::Value
          << std::string(dtype_name(*job.embedding_communication));
    }
    if (sync_set) {
      out << YAML::Key << "embedding_sync_dtype" << YAML::Value
          << std::string(dtype_name(job.embedding_sync));
    }
    if (job.all_reduce_algorithm) {
      out << YAML::Key << "all_reduce" << YAML::Value
          << std::string(algorithm_name(*job.all_reduce_algorithm));
    }
    if (job.all_to_all_algorithm) {
      out << YAML::Key << "all_to_all" << YAML::Value
          << std::string(algorithm_name(*job.all_to_all_algorithm));
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "overlap" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gradient_all_reduce" << YAML::Value << job.overlaps_gradient_all_reduce();
  out << YAML::Key << "buckets" << YAML::Value << job.gradient_bucket_count();
  out << YAML::EndMap;
  auto seconds = [](double s) {
    std::ostringstream text;
    text.precision(9);
    text << s << " s";
    return text.str();
  };
  if (job.dataloader.configured) {
    const DataloaderSpec& d = job.dataloader;
    out << YAML::Key << "dataloader" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "workers_per_gpu" << YAML::Value << d.workers_per_gpu;
    out << YAML::Key << "prefetch_batches" << YAML::Value << d.prefetch_batches;
    out << YAML::Key << "preprocess_time_per_example" << YAML::Value
        << seconds(d.preprocess_seconds_per_example);
    if (d.preprocess_jitter > 0) {
      out << YAML::Key << "preprocess_jitter" << YAML::Value << d.preprocess_jitter;
    }
    if (d.bytes_per_example) {
      out << YAML::Key << "bytes_per_example" << YAML::Value << *d.bytes_per_example;
    }
    out << YAML::EndMap;
  }
  if (job.checkpoint.configured) {
    const CheckpointSpec& c = job.checkpoint;
    out << YAML::Key << "checkpoint" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "mode" << YAML::Value << (c.async ? "async" : "sync");
    out << YAML::Key << "interval" << YAML::Value
        << (c.interval_seconds ? seconds(*c.interval_seconds) : std::string("optimal"));
    if (c.bytes) out << YAML::Key << "bytes" << YAML::Value << *c.bytes;
    out << YAML::EndMap;
  }
  if (job.target_quality)
    out << YAML::Key << "target_quality" << YAML::Value << *job.target_quality;
  out << YAML::EndMap;
  std::ostringstream text;
  for (const std::string& line : header) text << "# " << line << "\n";
  text << out.c_str() << "\n";
  return text.str();
}

}  // namespace trainsim::models
