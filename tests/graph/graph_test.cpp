#include <gtest/gtest.h>

#include "graph/builder.h"
#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast {
namespace {

TEST(Graph, ConvShapeAndCostFollowHandFormula) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{2, 3, 32, 32});
  int y = b.conv("c", x, 16, 3, 2, 1, 1, true);
  EXPECT_EQ(b.shape(y), (TensorShape{2, 16, 16, 16}));
  Graph g = b.finish();
  OpCost cost = node_cost(g, y);
  EXPECT_EQ(cost.macs, 2 * 16 * 16 * 16 * 3 * 3 * 3);
  EXPECT_EQ(cost.params, 16 * 3 * 3 * 3 + 16);
}

TEST(Graph, UnknownOpListsKnownOnes) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{1, 3, 8, 8});
  try {
    b.op("bad", "Conv3d", {x});
    FAIL();
  } catch (const InputError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("unknown op 'Conv3d'"), std::string::npos) << text;
    EXPECT_NE(text.find("Conv2d"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace dnncast
