// Fidelity (issues 3 and 16): resnet18 and mobilenet_v2 at batch 8, 3x64x64, SGD, one thread,
// profiled by the executor and by torchvision in PyTorch 1.13 (same libtorch) in 8 interleaved
// rounds (the order alternates), each side a fresh process. The ratio of each side's fastest process
// (executor / PyTorch) must lie within a fixed tolerance, 0.80-1.20, whatever the spread of this run
// (docs/MEASUREMENT.md "Timing fidelity": 24 rounds on the AVX2 host gave 0.863 and 0.943 for
// these two, CIs +-18% and +-8.5%; pooled over 7 workloads 0.962 +-3.3%). Not the median of the
// rounds' ratios, which is printed beside it: CI on the AVX-512 EPYC (commit 172034d) had PyTorch's
// mobilenet_v2 at 297-317 ms in 3 processes and 403-445 ms in 5, the executor at 294-305 ms in all
// 8, so the median ratio was 0.716 with the fastest processes 0.987 apart; a whole-process slow
// spell is the machine's, not the executor's (docs/MEASUREMENT.md). Parameter, gradient and
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
  EXPECT_LE(std::fabs(c.best_ratio - 1), kTolerance)
      << model << ": executor/PyTorch time ratio of the fastest processes " << c.best_ratio << " outside 1 +- "
      << kTolerance << " (median of " << c.round_ratios.size() << " round ratios " << c.round_ratio_median
      << ", 95% CI " << c.round_ratio_low << "-" << c.round_ratio_high << ")";
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
