#include "models/config/cluster_writer.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include <yaml-cpp/yaml.h>

namespace trainsim::models {

namespace {

std::string number(double value, double scale, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.10g %s", value / scale, unit);
  return buffer;
}
std::string bandwidth(double bytes_per_s) { return number(bytes_per_s, 1e9, "GB/s"); }
std::string bytes(double b) { return number(b, 1.0, "B"); }
std::string duration(Time t) { return number(to_seconds(t), 1e-6, "us"); }
std::string flop_rate(double f) { return number(f, 1e12, "TFLOP/s"); }

class Writer {
 public:
  Writer(YAML::Emitter& out, const std::map<std::string, std::string>& notes)
      : out_(out), notes_(notes) {}

  template <class T>
  void key(const std::string& path, const std::string& name, const T& value) {
    out_ << YAML::Key << name << YAML::Value << value;
    const auto it = notes_.find(path.empty() ? name : path + "." + name);
    if (it != notes_.end()) out_ << YAML::Comment(it->second);
  }
  void begin(const std::string& name) {
    out_ << YAML::Key << name << YAML::Value << YAML::BeginMap;
  }
  void end() { out_ << YAML::EndMap; }

  void link(const std::string& path, const std::string& name, const LinkClassSpec& link) {
    begin(name);
    const std::string p = path.empty() ? name : path + "." + name;
    key(p, "bandwidth", bandwidth(link.bandwidth_bytes_per_s));
    key(p, "latency", duration(link.latency));
    key(p, "efficiency", link.efficiency);
    end();
  }

 private:
  YAML::Emitter& out_;
  const std::map<std::string, std::string>& notes_;
};

void write_gpu(Writer& w, const ClusterSpec& c) {
  w.begin("gpu");
  w.key("gpu", "model", c.gpu.model);
  w.key("gpu", "architecture", std::string(gpu_arch_name(c.gpu.architecture)));
  w.begin("peak_flops");
  for (const auto& [dtype, peak] : c.gpu.peak_flops_per_s) {
    w.key("gpu.peak_flops", std::string(dtype_name(dtype)), flop_rate(peak));
  }
  w.end();
  w.key("gpu", "hbm_bandwidth", bandwidth(c.gpu.hbm_bandwidth_bytes_per_s));
  w.key("gpu", "hbm_capacity", bytes(c.gpu.hbm_capacity_bytes));
  w.key("gpu", "gemm_efficiency", c.gpu.gemm_efficiency);
  if (c.gpu.gemm_half_flops > 0)
    w.key("gpu", "gemm_half_flops", number(c.gpu.gemm_half_flops, 1e9, "GFLOP"));
  w.key("gpu", "hbm_efficiency", c.gpu.hbm_efficiency);
  w.key("gpu", "embedding_efficiency", c.gpu.embedding_efficiency);
  if (c.gpu.embedding_half_row_bytes > 0) {
    w.key("gpu", "embedding_half_row_bytes", bytes(c.gpu.embedding_half_row_bytes));
  }
  if (c.gpu.host_to_device_bytes_per_s > 0) {
    w.key("gpu", "host_to_device_bandwidth", bandwidth(c.gpu.host_to_device_bytes_per_s));
  }
  w.end();
}

void write_intra_node(Writer& w, const ClusterSpec& c) {
  w.begin("intra_node");
  const bool nvswitch = c.intra_node.fabric == IntraNodeFabric::kNvSwitch;
  w.key("intra_node", "fabric", std::string(intra_node_fabric_names().name(c.intra_node.fabric)));
  if (nvswitch) w.key("intra_node", "nvls", c.intra_node.nvls);
  if (nvswitch && c.intra_node.nvlink_links > 0) {
    w.key("intra_node", "nvlink_links", c.intra_node.nvlink_links);
  }
  if (nvswitch && c.intra_node.hosts > 1) w.key("intra_node", "hosts", c.intra_node.hosts);
  if (nvswitch && c.intra_node.nvls_efficiency > 0) {
    w.key("intra_node", "nvls_efficiency", c.intra_node.nvls_efficiency);
  }
  if (nvswitch && c.intra_node.nvls_step_latency > 0) {
    w.key("intra_node", "nvls_step_latency", duration(c.intra_node.nvls_step_latency));
  }
  w.link("intra_node", "gpu_link", c.intra_node.gpu_link);
  if (!nvswitch) {
    w.key("intra_node", "pcie_switches", c.intra_node.pcie_switches);
    if (c.intra_node.pcie_switches > 1)
      w.link("intra_node", "switch_link", c.intra_node.switch_link);
  }
  w.end();
}

// The NICs and the network between nodes (a cluster without NICs has neither).
void write_network(Writer& w, YAML::Emitter& out, const ClusterSpec& c) {
  if (c.nic.count > 0) {
    w.begin("nic");
    w.key("nic", "count", c.nic.count);
    w.key("nic", "transport", std::string(net_transport_name(c.nic.transport)));
    w.key("nic", "bandwidth", bandwidth(c.nic.link.bandwidth_bytes_per_s));
    w.key("nic", "latency", duration(c.nic.link.latency));
    w.key("nic", "efficiency", c.nic.link.efficiency);
    w.link("nic", "gpu_link", c.nic.gpu_link);
    if (!c.nic.gpu_direct) w.key("nic", "gpu_direct", false);
    out << YAML::Key << "gpus" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& list : c.nic.gpus) {
      out << YAML::Flow << YAML::BeginSeq;
      for (const int g : list) out << g;
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
    w.end();

    w.begin("network");
    const NetworkSpec& n = c.network;
    w.key("network", "topology", std::string(network_topology_names().name(n.topology)));
    if (n.topology == NetworkTopology::kFatTree) {
      w.key("network", "rail_optimized", n.rail_optimized);
      w.key("network", "nodes_per_leaf", n.nodes_per_leaf);
      w.key("network", "spines", n.spines);
      w.key("network", "oversubscription", n.oversubscription);
      w.key("network", "switch_latency", duration(n.switch_latency));
    }
    if (n.sharp) w.key("network", "sharp", true);
    w.end();
  }
}

// Storage, host CPUs and reliability, where the cluster gives them.
void write_beyond_the_step(Writer& w, const ClusterSpec& c) {
  const StorageSpec& s = c.storage;
  if (s.read_bytes_per_s_per_node > 0 || s.write_bytes_per_s_per_node > 0 ||
      s.shared_read_bytes_per_s > 0 || s.shared_write_bytes_per_s > 0) {
    w.begin("storage");
    const std::pair<const char*, double> figures[] = {
        {"read_bandwidth_per_node", s.read_bytes_per_s_per_node},
        {"write_bandwidth_per_node", s.write_bytes_per_s_per_node},
        {"shared_read_bandwidth", s.shared_read_bytes_per_s},
        {"shared_write_bandwidth", s.shared_write_bytes_per_s}};
    for (const auto& [name, value] : figures) {
      if (value > 0) w.key("storage", name, bandwidth(value));
    }
    if (s.read_latency > 0) w.key("storage", "read_latency", duration(s.read_latency));
    w.end();
  }
  if (c.host.cpu_cores > 0 || c.host.cpu_vendor != CpuVendor::kIntel) {
    w.begin("host");
    if (c.host.cpu_cores > 0) w.key("host", "cpu_cores", c.host.cpu_cores);
    if (c.host.cpu_vendor != CpuVendor::kIntel) {
      w.key("host", "cpu_vendor", std::string(cpu_vendor_names().name(c.host.cpu_vendor)));
    }
    w.end();
  }
  if (c.reliability.node_mtbf_seconds > 0) {
    w.begin("reliability");
    w.key("reliability", "node_mtbf", number(c.reliability.node_mtbf_seconds, 3600.0, "h"));
    w.key("reliability", "restart_time", number(c.reliability.restart_seconds, 60.0, "min"));
    w.end();
  }
}

void write_collectives(Writer& w, const ClusterSpec& c) {
  const CollectiveTuning& t = c.collectives;
  w.begin("collectives");
  w.key("collectives", "nccl_version", nccl_version_name(t.nccl_version));
  w.key("collectives", "launch_latency", duration(t.launch_latency));
  w.key("collectives", "nvlink_latency_scale", t.nvlink_latency_scale);
  w.key("collectives", "pcie_latency_scale", t.pcie_latency_scale);
  w.key("collectives", "network_latency_scale", t.network_latency_scale);
  w.key("collectives", "ll_latency_scale", t.ll_latency_scale);
  w.key("collectives", "ll128_latency_scale", t.ll128_latency_scale);
  w.key("collectives", "p2p_channel_bandwidth", bandwidth(t.p2p_channel_bandwidth));
  w.key("collectives", "p2p_nvlink_channel_bandwidth",
        bandwidth(t.p2p_nvlink_channel_bandwidth));
  w.key("collectives", "p2p_nvlink_efficiency", t.p2p_nvlink_efficiency);
  w.key("collectives", "p2p_network_efficiency", t.p2p_network_efficiency);
  const auto env = nccl_env_of(t);
  if (!env.empty()) {
    w.begin("env");
    for (const auto& [name, value] : env) w.key("collectives.env", name, value);
    w.end();
  }
  w.end();
}

}  // namespace

void write_cluster_yaml(std::ostream& stream, const ClusterSpec& c,
                        const std::vector<std::string>& header,
                        const std::map<std::string, std::string>& notes) {
  YAML::Emitter out;
  out.SetDoublePrecision(10);
  Writer w(out, notes);
  out << YAML::BeginMap;
  w.key("", "name", c.name);
  if (!c.description.empty()) w.key("", "description", c.description);
  w.key("", "nodes", c.nodes);
  w.key("", "gpus_per_node", c.gpus_per_node);
  write_gpu(w, c);
  write_intra_node(w, c);
  write_network(w, out, c);
  write_beyond_the_step(w, c);
  write_collectives(w, c);
  out << YAML::EndMap;
  for (const std::string& line : header) stream << "# " << line << "\n";
  stream << out.c_str() << "\n";
}

}  // namespace trainsim::models
