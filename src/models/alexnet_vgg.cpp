// AlexNet and VGG as torchvision builds them (torchvision/models/alexnet.py, vgg.py): plain
// conv/ReLU/max-pool stacks, an adaptive average pool to a fixed grid, and a three-layer classifier
// with dropout. Node names are the torchvision module paths ("features.0", "classifier.1").
#include <string>
#include <vector>

#include "models/cnn_blocks.h"

namespace dnncast::models {

namespace {

std::string at(const std::string& prefix, int index) { return prefix + "." + std::to_string(index); }

Graph build_alexnet(const ModelSpec& spec) {
  GraphBuilder b("alexnet", "alexnet");
  int x = blocks::image_input(b, spec);
  x = b.conv("features.0", x, 64, 11, 4, 2);
  x = b.act("features.1", "ReLU", x);
  x = b.maxpool("features.2", x, 3, 2);
  x = b.conv("features.3", x, 192, 5, 1, 2);
  x = b.act("features.4", "ReLU", x);
  x = b.maxpool("features.5", x, 3, 2);
  x = b.conv("features.6", x, 384, 3, 1, 1);
  x = b.act("features.7", "ReLU", x);
  x = b.conv("features.8", x, 256, 3, 1, 1);
  x = b.act("features.9", "ReLU", x);
  x = b.conv("features.10", x, 256, 3, 1, 1);
  x = b.act("features.11", "ReLU", x);
  x = b.maxpool("features.12", x, 3, 2);
  x = b.adaptive_avgpool("avgpool", x, 6, 6);
  x = b.flatten("flatten", x);
  x = b.dropout("classifier.0", x, 0.5);
  x = b.linear("classifier.1", x, 4096);
  x = b.act("classifier.2", "ReLU", x);
  x = b.dropout("classifier.3", x, 0.5);
  x = b.linear("classifier.4", x, 4096);
  x = b.act("classifier.5", "ReLU", x);
  b.linear("classifier.6", x, spec.num_classes);
  return b.finish();
}

// VGG configurations "A" (11 layers), "B" (13), "D" (16), "E" (19); 0 is a 2x2 max pool.
const std::vector<int64_t>& vgg_config(int depth) {
  static const std::vector<int64_t> a{64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  static const std::vector<int64_t> b{64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  static const std::vector<int64_t> d{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  static const std::vector<int64_t> e{64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                      512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
  switch (depth) {
    case 11:
      return a;
    case 13:
      return b;
    case 16:
      return d;
    default:
      return e;
  }
}

Graph build_vgg(const std::string& name, int depth, bool batch_norm, const ModelSpec& spec) {
  GraphBuilder b(name, "vgg");
  int x = blocks::image_input(b, spec);
  int index = 0;  // position in torchvision's nn.Sequential `features`
  for (int64_t width : vgg_config(depth)) {
    if (width == 0) {
      x = b.maxpool(at("features", index++), x, 2, 2);
      continue;
    }
    x = b.conv(at("features", index++), x, width, 3, 1, 1);
    if (batch_norm) x = b.batchnorm(at("features", index++), x);
    x = b.act(at("features", index++), "ReLU", x);
  }
  x = b.adaptive_avgpool("avgpool", x, 7, 7);
  x = b.flatten("flatten", x);
  x = b.linear("classifier.0", x, 4096);
  x = b.act("classifier.1", "ReLU", x);
  x = b.dropout("classifier.2", x, 0.5);
  x = b.linear("classifier.3", x, 4096);
  x = b.act("classifier.4", "ReLU", x);
  x = b.dropout("classifier.5", x, 0.5);
  b.linear("classifier.6", x, spec.num_classes);
  return b.finish();
}

}  // namespace

void register_alexnet_vgg(std::vector<ZooEntry>& entries) {
  entries.push_back({"alexnet", "alexnet", "cnn", {3, 224, 224}, build_alexnet});
  for (int depth : {11, 13, 16, 19}) {
    for (bool batch_norm : {false, true}) {
      std::string name = "vgg" + std::to_string(depth) + (batch_norm ? "_bn" : "");
      entries.push_back({name, "vgg", "cnn", {3, 224, 224}, [name, depth, batch_norm](const ModelSpec& spec) {
                           return build_vgg(name, depth, batch_norm, spec);
                         }});
    }
  }
}

}  // namespace dnncast::models
