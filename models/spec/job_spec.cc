#include "models/spec/job_spec.h"

#include <algorithm>

namespace trainsim::models {

int ShardingGroup::size(int world, int gpus_per_node) const {
  switch (kind) {
    case Kind::kWorld:
      return world;
    case Kind::kNode:
      return std::min(gpus_per_node, world);
    case Kind::kGpus:
      return gpus;
  }
  return world;
}

double job_batch_per_gpu(const JobSpec& job, int gpus) {
  return job.batch_per_gpu ? *job.batch_per_gpu : *job.global_batch / gpus;
}

JobSpec job_with_plan(JobSpec job, const ShardingPlan& plan,
                      const std::vector<std::string>& table_names) {
  job.sharding = "plan";
  job.group = ShardingGroup::of(plan.group_size);
  job.hot_rows = 0;  // each table's own, below
  // Where a listed table's rows live is the job's choice unless the plan moved the table: it stays.
  std::vector<std::pair<std::string, EmbeddingStorage>> storage;
  for (const PlannedTable& t : job.plan) {
    if (t.storage) storage.emplace_back(t.table, *t.storage);
  }
  job.plan.clear();
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    const TablePlacement& p = plan.tables[i];
    PlannedTable t;
    t.table = table_names.at(i);
    t.strategy = p.strategy;
    t.gpus = p.ranks;
    if (p.hot_rows > 0) t.hot_rows = p.hot_rows;
    for (const auto& [name, where] : storage) {
      if (name == t.table) t.storage = where;
    }
    if (p.storage) t.storage = p.storage;  // a planner moved it to host memory
    job.plan.push_back(t);
  }
  return job;
}

}  // namespace trainsim::models
