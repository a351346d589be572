// The synthetic generator: every seed gives a valid graph; the seed alone fixes the architecture;
// the kinds of blocks the generator promises all occur. (The graph JSON round trip of the same 1,000
// seeds is in tests/import/synthetic_roundtrip_test.cpp, where the JSON module is linked.)
#include "models/synthetic.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast::models {
namespace {

constexpr uint64_t kSeeds = 1000;

ModelSpec image_spec(std::vector<int64_t> input, int64_t batch = 1, int64_t classes = 1000) {
  ModelSpec spec;
  spec.input = std::move(input);
  spec.batch = batch;
  spec.num_classes = classes;
  return spec;
}

struct Summary {
  int64_t params = 0;
  int64_t macs = 0;
  std::set<std::string> kinds;
};

Summary summarize(const Graph& graph) {
  Summary summary;
  for (int index = 0; index < graph.size(); ++index) {
    OpCost cost = node_cost(graph, index);
    summary.params += cost.params;
    summary.macs += cost.macs;
    summary.kinds.insert(node_kind(graph, index));
  }
  return summary;
}

// Counts of the things the generator promises across the first 1,000 seeds.
TEST(Synthetic, ThousandSeedsValidate) {
  std::set<std::string> hashes;
  std::map<std::string, int> kind_count;
  int64_t min_blocks = 1000, max_blocks = 0;
  int64_t max_params = 0;
  int with_concat_and_add = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Graph graph = make_synthetic(seed, image_spec({3, 64, 64}));
    EXPECT_EQ(graph.name, "synthetic:" + std::to_string(seed));
    EXPECT_EQ(graph.family, "synthetic");
    ASSERT_NO_THROW(graph.validate());
    ASSERT_EQ(graph.outputs().size(), 1u);
    const Node& output = graph.node(graph.outputs()[0]);
    EXPECT_EQ(output.op, "Linear");
    EXPECT_EQ(output.shape, (TensorShape{1, 1000}));

    hashes.insert(graph.architecture_hash());
    Summary summary = summarize(graph);
    max_params = std::max(max_params, summary.params);
    for (const std::string& kind : summary.kinds) ++kind_count[kind];
    if (summary.kinds.count("Concat") && summary.kinds.count("Add")) ++with_concat_and_add;
    std::set<std::string> blocks;
    for (const Node& node : graph.nodes()) {
      size_t dot = node.name.find('.', node.name.find('.') + 1);
      if (node.name.rfind("stage", 0) == 0 && dot != std::string::npos) blocks.insert(node.name.substr(0, dot));
    }
    min_blocks = std::min<int64_t>(min_blocks, static_cast<int64_t>(blocks.size()));
    max_blocks = std::max<int64_t>(max_blocks, static_cast<int64_t>(blocks.size()));
  }
  // Different seeds give different networks (a handful of collisions would be tolerable).
  EXPECT_GE(hashes.size(), kSeeds - 5);
  EXPECT_LE(max_params, kSyntheticMaxParams);
  EXPECT_EQ(min_blocks, 3);
  EXPECT_EQ(max_blocks, 40);
  for (const char* kind :
       {"Conv2d", "DepthwiseConv2d", "GroupedConv2d", "BatchNorm2d", "ReLU", "ReLU6", "SiLU", "GELU", "Hardswish",
        "Sigmoid", "Hardsigmoid", "MaxPool2d", "AvgPool2d", "Add", "Mul", "Concat", "Dropout"}) {
    EXPECT_GE(kind_count[kind], 20) << kind << " occurs in too few networks";
  }
  EXPECT_GE(with_concat_and_add, 20);
  // Some networks have no BatchNorm at all.
  EXPECT_LE(kind_count["BatchNorm2d"], static_cast<int>(kSeeds) - 50);
}

TEST(Synthetic, SameSeedSameGraph) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 123456789ull, 18446744073709551615ull}) {
    Graph first = make_synthetic(seed, ModelSpec{});
    Graph second = make_synthetic(seed, ModelSpec{});
    EXPECT_EQ(first.architecture_hash(), second.architecture_hash());
    ASSERT_EQ(first.size(), second.size());
    for (int index = 0; index < first.size(); ++index) {
      EXPECT_EQ(first.node(index).name, second.node(index).name);
      EXPECT_EQ(first.node(index).attrs, second.node(index).attrs);
      EXPECT_EQ(first.node(index).inputs, second.node(index).inputs);
      EXPECT_EQ(first.node(index).shape, second.node(index).shape);
    }
  }
}

// The hash is a function of the seed: batch, classes and (large enough) image size do not change it.
TEST(Synthetic, ArchitectureDoesNotDependOnConfiguration) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Graph a = make_synthetic(seed, image_spec({3, 224, 224}));
    Graph b = make_synthetic(seed, image_spec({3, 320, 256}, 32));
    EXPECT_EQ(a.architecture_hash(), b.architecture_hash()) << "seed " << seed;
    EXPECT_EQ(b.node(0).shape, (TensorShape{32, 3, 320, 256}));
    EXPECT_EQ(summarize(a).params, summarize(b).params);
  }
}

// Any input size is valid: downsampling stops where the feature map is small.
TEST(Synthetic, AdaptsToInputSize) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    for (std::vector<int64_t> input : {std::vector<int64_t>{3, 32, 32}, std::vector<int64_t>{1, 7, 9},
                                       std::vector<int64_t>{3, 1, 1}, std::vector<int64_t>{4, 299, 150}}) {
      Graph graph = make_synthetic(seed, image_spec(input, 2, 10));
      EXPECT_EQ(graph.node(graph.outputs()[0]).shape, (TensorShape{2, 10})) << "seed " << seed;
      // The last feature map is at least 1x1 and no larger than the input.
      for (const Node& node : graph.nodes()) {
        if (node.name != "head.pool") continue;
        int producer = node.inputs[0];
        const TensorShape& before = graph.node(producer).shape;
        EXPECT_GE(before[2], 1);
        EXPECT_LE(before[2], input[1]);
        EXPECT_LE(before[3], input[2]);
      }
    }
  }
}

TEST(Synthetic, RejectsBadSpec) {
  ModelSpec sequence;
  sequence.seq_len = 128;
  EXPECT_THROW(make_synthetic(1, sequence), InputError);
  EXPECT_THROW(make_synthetic(1, image_spec({3, 224})), InputError);
  EXPECT_THROW(make_synthetic(1, image_spec({3, 0, 32})), InputError);
  EXPECT_THROW(make_synthetic(1, image_spec({3, 32, 32}, 0)), InputError);
  EXPECT_THROW(make_synthetic(1, image_spec({3, 32, 32}, 1, 0)), InputError);
}

}  // namespace
}  // namespace dnncast::models
