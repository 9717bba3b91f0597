// The microbenchmark JSON-lines reader and the GPU efficiency fits. Inline samples follow known
// curves, so the fits must return those curves' parameters.
#include "models/calibration/microbench.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include <gtest/gtest.h>

#include "models/spec/config_error.h"

namespace trainsim::models {
namespace {

GpuSpec h100() {
  GpuSpec g;
  g.model = "H100";
  g.peak_flops_per_s[Dtype::kBf16] = 989e12;
  g.hbm_bandwidth_bytes_per_s = 3.35e12;
  g.hbm_capacity_bytes = 80e9;
  return g;
}

// Shortest exact text of a double (std::to_string would keep only six decimals).
std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string line(const std::string& fields) {
  return R"({"bench":)" + fields +
         R"(,"gpu":"NVIDIA H100","driver":"13.0","runtime":"13.0","device":0})" + "\n";
}

// GEMM samples on eff(F) = 0.8 F / (F + 2e10); HBM copies at 0.9 of peak; embedding gathers on
// eff(row) = 0.6 row / (row + 128); H2D at 55 GB/s.
std::string samples() {
  std::ostringstream out;
  for (double n = 256; n <= 16384; n *= 2) {
    const double f = 2 * n * n * n;
    const double eff = 0.8 * f / (f + 2e10);
    out << line(R"("gemm","dtype":"bf16","m":)" + num(n) + R"(,"flops":)" + num(f) +
                R"(,"time_s":)" + num(f / (eff * 989e12)));
  }
  for (double bytes : {512e6, 2e9, 8e9}) {
    out << line(R"("hbm","kernel":"copy","bytes":)" + num(bytes) + R"(,"time_s":)" +
                num(bytes / (0.9 * 3.35e12)));
  }
  for (int dim : {16, 32, 64, 128, 256}) {
    const double row = dim * 4.0;
    const double eff = 0.6 * row / (row + 128);
    const double bytes = 16384.0 * 8 * row;
    out << line(R"("embedding","dtype":"fp32","dim":)" + num(dim) + R"(,"bytes":)" + num(bytes) +
                R"(,"time_s":)" + num(bytes / (eff * 3.35e12)));
  }
  out << line(R"("h2d","bytes":1073741824,"time_s":)" + num(1073741824 / 55e9));
  for (double bytes = 1 << 20; bytes <= (1 << 30); bytes *= 4) {
    out << line(R"("nccl","op":"all_reduce","ranks":8,"bytes":)" + num(bytes) + R"(,"time_s":)" +
                num(30e-6 + bytes * 1.75 / 360e9));
  }
  return out.str();
}

// Backward passes with the optimizer on eff(row) = 0.3 row / (row + h) (h = 0: 0.3 at every
// row): on the gathers' curve (h = 128) only the fraction is fitted; alone, the fraction on the
// cluster's curve (none here), which only gathers set.
std::string backward_samples(double half) {
  std::ostringstream out;
  for (int dim : {16, 32, 64, 128, 256}) {
    const double row = dim * 4.0;
    const double eff = 0.3 * row / (row + half);  // half = 0: 0.3
    const double bytes = 2 * (16384.0 * row + 16384.0 * 8 * row) + 2 * 131072.0 * 4;
    out << line(R"("embedding_backward","dtype":"fp32","dim":)" + num(dim) + R"(,"bytes":)" +
                num(bytes) + R"(,"time_s":)" + num(bytes / (eff * 3.35e12)));
  }
  return out.str();
}

TEST(MicrobenchTest, FitsTheBackwardFractionOnTheGatherCurveOrAlone) {
  const MicrobenchFit both =
      fit_microbench(h100(), parse_microbench(samples() + backward_samples(128), "s.jsonl"));
  EXPECT_NEAR(both.gpu.embedding_efficiency, 0.6, 1e-4);
  EXPECT_NEAR(both.gpu.embedding_backward_efficiency, 0.3, 1e-4);
  EXPECT_NEAR(both.gpu.embedding_half_row_bytes, 128, 0.5);
  const MicrobenchFit alone =
      fit_microbench(h100(), parse_microbench(backward_samples(0), "b.jsonl"));
  EXPECT_NEAR(alone.gpu.embedding_backward_efficiency, 0.3, 1e-4);
  EXPECT_EQ(alone.gpu.embedding_half_row_bytes, 0.0);  // the forward model keeps its own rule
  EXPECT_EQ(alone.gpu.embedding_efficiency, h100().embedding_efficiency);  // not measured
  for (const GpuFit& f : alone.fits) EXPECT_LT(f.max_abs_error, 1e-3) << f.what;
}

TEST(MicrobenchTest, FitsTheCurvesTheSamplesFollow) {
  const auto records = parse_microbench(samples(), "samples.jsonl");
  ASSERT_EQ(records.size(), 7u + 3u + 5u + 1u + 6u);
  const MicrobenchFit fit = fit_microbench(h100(), records);
  EXPECT_NEAR(fit.gpu.gemm_efficiency, 0.8, 1e-4);
  EXPECT_NEAR(fit.gpu.gemm_half_flops, 2e10, 2e10 * 1e-3);
  EXPECT_NEAR(fit.gpu.hbm_efficiency, 0.9, 1e-5);
  EXPECT_NEAR(fit.gpu.embedding_efficiency, 0.6, 1e-4);
  EXPECT_NEAR(fit.gpu.embedding_half_row_bytes, 128, 0.5);
  EXPECT_NEAR(fit.gpu.host_to_device_bytes_per_s, 55e9, 55e9 * 1e-5);
  for (const GpuFit& f : fit.fits) EXPECT_LT(f.max_abs_error, 1e-3) << f.what;
  ASSERT_EQ(fit.nccl.size(), 1u);
  EXPECT_EQ(fit.nccl[0].run.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(fit.nccl[0].run.ranks, 8);
  EXPECT_EQ(fit.nccl[0].run.rows.size(), 6u);
  // The efficiency curve itself: half of the maximum at F = half.
  EXPECT_NEAR(fit.gpu.gemm_efficiency_at(2e10), 0.4, 1e-4);
}

std::string error_of(const std::string& text) {
  try {
    parse_microbench(text, "bench.jsonl");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(MicrobenchTest, MissingFieldNamesFileLineAndField) {
  const std::string text = line(R"("hbm","kernel":"copy","bytes":1e9,"time_s":0.001)") +
                           line(R"("gemm","dtype":"bf16","time_s":0.001)");
  EXPECT_NE(error_of(text).find("bench.jsonl:2:1: flops: missing field 'flops'"), std::string::npos)
      << error_of(text);
}

TEST(MicrobenchTest, RejectsBadJsonUnknownBenchAndWrongTypes) {
  EXPECT_NE(error_of("{not json\n").find("bench.jsonl:1:"), std::string::npos);
  EXPECT_NE(error_of(line(R"("fft","time_s":1)")).find("unknown bench 'fft'"), std::string::npos);
  EXPECT_NE(
      error_of(line(R"("h2d","bytes":"big","time_s":1)")).find("field 'bytes' must be a number"),
      std::string::npos);
  EXPECT_NE(error_of(line(R"("h2d","bytes":100,"time_s":0)")).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of("\n\n").find("no measurements"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

// The synthetic samples shipped in tools/microbench/sample/ (see its README for the formulas
// they were generated from): the fits must return the formulas' parameters.
TEST(MicrobenchTest, FitsTheShippedSampleFiles) {
  const std::string dir = std::string(TRAINSIM_SOURCE_DIR) + "/tools/microbench/sample/";
  std::vector<MicrobenchRecord> records;
  for (const char* file :
       {"gemm.jsonl", "hbm.jsonl", "embedding.jsonl", "embedding_backward.jsonl", "copy.jsonl",
        "nccl.jsonl"}) {
    const auto read = read_microbench(dir + file);
    records.insert(records.end(), read.begin(), read.end());
  }
  const MicrobenchFit fit = fit_microbench(h100(), records);
  // gemm: tflops = 0.80 F / (F + 2e10) x 989.
  EXPECT_NEAR(fit.gpu.gemm_efficiency, 0.80, 1e-3);
  EXPECT_NEAR(fit.gpu.gemm_half_flops, 2e10, 2e10 * 1e-2);
  // hbm: gbps = 0.9 x 3350 x b / (b + 8e6); the fit averages the transfers of 256 MiB and more.
  double expected = 0.0;
  int large = 0;
  for (const auto& r : records) {
    if (r.bench == "hbm" && r.bytes >= 256.0 * 1024 * 1024) {
      expected += 0.9 * r.bytes / (r.bytes + 8e6);
      ++large;
    }
  }
  ASSERT_GT(large, 0);
  EXPECT_NEAR(fit.gpu.hbm_efficiency, expected / large, 1e-4);
  // embedding: gbps = 0.6 x 3350 x row / (row + 128).
  EXPECT_NEAR(fit.gpu.embedding_efficiency, 0.6, 1e-3);
  EXPECT_NEAR(fit.gpu.embedding_half_row_bytes, 128, 1.0);
  // embedding_backward: gbps = 0.3 x 3350 x row / (row + 128), on the same row curve.
  EXPECT_NEAR(fit.gpu.embedding_backward_efficiency, 0.3, 1e-3);
  // h2d: gbps = 55 b / (b + 2e5): the largest copy (1 GiB) is the best.
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(fit.gpu.host_to_device_bytes_per_s, 55e9 * gib / (gib + 2e5), 1e6);
  ASSERT_EQ(fit.nccl.size(), 1u);
  EXPECT_EQ(fit.nccl[0].run.ranks, 8);
}

}  // namespace
}  // namespace trainsim::models
