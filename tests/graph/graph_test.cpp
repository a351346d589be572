#include <gtest/gtest.h>

#include <vector>

#include "core/checked.h"
#include "core/error.h"
#include "graph/builder.h"
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

// No graph holds more than kMaxGraphNodes nodes, whatever builds it (issue 51: the memory of a request grows with
// them): the node past it is refused in one line, and the graph up to it is whole.
TEST(Graph, NodesPastTheLimitAreRefused) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{1, 8});
  for (int64_t index = 1; index < kMaxGraphNodes; ++index) x = b.act("r" + std::to_string(index), "ReLU", x);
  try {
    b.act("one_more", "ReLU", x);
    FAIL() << "node " << kMaxGraphNodes + 1 << " was added";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("more than 262144 nodes in one graph"), std::string::npos) << error.what();
  }
  EXPECT_EQ(b.finish().size(), kMaxGraphNodes);
}

// Graph::consumers' flat lists against a scan of every later node's inputs, a node read twice by one consumer
// (x + x) listed twice, as autograd counts its uses.
TEST(Graph, ConsumersListEachReaderInOrderOncePerUse) {
  GraphBuilder b("t", "test");
  const int x = b.input(TensorShape{1, 8});
  const int left = b.act("left", "ReLU", x);
  const int right = b.act("right", "GELU", x);
  const int sum = b.add("sum", left, right);
  const int twice = b.add("twice", sum, sum);
  b.add("out", twice, x);
  const Graph g = b.finish();
  const Consumers consumers = g.consumers();
  ASSERT_EQ(consumers.size(), static_cast<size_t>(g.size()));
  for (int node = 0; node < g.size(); ++node) {
    std::vector<int> scanned;
    for (int reader = node + 1; reader < g.size(); ++reader)
      for (int input : g.node(reader).inputs)
        if (input == node) scanned.push_back(reader);
    const Consumers::Range listed = consumers[static_cast<size_t>(node)];
    EXPECT_EQ(std::vector<int>(listed.begin(), listed.end()), scanned) << g.node(node).name;
    EXPECT_EQ(listed.empty(), scanned.empty());
  }
  EXPECT_EQ(consumers[static_cast<size_t>(sum)].size(), 2U);  // twice = sum + sum
  EXPECT_TRUE(consumers[static_cast<size_t>(g.size() - 1)].empty());
  EXPECT_EQ(Consumers().size(), 0U);
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

// finish() does not infer the nodes a second time (validate_inferred): the graph is the one validate() gives,
// and the checks op() does not make still run.
TEST(Graph, FinishGivesWhatValidateGives) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{2, 3, 32, 32});
  x = b.act("r", "ReLU", b.batchnorm("bn", b.conv("c", x, 16, 3, 2, 1, 1, false)));
  b.linear("fc", b.flatten("f", b.adaptive_avgpool("p", x, 1, 1)), 10);
  Graph built = b.finish();
  Graph validated = built;
  validated.validate();
  EXPECT_EQ(built.architecture_hash(), validated.architecture_hash());
  for (int index = 0; index < built.size(); ++index) EXPECT_EQ(built.node(index).shape, validated.node(index).shape);
}

TEST(Graph, FinishStillChecksTheWholeGraph) {
  GraphBuilder tied("t", "test");
  int x = tied.input(TensorShape{1, 4});
  tied.op("fc", "Linear", {x}, {{"out_features", int64_t{8}}, {"tied_to", std::string("nothing")}});
  try {
    tied.finish();
    FAIL();
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("is not an Embedding node"), std::string::npos) << error.what();
  }
}

// The cost infer_node keeps (Graph::inferred_cost, what node_cost answers from) is the op's rule computed afresh,
// and a node changed through mutable_nodes() is costed as it now is: its parameters frozen once the attribute is set,
// with or without inferring the graph again.
TEST(Graph, AKeptCostIsTheRulesAndGoesWithAChange) {
  GraphBuilder b("t", "test");
  int x = b.input(TensorShape{2, 16});
  const int fc = b.linear("fc", b.act("r", "ReLU", x), 8);
  Graph graph = b.finish();
  for (int index = 0; index < graph.size(); ++index) {
    ASSERT_NE(graph.inferred_cost(index), nullptr) << index;
    const OpView view = view_of(graph, index);
    const OpCost fresh = OpRegistry::instance().get(view.node.op).cost(view);
    const OpCost& kept = *graph.inferred_cost(index);
    EXPECT_EQ(kept.macs, fresh.macs);
    EXPECT_EQ(kept.flops_bwd, fresh.flops_bwd);
    EXPECT_EQ(kept.params, fresh.params);
    EXPECT_EQ(kept.frozen_params, 0);
    EXPECT_EQ(kept.saved_bytes(), fresh.saved_bytes());
  }
  EXPECT_EQ(node_cost(graph, fc).params, 16 * 8 + 8);
  graph.mutable_nodes()[static_cast<size_t>(fc)].attrs["frozen"] = int64_t{1};
  EXPECT_EQ(graph.inferred_cost(fc), nullptr);
  EXPECT_EQ(node_cost(graph, fc).frozen_params, 16 * 8 + 8);
  EXPECT_EQ(node_cost(graph, fc).flops_bwd, 2 * 2 * 16 * 8);  // the input's gradient only: 2 FLOPs per MAC
  graph.infer_shapes();
  ASSERT_NE(graph.inferred_cost(fc), nullptr);
  EXPECT_EQ(graph.inferred_cost(fc)->frozen_params, 16 * 8 + 8);
}

}  // namespace
}  // namespace dnncast
