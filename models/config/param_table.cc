#include "models/config/param_table.h"

namespace trainsim::models {

std::string format_plain(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

std::string format_whole(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer;
}

std::string format_quantity(double value, WriteUnit unit) {
  return format_plain(value / unit.scale) + " " + unit.symbol;
}

std::string param_type_of(Dimension dimension, WriteUnit unit) {
  std::string name(dimension_name(dimension));  // "a bandwidth"
  if (name.rfind("a ", 0) == 0) name = name.substr(2);
  return name + " (" + unit.symbol + ")";
}

YAML::Node yaml_flow_list(const std::vector<int>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  list.SetStyle(YAML::EmitterStyle::Flow);
  for (const int v : values) list.push_back(yaml_text(std::to_string(v)));
  return list;
}

}  // namespace trainsim::models
