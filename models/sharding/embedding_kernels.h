// FBGEMM's table-batched embedding (TBE) kernels, which TorchRec and most DLRM-class stacks run:
// what one GPU's lookups and updates of a step move through HBM, and how long that takes.
//
// Bytes are counted as FBGEMM's own training benchmark counts them
// (fbgemm_gpu/bench/tbe/tbe_training_benchmark.py): forward reads every looked-up row and writes
// every pooled output, rw = outputs x output_bytes + lookups x row_bytes; backward counts twice
// that (the output gradients read, the rows read and written by the fused optimizer). To these
// trainsim adds the int64 ids the forward reads (TorchRec's estimator counts them too) and, in
// backward, reading and writing each distinct row's optimizer state (FBGEMM's benchmark runs
// row-wise Adagrad, whose state is one number per row, so its fractions leave it out). The
// achieved fractions of HBM bandwidth on those bytes are the GPU's (gpu.embedding_efficiency,
// gpu.embedding_backward_efficiency), lower for short rows; each kernel group (one TBE forward
// call, one backward call per GPU and step) also costs a launch.
//
// The kernels give each row a warp of 32 threads reading 4-wide vectors (one warp per 128
// elements): a row of fewer than 32 elements still costs 32 to read, and short rows leave the
// warp partly idle. The times follow TorchRec's planner estimator
// (torchrec/distributed/planner/shard_estimators.py): rows read as max(D, 32) elements, and the
// kernel's time x1.15 for 64 <= D < 128 and x1.75 for D < 64 (D: the elements of the part of a row
// the GPU holds, so narrow column-wise shards pay it). A GPU whose row curve was measured
// (gpu.embedding_half_row_bytes, from the microbenchmark's fit) pays that curve instead.
#pragma once

#include "models/spec/cluster_spec.h"

namespace trainsim::models {

// One GPU's TBE work for one table (or the shard of it the GPU holds) in one step.
struct EmbeddingKernelWork {
  double lookups = 0;       // ids looked up
  double outputs = 0;       // vectors written: pooled bags, or one per id for a sequence table
  double unique_rows = 0;   // distinct rows among the lookups (updated once each)
  double row_bytes = 0;     // bytes of the part of a row the GPU holds
  double output_bytes = 0;  // bytes of one output vector (in the all-to-all payload's format)
  double state_bytes = 0;   // optimizer state of that part of a row
  double element_bytes = 4;  // of one element of a row (fp32: 4)
};

// The elements of the held part of a row, and the kernel's time factor for that width.
double tbe_row_elements(const EmbeddingKernelWork& work);
double tbe_width_penalty(const EmbeddingKernelWork& work);

inline constexpr double kEmbeddingIdBytes = 8.0;  // int64 ids

double tbe_forward_bytes(const EmbeddingKernelWork& work);
double tbe_backward_bytes(const EmbeddingKernelWork& work);
// The bytes above with rows read as at least 32 elements, at the GPU's achieved fraction of HBM
// bandwidth for rows of `work.row_bytes`, times the width penalty (no launch); with a measured
// row curve, FBGEMM's bytes at the curve's fraction.
double tbe_forward_seconds(const EmbeddingKernelWork& work, const GpuSpec& gpu);
double tbe_backward_seconds(const EmbeddingKernelWork& work, const GpuSpec& gpu);

}  // namespace trainsim::models
