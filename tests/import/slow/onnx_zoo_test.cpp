// Every zoo CNN that torch 1.13 exports in training mode, imported from ONNX against its zoo builder
// (params exact, MACs within 0.5%, simulated peak equal). Slow (one export each, up to ~30 s for the
// VGGs): in rotation, `make test` runs one model per commit, `make test-slow` all. The main run keeps
// resnet18 and mobilenet_v2 (tests/import/onnx_test.cpp).
#include <gtest/gtest.h>

#include "import/onnx_export.h"
#include "rotation.h"

namespace dnncast {
namespace {

// The zoo's CNNs that import exactly (docs/ONNX.md says why the others are not here).
const std::vector<std::string> kModels = {
    "alexnet", "squeezenet1_0", "squeezenet1_1", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "mnasnet0_5",
    "mobilenet_v3_small", "mobilenet_v3_large", "regnet_x_400mf", "regnet_y_400mf", "googlenet", "resnet34",
    "resnet50", "resnext50_32x4d", "densenet121", "inception_v3", "vgg11", "vgg11_bn", "wide_resnet50_2",
    "efficientnet_b0", "convnext_tiny"};

TEST(OnnxZooSlow, EveryExportableZooModelMatchesItsBuilder) {
  rotation::Slice slice = rotation::slice_of("OnnxZooSlow", kModels.size());
  for (const std::string& model : rotation::pick(slice, kModels)) {
    SCOPED_TRACE(model);
    onnx_test::expect_matches_zoo(model);
  }
}

}  // namespace
}  // namespace dnncast
