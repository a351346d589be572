// Layer rows (features/layer_features.h): one per timed node plus the optimizer; the per-node
// work adds up to the whole-network features computed by the featurizer's separate pass, scales
// with the batch, and carries the convolution implementation the featurizer assumes per pass.
#include "features/layer_features.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "features/featurizer.h"
#include "models/synthetic.h"
#include "models/zoo.h"

namespace dnncast::features {
namespace {

size_t column(const std::string& name) {
  const std::vector<std::string>& names = layer_feature_names();
  auto found = std::find(names.begin(), names.end(), name);
  EXPECT_NE(found, names.end()) << name;
  return static_cast<size_t>(found - names.begin());
}

TEST(LayerFeatures, RowsAddUpToTheNetworkAndScaleWithTheBatch) {
  std::vector<Graph> graphs{models::build_zoo_model("resnet18", {1, {3, 32, 32}, 0, 1000}),
                            models::build_zoo_model("mobilenet_v2", {1, {3, 64, 64}, 0, 1000}),
                            models::make_synthetic(1333, {1, {3, 64, 64}, 0, 1000})};
  const size_t width = layer_feature_count();
  EXPECT_EQ(layer_feature_names().size(), width);
  EXPECT_EQ(std::set<std::string>(layer_feature_names().begin(), layer_feature_names().end()).size(), width);
  for (const Graph& graph : graphs) {
    LayerSites sites = layer_sites(graph);
    size_t timed = 0;
    for (const Node& node : graph.nodes()) timed += node.op == "Input" ? 0 : 1;
    ASSERT_EQ(sites.nodes.size(), timed) << graph.name;
    for (int64_t batch : {1, 8, 16}) {
      TrainingConfig config;
      config.batch = batch;
      config.optimizer = Optimizer::Adam;
      std::vector<float> rows;
      layer_rows(sites, config, false, rows);
      ASSERT_EQ(rows.size(), (timed + 1) * width);
      std::vector<double> whole = featurize(graph_features(graph), config, HardwareFeatures{});
      double flops_fwd = 0, flops_bwd = 0, params = 0;
      for (size_t row = 0; row < timed; ++row) {
        flops_fwd += rows[row * width + column("flops_fwd")];
        flops_bwd += rows[row * width + column("flops_bwd")];
        params += rows[row * width + column("params")];
        EXPECT_EQ(rows[row * width + column("batch")], static_cast<float>(batch));
      }
      EXPECT_NEAR(flops_fwd, whole[static_cast<size_t>(feature_index("total.flops_fwd"))], 1e-4 * flops_fwd)
          << graph.name << " b" << batch;
      EXPECT_NEAR(flops_bwd, whole[static_cast<size_t>(feature_index("total.flops_bwd"))], 1e-4 * flops_bwd)
          << graph.name << " b" << batch;
      EXPECT_NEAR(params, whole[static_cast<size_t>(feature_index("total.params"))], 0.5);
      // The optimizer row: the parameters, Adam's two state values, and a kind of its own.
      const float* optimizer = &rows[timed * width];
      EXPECT_EQ(optimizer[column("params")], static_cast<float>(params));
      EXPECT_EQ(optimizer[column("optimizer_state")], 2.0f);
      EXPECT_EQ(optimizer[column("kind")], static_cast<float>(op_kinds().size()));
    }
  }
}

TEST(LayerFeatures, ConvolutionRowsCarryTheImplementationOfEachPass) {
  Graph graph = models::make_synthetic(2457, {1, {3, 32, 32}, 0, 1000});
  LayerSites sites = layer_sites(graph);
  std::vector<ConvSite> convs = conv_sites(graph);
  const size_t width = layer_feature_count();
  for (int64_t batch : {8, 16}) {
    TrainingConfig config;
    config.batch = batch;
    std::vector<float> rows;
    layer_rows(sites, config, false, rows);
    size_t conv = 0, slow = 0;
    for (size_t row = 0; row < sites.nodes.size(); ++row) {
      if (!sites.nodes[row].conv) {
        EXPECT_EQ(rows[row * width + column("impl_fwd")], 0.0f);
        continue;
      }
      ASSERT_LT(conv, convs.size());
      std::array<hardware::ConvImpl, 3> impls = conv_impls(convs[conv++], config, HardwareFeatures{});
      EXPECT_EQ(rows[row * width + column("impl_fwd")], 1.0f + static_cast<float>(impls[0]));
      EXPECT_EQ(rows[row * width + column("impl_bwd_weight")], 1.0f + static_cast<float>(impls[2]));
      slow += impls[0] == hardware::ConvImpl::Slow ? 1 : 0;
    }
    EXPECT_EQ(conv, convs.size());
    // One thread: this network's unstrided 1x1 convolutions run ATen's slow path below batch 16.
    if (batch == 8) {
      EXPECT_GT(slow, 10u);
    }
    if (batch == 16) {
      EXPECT_EQ(slow, 0u);
    }
  }
  TrainingConfig bad;
  bad.batch = 0;
  std::vector<float> rows;
  EXPECT_THROW(layer_rows(sites, bad, false, rows), InputError);
}

}  // namespace
}  // namespace dnncast::features
