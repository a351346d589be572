// Fast fidelity check (the full one, resnet18 and mobilenet_v2 with repeats, is in slow/): the
// executor's squeezenet1_1 (Concat, in-place ReLU, Adam) holds exactly the parameter, gradient and
// optimizer-state bytes of torchvision's squeezenet1_1 trained by PyTorch 1.13 itself (time is
// compared only in slow/, on an idle machine). squeezenet1_1 (1.2 M parameters) keeps this quick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "fidelity_util.h"

namespace dnncast::profile::test {
namespace {

TEST(Fidelity, Squeezenet11TrainingStateBytesEqualTorchvision) {
  Comparison c = compare("squeezenet1_1", 2, {3, 64, 64}, "adam", 1, 0.5);
  ASSERT_EQ(c.ours.status, "ok") << c.ours.message;
  ASSERT_TRUE(c.theirs.error.empty()) << c.theirs.error;
  EXPECT_EQ(c.ours.params, c.theirs.params);
  EXPECT_EQ(c.ours.param_bytes, c.theirs.param_bytes);
  EXPECT_EQ(c.ours.grad_bytes, c.theirs.grad_bytes);
  EXPECT_EQ(c.ours.optimizer_state_bytes, c.theirs.optimizer_state_bytes);
  // No time assertion here: one pair on a shared machine under a parallel ctest is not a
  // measurement (CI saw a drift-normalised ratio of 2.02 while other tests ran beside it; alone it
  // is ~1.1). The time comparison, with repeats on an idle machine, is tests/profile/slow/.
  std::printf("  squeezenet1_1 time ratio (executor / torchvision, drift-normalised): %.3f\n", c.ratio_normalised);
}

}  // namespace
}  // namespace dnncast::profile::test
