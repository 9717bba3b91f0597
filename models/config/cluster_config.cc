#include "models/config/cluster_config.h"

#include <vector>

#include "models/config/config_node.h"
#include "models/config/runtime_config.h"

namespace trainsim::models {

namespace {

Time parse_time(const ConfigNode& node) {
  const double seconds = node.nonnegative_quantity(Dimension::kTime);
  if (seconds > kMaxSeconds) node.fail("is too long to simulate");
  return time_from_seconds(seconds);
}

double parse_efficiency(MapReader& map) {
  const auto node = map.optional("efficiency");
  return node ? node->fraction() : 1.0;
}

GpuSpec parse_gpu(const ConfigNode& node) {
  MapReader map(node);
  GpuSpec gpu;
  const ConfigNode model = map.required("model");
  gpu.model = model.as_string();
  if (auto arch = map.optional("architecture")) {
    gpu.architecture = arch->as_enum(gpu_arch_names());
  } else if (const auto inferred = gpu_arch_of_model(gpu.model)) {
    gpu.architecture = *inferred;
  } else {
    model.fail("names no GPU generation trainsim knows; add 'architecture: volta|ampere|hopper|"
               "blackwell' to the gpu section");
  }
  const ConfigNode peaks = map.required("peak_flops");
  MapReader peak_map(peaks);
  for (Dtype d : {Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
    if (auto value = peak_map.optional(dtype_name(d))) {
      gpu.peak_flops_per_s[d] = value->positive_quantity(Dimension::kFlopRate);
    }
  }
  peak_map.finish();
  if (gpu.peak_flops_per_s.empty())
    peaks.fail("needs at least one format (fp32, tf32, bf16, fp16, fp8)");
  gpu.hbm_bandwidth_bytes_per_s =
      map.required("hbm_bandwidth").positive_quantity(Dimension::kBandwidth);
  gpu.hbm_capacity_bytes = map.required("hbm_capacity").positive_quantity(Dimension::kBytes);
  if (auto e = map.optional("gemm_efficiency")) gpu.gemm_efficiency = e->fraction();
  if (auto e = map.optional("gemm_half_flops")) {
    gpu.gemm_half_flops = e->nonnegative_quantity(Dimension::kFlops);
  }
  if (auto e = map.optional("hbm_efficiency")) gpu.hbm_efficiency = e->fraction();
  if (auto e = map.optional("embedding_efficiency")) gpu.embedding_efficiency = e->fraction();
  if (auto e = map.optional("embedding_half_row_bytes")) {
    gpu.embedding_half_row_bytes = e->nonnegative_quantity(Dimension::kBytes);
  }
  if (auto e = map.optional("host_to_device_bandwidth")) {
    gpu.host_to_device_bytes_per_s = e->positive_quantity(Dimension::kBandwidth);
  }
  map.finish();
  return gpu;
}

IntraNodeSpec parse_intra_node(const ConfigNode& node, int gpus_per_node) {
  MapReader map(node);
  IntraNodeSpec intra;
  intra.fabric = map.required("fabric").as_enum(intra_node_fabric_names());
  intra.gpu_link = parse_link_class(map.required("gpu_link"));
  const auto switches = map.optional("pcie_switches");
  const auto switch_link = map.optional("switch_link");
  const auto nvls = map.optional("nvls");
  const auto links = map.optional("nvlink_links");
  const auto hosts = map.optional("hosts");
  if (intra.fabric == IntraNodeFabric::kNvSwitch) {
    if (switches) switches->fail("applies only to fabric: pcie");
    if (switch_link) switch_link->fail("applies only to fabric: pcie");
    if (nvls) intra.nvls = nvls->as_bool();
    if (links) intra.nvlink_links = static_cast<int>(links->positive_integer());
    if (auto e = map.optional("nvls_efficiency")) intra.nvls_efficiency = e->fraction();
    if (auto e = map.optional("nvls_step_latency")) intra.nvls_step_latency = parse_time(*e);
    if (hosts) {
      intra.hosts = static_cast<int>(hosts->positive_integer());
      if (gpus_per_node % intra.hosts != 0) {
        hosts->fail("must divide gpus_per_node (" + std::to_string(gpus_per_node) + ")");
      }
    }
  } else {
    if (nvls) nvls->fail("applies only to fabric: nvswitch");
    if (links) links->fail("applies only to fabric: nvswitch");
    if (hosts) hosts->fail("applies only to fabric: nvswitch (an NVLink domain over several hosts)");
    if (switches) {
      intra.pcie_switches = static_cast<int>(switches->positive_integer());
      if (intra.pcie_switches > gpus_per_node) {
        switches->fail("cannot exceed gpus_per_node (" + std::to_string(gpus_per_node) + ")");
      }
    }
    if (intra.pcie_switches > 1) {
      if (!switch_link) {
        map.fail_missing("switch_link", "pcie_switches > 1 needs the link joining the switches");
      }
      intra.switch_link = parse_link_class(*switch_link);
    } else if (switch_link) {
      switch_link->fail("needs pcie_switches > 1");
    }
  }
  map.finish();
  return intra;
}

NicSpec parse_nic(const ConfigNode& node, int gpus_per_node) {
  MapReader map(node);
  NicSpec nic;
  const ConfigNode count = map.required("count");
  nic.count = static_cast<int>(count.positive_integer());
  nic.link.bandwidth_bytes_per_s =
      map.required("bandwidth").positive_quantity(Dimension::kBandwidth);
  nic.link.latency = parse_time(map.required("latency"));
  nic.link.efficiency = parse_efficiency(map);
  nic.gpu_link = parse_link_class(map.required("gpu_link"));
  if (auto t = map.optional("transport")) {
    nic.transport = t->as_enum(net_transport_names());
    // TCP transports move data through host or device buffers without RDMA.
    nic.gpu_direct = nic.transport != NetTransport::kSocket && nic.transport != NetTransport::kTcpx &&
                     nic.transport != NetTransport::kTcpxo;
  }
  if (auto gdr = map.optional("gpu_direct")) nic.gpu_direct = gdr->as_bool();
  if (auto gpus = map.optional("gpus")) {
    const auto lists = gpus->items();
    if (static_cast<int>(lists.size()) != nic.count) {
      gpus->fail("lists " + std::to_string(lists.size()) + " NICs but count is " +
                 std::to_string(nic.count));
    }
    std::vector<bool> covered(gpus_per_node, false);
    for (const ConfigNode& list : lists) {
      const auto entries = list.items();
      if (entries.empty()) list.fail("this NIC maps to no GPU");
      std::vector<int> ids;
      for (const ConfigNode& entry : entries) {
        const std::int64_t g = entry.as_integer();
        if (g < 0 || g >= gpus_per_node) {
          entry.fail("GPU " + std::to_string(g) + " does not exist (GPUs are 0.." +
                     std::to_string(gpus_per_node - 1) + ")");
        }
        ids.push_back(static_cast<int>(g));
        covered[g] = true;
      }
      nic.gpus.push_back(ids);
    }
    for (int g = 0; g < gpus_per_node; ++g) {
      if (!covered[g]) gpus->fail("GPU " + std::to_string(g) + " is served by no NIC");
    }
  } else {
    // Even split: GPU g uses NIC g * count / gpus_per_node (a NIC per GPU, or a GPU group per
    // NIC); with k times more NICs than GPUs, GPU g has NICs k g .. k g + k - 1.
    nic.gpus.assign(nic.count, {});
    if (nic.count > gpus_per_node) {
      if (nic.count % gpus_per_node != 0) {
        count.fail("more NICs than GPUs, not a multiple of them, needs an explicit 'gpus' mapping");
      }
      const int per_gpu = nic.count / gpus_per_node;
      for (int i = 0; i < nic.count; ++i) nic.gpus[i].push_back(i / per_gpu);
    } else {
      for (int g = 0; g < gpus_per_node; ++g) nic.gpus[g * nic.count / gpus_per_node].push_back(g);
    }
  }
  map.finish();
  return nic;
}

NetworkSpec parse_network(const ConfigNode& node) {
  MapReader map(node);
  NetworkSpec net;
  net.topology = map.required("topology").as_enum(network_topology_names());
  const auto nodes_per_leaf = map.optional("nodes_per_leaf");
  const auto spines = map.optional("spines");
  const auto oversubscription = map.optional("oversubscription");
  const auto rail_optimized = map.optional("rail_optimized");
  const auto switch_latency = map.optional("switch_latency");
  if (auto sharp = map.optional("sharp")) net.sharp = sharp->as_bool();
  if (net.topology == NetworkTopology::kSingleSwitch) {
    for (const auto* key :
         {&nodes_per_leaf, &spines, &oversubscription, &rail_optimized, &switch_latency}) {
      if (*key) (*key)->fail("applies only to topology: fat_tree");
    }
  } else {
    if (!nodes_per_leaf) map.fail_missing("nodes_per_leaf", "a fat_tree needs it");
    if (!spines) map.fail_missing("spines", "a fat_tree needs it");
    net.nodes_per_leaf = static_cast<int>(nodes_per_leaf->positive_integer());
    net.spines = static_cast<int>(spines->positive_integer());
    if (oversubscription) {
      net.oversubscription = oversubscription->as_number();
      if (!(net.oversubscription >= 1.0)) {
        oversubscription->fail("must be at least 1 (1 = non-blocking), got " +
                               oversubscription->as_string());
      }
    }
    if (rail_optimized) net.rail_optimized = rail_optimized->as_bool();
    if (switch_latency) net.switch_latency = parse_time(*switch_latency);
  }
  map.finish();
  return net;
}

}  // namespace

// The collective constants a cluster file does not set: the joint fit over every log in
// validation/ (`trainsim validate --leave-one-out` prints it, with uncertainties; the values are
// rounded to the precision their uncertainty supports). The network's per-hop latency is the
// transport's.
CollectiveTuning calibrated_collective_defaults(NetTransport transport) {
  CollectiveTuning t;
  t.launch_latency = 1970 * kNanosecond;  // +- 0.23 us
  t.nvlink_latency_scale = 0.43;           // +- 0.05
  t.ll_latency_scale = 3.1;                // +- 0.27
  t.ll128_latency_scale = 3.9;             // +- 0.35
  t.p2p_channel_bandwidth = 12.4e9;        // +- 0.45 GB/s
  t.p2p_nvlink_channel_bandwidth = 18.4e9; // +- 0.7 GB/s
  // +- 0.035, fitted on Hopper and used for every generation: Blackwell's 0.80 +- 0.06 rests on one
  // log (GB300 all-to-all), which a default would then predict from itself.
  t.p2p_nvlink_efficiency = 0.94;
  t.p2p_network_efficiency = 0.93;         // +- 0.03
  switch (transport) {
    case NetTransport::kInfiniband:
      t.network_latency_scale = 0.58;  // +- 0.06, six logs of four H100 clusters and a B200 one
      break;
    case NetTransport::kRoce:
      t.network_latency_scale = 2.1;  // +- 0.3, one log (V100, SR-IOV in Kubernetes)
      break;
    case NetTransport::kEfa:
      t.network_latency_scale = 3.5;  // +- 0.27, AWS p4de and p5
      break;
    case NetTransport::kTcpx:
      t.network_latency_scale = 39;  // +- 5, GCP A3 High
      break;
    case NetTransport::kTcpxo:
      t.network_latency_scale = 6.7;  // +- 0.7, GKE A3 Mega
      break;
    case NetTransport::kSocket:
      t.network_latency_scale = 39;  // as TCPX: no log of NCCL's own socket transport
      break;
  }
  return t;
}

namespace {

CollectiveTuning parse_collective_tuning(const ConfigNode& node, NetTransport transport) {
  MapReader map(node);
  CollectiveTuning tuning = calibrated_collective_defaults(transport);
  if (auto v = map.optional("nccl_version")) {
    const auto version = parse_nccl_version(v->as_string());
    if (!version) v->fail("must be an NCCL release such as 2.26 or 2.18.5, got '" + v->as_string() + "'");
    tuning.nccl_version = *version;
  }
  if (auto v = map.optional("launch_latency")) tuning.launch_latency = parse_time(*v);
  for (auto [name, field] : {std::pair{"nvlink_latency_scale", &tuning.nvlink_latency_scale},
                             std::pair{"pcie_latency_scale", &tuning.pcie_latency_scale},
                             std::pair{"network_latency_scale", &tuning.network_latency_scale}}) {
    if (auto v = map.optional(name)) {
      *field = v->as_number();
      if (!(*field > 0)) v->fail("must be positive, got " + v->as_string());
    }
  }
  if (auto v = map.optional("p2p_channel_bandwidth")) {
    tuning.p2p_channel_bandwidth = v->positive_quantity(Dimension::kBandwidth);
  }
  if (auto v = map.optional("p2p_nvlink_channel_bandwidth")) {
    tuning.p2p_nvlink_channel_bandwidth = v->positive_quantity(Dimension::kBandwidth);
  }
  if (auto v = map.optional("p2p_nvlink_efficiency")) tuning.p2p_nvlink_efficiency = v->fraction();
  if (auto v = map.optional("p2p_network_efficiency")) {
    tuning.p2p_network_efficiency = v->fraction();
  }
  for (auto [name, field] : {std::pair{"ll_latency_scale", &tuning.ll_latency_scale},
                             std::pair{"ll128_latency_scale", &tuning.ll128_latency_scale}}) {
    if (auto v = map.optional(name)) {
      *field = v->as_number();
      if (!(*field > 0)) v->fail("must be positive, got " + v->as_string());
    }
  }
  if (auto env = map.optional("env")) {
    MapReader env_map(*env);
    for (const std::string& name : env_map.keys()) {
      const ConfigNode value = env_map.required(name);
      const std::string error = apply_nccl_env(tuning, name, value.as_string());
      if (!error.empty()) value.fail(error);
    }
    env_map.finish();
  }
  map.finish();
  return tuning;
}

}  // namespace

Dtype parse_dtype_node(const ConfigNode& node) {
  const std::string name = node.as_string();
  const auto dtype = parse_dtype(name);
  if (!dtype) node.fail("unknown format '" + name + "' (expected fp32, tf32, bf16, fp16 or fp8)");
  return *dtype;
}

LinkClassSpec parse_link_class(const ConfigNode& node) {
  MapReader map(node);
  LinkClassSpec link;
  link.bandwidth_bytes_per_s = map.required("bandwidth").positive_quantity(Dimension::kBandwidth);
  link.latency = parse_time(map.required("latency"));
  link.efficiency = parse_efficiency(map);
  map.finish();
  return link;
}

ClusterSpec parse_cluster_spec(const ConfigNode& root) {
  MapReader map(root);
  ClusterSpec spec;
  spec.source_file = root.file();
  spec.name = map.required("name").as_string();
  if (auto d = map.optional("description")) spec.description = d->as_string();
  spec.nodes = static_cast<int>(map.required("nodes").positive_integer());
  spec.gpus_per_node = static_cast<int>(map.required("gpus_per_node").positive_integer());
  spec.gpu = parse_gpu(map.required("gpu"));
  spec.intra_node = parse_intra_node(map.required("intra_node"), spec.gpus_per_node);
  const auto nic = map.optional("nic");
  const auto network = map.optional("network");
  if (nic) spec.nic = parse_nic(*nic, spec.gpus_per_node);
  if (network) spec.network = parse_network(*network);
  spec.collectives = calibrated_collective_defaults(spec.nic.transport);
  if (auto collectives = map.optional("collectives")) {
    spec.collectives = parse_collective_tuning(*collectives, spec.nic.transport);
  }
  if (auto s = map.optional("storage")) spec.storage = parse_storage(*s);
  if (auto h = map.optional("host")) spec.host = parse_host(*h);
  if (auto r = map.optional("reliability")) spec.reliability = parse_reliability(*r);
  if (spec.nodes > 1 && !nic) map.fail_missing("nic", "a cluster of several nodes needs NICs");
  if (spec.nodes > 1 && !network) {
    map.fail_missing("network", "a cluster of several nodes needs a network");
  }
  map.finish();
  return spec;
}

ClusterSpec load_cluster_spec(const std::string& path, const std::vector<YamlSetting>& settings) {
  return parse_cluster_spec(ConfigNode::load_file(path, settings));
}

}  // namespace trainsim::models
