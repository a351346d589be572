// Fidelity (issue 3): resnet18 and mobilenet_v2 at batch 8, 3x64x64, SGD, one thread, profiled
// by the executor and by torchvision in PyTorch 1.13 (same libtorch), interleaved, 3 repeats each
// in fresh processes. The ratio of the medians must lie within the spread between repeats seen in
// this run, for raw times and for drift-normalised times (both sides time the same probe);
// parameter, gradient and optimizer-state bytes must be equal. `make test` checks one model, chosen
// by the rotation seed (tests/rotation.h); `make test-slow` both.
#include <gtest/gtest.h>

#include <cmath>

#include "../fidelity_util.h"
#include "rotation.h"

namespace dnncast::profile::test {
namespace {

void check(const std::string& model) {
  SCOPED_TRACE(model);
  Comparison c = compare(model, 8, {3, 64, 64}, "sgd", 3, 3.0);
  ASSERT_EQ(c.ours.status, "ok") << c.ours.message;
  ASSERT_TRUE(c.theirs.error.empty()) << c.theirs.error;
  EXPECT_EQ(c.ours.params, c.theirs.params);
  EXPECT_EQ(c.ours.param_bytes, c.theirs.param_bytes);
  EXPECT_EQ(c.ours.grad_bytes, c.theirs.grad_bytes);
  EXPECT_EQ(c.ours.optimizer_state_bytes, c.theirs.optimizer_state_bytes);
#if !defined(__SANITIZE_ADDRESS__)  // an instrumented executor against uninstrumented PyTorch: no time check
  EXPECT_LE(std::fabs(c.ratio - 1), c.spread)
      << model << ": executor/torchvision time ratio " << c.ratio << " outside the spread between repeats " << c.spread;
  EXPECT_LE(std::fabs(c.ratio_normalised - 1), c.spread_normalised)
      << model << ": drift-normalised ratio " << c.ratio_normalised << " outside the normalised spread "
      << c.spread_normalised;
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
