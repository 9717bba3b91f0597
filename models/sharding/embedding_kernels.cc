#include "models/sharding/embedding_kernels.h"

#include <algorithm>

namespace trainsim::models {

namespace {

// FBGEMM's accounting: pooled outputs written, rows read.
double fbgemm_rw_bytes(const EmbeddingKernelWork& w) {
  return w.outputs * w.output_bytes + w.lookups * w.row_bytes;
}

double seconds(double bytes, double bandwidth) { return bandwidth > 0 ? bytes / bandwidth : 0.0; }

constexpr double kMinRowElements = 32;  // one warp of 32 threads reads at least one element each

// FBGEMM's accounting with each row read as at least 32 elements.
double kernel_rw_bytes(const EmbeddingKernelWork& w) {
  const double row = std::max(tbe_row_elements(w), kMinRowElements) * w.element_bytes;
  return w.outputs * w.output_bytes + w.lookups * std::max(w.row_bytes, row);
}

}  // namespace

double tbe_row_elements(const EmbeddingKernelWork& w) {
  return w.element_bytes > 0 ? w.row_bytes / w.element_bytes : 0.0;
}

double tbe_width_penalty(const EmbeddingKernelWork& w) {
  const double d = tbe_row_elements(w);
  return d >= 128 ? 1.0 : d >= 64 ? 1.15 : 1.75;
}

double tbe_forward_bytes(const EmbeddingKernelWork& w) {
  return fbgemm_rw_bytes(w) + w.lookups * kEmbeddingIdBytes;
}

double tbe_backward_bytes(const EmbeddingKernelWork& w) {
  return 2 * fbgemm_rw_bytes(w) + 2 * w.unique_rows * w.state_bytes;
}

// A GPU with a measured row curve (gpu.embedding_half_row_bytes, the microbenchmark's fit) has
// what short rows cost in it already; TorchRec's rule stands in for it otherwise.
bool measured_rows(const GpuSpec& gpu) { return gpu.embedding_half_row_bytes > 0; }

double tbe_forward_seconds(const EmbeddingKernelWork& w, const GpuSpec& gpu) {
  const bool measured = measured_rows(gpu);
  const double bytes =
      (measured ? fbgemm_rw_bytes(w) : kernel_rw_bytes(w)) + w.lookups * kEmbeddingIdBytes;
  return (measured ? 1.0 : tbe_width_penalty(w)) *
         seconds(bytes, gpu.hbm_bandwidth_bytes_per_s * gpu.embedding_efficiency_at(w.row_bytes));
}

double tbe_backward_seconds(const EmbeddingKernelWork& w, const GpuSpec& gpu) {
  const bool measured = measured_rows(gpu);
  const double bytes = 2 * (measured ? fbgemm_rw_bytes(w) : kernel_rw_bytes(w)) +
                       2 * w.unique_rows * w.state_bytes;
  return (measured ? 1.0 : tbe_width_penalty(w)) *
         seconds(bytes,
                 gpu.hbm_bandwidth_bytes_per_s * gpu.embedding_backward_efficiency_at(w.row_bytes));
}

}  // namespace trainsim::models
