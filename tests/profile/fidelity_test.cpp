// Fast fidelity check (the full one, resnet18 and mobilenet_v2 with repeats, is in slow/): the
// executor's squeezenet1_1 (Concat, in-place ReLU, Adam) holds exactly the parameter, gradient and
// optimizer-state bytes of torchvision's squeezenet1_1 trained by PyTorch 1.13 itself, and its time
// is of the same order. squeezenet1_1 (1.2 M parameters) keeps this quick.
#include <gtest/gtest.h>

#include <algorithm>

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
  // One pair on a shared machine: only a gross check of the time (the real one is in slow/), on
  // drift-normalised times (raw ratios of one pair were seen as far apart as 0.51 and 1.41 here).
  // Not under AddressSanitizer (`make sanitize`): the instrumented executor is slower than the
  // uninstrumented PyTorch it is compared with (ratio 2.0 normalised, 4.1 raw), which says nothing
  // about the product.
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_GT(c.ratio_normalised, 0.5);
  EXPECT_LT(c.ratio_normalised, 2.0);
#endif
}

}  // namespace
}  // namespace dnncast::profile::test
