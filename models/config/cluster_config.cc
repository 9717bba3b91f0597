#include "models/config/cluster_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "models/config/config_node.h"
#include "models/config/param_table.h"
#include "models/config/runtime_params.h"

namespace trainsim::models {

// The collective constants a cluster file does not set: the joint fit over every log in
// validation/ (`trainsim validate --leave-one-out` prints it, with uncertainties; the values are
// rounded to the precision their uncertainty supports). The network's per-hop latency is the
// transport's.
CollectiveTuning calibrated_collective_defaults(NetTransport transport) {
  CollectiveTuning t;
  t.launch_latency = 2200 * kNanosecond;  // +- 0.17 us
  // NVLink and PCIe steps take NCCL's own figures (scale 1); LL and LL128 scale network steps.
  t.ll_latency_scale = 2.9;                 // +- 0.34
  t.ll128_latency_scale = 4.1;              // +- 0.51
  t.p2p_channel_bandwidth = 12.3e9;         // +- 0.28 GB/s
  t.p2p_nvlink_channel_bandwidth = 20.6e9;  // +- 0.57 GB/s
  // +- 0.034, fitted on Hopper and used for every generation: Blackwell's 0.78 +- 0.06 rests on one
  // log (GB300 all-to-all), which a default would then predict from itself.
  t.p2p_nvlink_efficiency = 0.93;
  // Not fitted: with a sender's operations sharing its p2p channels, the logs put it at 0.97 +-
  // 0.05, within its uncertainty of 1 (cluster A's 2 x 8 all-to-all reaches 0.98 of the NICs).
  t.p2p_network_efficiency = 1.0;
  switch (transport) {
    case NetTransport::kInfiniband:
      t.network_latency_scale = 0.66;  // +- 0.079, six logs of four H100 clusters and a B200 one
      break;
    case NetTransport::kRoce:
      t.network_latency_scale = 2.3;  // +- 0.34, one log (V100, SR-IOV in Kubernetes)
      break;
    case NetTransport::kEfa:
      t.network_latency_scale = 2.1;  // +- 0.16, AWS p4de and p5
      break;
    case NetTransport::kTcpx:
      t.network_latency_scale = 39;  // +- 3.8, GCP A3 High
      break;
    case NetTransport::kTcpxo:
      t.network_latency_scale = 4.0;  // +- 0.40, GKE A3 Mega
      break;
    case NetTransport::kSocket:
      t.network_latency_scale = 39;  // as TCPX: no log of NCCL's own socket transport
      break;
  }
  return t;
}

namespace {

using P = Params<ClusterSpec>;
using ClusterParam = Param<ClusterSpec>;

constexpr WriteUnit kTflopsPerSecond{1e12, "TFLOP/s"};
constexpr WriteUnit kGflop{1e9, "GFLOP"};

bool nvswitch(const ClusterSpec& c) { return c.intra_node.fabric == IntraNodeFabric::kNvSwitch; }
bool pcie(const ClusterSpec& c) { return c.intra_node.fabric == IntraNodeFabric::kPcie; }
bool fat_tree(const ClusterSpec& c) { return c.network.topology == NetworkTopology::kFatTree; }

ClusterParam for_fabric(ClusterParam p, bool (*applies)(const ClusterSpec&), const char* text) {
  p.applies = applies;
  p.doc.applies = text;
  return p;
}

// A link class at `key`: {bandwidth, latency, efficiency}.
template <class F>
std::vector<ClusterParam> link_params(const std::string& key, const std::string& help, F link) {
  ClusterParam section = P::section({.key = key, .help = help});
  section.required = true;
  ClusterParam bandwidth = P::quantity(
      {.key = key + ".bandwidth", .help = "line rate per direction"}, Dimension::kBandwidth,
      kGigabytesPerSecond, [link](auto& s) -> auto& { return link(s).bandwidth_bytes_per_s; });
  bandwidth.required = true;
  ClusterParam latency = P::time(
      {.key = key + ".latency",
       .help = "the wire's and switches' latency (NCCL's per-step costs "
               "are in collectives)"},
      kMicroseconds, [link](auto& s) -> auto& { return link(s).latency; });
  latency.required = true;
  return {section, bandwidth, latency,
          P::fraction(
              {.key = key + ".efficiency",
               .help = "fraction of line rate collectives achieve; the simulator uses "
                       "bandwidth x efficiency"},
              [link](auto& s) -> auto& { return link(s).efficiency; })};
}

void add(std::vector<ClusterParam>& to, std::vector<ClusterParam> more) {
  for (ClusterParam& p : more) to.push_back(std::move(p));
}

ClusterParam required(ClusterParam p, std::string why = "") {
  p.required = true;
  p.why = std::move(why);
  return p;
}

// Physical limits of the counts that size a simulation (bad input beyond them, refused at load
// before anything is allocated for them): a million nodes is ten times the largest GPU clusters
// built, and 1,024 GPUs (or NICs) per node eight times the largest NVLink domain announced
// (NVIDIA's NVL576).
constexpr long long kMostNodes = 1 << 20;
constexpr long long kMostGpusPerNode = 1024;

std::vector<ClusterParam> identity_params() {
  std::vector<ClusterParam> out = name_params<ClusterSpec>("cluster");
  out.push_back(required(P::whole(
      {.key = "nodes", .help = "nodes available; predict --nodes may not exceed it"},
      [](auto& s) -> auto& { return s.nodes; }, 1, kMostNodes)));
  out.push_back(required(P::whole(
      {.key = "gpus_per_node", .help = "GPUs per node"},
      [](auto& s) -> auto& { return s.gpus_per_node; }, 1, kMostGpusPerNode)));
  return out;
}

ClusterParam peak_flops_param() {
  return required(P::custom(
      {.key = "gpu.peak_flops",
       .type = "map",
       .range = "fp32, tf32, bf16, fp16, fp8 to a FLOP rate (TFLOP/s) > 0",
       .help = "dense peak per number format (at least one)"},
      [](const ConfigNode& peaks, ClusterSpec& c) {
        MapReader map(peaks);
        for (Dtype d : {Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16, Dtype::kFp8}) {
          if (auto value = map.optional(dtype_name(d))) {
            c.gpu.peak_flops_per_s[d] = value->positive_quantity(Dimension::kFlopRate);
          }
        }
        map.finish();
        if (c.gpu.peak_flops_per_s.empty()) {
          peaks.fail("needs at least one format (fp32, tf32, bf16, fp16, fp8)");
        }
      },
      [](const ClusterSpec& c) -> std::optional<YAML::Node> {
        YAML::Node map(YAML::NodeType::Map);
        for (const auto& [dtype, peak] : c.gpu.peak_flops_per_s) {
          map[std::string(dtype_name(dtype))] = yaml_text(format_quantity(peak, kTflopsPerSecond));
        }
        return map;
      }));
}

std::vector<ClusterParam> gpu_params() {
  ClusterParam architecture = P::choice(
      {.key = "gpu.architecture",
       .default_text = "from gpu.model (V100, A100, H100/H200/H800/H20, B200/GB200/GB300)",
       .help = "the generation NCCL tells apart (its link speeds, speed arrays, tuning tables)"},
      gpu_arch_names(), [](auto& s) -> auto& { return s.gpu.architecture; });
  architecture.absent = [](MapReader& map, ClusterSpec& c) {
    if (const auto inferred = gpu_arch_of_model(c.gpu.model)) {
      c.gpu.architecture = *inferred;
      return;
    }
    map.optional("model")->fail(
        "names no GPU generation trainsim knows; add 'architecture: "
        "volta|ampere|hopper|blackwell' to the gpu section");
  };
  return {
      required(P::section({.key = "gpu", .help = "the GPU of every node"})),
      required(P::text(
          {.key = "gpu.model", .help = "the GPU's name"},
          [](auto& s) -> auto& { return s.gpu.model; })),
      architecture,
      peak_flops_param(),
      required(P::quantity(
          {.key = "gpu.hbm_bandwidth", .help = "HBM bandwidth"}, Dimension::kBandwidth,
          kGigabytesPerSecond, [](auto& s) -> auto& { return s.gpu.hbm_bandwidth_bytes_per_s; })),
      required(P::quantity(
          {.key = "gpu.hbm_capacity", .help = "HBM size"}, Dimension::kBytes, WriteUnit{1e9, "GB"},
          [](auto& s) -> auto& { return s.gpu.hbm_capacity_bytes; })),
      P::fraction(
          {.key = "gpu.gemm_efficiency",
           .help = "achieved fraction of peak for large GEMMs",
           .source = "fitted to GEMM microbenchmarks (trainsim calibrate)"},
          [](auto& s) -> auto& { return s.gpu.gemm_efficiency; }),
      P::quantity(
          {.key = "gpu.gemm_half_flops",
           .help = "GEMM efficiency falls for small problems: gemm_efficiency x F / (F + "
                   "this), F the FLOP of one GEMM; 0: no falloff"},
          Dimension::kFlops, kGflop, [](auto& s) -> auto& { return s.gpu.gemm_half_flops; }, false),
      P::fraction(
          {.key = "gpu.hbm_efficiency", .help = "achieved fraction of HBM bandwidth"},
          [](auto& s) -> auto& { return s.gpu.hbm_efficiency; }),
      P::fraction(
          {.key = "gpu.embedding_efficiency",
           .help = "fraction of HBM bandwidth table-batched embedding lookups (forward) "
                   "reach on the bytes FBGEMM's benchmark counts, for long rows",
           .source = "FBGEMM on a production-like table mix (meta-pytorch/torchrec PR "
                     "#4757); trainsim calibrate fits it to embedding microbenchmarks"},
          [](auto& s) -> auto& { return s.gpu.embedding_efficiency; }),
      P::fraction(
          {.key = "gpu.embedding_backward_efficiency",
           .help = "the same for the backward with the fused optimizer update (FBGEMM "
                   "counts twice the forward's bytes; trainsim adds the optimizer state)",
           .source = "FBGEMM on a production-like table mix (meta-pytorch/torchrec PR "
                     "#4757); trainsim calibrate fits it to the embedding microbenchmark's "
                     "backward passes"},
          [](auto& s) -> auto& { return s.gpu.embedding_backward_efficiency; }),
      P::quantity(
          {.key = "gpu.embedding_half_row_bytes",
           .help = "rows of r bytes reach embedding_efficiency (and the backward's) x r / "
                   "(r + this)"},
          Dimension::kBytes, kBytesUnit,
          [](auto& s) -> auto& { return s.gpu.embedding_half_row_bytes; }, false),
      P::time(
          {.key = "gpu.kernel_launch_latency",
           .help = "host time to launch one group of kernels (one table-batched embedding "
                   "forward or backward call per GPU and step)",
           .source = "the launch of one NCCL kernel, collectives.launch_latency as fitted over "
                     "validation/ (1.97 +- 0.23 us)"},
          kMicroseconds, [](auto& s) -> auto& { return s.gpu.kernel_launch_latency; }),
      P::quantity(
          {.key = "gpu.host_to_device_bandwidth",
           .default_text = "unset",
           .help = "pinned host-to-device copy bandwidth"},
          Dimension::kBandwidth, kGigabytesPerSecond,
          [](auto& s) -> auto& { return s.gpu.host_to_device_bytes_per_s; }),
  };
}

std::vector<ClusterParam> intra_node_params() {
  constexpr const char* kNvswitch = "fabric: nvswitch";
  ClusterParam hosts = P::checked(
      P::whole(
          {.key = "intra_node.hosts",
           .help = "hosts one NVLink domain spans (an NVL72 is one node of 72 GPUs over 18 "
                   "trays); nccl-tests logs then list this many hosts per node"},
          [](auto& s) -> auto& { return s.intra_node.hosts; }),
      [](const ConfigNode& n, const ClusterSpec& c) {
        if (c.gpus_per_node % c.intra_node.hosts != 0) {
          n.fail("must divide gpus_per_node (" + std::to_string(c.gpus_per_node) + ")");
        }
      });
  std::vector<ClusterParam> out = {
      required(P::section({.key = "intra_node", .help = "how the GPUs of a node connect"})),
      required(P::choice(
          {.key = "intra_node.fabric",
           .help = "nvswitch: every GPU has NVLinks to one switch; pcie: GPUs on "
                   "PCIe switches"},
          intra_node_fabric_names(), [](auto& s) -> auto& { return s.intra_node.fabric; })),
      for_fabric(P::flag(
                     {.key = "intra_node.nvls",
                      .help = "the switch reduces in the network (NVLink SHARP), enabling NVLS "
                              "(one node) and NVLSTree (across nodes)"},
                     [](auto& s) -> auto& { return s.intra_node.nvls; }),
                 nvswitch, kNvswitch),
      for_fabric(P::whole(
                     {.key = "intra_node.nvlink_links",
                      .default_text = "gpu_link bandwidth / 25 GB/s (50 GB/s for Blackwell)",
                      .help = "NVLinks per GPU"},
                     [](auto& s) -> auto& { return s.intra_node.nvlink_links; }),
                 nvswitch, kNvswitch),
      for_fabric(hosts, nvswitch, kNvswitch),
      for_fabric(P::fraction(
                     {.key = "intra_node.nvls_efficiency",
                      .default_text = "NCCL's figure (0.85 Hopper, 0.74 Blackwell)",
                      .help = "fraction of the NVLink's achieved bandwidth in-switch "
                              "reduction reaches",
                      .source = "NCCL's tuning model; the shipped clusters give the fitted "
                                "one (validation/)"},
                     [](auto& s) -> auto& { return s.intra_node.nvls_efficiency; }),
                 nvswitch, kNvswitch),
      for_fabric(
          P::time(
              {.key = "intra_node.nvls_step_latency",
               .help = "what each NVLS chunk step costs beyond its bytes (NCCL shrinks "
                       "NVLS chunks from 128 to 16 KiB for mid-size messages); NVLSTree "
                       "across nodes shows three, the rest hiding behind the network; 0: "
                       "not modelled",
               .source = "fitted per NVLink generation on validation/ logs (shipped H100 "
                         "cluster: 2.2 us)"},
              kMicroseconds, [](auto& s) -> auto& { return s.intra_node.nvls_step_latency; }),
          nvswitch, kNvswitch),
  };
  add(out,
      link_params(
          "intra_node.gpu_link", "link class of each GPU to the NVSwitch or to its PCIe switch",
          [](auto& s) -> auto& { return s.intra_node.gpu_link; }));
  out.push_back(
      for_fabric(P::checked(P::whole(
                                {.key = "intra_node.pcie_switches",
                                 .help = "GPUs are split evenly over this many PCIe switches"},
                                [](auto& s) -> auto& { return s.intra_node.pcie_switches; }),
                            [](const ConfigNode& n, const ClusterSpec& c) {
                              if (c.intra_node.pcie_switches > c.gpus_per_node) {
                                n.fail("cannot exceed gpus_per_node (" +
                                       std::to_string(c.gpus_per_node) + ")");
                              }
                            }),
                 pcie, "fabric: pcie"));
  std::vector<ClusterParam> switch_link = link_params(
      "intra_node.switch_link", "link joining the PCIe switches (e.g. the CPU socket interconnect)",
      [](auto& s) -> auto& { return s.intra_node.switch_link; });
  switch_link[0].why = "pcie_switches > 1 needs the link joining the switches";
  switch_link[0].applies = [](const ClusterSpec& c) {
    return pcie(c) && c.intra_node.pcie_switches > 1;
  };
  switch_link[0].doc.applies = "fabric: pcie with pcie_switches > 1";
  add(out, std::move(switch_link));
  return out;
}

// NIC i serves `gpus` (explicit, or an even split).
ClusterParam nic_gpus_param() {
  ClusterParam p = P::custom(
      {.key = "nic.gpus",
       .type = "list of lists of GPU indices",
       .default_text = "GPUs split evenly",
       .help = "per NIC, the local GPUs that send through it, e.g. [[0,1,2,3],[4,5,6,7]]; every "
               "NIC needs a GPU and every GPU a NIC"},
      [](const ConfigNode& gpus, ClusterSpec& c) {
        NicSpec& nic = c.nic;
        const auto lists = gpus.items();
        if (static_cast<int>(lists.size()) != nic.count) {
          gpus.fail("lists " + std::to_string(lists.size()) + " NICs but count is " +
                    std::to_string(nic.count));
        }
        std::vector<bool> covered(c.gpus_per_node, false);
        nic.gpus.clear();
        for (const ConfigNode& list : lists) {
          const auto entries = list.items();
          if (entries.empty()) list.fail("this NIC maps to no GPU");
          std::vector<int> ids;
          for (const ConfigNode& entry : entries) {
            const std::int64_t g = entry.as_integer();
            if (g < 0 || g >= c.gpus_per_node) {
              entry.fail("GPU " + std::to_string(g) + " does not exist (GPUs are 0.." +
                         std::to_string(c.gpus_per_node - 1) + ")");
            }
            ids.push_back(static_cast<int>(g));
            covered[g] = true;
          }
          nic.gpus.push_back(ids);
        }
        for (int g = 0; g < c.gpus_per_node; ++g) {
          if (!covered[g]) gpus.fail("GPU " + std::to_string(g) + " is served by no NIC");
        }
      },
      [](const ClusterSpec& c) -> std::optional<YAML::Node> {
        YAML::Node lists(YAML::NodeType::Sequence);
        lists.SetStyle(YAML::EmitterStyle::Flow);
        for (const auto& list : c.nic.gpus) lists.push_back(yaml_flow_list(list));
        return lists;
      });
  // Even split: GPU g uses NIC g * count / gpus_per_node (a NIC per GPU, or a GPU group per NIC);
  // with k times more NICs than GPUs, GPU g has NICs k g .. k g + k - 1.
  p.absent = [](MapReader& map, ClusterSpec& c) {
    NicSpec& nic = c.nic;
    nic.gpus.assign(nic.count, {});
    if (nic.count > c.gpus_per_node) {
      if (nic.count % c.gpus_per_node != 0) {
        map.optional("count")->fail(
            "more NICs than GPUs, not a multiple of them, needs an explicit 'gpus' mapping");
      }
      const int per_gpu = nic.count / c.gpus_per_node;
      for (int i = 0; i < nic.count; ++i) nic.gpus[i].push_back(i / per_gpu);
    } else {
      for (int g = 0; g < c.gpus_per_node; ++g) {
        nic.gpus[g * nic.count / c.gpus_per_node].push_back(g);
      }
    }
  };
  return p;
}

std::vector<ClusterParam> nic_params() {
  ClusterParam section =
      P::section({.key = "nic", .help = "the NICs of every node (needed when nodes > 1)"});
  section.absent = [](MapReader& map, ClusterSpec& c) {
    if (c.nodes > 1) map.fail_missing("nic", "a cluster of several nodes needs NICs");
  };
  section.written = [](const ClusterSpec& c) { return c.nic.count > 0; };
  ClusterParam transport = P::choice(
      {.key = "nic.transport",
       .help = "how NCCL reaches the network: infiniband, roce, efa (AWS, libfabric), tcpx, tcpxo "
               "(Google's GPUDirect-TCPX/TCPXO), socket; systems on one transport share its "
               "per-hop latency"},
      net_transport_names(), [](auto& s) -> auto& { return s.nic.transport; });
  transport = P::checked(transport, [](const ConfigNode&, ClusterSpec& c) {
    // TCP transports move data through host or device buffers without RDMA.
    const NetTransport t = c.nic.transport;
    c.nic.gpu_direct =
        t != NetTransport::kSocket && t != NetTransport::kTcpx && t != NetTransport::kTcpxo;
  });
  std::vector<ClusterParam> out = {
      section,
      required(P::whole(
          {.key = "nic.count", .help = "NICs per node"},
          [](auto& s) -> auto& { return s.nic.count; }, 1, kMostGpusPerNode)),
      transport,
      required(P::quantity(
          {.key = "nic.bandwidth", .help = "NIC to network, per direction"}, Dimension::kBandwidth,
          kGigabytesPerSecond, [](auto& s) -> auto& { return s.nic.link.bandwidth_bytes_per_s; })),
      required(P::time(
          {.key = "nic.latency", .help = "NIC to network latency"}, kMicroseconds,
          [](auto& s) -> auto& { return s.nic.link.latency; })),
      P::fraction(
          {.key = "nic.efficiency", .help = "fraction of line rate collectives achieve"},
          [](auto& s) -> auto& { return s.nic.link.efficiency; }),
  };
  add(out, link_params(
               "nic.gpu_link", "link class from a GPU to its NIC (the PCIe path of GPUDirect RDMA)",
               [](auto& s) -> auto& { return s.nic.gpu_link; }));
  out.push_back(P::flag(
      {.key = "nic.gpu_direct",
       .default_text = "true, false for tcpx, tcpxo, socket",
       .help = "GPUDirect RDMA between GPU and NIC (NCCL enables LL128 across "
               "nodes only with it)"},
      [](auto& s) -> auto& { return s.nic.gpu_direct; }));
  out.push_back(nic_gpus_param());
  return out;
}

std::vector<ClusterParam> network_params() {
  constexpr const char* kFatTree = "topology: fat_tree";
  ClusterParam section =
      P::section({.key = "network", .help = "the fabric between the NICs (needed when nodes > 1)"});
  section.absent = [](MapReader& map, ClusterSpec& c) {
    if (c.nodes > 1) map.fail_missing("network", "a cluster of several nodes needs a network");
  };
  section.written = [](const ClusterSpec& c) { return c.nic.count > 0; };
  ClusterParam leaf =
      required(P::whole(
                   {.key = "network.nodes_per_leaf", .help = "nodes under one leaf switch"},
                   [](auto& s) -> auto& { return s.network.nodes_per_leaf; }, 1, kMostNodes),
               "a fat_tree needs it");
  ClusterParam spines = required(
      P::whole(
          {.key = "network.spines", .help = "spine switches; every leaf connects to every spine"},
          [](auto& s) -> auto& { return s.network.spines; }, 1, kMostNodes),
      "a fat_tree needs it");
  ClusterParam routing = P::choice(
      {.key = "network.routing",
       .help = "how a switch picks among equal-cost links up the tree: ecmp (by a hash of source "
               "and destination, as Ethernet's ECMP does; the default) or destination (by the "
               "destination's port, the same from every source, destinations taking the links "
               "in turn: the static forwarding tables InfiniBand's subnet manager fills, "
               "D-mod-k)"},
      network_routing_names(), [](auto& s) -> auto& { return s.network.routing; });
  return {
      section,
      required(P::choice(
          {.key = "network.topology",
           .help = "single_switch: every NIC on one non-blocking switch; fat_tree: "
                   "leaves and spines"},
          network_topology_names(), [](auto& s) -> auto& { return s.network.topology; })),
      for_fabric(P::flag(
                     {.key = "network.rail_optimized",
                      .help = "NIC i of each node goes to its own leaf (a rail)"},
                     [](auto& s) -> auto& { return s.network.rail_optimized; }),
                 fat_tree, kFatTree),
      for_fabric(leaf, fat_tree, kFatTree),
      for_fabric(spines, fat_tree, kFatTree),
      for_fabric(P::number(
                     {.key = "network.oversubscription",
                      .help = "leaf downlink / uplink bandwidth; 1: non-blocking"},
                     [](auto& s) -> auto& { return s.network.oversubscription; },
                     "at least 1 (1 = non-blocking)", [](double v) { return v >= 1.0; }),
                 fat_tree, kFatTree),
      for_fabric(P::time(
                     {.key = "network.switch_latency", .help = "latency per leaf-spine hop"},
                     kMicroseconds, [](auto& s) -> auto& { return s.network.switch_latency; }),
                 fat_tree, kFatTree),
      for_fabric(routing, fat_tree, kFatTree),
      P::flag(
          {.key = "network.sharp",
           .help = "the switches reduce in the network (InfiniBand SHARP with NCCL's CollNet "
                   "plugin), enabling CollNet Direct and Chain"},
          [](auto& s) -> auto& { return s.network.sharp; }),
      P::flag(
          {.key = "network.latency_first",
           .help = "a transfer waits its route latency before it takes any bandwidth, as "
                   "SimGrid's message model runs it (false: it takes bandwidth at once and "
                   "arrives its route latency after its last byte leaves); alone, a transfer "
                   "takes the same time either way"},
          [](auto& s) -> auto& { return s.network.latency_first; }),
  };
}

std::string network_latency_defaults() {
  std::string text = "by transport:";
  for (const NetTransport t : net_transport_names().values()) {
    text += std::string(t == net_transport_names().values().front() ? " " : ", ") +
            format_plain(calibrated_collective_defaults(t).network_latency_scale) + " " +
            std::string(net_transport_name(t));
  }
  return text;
}

ClusterParam scale_param(std::string key, std::string help, double CollectiveTuning::*field,
                         const char* source =
                             "joint fit over the logs in validation/ (trainsim "
                             "validate --leave-one-out)") {
  return P::number(
      {.key = std::move(key), .help = std::move(help), .source = source},
      [field](auto& s) -> auto& { return s.collectives.*field; }, "positive",
      [](double v) { return v > 0; });
}

ClusterParam nccl_env_param() {
  return P::custom(
      {.key = "collectives.env",
       .type = "map of NCCL variables",
       .help = "NCCL's environment, e.g. {NCCL_ALGO: Ring, NCCL_MIN_NCHANNELS: 24}: NCCL_ALGO, "
               "NCCL_PROTO (lists, ^ excludes), NCCL_MIN_NCHANNELS/NCCL_MIN_CTAS, "
               "NCCL_MAX_NCHANNELS/NCCL_MAX_CTAS, NCCL_NCHANNELS_PER_NET_PEER, "
               "NCCL_IB_QPS_PER_CONNECTION, NCCL_PXN_DISABLE, NCCL_NVLS_ENABLE, "
               "NCCL_COLLNET_ENABLE; others (NCCL_CROSS_NIC, NCCL_IB_HCA, ...) "
               "are accepted and change nothing"},
      [](const ConfigNode& env, ClusterSpec& c) {
        MapReader env_map(env);
        for (const std::string& name : env_map.keys()) {
          const ConfigNode value = env_map.required(name);
          const std::string error = apply_nccl_env(c.collectives, name, value.as_string());
          if (!error.empty()) value.fail(error);
        }
        env_map.finish();
      },
      [](const ClusterSpec& c) -> std::optional<YAML::Node> {
        const auto env = nccl_env_of(c.collectives);
        if (env.empty()) return std::nullopt;
        YAML::Node map(YAML::NodeType::Map);
        for (const auto& [name, value] : env) map[name] = yaml_text(value);
        return map;
      });
}

std::vector<ClusterParam> collectives_params() {
  constexpr const char* kFit =
      "joint fit over the logs in validation/ (trainsim validate --leave-one-out)";
  // Hop latencies inside a node: NCCL's own figures, which calibration leaves (for what-ifs).
  constexpr const char* kNccls = "NCCL's own figures (calibration does not fit it)";
  ClusterParam section =
      P::section({.key = "collectives",
                  .help = "how NCCL runs on this cluster; constants a file leaves out "
                          "take the joint fit over every log in validation/"});
  // The defaults are the transport's; keys given override them.
  section.read = [](const ConfigNode&, ClusterSpec& c) {
    c.collectives = calibrated_collective_defaults(c.nic.transport);
  };
  section.absent = [](MapReader&, ClusterSpec& c) {
    c.collectives = calibrated_collective_defaults(c.nic.transport);
  };
  ClusterParam version = P::custom(
      {.key = "collectives.nccl_version",
       .type = "NCCL release",
       .help = "the NCCL release the job runs (2.18.5, 2.26, ...): its tuning tables, ring step "
               "counts and point-to-point channel rules"},
      [](const ConfigNode& v, ClusterSpec& c) {
        const auto version = parse_nccl_version(v.as_string());
        if (!version) {
          v.fail("must be an NCCL release such as 2.26 or 2.18.5, got '" + v.as_string() + "'");
        }
        c.collectives.nccl_version = *version;
      },
      [](const ClusterSpec& c) -> std::optional<YAML::Node> {
        return yaml_text(nccl_version_name(c.collectives.nccl_version));
      });
  using T = CollectiveTuning;
  const std::string hop = "per-step hop latency over ";
  const std::string as_nccl = ", as a multiple of NCCL's own figures (its hwLat table)";
  ClusterParam network = scale_param("collectives.network_latency_scale",
                                     hop + "the network" + as_nccl, &T::network_latency_scale);
  network.doc.default_text = network_latency_defaults();
  return {
      section,
      version,
      P::time(
          {.key = "collectives.launch_latency",
           .help = "host time to launch one GPU's kernels of an operation; a thread driving "
                   "several GPUs (nccl-tests -g) launches them one after another",
           .source = kFit},
          kMicroseconds, [](auto& s) -> auto& { return s.collectives.launch_latency; }),
      scale_param("collectives.nvlink_latency_scale", hop + "NVLink" + as_nccl,
                  &T::nvlink_latency_scale, kNccls),
      scale_param("collectives.pcie_latency_scale", hop + "PCIe" + as_nccl, &T::pcie_latency_scale,
                  kNccls),
      network,
      scale_param("collectives.ll_latency_scale",
                  "a network step's latency under the LL protocol, as a multiple of the "
                  "network's (Simple: 1; LL crosses the network through the proxy and host "
                  "memory)",
                  &T::ll_latency_scale),
      scale_param("collectives.ll128_latency_scale", "the same for the LL128 protocol",
                  &T::ll128_latency_scale),
      P::quantity(
          {.key = "collectives.p2p_channel_bandwidth",
           .help = "throughput one point-to-point channel reaches over the network",
           .source = kFit},
          Dimension::kBandwidth, kGigabytesPerSecond,
          [](auto& s) -> auto& { return s.collectives.p2p_channel_bandwidth; }),
      P::quantity(
          {.key = "collectives.p2p_nvlink_channel_bandwidth",
           .help = "throughput one point-to-point channel reaches over NVLink",
           .source = kFit},
          Dimension::kBandwidth, kGigabytesPerSecond,
          [](auto& s) -> auto& { return s.collectives.p2p_nvlink_channel_bandwidth; }),
      P::fraction(
          {.key = "collectives.p2p_nvlink_efficiency",
           .help = "fraction of NVLink's achieved bandwidth point-to-point traffic "
                   "(all-to-all, send/recv) reaches",
           .source = kFit},
          [](auto& s) -> auto& { return s.collectives.p2p_nvlink_efficiency; }),
      P::fraction(
          {.key = "collectives.p2p_network_efficiency",
           .help = "the same over the network",
           .source = "1: the NICs' achieved collective rate (fitted: 0.97 +- 0.05; calibration "
                     "does not fit it)"},
          [](auto& s) -> auto& { return s.collectives.p2p_network_efficiency; }),
      nccl_env_param(),
  };
}

// A list of rows of numbers, e.g. [[3, 2.0], [12, 1.5]]: each row has `arity` entries and is
// read by `read_row` (which checks it), and written back from `rows`.
ClusterParam rows_param(ParamDoc doc, std::size_t arity,
                        std::function<void(const std::vector<ConfigNode>&, ClusterSpec&)> read_row,
                        std::function<std::vector<std::vector<double>>(const ClusterSpec&)> rows) {
  return P::custom(
      std::move(doc),
      [arity, read_row](const ConfigNode& list, ClusterSpec& c) {
        for (const ConfigNode& row : list.items()) {
          const auto fields = row.items();
          if (fields.size() != arity) {
            row.fail("needs " + std::to_string(arity) + " entries, has " +
                     std::to_string(fields.size()));
          }
          read_row(fields, c);
        }
      },
      [rows](const ClusterSpec& c) -> std::optional<YAML::Node> {
        const auto values = rows(c);
        if (values.empty()) return std::nullopt;
        YAML::Node list(YAML::NodeType::Sequence);
        list.SetStyle(YAML::EmitterStyle::Flow);
        for (const auto& row : values) {
          YAML::Node entry(YAML::NodeType::Sequence);
          entry.SetStyle(YAML::EmitterStyle::Flow);
          for (const double v : row) entry.push_back(yaml_text(format_plain(v)));
          list.push_back(entry);
        }
        return list;
      });
}

// An index in [0, below) at `node`, naming what it counts in the error.
int index_below(const ConfigNode& node, long long below, const std::string& what) {
  const std::int64_t v = node.as_integer();
  if (v < 0 || v >= below) {
    node.fail(what + " " + std::to_string(v) + " does not exist (0.." + std::to_string(below - 1) +
              ")");
  }
  return static_cast<int>(v);
}

double slowdown_at(const ConfigNode& node) {
  const double v = node.as_number();
  if (!(v >= 1.0)) node.fail("a slowdown is at least 1 (2: half speed), got " + node.as_string());
  return v;
}

std::vector<ClusterParam> straggler_params() {
  using D = SlowdownDistribution;
  constexpr const char* kSlowdown =
      "a slowdown: its compute takes this many times as long (2: half speed)";
  ClusterParam failed = rows_param(
      {.key = "stragglers.failed_uplinks",
       .type = "list of [leaf, spine]",
       .default_text = "none",
       .help = "failed leaf-spine links (fat_tree; leaves numbered group by group, rails within "
               "a group); their traffic takes the other spines"},
      2,
      [](const std::vector<ConfigNode>& f, ClusterSpec& c) {
        if (c.network.topology != NetworkTopology::kFatTree) {
          f[0].fail("failed uplinks need network.topology: fat_tree");
        }
        FailedUplink u{index_below(f[0], kMostNodes, "leaf"),
                       index_below(f[1], c.network.spines, "spine")};
        int lost = 1;
        for (const FailedUplink& o : c.stragglers.failed_uplinks) {
          if (o.leaf != u.leaf) continue;
          if (o.spine == u.spine) f[1].fail("this uplink is listed twice");
          ++lost;
        }
        if (lost >= c.network.spines) f[0].fail("a leaf needs at least one working uplink");
        c.stragglers.failed_uplinks.push_back(u);
      },
      [](const ClusterSpec& c) {
        std::vector<std::vector<double>> out;
        for (const FailedUplink& u : c.stragglers.failed_uplinks) {
          out.push_back({1.0 * u.leaf, 1.0 * u.spine});
        }
        return out;
      });
  ClusterParam distribution = P::choice(
      {.key = "stragglers.distribution",
       .help = "every GPU's slowdown drawn once per run from the seed (times the fixed ones): "
               "none, uniform in [min, max], or exponential (1 + an exponential of mean "
               "mean_excess); --repeat draws again per run"},
      slowdown_distribution_names(), [](auto& s) -> auto& { return s.stragglers.distribution; });
  distribution.write = [](const ClusterSpec& c) -> std::optional<YAML::Node> {
    if (c.stragglers.distribution == D::kNone) return std::nullopt;
    return yaml_text(std::string(slowdown_distribution_names().name(c.stragglers.distribution)));
  };
  return {
      P::section({.key = "stragglers",
                  .help = "what-ifs of a cluster that is not all healthy: slow GPUs, slow NICs, "
                          "failed links"}),
      rows_param(
          {.key = "stragglers.gpus",
           .type = "list of [rank, slowdown]",
           .default_text = "none",
           .help = std::string("GPUs (global rank: node x GPUs per node + local index) with ") +
                   kSlowdown},
          2,
          [](const std::vector<ConfigNode>& f, ClusterSpec& c) {
            c.stragglers.gpus.push_back(
                {index_below(f[0], 1LL * c.nodes * c.gpus_per_node, "GPU"), slowdown_at(f[1])});
          },
          [](const ClusterSpec& c) {
            std::vector<std::vector<double>> out;
            for (const SlowGpu& g : c.stragglers.gpus) out.push_back({1.0 * g.rank, g.slowdown});
            return out;
          }),
      rows_param(
          {.key = "stragglers.nodes",
           .type = "list of [node, slowdown]",
           .default_text = "none",
           .help = std::string("nodes whose every GPU has ") + kSlowdown},
          2,
          [](const std::vector<ConfigNode>& f, ClusterSpec& c) {
            c.stragglers.nodes.push_back({index_below(f[0], c.nodes, "node"), slowdown_at(f[1])});
          },
          [](const ClusterSpec& c) {
            std::vector<std::vector<double>> out;
            for (const SlowNode& n : c.stragglers.nodes) out.push_back({1.0 * n.node, n.slowdown});
            return out;
          }),
      rows_param(
          {.key = "stragglers.nics",
           .type = "list of [node, nic, fraction]",
           .default_text = "none",
           .help = "NICs running at a fraction of their bandwidth (both directions), e.g. a "
                   "link that trained down to a lower speed"},
          3,
          [](const std::vector<ConfigNode>& f, ClusterSpec& c) {
            c.stragglers.nics.push_back({index_below(f[0], c.nodes, "node"),
                                         index_below(f[1], c.nic.count, "NIC"), f[2].fraction()});
          },
          [](const ClusterSpec& c) {
            std::vector<std::vector<double>> out;
            for (const SlowNic& n : c.stragglers.nics) {
              out.push_back({1.0 * n.node, 1.0 * n.nic, n.fraction});
            }
            return out;
          }),
      failed,
      distribution,
      for_fabric(P::number({.key = "stragglers.min", .help = "uniform: the least slowdown"},
                           [](auto& s) -> auto& { return s.stragglers.min; }, "at least 1",
                           [](double v) { return v >= 1.0; }),
                 [](const ClusterSpec& c) { return c.stragglers.distribution == D::kUniform; },
                 "distribution: uniform"),
      for_fabric(
          P::checked(P::number({.key = "stragglers.max", .help = "uniform: the largest slowdown"},
                               [](auto& s) -> auto& { return s.stragglers.max; }, "at least 1",
                               [](double v) { return v >= 1.0; }),
                     [](const ConfigNode& n, ClusterSpec& c) {
                       if (c.stragglers.max < c.stragglers.min) n.fail("is below stragglers.min");
                     }),
          [](const ClusterSpec& c) { return c.stragglers.distribution == D::kUniform; },
          "distribution: uniform"),
      for_fabric(
          P::number({.key = "stragglers.mean_excess",
                     .help = "exponential: the mean slowdown beyond 1 (0.05: 5% on average)"},
                    [](auto& s) -> auto& { return s.stragglers.mean_excess; }, "> 0",
                    [](double v) { return v > 0.0; }),
          [](const ClusterSpec& c) { return c.stragglers.distribution == D::kExponential; },
          "distribution: exponential"),
  };
}

ClusterParam background_param() {
  return rows_param(
      {.key = "background_traffic",
       .type = "list of [from first, from last, to first, to last, GB/s]",
       .default_text = "none",
       .help = "steady traffic that is not the job's (another tenant, storage): GB/s in all "
               "from one node range to another, split evenly over the node pairs and their NICs "
               "rail by rail, sharing the links with the job for the whole run (flow network "
               "model)"},
      5,
      [](const std::vector<ConfigNode>& f, ClusterSpec& c) {
        BackgroundTraffic b{index_below(f[0], c.nodes, "node"), index_below(f[1], c.nodes, "node"),
                            index_below(f[2], c.nodes, "node"), index_below(f[3], c.nodes, "node"),
                            0.0};
        if (b.from_last < b.from_first) f[1].fail("the range ends before it starts");
        if (b.to_last < b.to_first) f[3].fail("the range ends before it starts");
        const double gb = f[4].as_number();
        if (!(gb > 0)) f[4].fail("a rate in GB/s must be positive, got " + f[4].as_string());
        b.bytes_per_s = gb * 1e9;
        c.background_traffic.push_back(b);
      },
      [](const ClusterSpec& c) {
        std::vector<std::vector<double>> out;
        for (const BackgroundTraffic& b : c.background_traffic) {
          out.push_back({1.0 * b.from_first, 1.0 * b.from_last, 1.0 * b.to_first,
                         1.0 * b.to_last, b.bytes_per_s / 1e9});
        }
        return out;
      });
}

// The uncertainty section mirrors the cluster's keys: uncertainty: {gpu: {gemm_efficiency: 0.02}}.
void read_uncertainty(const ConfigNode& node, const std::string& prefix, ClusterSpec& c) {
  if (!node.is_map()) node.fail("expected a map of cluster keys, e.g. gpu: {gemm_efficiency: 0.02}");
  MapReader map(node);
  for (const std::string& key : map.keys()) {
    const ConfigNode child = *map.optional(key);
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (child.is_map()) {
      // Cluster keys are at most 4 deep (nic.gpu_link.bandwidth): deeper is not one of them.
      if (std::count(path.begin(), path.end(), '.') >= 3) {
        child.fail("'" + path + "' is not a cluster value that a calibration fits");
      }
      read_uncertainty(child, path, c);
      continue;
    }
    bool known = false;
    for (const ParamDoc& d : cluster_param_doc().params) {
      known = known || (d.key == path && d.type != "section");
    }
    if (!known || path.rfind("uncertainty", 0) == 0 || path.rfind("stragglers", 0) == 0) {
      child.fail("'" + path + "' is not a cluster value that a calibration fits");
    }
    const double v = child.as_number();
    if (!(v >= 0 && v <= 10)) {
      child.fail("a relative uncertainty (standard deviation / value) is from 0 to 10, got " +
                 child.as_string());
    }
    c.uncertainty.emplace_back(path, v);
  }
  map.finish();
}

ClusterParam uncertainty_param() {
  return P::custom(
      {.key = "uncertainty",
       .type = "map of cluster keys to numbers",
       .default_text = "none",
       .help = "relative standard uncertainty (standard deviation / value) of values a "
               "calibration fitted, as the cluster's own keys, e.g. {gpu: {gemm_efficiency: "
               "0.02}}; trainsim calibrate writes it, and predict --repeat draws each value u "
               "per run as value x exp(u z), z standard normal (log-normal: positive, about "
               "+- u x value; redrawn outside the key's range)"},
      [](const ConfigNode& node, ClusterSpec& c) {
        c.uncertainty.clear();
        read_uncertainty(node, "", c);
      },
      [](const ClusterSpec& c) -> std::optional<YAML::Node> {
        if (c.uncertainty.empty()) return std::nullopt;
        YAML::Node root(YAML::NodeType::Map);
        for (const auto& [path, value] : c.uncertainty) {
          std::vector<std::string> keys;
          std::stringstream parts(path);
          for (std::string k; std::getline(parts, k, '.');) keys.push_back(k);
          // Walk to the parent map (yaml-cpp nodes are handles: assignment rebinds, so index).
          std::vector<YAML::Node> chain{root};
          for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
            chain.push_back(chain.back()[keys[i]]);
          }
          chain.back()[keys.back()] = yaml_text(format_plain(value));
        }
        return root;
      });
}

ParamTable<ClusterSpec> make_cluster_params() {
  std::vector<ClusterParam> params = identity_params();
  add(params, gpu_params());
  add(params, intra_node_params());
  add(params, nic_params());
  add(params, network_params());
  add(params, storage_params<ClusterSpec>([](auto& s) -> auto& { return s.storage; }));
  add(params, host_params<ClusterSpec>([](auto& s) -> auto& { return s.host; }));
  add(params, reliability_params<ClusterSpec>([](auto& s) -> auto& { return s.reliability; }));
  add(params, collectives_params());
  add(params, straggler_params());
  params.push_back(background_param());
  params.push_back(uncertainty_param());
  ClusterSpec defaults;
  defaults.collectives = calibrated_collective_defaults(defaults.nic.transport);
  return ParamTable<ClusterSpec>("Cluster (configs/clusters/*.yaml)", std::move(params), defaults);
}

const ParamTable<ClusterSpec>& cluster_params() {
  static const ParamTable<ClusterSpec> table = make_cluster_params();
  return table;
}

}  // namespace

ParamTableDoc cluster_param_doc() { return cluster_params().doc(); }

Dtype parse_dtype_node(const ConfigNode& node) {
  const std::string name = node.as_string();
  const auto dtype = parse_dtype(name);
  if (!dtype) node.fail("unknown format '" + name + "' (expected fp32, tf32, bf16, fp16 or fp8)");
  return *dtype;
}

ClusterSpec parse_cluster_spec(const ConfigNode& root) { return cluster_params().load(root); }

ClusterSpec draw_within_uncertainty(const ClusterSpec& cluster, std::mt19937_64& rng) {
  if (cluster.uncertainty.empty()) return cluster;
  std::ostringstream text;
  write_cluster_yaml(text, cluster, {});
  const YAML::Node written = YAML::Load(text.str());
  auto uniform = [&rng] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  for (int attempt = 0; attempt < 100; ++attempt) {
    YAML::Node root = YAML::Clone(written);
    for (const auto& [path, relative] : cluster.uncertainty) {
      // Box-Muller: a standard normal from two uniforms in (0, 1).
      const double z = std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * std::numbers::pi * uniform());
      std::vector<std::string> keys;
      std::stringstream parts(path);
      for (std::string k; std::getline(parts, k, '.');) keys.push_back(k);
      std::vector<YAML::Node> chain{root};
      for (const std::string& k : keys) chain.push_back(chain.back()[k]);
      YAML::Node value = chain.back();
      if (!value.IsScalar()) continue;  // not set in this cluster: nothing to draw
      const std::string old_text = value.as<std::string>();
      char* end = nullptr;
      const double number = std::strtod(old_text.c_str(), &end);
      if (end == old_text.c_str()) continue;
      char buffer[64];
      std::snprintf(buffer, sizeof buffer, "%.9g", number * std::exp(relative * z));
      value = std::string(buffer) + std::string(end);
    }
    try {
      ClusterSpec drawn = parse_cluster_spec(
          ConfigNode::load_string(YAML::Dump(root), cluster.source_file));
      drawn.source_file = cluster.source_file;
      return drawn;
    } catch (const ConfigError&) {
      // A value outside its key's range (a fraction above 1): draw again.
    }
  }
  return cluster;
}

ClusterSpec draw_within_uncertainty(const ClusterSpec& cluster, std::uint64_t seed) {
  // Its own stream, apart from the simulation's streams of the same seed.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  return draw_within_uncertainty(cluster, rng);
}

ClusterSpec load_cluster_spec(const std::string& path, const std::vector<YamlSetting>& settings) {
  return parse_cluster_spec(ConfigNode::load_file(path, settings));
}

void write_cluster_yaml(std::ostream& stream, const ClusterSpec& cluster,
                        const std::vector<std::string>& header,
                        const std::map<std::string, std::string>& notes) {
  YAML::Emitter out;
  cluster_params().write(out, cluster, notes);
  for (const std::string& line : header) stream << "# " << line << "\n";
  stream << out.c_str() << "\n";
}

}  // namespace trainsim::models
