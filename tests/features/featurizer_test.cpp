// Featurizer: hand-counted numbers on a tiny graph and on ResNet-50 (parameters and MACs
// against torchvision's published figures), and the batch scaling the fast path relies on.
#include "features/featurizer.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "models/zoo.h"

namespace dnncast::features {
namespace {

double feature(const std::vector<double>& row, const std::string& name) {
  int index = feature_index(name);
  EXPECT_GE(index, 0) << name;
  return index < 0 ? 0 : row[static_cast<size_t>(index)];
}

TEST(FeatureList, NamesAreUniqueAndVersioned) {
  const std::vector<std::string>& names = feature_names();
  EXPECT_EQ(names.size(), feature_count());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  size_t kinds = op_kinds().size();
  EXPECT_EQ(op_kinds().back(), "Other");
  // Six per-kind columns plus the kind x kind connection matrix come first.
  EXPECT_EQ(names[0], "kind.Input.count");
  EXPECT_EQ(names[6 * kinds], "conn.Input->Input");
  EXPECT_EQ(names[6 * kinds + kinds * kinds - 1], "conn.Other->Other");
  EXPECT_EQ(kFeatureVersion, DNNCAST_FEATURE_VERSION);
  EXPECT_EQ(feature_index("no.such.feature"), -1);
}

TEST(FeatureList, KindsFoldDeclaredKindsAndUnknowns) {
  auto index_of = [](const std::string& kind) {
    const auto& kinds = op_kinds();
    return static_cast<int>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
  };
  EXPECT_EQ(kind_index("Conv2d"), index_of("Conv2d"));
  // Transpose declares the kind it counts under (graph/ops_shape.cpp); the featurizer has no alias.
  EXPECT_EQ(OpRegistry::instance().get("Transpose").feature_kind, "Permute");
  EXPECT_EQ(kind_index(OpRegistry::instance().get("Transpose").feature_kind), index_of("Permute"));
  EXPECT_TRUE(has_kind_entry("Transpose"));
  EXPECT_FALSE(has_kind_entry("SomeNewOp"));
  EXPECT_EQ(kind_index("SomeNewOp"), index_of("Other"));
  EXPECT_EQ(kind_index("SomeNewLoss", "loss"), index_of("Loss"));
  EXPECT_EQ(kind_index("FlashAttention", "attention"), index_of("Attention"));
}

// Input 2x3x8x8 -> Conv2d(4, k3, p1, no bias) -> BatchNorm2d -> ReLU -> Add(ReLU, BatchNorm) ;
// a depthwise conv on the sum; hand-computed numbers below.
Graph tiny_graph(int64_t batch) {
  GraphBuilder b("tiny", "test");
  int x = b.input(TensorShape{batch, 3, 8, 8});
  int conv = b.conv("conv", x, 4, 3, 1, 1, 1, false);
  int bn = b.batchnorm("bn", conv);
  int relu = b.act("relu", "ReLU", bn);
  int sum = b.add("add", relu, bn);
  b.conv("dw", sum, 4, 3, 1, 1, 4, false);
  return b.finish();
}

TEST(Featurizer, TinyGraphByHand) {
  GraphFeatures graph = graph_features(tiny_graph(2));
  EXPECT_EQ(graph.graph_batch, 2);
  TrainingConfig config;
  config.batch = 2;
  std::vector<double> row = featurize(graph, config, HardwareFeatures{});
  // Conv2d: MACs = N * Cout * H * W * Cin * k * k = 2*4*8*8*3*3*3; params 4*3*3*3.
  EXPECT_EQ(feature(row, "kind.Conv2d.count"), 1);
  EXPECT_EQ(feature(row, "kind.Conv2d.macs"), 2.0 * 4 * 8 * 8 * 3 * 3 * 3);
  EXPECT_EQ(feature(row, "kind.Conv2d.params"), 4 * 3 * 3 * 3);
  EXPECT_EQ(feature(row, "kind.Conv2d.act_bytes"), 2.0 * 4 * 8 * 8 * 4);
  // Conv keeps its input (2x3x8x8 floats) for backward.
  EXPECT_EQ(feature(row, "kind.Conv2d.saved_bytes"), 2.0 * 3 * 8 * 8 * 4);
  // Depthwise: groups == channels == 4: MACs = 2*4*8*8*1*3*3, params 4*1*3*3.
  EXPECT_EQ(feature(row, "kind.DepthwiseConv2d.count"), 1);
  EXPECT_EQ(feature(row, "kind.DepthwiseConv2d.macs"), 2.0 * 4 * 8 * 8 * 3 * 3);
  EXPECT_EQ(feature(row, "kind.DepthwiseConv2d.params"), 4 * 3 * 3);
  EXPECT_EQ(feature(row, "kind.BatchNorm2d.params"), 8);  // affine weight + bias
  // Edges: input->conv, conv->bn, bn->relu, relu->add, bn->add, add->dw.
  EXPECT_EQ(feature(row, "conn.Input->Conv2d"), 1);
  EXPECT_EQ(feature(row, "conn.Conv2d->BatchNorm2d"), 1);
  EXPECT_EQ(feature(row, "conn.BatchNorm2d->ReLU"), 1);
  EXPECT_EQ(feature(row, "conn.BatchNorm2d->Add"), 1);
  EXPECT_EQ(feature(row, "conn.ReLU->Add"), 1);
  EXPECT_EQ(feature(row, "conn.Add->DepthwiseConv2d"), 1);
  EXPECT_EQ(feature(row, "total.edges"), 6);
  EXPECT_EQ(feature(row, "total.nodes"), 6);
  EXPECT_EQ(feature(row, "graph.depth"), 6);       // input, conv, bn, relu, add, dw
  EXPECT_EQ(feature(row, "graph.max_fanout"), 2);  // bn feeds relu and add
  EXPECT_EQ(feature(row, "graph.branch_nodes"), 1);
  EXPECT_EQ(feature(row, "graph.merge_nodes"), 1);
  EXPECT_EQ(feature(row, "graph.max_channels"), 4);
  EXPECT_EQ(feature(row, "graph.max_spatial"), 64);
  EXPECT_EQ(feature(row, "input.channels"), 3);
  EXPECT_EQ(feature(row, "input.pixels"), 64);
  EXPECT_EQ(feature(row, "total.params"), 108 + 8 + 36);
  EXPECT_EQ(feature(row, "total.param_bytes"), 4.0 * (108 + 8 + 36));
  EXPECT_EQ(feature(row, "total.macs"), 2.0 * 4 * 64 * 27 + 2.0 * 4 * 64 * 9);
  EXPECT_EQ(feature(row, "config.batch"), 2);
  EXPECT_EQ(feature(row, "config.opt.sgd"), 1);
  EXPECT_EQ(feature(row, "config.opt.adam"), 0);
  EXPECT_EQ(feature(row, "config.opt_state_bytes"), 4.0 * (108 + 8 + 36));  // SGD momentum: 1 value/param
}

TEST(Featurizer, BatchScalingMatchesARebuiltGraph) {
  // The fast path (graph at batch 1, scaled) must equal featurizing the graph built at the batch.
  for (int64_t batch : {1, 3, 16}) {
    models::ModelSpec spec;
    spec.input = {3, 64, 64};
    spec.batch = 1;
    GraphFeatures at_one = graph_features(models::build_zoo_model("resnet18", spec));
    spec.batch = batch;
    GraphFeatures at_batch = graph_features(models::build_zoo_model("resnet18", spec));
    TrainingConfig config;
    config.batch = batch;
    config.optimizer = Optimizer::Adam;
    config.threads = 2;
    HardwareFeatures hardware{2, false, 1e11, 2e10, int64_t{8} << 30};
    std::vector<double> scaled = featurize(at_one, config, hardware);
    std::vector<double> rebuilt = featurize(at_batch, config, hardware);
    // The single pass over the graph built at the batch gives the same row.
    std::vector<double> one_pass = featurize_graph(models::build_zoo_model("resnet18", spec), config, hardware);
    for (size_t column = 0; column < scaled.size(); ++column) {
      EXPECT_NEAR(scaled[column], rebuilt[column], 1e-9 * std::max(1.0, std::abs(rebuilt[column])))
          << feature_names()[column] << " at batch " << batch;
      EXPECT_NEAR(one_pass[column], rebuilt[column], 1e-9 * std::max(1.0, std::abs(rebuilt[column])))
          << feature_names()[column] << " at batch " << batch;
    }
    config.batch = batch + 1;
    EXPECT_THROW(featurize_graph(models::build_zoo_model("resnet18", spec), config, hardware), InputError);
  }
}

TEST(Featurizer, ResNet50MatchesTorchvisionFigures) {
  models::ModelSpec spec;
  spec.batch = 1;
  GraphFeatures graph = graph_features(models::build_zoo_model("resnet50", spec));
  TrainingConfig config;
  std::vector<double> row = featurize(graph, config, HardwareFeatures{});
  // torchvision ResNet50_Weights.IMAGENET1K_V1: 25,557,032 parameters, 4.09 GFLOPS (multiply-adds).
  EXPECT_EQ(feature(row, "total.params"), 25557032);
  EXPECT_NEAR(feature(row, "total.macs") / 4.09e9, 1.0, 0.01);
  // 16 bottlenecks of 3 convs + 4 downsample convs + the stem.
  EXPECT_EQ(feature(row, "kind.Conv2d.count"), 53);
  EXPECT_EQ(feature(row, "kind.BatchNorm2d.count"), 53);
  EXPECT_EQ(feature(row, "kind.ReLU.count"), 1 + 16 * 3);
  EXPECT_EQ(feature(row, "kind.Add.count"), 16);
  EXPECT_EQ(feature(row, "kind.Linear.count"), 1);
  EXPECT_EQ(feature(row, "kind.Linear.params"), 2048 * 1000 + 1000);
  EXPECT_EQ(feature(row, "conn.Conv2d->BatchNorm2d"), 53);
  // Each block ends in Add: bn3 feeds it, and the 4 downsample BNs; identities come from ReLU.
  EXPECT_EQ(feature(row, "conn.BatchNorm2d->Add"), 16 + 4);
  EXPECT_EQ(feature(row, "conn.ReLU->Add"), 12);
  // Convs read ReLU outputs except the stem (Input) and layer1.0's conv1 + downsample (MaxPool).
  EXPECT_EQ(feature(row, "conn.ReLU->Conv2d"), 50);
  EXPECT_EQ(feature(row, "conn.MaxPool2d->Conv2d"), 2);
  EXPECT_EQ(feature(row, "conn.Input->Conv2d"), 1);
  EXPECT_EQ(feature(row, "graph.max_channels"), 2048);
  EXPECT_EQ(feature(row, "input.height"), 224);
}

TEST(Featurizer, BadInputIsAnInputError) {
  GraphFeatures graph = graph_features(tiny_graph(1));
  TrainingConfig config;
  config.batch = 0;
  EXPECT_THROW(featurize(graph, config, HardwareFeatures{}), InputError);
  config.batch = 1;
  config.threads = 0;
  EXPECT_THROW(featurize(graph, config, HardwareFeatures{}), InputError);
  config.threads = 1;
  Graph empty;
  empty.name = "empty";
  EXPECT_THROW(graph_features(empty), InputError);
}

TEST(Featurizer, HardwareAndDerivedColumns) {
  GraphFeatures graph = graph_features(tiny_graph(1));
  TrainingConfig config;
  config.batch = 4;
  config.threads = 2;
  HardwareFeatures hardware{4, false, 4e11, 1e10, int64_t{16} << 30};
  std::vector<double> row = featurize(graph, config, hardware);
  double flops = feature(row, "total.flops_train");
  EXPECT_EQ(flops, 4 * graph.flops_train_per_sample);
  EXPECT_DOUBLE_EQ(feature(row, "est.flops_per_thread"), flops / 2);
  // Two of four cores: half the peak.
  EXPECT_DOUBLE_EQ(feature(row, "est.compute_s"), flops / 2e11);
  EXPECT_EQ(feature(row, "hw.cores"), 4);
  EXPECT_EQ(feature(row, "hw.gpu"), 0);
}

}  // namespace
}  // namespace dnncast::features
