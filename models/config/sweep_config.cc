#include "models/config/sweep_config.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

#include "models/config/config_node.h"
#include "models/config/param_table.h"
#include "models/config/runtime_params.h"

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

// axes[], with the checks across them (a nodes axis, the grid's size, zipped lengths).
void read_axes(const ConfigNode& axes, SweepSpec& s) {
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
  if (!has_nodes) axes.fail("a sweep needs a nodes axis (key: nodes)");
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
}

using P = Params<SweepSpec>;
using SweepParam = Param<SweepSpec>;

template <class E, class F>
SweepParam optional_choice(ParamDoc doc, const EnumNames<E>& names, F field) {
  doc.type = "name";
  doc.range = names.choices();
  return P::custom(std::move(doc),
                   [&names, field](const ConfigNode& n, SweepSpec& s) { field(s) = n.as_enum(names); },
                   nullptr);
}

ParamTable<SweepSpec> make_sweep_params() {
  std::vector<SweepParam> params = name_params<SweepSpec>("sweep");
  params[0].doc.help = "the sweep's name; it heads the output";
  for (auto [key, help, field] :
       {std::tuple{"cluster", "base cluster file", &SweepSpec::cluster},
        std::tuple{"model", "base model file", &SweepSpec::model},
        std::tuple{"job", "base job file", &SweepSpec::job}}) {
    params.push_back(P::text({.key = key,
                              .default_text = std::string(key) == "job"
                                                  ? "none"
                                                  : "the job's, else the shipped default",
                              .help = std::string(help) +
                                      " (relative: current directory, then the source tree)"},
                             [member = field](auto& s) -> auto& { return s.*member; }));
  }
  params.push_back(P::whole({.key = "baseline_nodes",
                             .help = "speedup and efficiency are over this node count with the "
                                     "other axes unchanged"},
                            [](auto& s) -> auto& { return s.baseline_nodes; }));
  params.push_back(optional_choice({.key = "network", .default_text = "--network (flow)",
                                    .help = "default for --network"},
                                   network_model_names(),
                                   [](SweepSpec& s) -> std::optional<NetworkModel>& { return s.network; }));
  params.push_back(optional_choice({.key = "scaling", .default_text = "--scaling (job)",
                                    .help = "default for --scaling"},
                                   scaling_mode_names(),
                                   [](SweepSpec& s) -> std::optional<ScalingMode>& { return s.scaling; }));
  params.push_back(P::custom(
      {.key = "combine", .type = "name", .range = "grid or zip", .default_text = "grid",
       .help = "grid: every combination, the last axis varying fastest; zip: the i-th value of "
               "every axis (all axes as long)"},
      [](const ConfigNode& c, SweepSpec& s) {
        const std::string how = c.as_string();
        if (how != "grid" && how != "zip") c.fail("must be grid or zip, got '" + how + "'");
        s.zip = how == "zip";
      },
      nullptr));
  SweepParam axes = P::custom({.key = "axes", .type = "list of {key, values or range}",
                               .help = "what varies; one axis must be nodes"},
                              read_axes, nullptr);
  axes.required = true;
  params.push_back(axes);
  for (ParamDoc doc : std::vector<ParamDoc>{
           {.key = "axes[].key", .type = "text", .default_text = "required",
            .help = "nodes (positive whole numbers), cluster, model or job (whole files), or a "
                    "key inside one by path, e.g. cluster.nic.bandwidth, job.sharding.strategy"},
           {.key = "axes[].values", .type = "list", .default_text = "required (or range)",
            .help = "YAML values: numbers, quantities with units, names, or lists and maps for "
                    "keys that take them"},
           {.key = "axes[].range", .type = "{from, to, step} or {from, to, times}",
            .default_text = "required (or values)",
            .help = "an arithmetic or geometric range, with an optional unit appended to each "
                    "value"}}) {
    params.push_back(P::item(std::move(doc)));
  }
  return ParamTable<SweepSpec>("Sweep (configs/sweeps/*.yaml)", std::move(params), SweepSpec{});
}

const ParamTable<SweepSpec>& sweep_params() {
  static const ParamTable<SweepSpec> table = make_sweep_params();
  return table;
}

}  // namespace

ParamTableDoc sweep_param_doc() { return sweep_params().doc(); }

SweepSpec load_sweep_spec(const std::string& path) {
  const std::string text = read_input_file(path);
  SweepSpec s = sweep_params().load(ConfigNode::load_string(text, path));
  s.signature = fingerprint(text);
  return s;
}

}  // namespace trainsim::models
