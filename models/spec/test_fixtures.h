// Small hand-computable specs that the unit tests of several layers share (test code only).
#pragma once

#include "models/spec/cluster_spec.h"
#include "models/spec/dense_model.h"

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

// A dense model of 1 GFLOP per example, three quarters of it backward, 100 examples per GPU in
// BF16: 1e11 / 5e13 = 2 ms of compute a step on small_node's GPUs (0.5 ms forward, 1.5 ms
// backward), then a ring all-reduce of `parameter_bytes` in `buckets` (overlapping backward when
// `overlap`).
inline DenseModelSpec small_dense_model(double parameter_bytes, bool overlap = false,
                                        int buckets = 1) {
  DenseModelSpec m;
  m.name = "m";
  m.flops_per_example = 1e9;
  m.backward_flops_fraction = 0.75;
  m.parameter_bytes = parameter_bytes;
  m.batch_per_gpu = 100;
  m.compute_dtype = Dtype::kBf16;
  m.overlap_all_reduce = overlap;
  m.gradient_buckets = buckets;
  m.all_reduce_algorithm = Algorithm::kRing;
  return m;
}

}  // namespace trainsim::models::testing
