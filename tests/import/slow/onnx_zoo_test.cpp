// Every zoo CNN (vit_b_16 among them), exported by torch 1.13 in training mode and imported from ONNX,
// against its zoo builder (params exact, MACs within 0.5%, simulated peak equal). Slow (one export each,
// up to ~50 s for vgg16 and vit_b_16 on shared cores): in rotation, `make test` runs one slice of two
// models per commit, `make test-slow` all.
// DNNCAST_ONNX_ZOO_MODELS=vgg16,resnet152 runs just the models named (any zoo model, in or out of the list).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "import/onnx_export.h"
#include "rotation.h"

namespace dnncast::import {
namespace {

// Every CNN of `dnncast inspect --list` (vit_b_16 among them). Case i runs in slice i % ceil(size / 2): the first half
// holds the big ones, the second half the small, so a slice pairs one big model with one small one.
const std::vector<std::string> kModels = {
    // big (export and simulation up to ~30 s each)
    "vgg16", "resnet152", "wide_resnet101_2", "resnext101_32x8d", "densenet201", "vgg19", "vgg16_bn", "vgg19_bn",
    "resnet101", "densenet161", "densenet169", "vgg13", "vgg13_bn", "vgg11", "vgg11_bn", "wide_resnet50_2",
    "efficientnet_b3", "efficientnet_b2", "inception_v3", "convnext_tiny", "resnext50_32x4d", "efficientnet_b1",
    "vit_b_16",
    // small
    "alexnet", "squeezenet1_0", "squeezenet1_1", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0", "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3", "mobilenet_v2", "mobilenet_v3_small",
    "mobilenet_v3_large", "regnet_x_400mf", "regnet_y_400mf", "googlenet", "resnet18", "resnet34", "resnet50",
    "densenet121", "efficientnet_b0"};

// The models named in DNNCAST_ONNX_ZOO_MODELS (comma-separated), or none; bert_base and gpt2_small are
// onnx_transformer_test.cpp's.
std::vector<std::string> chosen_models() {
  std::vector<std::string> chosen;
  const char* names = std::getenv("DNNCAST_ONNX_ZOO_MODELS");
  if (names == nullptr) return chosen;
  std::stringstream stream(names);
  for (std::string name; std::getline(stream, name, ',');)
    if (!name.empty() && name != "bert_base" && name != "gpt2_small") chosen.push_back(name);  // onnx_transformer_test
  return chosen;
}

TEST(OnnxZooSlow, EveryZooCnnMatchesItsBuilder) {
  std::vector<std::string> models = chosen_models();
  if (std::getenv("DNNCAST_ONNX_ZOO_MODELS") == nullptr)
    models = rotation::pick(rotation::slice_of("OnnxZooSlow", (kModels.size() + 1) / 2), kModels);
  for (const std::string& model : models) {
    SCOPED_TRACE(model);
    onnx_test::expect_matches_zoo(model);
  }
}

}  // namespace
}  // namespace dnncast::import
