// The fit of a measured run, on a step that is one GEMM: log(step) = log(F / (peak * e_gemm)), so
// the posterior has a closed form.
#include "models/scaling/job_calibration.h"

#include <cmath>

#include <gtest/gtest.h>

#include "models/spec/test_fixtures.h"

namespace trainsim::models {
namespace {

// One GPU of 100 TFLOP/s BF16 at 50% GEMM efficiency; 1 GFLOP per example, 100 examples: the step
// is 1e11 / 5e13 = 2 ms of GEMM and nothing else (one GPU: no all-reduce).
Workload one_gemm_model() {
  DenseModelSpec m;
  m.name = "gemm";
  m.flops_per_example = 1e9;
  m.parameter_bytes = 1e6;
  m.batch_per_gpu = 100;
  m.compute_dtype = Dtype::kBf16;
  return Workload{m, std::nullopt};
}

ClusterSpec one_gpu() { return testing::small_node(1); }

const FittedEfficiency& parameter(const JobCalibration& fit, const std::string& key) {
  for (const auto& p : fit.parameters) {
    if (p.key == key) return p;
  }
  throw std::runtime_error("no " + key);
}

TEST(JobCalibrationTest, OneGemmStepMovesOnlyTheGemmFractionByThePosteriorWeight) {
  // Measured 1.6 ms a step (62,500 examples/s) against 2 ms predicted: d = log(2 / 1.6). The
  // residual is d - x (x = log of the GEMM fraction's change), so the most probable x minimises
  // (d - x)^2 / u^2 + x^2 / s^2: x = d s^2 / (s^2 + u^2), with s = 0.15 (the GEMM prior) and u =
  // 0.02: x = 0.22314 * 0.0225 / 0.0229 = 0.21925, e = 0.5 * exp(0.21925) = 0.62257. Posterior
  // standard deviation of x: 1 / sqrt(1 / 0.02^2 + 1 / 0.15^2) = 0.019822, times e = 0.012341.
  JobCalibrationOptions options;
  const JobCalibration fit = calibrate_job(one_gpu(), one_gemm_model(), {{1, 62500.0, 0.0}}, options);
  const FittedEfficiency& gemm = parameter(fit, "gpu.gemm_efficiency");
  EXPECT_NEAR(gemm.value, 0.62257, 2e-5);
  EXPECT_NEAR(gemm.uncertainty, 0.012341, 2e-6);
  EXPECT_DOUBLE_EQ(gemm.prior, 0.5);
  EXPECT_DOUBLE_EQ(gemm.prior_uncertainty, 0.075);
  EXPECT_NEAR(gemm.sensitivity, -1.0, 1e-4);
  // The others do not touch the step: prior value and prior uncertainty, sensitivity 0.
  for (const char* key : {"gpu.hbm_efficiency", "gpu.embedding_efficiency",
                          "gpu.embedding_backward_efficiency"}) {
    const FittedEfficiency& p = parameter(fit, key);
    EXPECT_DOUBLE_EQ(p.value, p.prior) << key;
    EXPECT_NEAR(p.uncertainty, p.prior_uncertainty, 1e-12) << key;
    EXPECT_EQ(p.sensitivity, 0.0) << key;
  }
  // Before: 100 / 2 ms; after: 100 / (2 ms / exp(0.21925)) = 62,257 examples/s.
  ASSERT_EQ(fit.points.size(), 1u);
  EXPECT_NEAR(fit.points[0].before, 50000.0, 1e-6);
  EXPECT_NEAR(fit.points[0].after, 62257.0, 3.0);
  EXPECT_DOUBLE_EQ(fit.points[0].measured, 62500.0);
  EXPECT_EQ(fit.cluster.gpu.gemm_efficiency, gemm.value);
}

TEST(JobCalibrationTest, AStepTimeIsTheBatchOverIt) {
  // 1.6 ms a step of 100 examples is the 62,500 examples/s above.
  const JobCalibration fit = calibrate_job(one_gpu(), one_gemm_model(), {{1, 0.0, 1.6e-3}}, {});
  EXPECT_DOUBLE_EQ(fit.points[0].measured, 62500.0);
  EXPECT_NEAR(parameter(fit, "gpu.gemm_efficiency").value, 0.62257, 2e-5);
}

TEST(JobCalibrationTest, AFractionStopsAtOne) {
  // Measured 4x faster than predicted: the data alone would ask for e = 2; the fraction stops at 1
  // (a step of 1 ms, 100,000 examples/s) and the data term flattens beyond it.
  const JobCalibration fit = calibrate_job(one_gpu(), one_gemm_model(), {{1, 200000.0, 0.0}}, {});
  EXPECT_NEAR(parameter(fit, "gpu.gemm_efficiency").value, 1.0, 0.01);
  EXPECT_NEAR(fit.points[0].after, 100000.0, 1000.0);
}

TEST(JobCalibrationTest, AMeasurementThatAgreesMovesNothing) {
  const JobCalibration fit = calibrate_job(one_gpu(), one_gemm_model(), {{1, 50000.0, 0.0}}, {});
  EXPECT_NEAR(parameter(fit, "gpu.gemm_efficiency").value, 0.5, 1e-6);
}

}  // namespace
}  // namespace trainsim::models
