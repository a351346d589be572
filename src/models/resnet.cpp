// ResNet, ResNeXt and Wide ResNet as torchvision builds them (torchvision/models/resnet.py):
// stride on the 3x3 convolution of the bottleneck (ResNet v1.5), convs without bias.
#include "graph/builder.h"
#include "models/zoo.h"

namespace dnncast::models {

namespace {

struct ResNetConfig {
  bool bottleneck;
  std::vector<int> layers;
  int64_t groups = 1;
  int64_t width_per_group = 64;
};

int conv_bn(GraphBuilder& b, const std::string& prefix, const std::string& conv_name, const std::string& bn_name, int x,
            int64_t out, int64_t kernel, int64_t stride, int64_t padding, int64_t groups = 1) {
  int y = b.conv(prefix + conv_name, x, out, kernel, stride, padding, groups, false);
  return b.batchnorm(prefix + bn_name, y);
}

Graph build_resnet(const std::string& name, const ResNetConfig& config, const ModelSpec& spec) {
  GraphBuilder b(name, config.groups > 1 ? "resnext" : (config.width_per_group > 64 ? "wide_resnet" : "resnet"));
  int x = b.input(TensorShape{spec.batch, spec.input[0], spec.input[1], spec.input[2]});
  x = conv_bn(b, "", "conv1", "bn1", x, 64, 7, 2, 3);
  x = b.act("relu", "ReLU", x);
  x = b.maxpool("maxpool", x, 3, 2, 1);
  int64_t expansion = config.bottleneck ? 4 : 1;
  int64_t in_planes = 64;
  for (size_t stage = 0; stage < config.layers.size(); ++stage) {
    int64_t planes = 64 << stage;
    for (int block = 0; block < config.layers[stage]; ++block) {
      std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(block) + ".";
      int64_t stride = (block == 0 && stage > 0) ? 2 : 1;
      int identity = x;
      int y;
      if (config.bottleneck) {
        int64_t width = planes * config.width_per_group / 64 * config.groups;
        y = conv_bn(b, prefix, "conv1", "bn1", x, width, 1, 1, 0);
        y = b.act(prefix + "relu1", "ReLU", y);
        y = conv_bn(b, prefix, "conv2", "bn2", y, width, 3, stride, 1, config.groups);
        y = b.act(prefix + "relu2", "ReLU", y);
        y = conv_bn(b, prefix, "conv3", "bn3", y, planes * expansion, 1, 1, 0);
      } else {
        y = conv_bn(b, prefix, "conv1", "bn1", x, planes, 3, stride, 1);
        y = b.act(prefix + "relu1", "ReLU", y);
        y = conv_bn(b, prefix, "conv2", "bn2", y, planes, 3, 1, 1);
      }
      if (stride != 1 || in_planes != planes * expansion)
        identity = conv_bn(b, prefix, "downsample.0", "downsample.1", x, planes * expansion, 1, stride, 0);
      x = b.add(prefix + "add", y, identity);
      x = b.act(prefix + "relu", "ReLU", x);
      in_planes = planes * expansion;
    }
  }
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("fc", x, spec.num_classes);
  return b.finish();
}

void add(std::vector<ZooEntry>& entries, const std::string& name, ResNetConfig config) {
  std::string family = config.groups > 1 ? "resnext" : (config.width_per_group > 64 ? "wide_resnet" : "resnet");
  entries.push_back({name, family, "cnn", {3, 224, 224}, [name, config](const ModelSpec& spec) {
                       return build_resnet(name, config, spec);
                     }});
}

}  // namespace

void register_resnet(std::vector<ZooEntry>& entries) {
  add(entries, "resnet18", {false, {2, 2, 2, 2}});
  add(entries, "resnet34", {false, {3, 4, 6, 3}});
  add(entries, "resnet50", {true, {3, 4, 6, 3}});
  add(entries, "resnet101", {true, {3, 4, 23, 3}});
  add(entries, "resnet152", {true, {3, 8, 36, 3}});
  add(entries, "resnext50_32x4d", {true, {3, 4, 6, 3}, 32, 4});
  add(entries, "resnext101_32x8d", {true, {3, 4, 23, 3}, 32, 8});
  add(entries, "wide_resnet50_2", {true, {3, 4, 6, 3}, 1, 128});
  add(entries, "wide_resnet101_2", {true, {3, 4, 23, 3}, 1, 128});
}

}  // namespace dnncast::models
