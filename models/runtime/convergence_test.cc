#include "models/runtime/convergence.h"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(ConvergenceTest, CriticalBatchFormulas) {
  // E = E_min (1 + B / B_noise), S = S_min (1 + B_noise / B) with S_min = E_min / B_noise.
  const double e_min = 1e9, b_noise = 1e5;
  EXPECT_DOUBLE_EQ(examples_to_target(e_min, 1e5, b_noise), 2e9);
  EXPECT_DOUBLE_EQ(examples_to_target(e_min, 3e5, b_noise), 4e9);
  const double s_min = e_min / b_noise;
  for (const double b : {1e3, 5e4, 1e5, 1e6}) {
    EXPECT_NEAR(steps_to_target(e_min, b, b_noise), s_min * (1 + b_noise / b), 1e-6);
  }
  // No critical batch: the same examples at any batch.
  EXPECT_DOUBLE_EQ(examples_to_target(e_min, 1e7, std::numeric_limits<double>::infinity()), e_min);
}

TEST(ConvergenceTest, FitFromTwoRunsRecoversTheModel) {
  // Runs at B = 50k and 200k from E_min = 1e9, B_noise = 1e5: 1.5e9 and 3e9 examples.
  const auto fit = fit_convergence(5e4, 1.5e9, 2e5, 3e9);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->min_examples, 1e9, 1e-3);
  EXPECT_NEAR(fit->critical_batch, 1e5, 1e-6);
  // A larger batch that needed fewer examples does not fit the model.
  EXPECT_FALSE(fit_convergence(5e4, 2e9, 2e5, 1.5e9));
  EXPECT_FALSE(fit_convergence(5e4, 2e9, 5e4, 3e9));
}

ConvergenceSpec auc_curve() {
  ConvergenceSpec c;
  c.configured = true;
  c.metric = "AUC";
  c.curve = {{0.80, 1e9}, {0.81, 4e9}};
  return c;
}

TEST(ConvergenceTest, CurveInterpolatesLogExamples) {
  const SourceLocation here{"m.yaml", 3, 1, "target"};
  EXPECT_NEAR(min_examples_for(auc_curve(), 0.805, here), 2e9, 1e-3);  // geometric middle
  EXPECT_DOUBLE_EQ(min_examples_for(auc_curve(), 0.81, here), 4e9);
  // A loss falls as training goes on.
  ConvergenceSpec loss;
  loss.metric = "loss";
  loss.curve = {{0.50, 1e8}, {0.45, 1e9}};
  EXPECT_NEAR(min_examples_for(loss, 0.475, here), std::sqrt(1e17), 1e-3);
}

TEST(ConvergenceTest, UnreachableTargetSaysWhatIsReachable) {
  const SourceLocation here{"job.yaml", 9, 17, "target_quality"};
  try {
    min_examples_for(auc_curve(), 0.82, here);
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("job.yaml:9"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot reach AUC 0.82"), std::string::npos) << what;
    EXPECT_NE(what.find("0.81"), std::string::npos) << what;
  }
  EXPECT_THROW(min_examples_for(auc_curve(), 0.79, here), ConfigError);
}

}  // namespace
}  // namespace trainsim::models
