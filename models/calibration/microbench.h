// Results of the CUDA microbenchmarks in tools/microbench (JSON lines, one measurement a line) and
// the GPU efficiency curves fitted from them: GEMM efficiency by problem size, HBM streaming
// efficiency, pooled-embedding gather efficiency by row size and that of the backward pass with
// its optimizer update, host-to-device bandwidth. NCCL
// results become measured collective runs for calibrate_collectives().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/calibration/collective_calibration.h"
#include "models/spec/cluster_spec.h"

namespace trainsim::models {

struct MicrobenchRecord {
  std::string source;
  int line = 0;
  std::string bench;  // gemm, hbm, embedding, embedding_backward, h2d, d2h, nccl
  std::string gpu;
  std::string dtype;   // gemm, embedding, embedding_backward
  std::string kernel;  // hbm: copy or triad
  std::string op;      // nccl
  double flops = 0.0;  // gemm: per operation
  double bytes = 0.0;  // bytes moved (hbm, embedding, copies) or nccl-tests size (nccl)
  int dim = 0;         // embedding row length (elements), forward and backward
  int ranks = 0;       // nccl
  double time_s = 0.0;
};

// Reads JSON lines; throws ConfigError naming the file, line and field for invalid JSON, an
// unknown bench or a missing or ill-typed field.
std::vector<MicrobenchRecord> read_microbench(const std::string& path);
std::vector<MicrobenchRecord> parse_microbench(const std::string& text, const std::string& name);

struct GpuFit {
  std::string what;     // e.g. "gemm bf16", "hbm", "embedding", "h2d"
  std::string summary;  // fitted figures in words
  int samples = 0;
  double mean_abs_error = 0.0;  // of the fitted curve against the samples
  double max_abs_error = 0.0;
};

struct MicrobenchFit {
  GpuSpec gpu;                    // input GPU with fitted fields replaced
  std::vector<GpuFit> fits;       // one per fitted curve
  std::vector<MeasuredRun> nccl;  // NCCL results as collective runs
};

// Fits what the records contain; the GEMM curve is fitted for `gemm_dtype` (others are reported).
MicrobenchFit fit_microbench(const GpuSpec& gpu, const std::vector<MicrobenchRecord>& records,
                             Dtype gemm_dtype = Dtype::kBf16);

}  // namespace trainsim::models
