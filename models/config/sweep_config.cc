#include "models/config/sweep_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "models/config/config_node.h"

namespace trainsim::models {

std::uint64_t fingerprint(const std::string& text, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::size_t SweepSpec::point_count() const {
  if (axes.empty()) return 0;
  if (zip) return axes.front().values.size();
  std::size_t n = 1;
  for (const SweepAxis& a : axes) n *= a.values.size();  // bounded when loaded
  return n;
}

std::vector<std::size_t> SweepSpec::point(std::size_t index) const {
  std::vector<std::size_t> at(axes.size(), 0);
  if (zip) {
    for (std::size_t i = 0; i < axes.size(); ++i) at[i] = index;
    return at;
  }
  for (std::size_t i = axes.size(); i-- > 0;) {
    at[i] = index % axes[i].values.size();
    index /= axes[i].values.size();
  }
  return at;
}

namespace {

std::string format_value(double v, const std::string& unit) {
  std::ostringstream s;
  s.precision(12);
  s << v;
  if (!unit.empty()) s << " " << unit;
  return s.str();
}

// {from, to, step} or {from, to, times}, with an optional unit appended to each value.
std::vector<std::string> expand_range(const ConfigNode& node) {
  MapReader r(node);
  const ConfigNode from_node = r.required("from");
  const ConfigNode to_node = r.required("to");
  const double from = from_node.as_number();
  const double to = to_node.as_number();
  const auto step = r.optional("step");
  const auto times = r.optional("times");
  std::string unit;
  if (auto u = r.optional("unit")) unit = u->as_string();
  r.finish();
  if (step && times) times->fail("give step or times, not both");
  if (!step && !times) r.fail_missing("step", "or times: how the range advances");
  if (to < from) to_node.fail("the range is empty: 'to' is below 'from'");
  std::vector<std::string> values;
  constexpr std::size_t kMaxValues = 100000;
  if (step) {
    const double s = step->as_number();
    if (!(s > 0)) step->fail("must be positive");
    for (std::size_t i = 0;; ++i) {
      const double v = from + static_cast<double>(i) * s;
      if (v > to * (1 + 1e-12) + 1e-12) break;
      values.push_back(format_value(v, unit));
      if (values.size() > kMaxValues) step->fail("more than 100000 values");
    }
  } else {
    const double t = times->as_number();
    if (!(t > 1)) times->fail("must be above 1");
    if (!(from > 0)) from_node.fail("a geometric range starts above 0");
    for (double v = from; v <= to * (1 + 1e-12); v *= t) {
      values.push_back(format_value(v, unit));
      if (values.size() > kMaxValues) times->fail("more than 100000 values");
    }
  }
  return values;
}

}  // namespace

SweepSpec load_sweep_spec(const std::string& path) {
  const ConfigNode root = ConfigNode::load_file(path);
  MapReader map(root);
  SweepSpec s;
  s.source_file = path;
  s.name = map.required("name").as_string();
  if (auto d = map.optional("description")) s.description = d->as_string();
  if (auto c = map.optional("cluster")) s.cluster = c->as_string();
  if (auto m = map.optional("model")) s.model = m->as_string();
  if (auto j = map.optional("job")) s.job = j->as_string();
  if (auto b = map.optional("baseline_nodes")) {
    s.baseline_nodes = static_cast<int>(b->positive_integer());
  }
  if (auto n = map.optional("network")) s.network = n->as_enum(network_model_names());
  if (auto sc = map.optional("scaling")) s.scaling = sc->as_enum(scaling_mode_names());

  if (auto c = map.optional("combine")) {
    const std::string how = c->as_string();
    if (how == "zip") {
      s.zip = true;
    } else if (how != "grid") {
      c->fail("must be grid or zip, got '" + how + "'");
    }
  }
  const ConfigNode axes = map.required("axes");
  for (const ConfigNode& item : axes.items()) {
    MapReader a(item);
    SweepAxis axis;
    axis.location = item.location();
    const ConfigNode key = a.required("key");
    axis.key = key.as_string();
    const std::string root_key = axis.key.substr(0, axis.key.find('.'));
    const bool whole =
        axis.key == "nodes" || axis.key == "cluster" || axis.key == "model" || axis.key == "job";
    if (!whole && root_key != "cluster" && root_key != "model" && root_key != "job") {
      key.fail("'" + axis.key +
               "' is not a sweep key: use nodes, cluster, model, job (whole files) or a key "
               "inside one, e.g. cluster.nic.bandwidth or job.sharding.strategy");
    }
    for (const SweepAxis& other : s.axes) {
      if (other.key == axis.key) key.fail("a second axis for '" + axis.key + "'");
    }
    const auto values = a.optional("values");
    const auto range = a.optional("range");
    if (values && range) range->fail("give values or range, not both");
    if (values) {
      for (const ConfigNode& v : values->items()) {
        axis.values.push_back(v.is_scalar() ? v.as_string() : v.as_yaml());
      }
      if (axis.values.empty()) values->fail("the list is empty");
    } else if (range) {
      axis.values = expand_range(*range);
      if (axis.values.empty()) range->fail("the range is empty");
    } else {
      a.fail_missing("values", "or range");
    }
    if (axis.key == "nodes") {
      const ConfigNode& where = values ? *values : *range;
      for (const std::string& v : axis.values) {
        char* end = nullptr;
        const double n = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end != '\0' || !(n >= 1) || n != std::floor(n) || n > 1e6) {
          where.fail("node counts must be positive whole numbers, got '" + v + "'");
        }
      }
    }
    a.finish();
    s.axes.push_back(std::move(axis));
  }
  if (s.axes.empty()) axes.fail("needs at least one axis");
  bool has_nodes = false;
  for (const SweepAxis& a : s.axes) has_nodes = has_nodes || a.key == "nodes";
  if (!has_nodes) map.fail_missing("axes", "a sweep needs a nodes axis (key: nodes)");
  if (!s.zip) {
    double points = 1;
    for (const SweepAxis& a : s.axes) points *= static_cast<double>(a.values.size());
    if (points > 1e9) axes.fail("the grid has more than a billion points");
  }
  if (s.zip) {
    for (const SweepAxis& a : s.axes) {
      if (a.values.size() != s.axes.front().values.size()) {
        throw ConfigError(a.location, "zipped axes need the same number of values: '" + a.key +
                                          "' has " + std::to_string(a.values.size()) + ", '" +
                                          s.axes.front().key + "' " +
                                          std::to_string(s.axes.front().values.size()));
      }
    }
  }
  map.finish();
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  s.signature = fingerprint(text.str());
  return s;
}

}  // namespace trainsim::models
