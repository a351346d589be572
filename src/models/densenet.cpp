// DenseNet-BC as torchvision builds it (torchvision/models/densenet.py). Every dense layer
// concatenates all feature maps before it (torch.cat in _DenseLayer.bn_function, a fresh copy per
// layer, so the graph has one Concat per layer) and adds growth_rate channels; transitions halve
// channels and resolution. drop_rate is 0 in every torchvision variant, so there is no dropout.
#include <string>
#include <vector>

#include "models/cnn_blocks.h"

namespace dnncast::models {

namespace {

struct DenseNetConfig {
  int64_t growth_rate;
  std::vector<int> block_layers;
  int64_t init_features;
};

constexpr int64_t kBottleneckWidth = 4;  // bn_size: the 1x1 conv outputs bn_size * growth_rate channels

Graph build_densenet(const std::string& name, const DenseNetConfig& config, const ModelSpec& spec) {
  GraphBuilder b(name, "densenet");
  int x = blocks::image_input(b, spec);
  x = b.conv("features.conv0", x, config.init_features, 7, 2, 3, 1, false);
  x = b.batchnorm("features.norm0", x);
  x = b.act("features.relu0", "ReLU", x);
  x = b.maxpool("features.pool0", x, 3, 2, 1);
  for (size_t block = 0; block < config.block_layers.size(); ++block) {
    std::string block_prefix = "features.denseblock" + std::to_string(block + 1) + ".";
    std::vector<int> features{x};
    for (int layer = 0; layer < config.block_layers[block]; ++layer) {
      std::string prefix = block_prefix + "denselayer" + std::to_string(layer + 1) + ".";
      int y = b.concat(prefix + "cat", features);
      y = b.batchnorm(prefix + "norm1", y);
      y = b.act(prefix + "relu1", "ReLU", y);
      y = b.conv(prefix + "conv1", y, kBottleneckWidth * config.growth_rate, 1, 1, 0, 1, false);
      y = b.batchnorm(prefix + "norm2", y);
      y = b.act(prefix + "relu2", "ReLU", y);
      y = b.conv(prefix + "conv2", y, config.growth_rate, 3, 1, 1, 1, false);
      features.push_back(y);
    }
    x = b.concat(block_prefix + "cat", features);
    if (block + 1 < config.block_layers.size()) {
      std::string prefix = "features.transition" + std::to_string(block + 1) + ".";
      x = b.batchnorm(prefix + "norm", x);
      x = b.act(prefix + "relu", "ReLU", x);
      x = b.conv(prefix + "conv", x, b.channels(x) / 2, 1, 1, 0, 1, false);
      x = b.avgpool(prefix + "pool", x, 2, 2);
    }
  }
  x = b.batchnorm("features.norm5", x);
  x = b.act("relu", "ReLU", x);
  x = b.adaptive_avgpool("adaptive_avg_pool2d", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("classifier", x, spec.num_classes);
  return b.finish();
}

void add(std::vector<ZooEntry>& entries, const std::string& name, DenseNetConfig config) {
  entries.push_back({name, "densenet", "cnn", {3, 224, 224}, [name, config](const ModelSpec& spec) {
                       return build_densenet(name, config, spec);
                     }});
}

}  // namespace

void register_densenet(std::vector<ZooEntry>& entries) {
  add(entries, "densenet121", {32, {6, 12, 24, 16}, 64});
  add(entries, "densenet161", {48, {6, 12, 36, 24}, 96});
  add(entries, "densenet169", {32, {6, 12, 32, 32}, 64});
  add(entries, "densenet201", {32, {6, 12, 48, 32}, 64});
}

}  // namespace dnncast::models
