// 1,000 synthetic networks round-trip through graph JSON: write -> read -> write gives the same
// text, the same hash and the same nodes (attribute types included).
#include <gtest/gtest.h>

#include "import/graph_json.h"
#include "models/synthetic.h"

namespace dnncast::import {
namespace {

TEST(SyntheticJson, ThousandSeedsRoundTripExactly) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.input = std::vector<int64_t>{3, 64, 64};
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Graph graph = models::make_synthetic(seed, spec);
    std::string text = write_graph_json(graph);
    Graph back = read_graph_json(text, "synthetic.json");
    ASSERT_TRUE(write_graph_json(back) == text) << "write -> read -> write changed the text";
    ASSERT_EQ(back.architecture_hash(), graph.architecture_hash());
    ASSERT_EQ(back.name, "synthetic:" + std::to_string(seed));
    ASSERT_EQ(back.family, "synthetic");
    ASSERT_EQ(back.size(), graph.size());
    for (int index = 0; index < graph.size(); ++index) {
      ASSERT_EQ(back.node(index).attrs, graph.node(index).attrs);
      ASSERT_EQ(back.node(index).inputs, graph.node(index).inputs);
      ASSERT_EQ(back.node(index).shape, graph.node(index).shape);
    }
  }
}

}  // namespace
}  // namespace dnncast::import
