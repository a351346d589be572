// Fidelity (issues 3 and 16): resnet18 and mobilenet_v2 at batch 8, 3x64x64, SGD, one thread,
// profiled by the executor and by torchvision in PyTorch 1.13 (same libtorch) in 8 interleaved
// rounds (the order alternates), each side a fresh process. The median of the rounds' ratios
// (executor / PyTorch) must lie within a fixed tolerance, 0.80-1.20, whatever the spread of this run
// (docs/MEASUREMENT.md "Timing fidelity": 24 rounds on the AVX2 host gave 0.863 and 0.943 for
// these two, CIs +-18% and +-8.5%; pooled over 7 workloads 0.962 +-3.3%). Parameter, gradient and
// optimizer-state bytes must be equal. `make test` checks one model, chosen by the rotation seed
// (tests/rotation.h); `make test-slow` both.
#include <gtest/gtest.h>

#include <cmath>

#include "../fidelity_util.h"
#include "rotation.h"

namespace dnncast::profile::test {
namespace {

void check(const std::string& model) {
  SCOPED_TRACE(model);
  Comparison c = compare(model, 8, {3, 64, 64}, "sgd", 8, 1.5);
  ASSERT_EQ(c.ours.status, "ok") << c.ours.message;
  ASSERT_TRUE(c.theirs.error.empty()) << c.theirs.error;
  EXPECT_EQ(c.ours.params, c.theirs.params);
  EXPECT_EQ(c.ours.param_bytes, c.theirs.param_bytes);
  EXPECT_EQ(c.ours.grad_bytes, c.theirs.grad_bytes);
  EXPECT_EQ(c.ours.optimizer_state_bytes, c.theirs.optimizer_state_bytes);
#if !defined(__SANITIZE_ADDRESS__)  // an instrumented executor against uninstrumented PyTorch: no time check
  constexpr double kTolerance = 0.20;
  EXPECT_LE(std::fabs(c.round_ratio_median - 1), kTolerance)
      << model << ": executor/PyTorch time ratio " << c.round_ratio_median << " (median of " << c.round_ratios.size()
      << " rounds, 95% CI " << c.round_ratio_low << "-" << c.round_ratio_high << ") outside 1 +- " << kTolerance;
#endif
}

TEST(FidelitySlow, Models) {
  const std::vector<std::string> models{"resnet18", "mobilenet_v2"};
  const std::vector<std::string> picked = rotation::pick(rotation::slice_of("FidelitySlow", models.size()), models);
  ASSERT_FALSE(picked.empty());
  for (const std::string& model : picked) check(model);
}

}  // namespace
}  // namespace dnncast::profile::test
