// Small hand-computable specs that the unit tests of several layers share (test code only).
#pragma once

#include "models/spec/cluster_spec.h"

namespace trainsim::models::testing {

// One node of `gpus` GPUs on an NVSwitch: 100 TFLOP/s BF16 at 50% GEMM efficiency, 1 TB/s HBM of
// 10 GB, a 100 GB/s GPU link with 1 us latency at full efficiency.
inline ClusterSpec small_node(int gpus) {
  ClusterSpec c;
  c.name = gpus == 1 ? "one" : "small";
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.gpu.model = "G";
  c.gpu.peak_flops_per_s[Dtype::kBf16] = 100e12;
  c.gpu.gemm_efficiency = 0.5;
  c.gpu.hbm_bandwidth_bytes_per_s = 1e12;
  c.gpu.hbm_capacity_bytes = 1e10;
  c.intra_node.gpu_link = LinkClassSpec{100e9, kMicrosecond, 1.0};
  return c;
}

}  // namespace trainsim::models::testing
