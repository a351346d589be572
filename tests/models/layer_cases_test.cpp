// Layer cases of the proxy layer benchmarks (models/layer_cases.h): the sampler's determinism,
// coverage and caps, kinds of zoo nodes, cases that keep their node's shapes and cost, shape files.
#include "models/layer_cases.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "graph/op_registry.h"
#include "models/zoo.h"

namespace dnncast::models {
namespace {

TEST(LayerCases, SampleIsDeterministicDistinctAndWithinTheCaps) {
  SampleOptions options;
  options.count = 300;
  options.seed = 7;
  options.max_gflops = 0.5;
  options.max_act_mb = 64;
  std::vector<LayerCase> first = sample_layer_cases(options), second = sample_layer_cases(options);
  ASSERT_EQ(first.size(), 300u);
  std::set<std::string> keys;
  std::map<std::string, int> kinds;
  std::set<int64_t> batches;
  for (size_t index = 0; index < first.size(); ++index) {
    const LayerCase& c = first[index];
    EXPECT_EQ(c.key, second[index].key);
    EXPECT_TRUE(keys.insert(c.key).second) << c.key;
    EXPECT_LE(c.flops_forward, 0.5e9);
    double bytes = 0;
    for (const Node& node : c.graph.nodes()) bytes += static_cast<double>(node.shape.numel()) * 4;
    EXPECT_LE(bytes, 64e6);
    // The timed node is the last, and its kind is what the case says.
    EXPECT_EQ(layer_kind(c.graph, c.graph.size() - 1), c.kind);
    EXPECT_EQ(c.batch, c.graph.node(0).shape[0]);
    ++kinds[c.kind];
    batches.insert(c.batch);
  }
  EXPECT_EQ(kinds.size(), layer_kinds().size());
  for (const auto& [kind, count] : kinds) EXPECT_EQ(count, 30) << kind;
  EXPECT_GE(batches.size(), 8u);  // of the 9 default batches
  options.seed = 8;
  EXPECT_NE(sample_layer_cases(options)[0].key, first[0].key);
}

TEST(LayerCases, ZooNodesHaveTheirKinds) {
  std::map<std::string, std::set<std::string>> seen;
  for (const char* model : {"resnext50_32x4d", "mobilenet_v2", "vit_b_16", "resnet18"}) {
    ModelSpec spec;
    if (std::string(model) == "vit_b_16") spec.input = {3, 32, 32};
    Graph graph = build_zoo_model(model, spec);
    for (int index = 0; index < graph.size(); ++index) seen[model].insert(layer_kind(graph, index));
  }
  EXPECT_TRUE(seen["resnext50_32x4d"].count("gconv"));
  EXPECT_TRUE(seen["mobilenet_v2"].count("dwconv"));
  EXPECT_FALSE(seen["resnet18"].count("dwconv"));
  EXPECT_FALSE(seen["resnet18"].count("gconv"));
  for (const char* kind : {"attention", "ln", "linear", "add"}) EXPECT_TRUE(seen["vit_b_16"].count(kind)) << kind;
  for (const char* kind : {"conv", "bn", "act", "pool", "add", "linear"})
    EXPECT_TRUE(seen["resnet18"].count(kind)) << kind;
}

// A case keeps its node: the output shape and the op's cost (FLOPs, parameters) inside the network.
TEST(LayerCases, ACaseOfANodeCostsWhatTheNodeCostsInItsNetwork) {
  ModelSpec spec;
  spec.batch = 3;
  spec.input = {3, 64, 64};
  for (const char* model : {"resnet18", "mobilenet_v2", "densenet121"}) {
    Graph graph = build_zoo_model(model, spec);
    for (int index = 0; index < graph.size(); ++index) {
      if (graph.node(index).op == "Input") continue;
      LayerCase c = case_of_node(graph, index, std::string("zoo:") + model);
      const Node& timed = c.graph.node(c.graph.size() - 1);
      EXPECT_EQ(timed.shape.dims, graph.node(index).shape.dims) << graph.node(index).name;
      OpCost inside = node_cost(graph, index), alone = node_cost(c.graph, c.graph.size() - 1);
      EXPECT_EQ(inside.flops_fwd, alone.flops_fwd) << graph.node(index).name;
      EXPECT_EQ(inside.flops_bwd, alone.flops_bwd) << graph.node(index).name;
      EXPECT_EQ(inside.params, alone.params) << graph.node(index).name;
      EXPECT_EQ(c.batch, 3);
    }
  }
  EXPECT_THROW(case_of_node(build_zoo_model("resnet18", spec), 0, "zoo:resnet18"), InputError);
}

// Issue 51: `calibrate gpt2_small` failed on the tied head ("tied_to 'transformer.wte' is not an Embedding node").
// Alone, the head is a Linear with its own weight: the same products, its weight counted as its own.
TEST(LayerCases, ATiedHeadIsTimedAsALinearOfItsOwn) {
  for (const char* model : {"gpt2_small"}) {  // the zoo's tied head (config.json llamas tie theirs alike)
    const Graph graph = build_zoo_model(model, ModelSpec{2, {}, 16});
    int tied = 0;
    for (int index = 0; index < graph.size(); ++index) {
      const Node& node = graph.node(index);
      if (node.op == "Input") continue;
      const LayerCase c = case_of_node(graph, index, std::string("zoo:") + model);
      const OpCost inside = node_cost(graph, index), alone = node_cost(c.graph, c.graph.size() - 1);
      EXPECT_EQ(inside.flops_fwd, alone.flops_fwd) << node.name;
      if (node.attr_str("tied_to", "").empty()) continue;
      ++tied;
      EXPECT_FALSE(c.graph.node(c.graph.size() - 1).has_attr("tied_to"));
      const int64_t weight = node.attr_int("out_features", 0) * graph.node(node.inputs[0]).shape.dims.back();
      EXPECT_EQ(alone.params, inside.params + weight) << node.name;
    }
    EXPECT_EQ(tied, 1) << model;
  }
}

TEST(LayerCases, ZooCasesAreDistinctAndFewerThanTheNodes) {
  std::vector<LayerCase> cases = zoo_layer_cases({"resnet50"}, {64}, {1, 4}, layer_kinds());
  Graph graph = build_zoo_model("resnet50", ModelSpec{1, {3, 64, 64}});
  int timed = 0;
  for (int index = 0; index < graph.size(); ++index) timed += layer_kind(graph, index).empty() ? 0 : 1;
  std::set<std::string> keys;
  for (const LayerCase& c : cases) EXPECT_TRUE(keys.insert(c.key).second);
  EXPECT_LT(cases.size(), static_cast<size_t>(2 * timed));  // resnet50 repeats its blocks
  EXPECT_GT(cases.size(), static_cast<size_t>(timed / 4));
  // Batch is part of the identity: both batches are there.
  std::set<int64_t> batches;
  for (const LayerCase& c : cases) batches.insert(c.batch);
  EXPECT_EQ(batches, (std::set<int64_t>{1, 4}));
  EXPECT_THROW(zoo_layer_cases({"resnet5"}, {64}, {1}, layer_kinds()), InputError);
  EXPECT_THROW(check_layer_kinds({"conv", "cnv"}), InputError);
}

TEST(LayerCases, AShapeFileBuildsEachKind) {
  std::string path = ::testing::TempDir() + "/shapes.csv";
  {
    std::ofstream out(path);
    out << "kind,batch,channels,out_channels,height,width,kernel,stride,groups,op\n"
           "conv,2,16,32,8,,3,2,,\n"
           "dwconv,4,24,,14,,5,1,,\n"
           "gconv,1,32,64,7,,3,1,4,\n"
           "linear,8,128,10,,,,,,\n"
           "linear,2,64,64,16,,,,,\n"
           "act,2,8,,4,,,,,GELU\n"
           "pool,2,8,,8,,,,,AvgPool2d\n"
           "attention,2,4,,32,16,,,,causal\n";
  }
  std::vector<LayerCase> cases = read_shape_file(path);
  ASSERT_EQ(cases.size(), 8u);
  const Node& conv = cases[0].graph.node(1);
  EXPECT_EQ(conv.shape.dims, (std::vector<int64_t>{2, 32, 4, 4}));
  EXPECT_EQ(cases[1].kind, "dwconv");
  EXPECT_EQ(cases[1].graph.node(1).attr_int("groups"), 24);
  EXPECT_EQ(cases[2].graph.node(1).attr_int("groups"), 4);
  EXPECT_EQ(cases[3].graph.node(1).shape.dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(cases[4].graph.node(1).shape.dims, (std::vector<int64_t>{2, 16, 64}));
  EXPECT_EQ(cases[5].graph.node(1).op, "GELU");
  EXPECT_EQ(cases[6].graph.node(1).op, "AvgPool2d");
  EXPECT_EQ(cases[7].graph.node(3).attr_int("causal"), 1);
  EXPECT_EQ(cases[0].origin, "file:" + path + ":2");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dnncast::models
