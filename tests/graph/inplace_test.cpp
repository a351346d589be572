// The in-place rule (graph/inplace.h) that the executor follows and the memory simulator replays.
#include "graph/inplace.h"

#include <gtest/gtest.h>

#include "graph/builder.h"

namespace dnncast {
namespace {

TEST(InplaceRule, ActivationAfterAFreshSingleUseOutputRunsInPlace) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{2, 3, 8, 8});
  int conv = b.conv("conv", x, 4, 3, 1, 1);
  int relu = b.act("relu", "ReLU", conv);  // conv's output, used once: in place
  int gelu = b.act("gelu", "GELU", relu);  // GELU has no in-place variant
  int silu = b.act("silu", "SiLU", gelu);  // GELU keeps its input: not fresh
  int bn = b.batchnorm("bn", silu);
  int six = b.act("six", "ReLU6", bn);  // BatchNorm2d's output: in place
  int shared = b.conv("shared", six, 4, 1);
  int left = b.act("left", "Hardswish", shared);  // `shared` has two consumers
  int sum = b.add("sum", left, shared);
  int after_add = b.act("after_add", "ReLU", sum);  // Add without broadcast: in place
  Graph g = b.finish();
  std::vector<bool> safe = inplace_safe_nodes(g);
  ASSERT_EQ(safe.size(), static_cast<size_t>(g.size()));
  EXPECT_TRUE(safe[static_cast<size_t>(relu)]);
  EXPECT_FALSE(safe[static_cast<size_t>(gelu)]);
  EXPECT_FALSE(safe[static_cast<size_t>(silu)]);
  EXPECT_TRUE(safe[static_cast<size_t>(six)]);
  EXPECT_FALSE(safe[static_cast<size_t>(left)]);
  EXPECT_TRUE(safe[static_cast<size_t>(after_add)]);
  EXPECT_FALSE(safe[static_cast<size_t>(conv)]);
}

TEST(InplaceRule, GraphInputsAndPoolsAreNotFresh) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{2, 4, 8, 8});
  int on_input = b.act("on_input", "ReLU", x);
  int pool = b.maxpool("pool", on_input, 2, 2);
  int on_pool = b.act("on_pool", "ReLU", pool);
  Graph g = b.finish();
  std::vector<bool> safe = inplace_safe_nodes(g);
  EXPECT_FALSE(safe[static_cast<size_t>(on_input)]);
  EXPECT_FALSE(safe[static_cast<size_t>(on_pool)]);
}

}  // namespace
}  // namespace dnncast
