#include "models/config/param_doc.h"

#include <sstream>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/model_config.h"
#include "models/config/recsys_config.h"
#include "models/config/sweep_config.h"

namespace trainsim::models {

const std::vector<std::string>& config_topics() {
  static const std::vector<std::string> topics = {"cluster", "model", "job", "sweep", "placement"};
  return topics;
}

ParamTableDoc placement_param_doc() {
  // The keys models/scenario/placement.cc reads (its MapReaders reject any other).
  ParamTableDoc t;
  t.title = "Placement (configs/placements/*.yaml)";
  t.params = {
      {.key = "name",
       .type = "text",
       .default_text = "required",
       .help = "the placement's name; it heads the output"},
      {.key = "description", .type = "text", .default_text = "none", .help = "one line for people"},
      {.key = "cluster",
       .type = "text",
       .default_text = "required",
       .help = "the cluster every job runs on (a job file's own cluster is not used); relative: "
               "beside this file, then the current directory, then the source tree"},
      {.key = "cluster_settings",
       .type = "map of cluster keys",
       .default_text = "none",
       .help = "cluster keys changed for this placement, e.g. network: {oversubscription: 2} "
               "(--set cluster.KEY=VALUE wins over them)"},
      {.key = "jobs",
       .type = "list of maps",
       .default_text = "required",
       .help = "the jobs, at least one"},
      {.key = "jobs[].name",
       .type = "text",
       .default_text = "required",
       .help = "the job's name in the output (unique)"},
      {.key = "jobs[].job",
       .type = "text",
       .default_text = "none (then model is required)",
       .help = "the job file: batch, sharding, communication; its model unless model is given"},
      {.key = "jobs[].model",
       .type = "text",
       .default_text = "the job's",
       .help = "the model file (a dense model needs no job; a recommender needs one)"},
      {.key = "jobs[].nodes",
       .type = "[first, last]",
       .range = "node indices from 0",
       .default_text = "required",
       .help = "the job's nodes; the ranges of two jobs must not overlap"},
      {.key = "jobs[].start",
       .type = "time (s)",
       .range = ">= 0",
       .default_text = "0 s",
       .help = "when the job's first step starts"},
      {.key = "background_traffic",
       .type = "list of [from first, from last, to first, to last, GB/s]",
       .default_text = "none",
       .help = "steady traffic that is no job's (storage, another tenant), as the cluster's key "
               "of that name, added to it"}};
  return t;
}

std::vector<ParamTableDoc> describe_config(std::string_view topic) {
  if (topic == "cluster") return {cluster_param_doc()};
  if (topic == "model") return {dense_model_param_doc(), recsys_model_param_doc()};
  if (topic == "job") return {job_param_doc()};
  if (topic == "sweep") return {sweep_param_doc()};
  if (topic == "placement") return {placement_param_doc()};
  return {};
}

namespace {

std::string value_text(const ParamDoc& p) {
  std::string text = p.type;
  if (!p.range.empty()) text += (text.empty() ? "" : ": ") + p.range;
  return text;
}

std::string meaning_text(const ParamDoc& p) {
  std::string text = p.help;
  if (!p.applies.empty()) text += " (only with " + p.applies + ")";
  if (!p.source.empty()) text += ". Source: " + p.source;
  return text;
}

std::string escape_cell(std::string text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string format_param_text(const ParamTableDoc& table) {
  std::ostringstream out;
  out << table.title << "\n";
  for (const ParamDoc& p : table.params) {
    out << "\n" << p.key << "  " << value_text(p) << "; default: " << p.default_text << "\n";
    out << "    " << meaning_text(p) << "\n";
  }
  return out.str();
}

std::string format_param_markdown(const ParamTableDoc& table) {
  std::ostringstream out;
  out << "| key | value | default | meaning |\n|---|---|---|---|\n";
  for (const ParamDoc& p : table.params) {
    out << "| `" << p.key << "` | " << escape_cell(value_text(p)) << " | "
        << escape_cell(p.default_text) << " | " << escape_cell(meaning_text(p)) << " |\n";
  }
  return out.str();
}

}  // namespace trainsim::models
