#include "models/config/param_doc.h"

#include <sstream>

#include "models/config/cluster_config.h"
#include "models/config/job_config.h"
#include "models/config/model_config.h"
#include "models/config/recsys_config.h"
#include "models/config/sweep_config.h"

namespace trainsim::models {

const std::vector<std::string>& config_topics() {
  static const std::vector<std::string> topics = {"cluster", "model", "job", "sweep"};
  return topics;
}

std::vector<ParamTableDoc> describe_config(std::string_view topic) {
  if (topic == "cluster") return {cluster_param_doc()};
  if (topic == "model") return {dense_model_param_doc(), recsys_model_param_doc()};
  if (topic == "job") return {job_param_doc()};
  if (topic == "sweep") return {sweep_param_doc()};
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
