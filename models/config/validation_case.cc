#include "models/config/validation_case.h"

#include <fstream>
#include <sstream>

#include "models/config/config_node.h"

namespace trainsim::models {

namespace {

CaseLog parse_log(const ConfigNode& node) {
  CaseLog log;
  if (node.is_scalar()) {
    log.path = node.as_string();
    log.line = node.location().line;
    return log;
  }
  MapReader map(node);
  log.line = node.location().line;
  log.path = map.required("log").as_string();
  if (auto a = map.optional("algorithm")) {
    log.algorithm = parse_algorithm(a->as_string());
    if (!log.algorithm) a->fail("unknown algorithm '" + a->as_string() + "'");
  }
  if (auto env = map.optional("env")) {
    MapReader env_map(*env);
    CollectiveTuning probe;
    for (const std::string& name : env_map.keys()) {
      const ConfigNode value = env_map.required(name);
      const std::string error = apply_nccl_env(probe, name, value.as_string());
      if (!error.empty()) value.fail(error);
      log.env.emplace_back(name, value.as_string());
    }
    env_map.finish();
  }
  if (auto op = map.optional("op")) {
    log.op = parse_collective(op->as_string());
    if (!log.op) op->fail("unknown collective '" + op->as_string() + "'");
  }
  if (auto n = map.optional("nodes")) log.nodes = static_cast<int>(n->positive_integer());
  if (auto g = map.optional("gpus_per_node")) {
    log.gpus_per_node = static_cast<int>(g->positive_integer());
  }
  if ((log.nodes > 0) != (log.gpus_per_node > 0)) {
    map.fail_missing(log.nodes > 0 ? "gpus_per_node" : "nodes",
                     "a log's shape needs both nodes and gpus_per_node");
  }
  if (auto ops = map.optional("ops")) {
    for (const ConfigNode& op : ops->items()) {
      const auto parsed = parse_collective(op.as_string());
      if (!parsed) op.fail("unknown collective '" + op.as_string() + "'");
      log.ops.push_back(*parsed);
    }
  }
  map.finish();
  return log;
}

std::vector<CaseLog> parse_logs(const ConfigNode& node) {
  std::vector<CaseLog> logs;
  for (const ConfigNode& item : node.items()) logs.push_back(parse_log(item));
  if (logs.empty()) node.fail("needs at least one log");
  return logs;
}

double percent(const ConfigNode& node) {
  std::string text = node.as_string();
  double scale = 1.0;
  if (!text.empty() && text.back() == '%') {
    text.pop_back();
    scale = 0.01;
  }
  const double value = ConfigNode::load_string(text, node.file()).as_number() * scale;
  if (!(value > 0.0)) node.fail("must be positive, e.g. 10%");
  return value;
}

// The case's `set` map: keys of its files changed, with their YAML values.
std::vector<std::pair<std::string, std::string>> read_settings(MapReader& map) {
  std::vector<std::pair<std::string, std::string>> set;
  if (auto node = map.optional("set")) {
    MapReader set_map(*node);
    for (const std::string& key : set_map.keys()) {
      set.emplace_back(key, set_map.required(key).as_yaml());
    }
    set_map.finish();
  }
  return set;
}

}  // namespace

ValidationCase load_validation_case(const std::string& path) {
  const ConfigNode root = ConfigNode::load_file(path);
  MapReader map(root);
  ValidationCase c;
  c.file = path;
  c.name = map.required("name").as_string();
  if (auto d = map.optional("description")) c.description = d->as_string();
  c.cluster = map.required("cluster").as_string();
  c.set = read_settings(map);
  c.fit = parse_logs(map.required("fit"));
  if (auto check = map.optional("check")) c.check = parse_logs(*check);
  if (auto m = map.optional("min_size")) c.min_bytes = m->nonnegative_quantity(Dimension::kBytes);
  if (auto m = map.optional("max_mean_error")) c.max_mean_error = percent(*m);
  if (auto m = map.optional("max_error")) c.max_error = percent(*m);
  c.leave_one_out_max_mean_error = c.max_mean_error;
  if (auto m = map.optional("leave_one_out_max_mean_error")) {
    c.leave_one_out_max_mean_error = percent(*m);
  }
  if (auto m = map.optional("leave_one_out_target")) c.leave_one_out_target = percent(*m);
  map.finish();
  return c;
}

bool is_training_case(const std::string& path) {
  return MapReader(ConfigNode::load_file(path)).has("job");
}

TrainingCase load_training_case(const std::string& path) {
  const ConfigNode root = ConfigNode::load_file(path);
  MapReader map(root);
  TrainingCase c;
  c.file = path;
  c.name = map.required("name").as_string();
  if (auto d = map.optional("description")) c.description = d->as_string();
  c.job = map.required("job").as_string();
  c.set = read_settings(map);
  const ConfigNode measurements = map.required("measurements");
  c.measurements = measurements.as_string();
  c.measurements_line = measurements.location().line;
  {
    const ConfigNode fit = map.required("fit");
    MapReader fit_map(fit);
    c.fit_system = fit_map.required("system").as_string();
    c.fit_column = fit_map.required("column").as_string();
    c.fit_line = fit.location().line;
    fit_map.finish();
  }
  const ConfigNode columns = map.required("columns");
  MapReader column_map(columns);
  for (const std::string& name : column_map.keys()) {
    MapReader column(column_map.required(name));
    TrainingCase::Column col;
    col.name = name;
    const ConfigNode what = column.required("measures");
    col.measures = what.as_string();
    if (col.measures != "train_only" && col.measures != "end_to_end") {
      what.fail("must be train_only or end_to_end, not '" + col.measures + "'");
    }
    col.max_error = percent(column.required("max_error"));
    column.finish();
    c.columns.push_back(col);
  }
  column_map.finish();
  if (c.columns.empty()) columns.fail("needs at least one column");
  bool fit_listed = false;
  for (const auto& column : c.columns) fit_listed = fit_listed || column.name == c.fit_column;
  if (!fit_listed) {
    throw ConfigError(c.file, c.fit_line, 1, "fit.column",
                      "'" + c.fit_column + "' is not one of the case's columns");
  }
  const ConfigNode systems = map.required("systems");
  for (const ConfigNode& item : systems.items()) {
    MapReader s(item);
    TrainingCaseSystem system;
    system.gpu = s.required("gpu").as_string();
    system.cluster = s.required("cluster").as_string();
    system.line = item.location().line;
    s.finish();
    c.systems.push_back(system);
  }
  if (c.systems.empty()) systems.fail("needs at least one system");
  map.finish();
  return c;
}

const std::string* CsvRow::get(const std::string& name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::vector<CsvRow> read_csv_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, 0, 0, "", "cannot read the file");
  auto split = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream s(line);
    for (std::string field; std::getline(s, field, ',');) out.push_back(field);
    if (!line.empty() && line.back() == ',') out.emplace_back();
    return out;
  };
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto fields = split(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    if (fields.size() != header.size()) {
      throw ConfigError(path, number, 1, "",
                        "a row of " + std::to_string(fields.size()) + " fields; the header has " +
                            std::to_string(header.size()));
    }
    CsvRow row;
    row.line = number;
    for (std::size_t i = 0; i < fields.size(); ++i) row.fields.emplace_back(header[i], fields[i]);
    rows.push_back(std::move(row));
  }
  if (header.empty()) throw ConfigError(path, number, 1, "", "no header row");
  return rows;
}

}  // namespace trainsim::models
