#include "models/config/validation_case.h"

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

}  // namespace

ValidationCase load_validation_case(const std::string& path) {
  const ConfigNode root = ConfigNode::load_file(path);
  MapReader map(root);
  ValidationCase c;
  c.file = path;
  c.name = map.required("name").as_string();
  if (auto d = map.optional("description")) c.description = d->as_string();
  c.cluster = map.required("cluster").as_string();
  if (auto set = map.optional("set")) {
    MapReader set_map(*set);
    for (const std::string& key : set_map.keys()) {
      c.set.emplace_back(key, set_map.required(key).as_yaml());
    }
    set_map.finish();
  }
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

}  // namespace trainsim::models
