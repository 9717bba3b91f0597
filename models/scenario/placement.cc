#include "models/scenario/placement.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "models/config/config_node.h"

namespace trainsim::models {

namespace {

// A path written in the placement file: beside it when a file is there, else as written.
std::string beside(const std::string& file, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const fs::path there = fs::path(file).parent_path() / path;
  return fs::exists(there) ? there.lexically_normal().string() : path;
}

// A whole node index of the cluster.
int node_index(const ConfigNode& n, const ClusterSpec& cluster) {
  const double v = n.as_number();
  if (!(v >= 0) || v != std::floor(v)) {
    n.fail("a node index is a whole number from 0, got " + n.as_string());
  }
  if (v >= cluster.nodes) {
    n.fail("node " + n.as_string() + " is beyond cluster '" + cluster.name + "' (" +
           std::to_string(cluster.nodes) + " nodes: 0 to " + std::to_string(cluster.nodes - 1) +
           ")");
  }
  return static_cast<int>(v);
}

// [first, last]: two node indices, in order.
std::pair<int, int> node_range(const ConfigNode& n, const ClusterSpec& cluster) {
  const std::vector<ConfigNode> items = n.is_sequence() ? n.items() : std::vector<ConfigNode>{};
  if (items.size() != 2) n.fail("expected [first node, last node], e.g. [0, 3]");
  const int first = node_index(items[0], cluster);
  const int last = node_index(items[1], cluster);
  if (last < first) items[1].fail("the range ends before it starts");
  return {first, last};
}

std::string nodes_text(int first, int last) {
  return first == last ? "node " + std::to_string(first)
                       : "nodes " + std::to_string(first) + "-" + std::to_string(last);
}

// cluster_settings: {network: {oversubscription: 4}} as settings cluster.network.oversubscription.
void read_settings(const ConfigNode& node, const std::string& prefix,
                   std::vector<ConfigOverride>& out) {
  if (!node.is_map()) node.fail("expected a map of cluster keys, e.g. network: {spines: 2}");
  MapReader map(node);
  for (const std::string& key : map.keys()) {
    const ConfigNode child = *map.optional(key);
    const std::string path = prefix + "." + key;
    if (child.is_map()) {
      read_settings(child, path, out);
    } else {
      out.push_back(make_override(path, child.is_scalar() ? child.as_string() : child.as_yaml(),
                                  child.location()));
    }
  }
}

}  // namespace

PlacementFile load_placement(const std::string& path,
                             const std::vector<ConfigOverride>& given_overrides,
                             const ScenarioSources& sources) {
  const ConfigNode root = ConfigNode::load_file(path);
  if (!root.is_map()) root.fail("a placement file is a map with cluster and jobs");
  MapReader r(root);
  PlacementFile out;
  out.source_file = path;
  out.name = r.required("name").as_string();
  if (const auto d = r.optional("description")) out.description = d->as_string();
  const ConfigNode cluster_node = r.required("cluster");
  const std::string cluster_path = beside(path, cluster_node.as_string());
  // The file's cluster settings, then the caller's (which win).
  std::vector<ConfigOverride> overrides;
  if (const auto settings = r.optional("cluster_settings")) {
    read_settings(*settings, "cluster", overrides);
  }
  overrides.insert(overrides.end(), given_overrides.begin(), given_overrides.end());
  const ConfigNode jobs_node = r.required("jobs");
  const auto background_node = r.optional("background_traffic");
  r.finish();

  auto resolve = [&](const std::string& p) {
    return sources.resolve_path ? sources.resolve_path(p) : p;
  };
  // The cluster itself, with the settings; one that cannot be read is reported at its key.
  auto load = [&](const ScenarioFiles& files, const ConfigNode& key) {
    try {
      return load_scenario(files, overrides, sources);
    } catch (const ConfigError& e) {
      if (e.line() != 0) throw;
      throw ConfigError(key.location(), e.message());
    }
  };
  Placement& placement = out.placement;
  bool have_cluster = false;
  std::set<std::string> names;
  if (!jobs_node.is_sequence() || jobs_node.items().empty()) {
    jobs_node.fail("expected a list of jobs, each {name, model or job, nodes: [first, last]}");
  }
  for (const ConfigNode& item : jobs_node.items()) {
    MapReader j(item);
    PlacedJob placed;
    const ConfigNode name = j.required("name");
    placed.name = name.as_string();
    if (placed.name.empty()) name.fail("a job's name must not be empty");
    if (!names.insert(placed.name).second) name.fail("a second job named '" + placed.name + "'");
    const auto model = j.optional("model");
    const auto job = j.optional("job");
    const ConfigNode nodes = j.required("nodes");
    const auto start = j.optional("start");
    j.finish();
    if (!model && !job) j.fail_missing("job", "or model: what this job trains");
    ScenarioFiles files;
    files.cluster = cluster_path;
    if (model) files.model = beside(path, model->as_string());
    if (job) files.job = beside(path, job->as_string());
    // The model (and cluster) a job file names are read relative to it.
    Scenario s = load(files, job ? *job : *model);
    if (!have_cluster) {
      placement.cluster = s.cluster;
      out.files.push_back(resolve(cluster_path));
      have_cluster = true;
    }
    out.files.push_back(model_source_file(s.workload.model));
    if (s.workload.job) out.files.push_back(s.workload.job->source_file);
    try {
      check_scenario(s, {});
    } catch (const ScenarioError& e) {
      (model ? *model : *job).fail(e.what());
    }
    const auto [first, last] = node_range(nodes, placement.cluster);
    for (const PlacedJob& other : placement.jobs) {
      const int other_last = other.first_node + other.nodes - 1;
      if (first <= other_last && other.first_node <= last) {
        nodes.fail(nodes_text(first, last) + " overlap job '" + other.name + "' (" +
                   nodes_text(other.first_node, other_last) + ")");
      }
    }
    placed.first_node = first;
    placed.nodes = last - first + 1;
    placed.location = item.location();
    if (start) {
      constexpr double kLatestStart = 86400.0;  // a day: jobs that far apart never share a step
      const double seconds = start->nonnegative_quantity(Dimension::kTime);
      if (seconds > kLatestStart)
        start->fail("a start at most a day (86400 s) in, got " + start->as_string());
      placed.start = time_from_seconds(seconds);
      placed.start_location = start->location();
    }
    placed.workload = std::move(s.workload);
    placement.jobs.push_back(std::move(placed));
  }
  if (background_node) {
    if (!background_node->is_sequence()) {
      background_node->fail("expected a list of [from first, from last, to first, to last, GB/s]");
    }
    for (const ConfigNode& row : background_node->items()) {
      const std::vector<ConfigNode> f = row.is_sequence() ? row.items() : std::vector<ConfigNode>{};
      if (f.size() != 5) row.fail("expected [from first, from last, to first, to last, GB/s]");
      BackgroundTraffic b{node_index(f[0], placement.cluster), node_index(f[1], placement.cluster),
                          node_index(f[2], placement.cluster), node_index(f[3], placement.cluster),
                          0.0};
      if (b.from_last < b.from_first) f[1].fail("the range ends before it starts");
      if (b.to_last < b.to_first) f[3].fail("the range ends before it starts");
      if (b.from_first == b.from_last && b.to_first == b.to_last && b.from_first == b.to_first) {
        row.fail("traffic from a node to itself never reaches the network");
      }
      if (placement.cluster.nic.count == 0) {
        row.fail("cluster '" + placement.cluster.name + "' has no NICs to carry it");
      }
      const double gb = f[4].as_number();
      if (!(gb > 0)) f[4].fail("a rate in GB/s must be positive, got " + f[4].as_string());
      b.bytes_per_s = gb * 1e9;
      placement.background.push_back(b);
    }
  }
  std::sort(out.files.begin(), out.files.end());
  out.files.erase(std::unique(out.files.begin(), out.files.end()), out.files.end());
  return out;
}

}  // namespace trainsim::models
