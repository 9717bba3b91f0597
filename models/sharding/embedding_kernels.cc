#include "models/sharding/embedding_kernels.h"

namespace trainsim::models {

namespace {

// FBGEMM's accounting: pooled outputs written, rows read.
double fbgemm_rw_bytes(const EmbeddingKernelWork& w) {
  return w.outputs * w.output_bytes + w.lookups * w.row_bytes;
}

double seconds(double bytes, double bandwidth) { return bandwidth > 0 ? bytes / bandwidth : 0.0; }

}  // namespace

double tbe_forward_bytes(const EmbeddingKernelWork& w) {
  return fbgemm_rw_bytes(w) + w.lookups * kEmbeddingIdBytes;
}

double tbe_backward_bytes(const EmbeddingKernelWork& w) {
  return 2 * fbgemm_rw_bytes(w) + 2 * w.unique_rows * w.state_bytes;
}

double tbe_forward_seconds(const EmbeddingKernelWork& w, const GpuSpec& gpu) {
  return seconds(tbe_forward_bytes(w),
                 gpu.hbm_bandwidth_bytes_per_s * gpu.embedding_efficiency_at(w.row_bytes));
}

double tbe_backward_seconds(const EmbeddingKernelWork& w, const GpuSpec& gpu) {
  return seconds(tbe_backward_bytes(w), gpu.hbm_bandwidth_bytes_per_s *
                                            gpu.embedding_backward_efficiency_at(w.row_bytes));
}

}  // namespace trainsim::models
