// Reads a training job (models/spec/job_spec.h) from YAML, and writes one back (with a plan).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "models/config/param_doc.h"
#include "models/spec/job_spec.h"
#include "models/spec/recsys_model.h"
#include "models/spec/setting.h"
#include "models/spec/sharding_spec.h"

namespace trainsim::models {

JobSpec load_job_spec(const std::string& path, const std::vector<YamlSetting>& settings = {});

// Every key the reader reads, defaults filled in, after `header` as comment lines.
void write_job_yaml(std::ostream& out, const JobSpec& job, const std::vector<std::string>& header = {});
// The job file's keys (`trainsim describe job`).
ParamTableDoc job_param_doc();

// The job as YAML (strategy: plan) with the given plan: what `trainsim shard` prints.
std::string job_yaml_with_plan(const JobSpec& job, const ShardingPlan& plan,
                               const RecsysModelSpec& model,
                               const std::vector<std::string>& header);

}  // namespace trainsim::models
