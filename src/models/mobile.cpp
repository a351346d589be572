// Small mobile networks as torchvision builds them: MobileNet v2 (models/mobilenetv2.py), MobileNet v3
// (mobilenetv3.py), MNASNet (mnasnet.py), ShuffleNet v2 (shufflenetv2.py), SqueezeNet (squeezenet.py).
// Node names are torchvision's module paths; functional steps get the name of the function.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/cnn_blocks.h"

namespace dnncast::models {

namespace {

std::string at(const std::string& prefix, size_t index) { return prefix + "." + std::to_string(index); }

// ---- MobileNet v2 ------------------------------------------------------------------------------

Graph build_mobilenet_v2(const ModelSpec& spec) {
  GraphBuilder b("mobilenet_v2", "mobilenet");
  int x = blocks::image_input(b, spec);
  struct Stage {
    int64_t expand_ratio, channels, repeats, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  x = blocks::conv_norm_act(b, "features.0.", x, 32, 3, 2, 1, "ReLU6");
  size_t feature = 1;
  for (const Stage& stage : stages) {
    for (int64_t repeat = 0; repeat < stage.repeats; ++repeat, ++feature) {
      std::string prefix = at("features", feature) + ".conv";
      int64_t in_channels = b.channels(x);
      int64_t stride = repeat == 0 ? stage.stride : 1;
      int64_t hidden = in_channels * stage.expand_ratio;
      int y = x;
      size_t layer = 0;
      if (stage.expand_ratio != 1) y = blocks::conv_norm_act(b, at(prefix, layer++) + ".", y, hidden, 1, 1, 1, "ReLU6");
      y = blocks::conv_norm_act(b, at(prefix, layer++) + ".", y, hidden, 3, stride, hidden, "ReLU6");
      y = b.conv(at(prefix, layer++), y, stage.channels, 1, 1, 0, 1, false);
      y = b.batchnorm(at(prefix, layer++), y);
      if (stride == 1 && in_channels == stage.channels) y = b.add(at("features", feature) + ".add", x, y);
      x = y;
    }
  }
  x = blocks::conv_norm_act(b, at("features", feature) + ".", x, 1280, 1, 1, 1, "ReLU6");
  x = b.adaptive_avgpool("adaptive_avg_pool2d", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("classifier.0", x, 0.2);
  b.linear("classifier.1", x, spec.num_classes);
  return b.finish();
}

// ---- MobileNet v3 ------------------------------------------------------------------------------

struct Bneck {
  int64_t input_channels, kernel, expanded_channels, out_channels;
  bool use_se, use_hardswish;
  int64_t stride;
};

Graph build_mobilenet_v3(const std::string& name, const std::vector<Bneck>& setting, int64_t last_channel,
                         const ModelSpec& spec) {
  constexpr double kEps = 1e-3, kMomentum = 0.01;  // BatchNorm2d(eps=0.001, momentum=0.01)
  GraphBuilder b(name, "mobilenet");
  int x = blocks::image_input(b, spec);
  x = blocks::conv_norm_act(b, "features.0.", x, setting.front().input_channels, 3, 2, 1, "Hardswish", kEps, kMomentum);
  size_t feature = 1;
  for (const Bneck& cnf : setting) {
    std::string prefix = at("features", feature) + ".block";
    std::string activation = cnf.use_hardswish ? "Hardswish" : "ReLU";
    int y = x;
    size_t layer = 0;
    if (cnf.expanded_channels != cnf.input_channels)
      y = blocks::conv_norm_act(b, at(prefix, layer++) + ".", y, cnf.expanded_channels, 1, 1, 1, activation, kEps,
                                kMomentum);
    y = blocks::conv_norm_act(b, at(prefix, layer++) + ".", y, cnf.expanded_channels, cnf.kernel, cnf.stride,
                              cnf.expanded_channels, activation, kEps, kMomentum);
    if (cnf.use_se) {
      int64_t squeeze = blocks::make_divisible(static_cast<double>(cnf.expanded_channels / 4), 8);
      y = blocks::squeeze_excite(b, at(prefix, layer++) + ".", y, squeeze, "ReLU", "Hardsigmoid");
    }
    y = blocks::conv_norm_act(b, at(prefix, layer++) + ".", y, cnf.out_channels, 1, 1, 1, "", kEps, kMomentum);
    if (cnf.stride == 1 && cnf.input_channels == cnf.out_channels) y = b.add(at("features", feature) + ".add", y, x);
    x = y;
    ++feature;
  }
  x = blocks::conv_norm_act(b, at("features", feature) + ".", x, 6 * setting.back().out_channels, 1, 1, 1, "Hardswish",
                            kEps, kMomentum);
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.linear("classifier.0", x, last_channel);
  x = b.act("classifier.1", "Hardswish", x);
  x = b.dropout("classifier.2", x, 0.2);
  b.linear("classifier.3", x, spec.num_classes);
  return b.finish();
}

// (input, kernel, expanded, out, SE, Hardswish, stride); width multiplier 1, no dilation.
const std::vector<Bneck> kMobileNetV3Large = {
    {16, 3, 16, 16, false, false, 1},  {16, 3, 64, 24, false, false, 2},  {24, 3, 72, 24, false, false, 1},
    {24, 5, 72, 40, true, false, 2},   {40, 5, 120, 40, true, false, 1},  {40, 5, 120, 40, true, false, 1},
    {40, 3, 240, 80, false, true, 2},  {80, 3, 200, 80, false, true, 1},  {80, 3, 184, 80, false, true, 1},
    {80, 3, 184, 80, false, true, 1},  {80, 3, 480, 112, true, true, 1},  {112, 3, 672, 112, true, true, 1},
    {112, 5, 672, 160, true, true, 2}, {160, 5, 960, 160, true, true, 1}, {160, 5, 960, 160, true, true, 1},
};
const std::vector<Bneck> kMobileNetV3Small = {
    {16, 3, 16, 16, true, false, 2}, {16, 3, 72, 24, false, false, 2}, {24, 3, 88, 24, false, false, 1},
    {24, 5, 96, 40, true, true, 2},  {40, 5, 240, 40, true, true, 1},  {40, 5, 240, 40, true, true, 1},
    {40, 5, 120, 48, true, true, 1}, {48, 5, 144, 48, true, true, 1},  {48, 5, 288, 96, true, true, 2},
    {96, 5, 576, 96, true, true, 1}, {96, 5, 576, 96, true, true, 1},
};

// ---- MNASNet (B1) ------------------------------------------------------------------------------

// _round_to_multiple_of(depth * alpha, 8): like _make_divisible with a 0.9 round-up bias.
int64_t mnasnet_depth(int64_t depth, double alpha) {
  double value = static_cast<double>(depth) * alpha;
  int64_t rounded = std::max<int64_t>(8, static_cast<int64_t>(value + 4.0) / 8 * 8);
  return static_cast<double>(rounded) >= 0.9 * value ? rounded : rounded + 8;
}

Graph build_mnasnet(const std::string& name, double alpha, const ModelSpec& spec) {
  GraphBuilder b(name, "mnasnet");
  constexpr double kMomentum = 1 - 0.9997;  // torchvision mnasnet.py _BN_MOMENTUM (TensorFlow's decay 0.9997)
  std::vector<int64_t> depths;
  for (int64_t depth : {32, 16, 24, 40, 80, 96, 192, 320}) depths.push_back(mnasnet_depth(depth, alpha));
  int x = blocks::image_input(b, spec);
  x = b.conv("layers.0", x, depths[0], 3, 2, 1, 1, false);
  x = b.batchnorm("layers.1", x, 1e-5, kMomentum);
  x = b.act("layers.2", "ReLU", x);
  x = b.conv("layers.3", x, depths[0], 3, 1, 1, depths[0], false);
  x = b.batchnorm("layers.4", x, 1e-5, kMomentum);
  x = b.act("layers.5", "ReLU", x);
  x = b.conv("layers.6", x, depths[1], 1, 1, 0, 1, false);
  x = b.batchnorm("layers.7", x, 1e-5, kMomentum);
  struct Stack {
    int64_t kernel, stride, expansion, repeats;
  };
  const Stack stacks[] = {{3, 2, 3, 3}, {5, 2, 3, 3}, {5, 2, 6, 3}, {3, 1, 6, 2}, {5, 2, 6, 4}, {3, 1, 6, 1}};
  size_t layer = 8;
  for (size_t stack = 0; stack < 6; ++stack, ++layer) {
    const Stack& cnf = stacks[stack];
    for (int64_t repeat = 0; repeat < cnf.repeats; ++repeat) {
      std::string prefix = at(at("layers", layer), static_cast<size_t>(repeat)) + ".layers.";
      int64_t in_channels = b.channels(x);
      int64_t out_channels = depths[stack + 2];
      int64_t stride = repeat == 0 ? cnf.stride : 1;
      int64_t mid = in_channels * cnf.expansion;
      int y = b.conv(prefix + "0", x, mid, 1, 1, 0, 1, false);
      y = b.batchnorm(prefix + "1", y, 1e-5, kMomentum);
      y = b.act(prefix + "2", "ReLU", y);
      y = b.conv(prefix + "3", y, mid, cnf.kernel, stride, cnf.kernel / 2, mid, false);
      y = b.batchnorm(prefix + "4", y, 1e-5, kMomentum);
      y = b.act(prefix + "5", "ReLU", y);
      y = b.conv(prefix + "6", y, out_channels, 1, 1, 0, 1, false);
      y = b.batchnorm(prefix + "7", y, 1e-5, kMomentum);
      if (in_channels == out_channels && stride == 1)
        y = b.add(at(at("layers", layer), static_cast<size_t>(repeat)) + ".add", y, x);
      x = y;
    }
  }
  x = b.conv(at("layers", layer++), x, 1280, 1, 1, 0, 1, false);
  x = b.batchnorm(at("layers", layer++), x, 1e-5, kMomentum);
  x = b.act(at("layers", layer++), "ReLU", x);
  x = blocks::global_mean(b, "mean", x);
  x = b.dropout("classifier.0", x, 0.2);
  b.linear("classifier.1", x, spec.num_classes);
  return b.finish();
}

// ---- ShuffleNet v2 -----------------------------------------------------------------------------

// InvertedResidual: stride 2 runs both branches on the whole input; stride 1 splits the channels in
// two halves (x.chunk(2, dim=1)) and transforms only the second. Then concat and channel shuffle.
int shufflenet_unit(GraphBuilder& b, const std::string& prefix, int x, int64_t out_channels, int64_t stride) {
  int64_t branch_features = out_channels / 2;
  int64_t in_channels = b.channels(x);
  int left = x;
  int right = x;
  if (stride > 1) {
    left = b.conv(prefix + ".branch1.0", x, in_channels, 3, stride, 1, in_channels, false);
    left = b.batchnorm(prefix + ".branch1.1", left);
    left = b.conv(prefix + ".branch1.2", left, branch_features, 1, 1, 0, 1, false);
    left = b.batchnorm(prefix + ".branch1.3", left);
    left = b.act(prefix + ".branch1.4", "ReLU", left);
  } else {
    int64_t half = in_channels / 2;
    left = b.op(prefix + ".chunk.0", "Slice", {x},
                {{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", half}, kSplitPart});
    right = b.op(prefix + ".chunk.1", "Slice", {x},
                 {{"axis", int64_t{1}}, {"start", half}, {"end", in_channels}, kSplitPart});
  }
  right = b.conv(prefix + ".branch2.0", right, branch_features, 1, 1, 0, 1, false);
  right = b.batchnorm(prefix + ".branch2.1", right);
  right = b.act(prefix + ".branch2.2", "ReLU", right);
  right = b.conv(prefix + ".branch2.3", right, branch_features, 3, stride, 1, branch_features, false);
  right = b.batchnorm(prefix + ".branch2.4", right);
  right = b.conv(prefix + ".branch2.5", right, branch_features, 1, 1, 0, 1, false);
  right = b.batchnorm(prefix + ".branch2.6", right);
  right = b.act(prefix + ".branch2.7", "ReLU", right);
  int out = b.concat(prefix + ".cat", {left, right});
  return b.op(prefix + ".channel_shuffle", "ChannelShuffle", {out}, {{"groups", int64_t{2}}});
}

// stages_out_channels: conv1, stage2, stage3, stage4, conv5; stage repeats are 4, 8, 4.
Graph build_shufflenet_v2(const std::string& name, const std::vector<int64_t>& channels, const ModelSpec& spec) {
  GraphBuilder b(name, "shufflenet");
  int x = blocks::image_input(b, spec);
  x = b.conv("conv1.0", x, channels[0], 3, 2, 1, 1, false);
  x = b.batchnorm("conv1.1", x);
  x = b.act("conv1.2", "ReLU", x);
  x = b.maxpool("maxpool", x, 3, 2, 1);
  const int64_t repeats[] = {4, 8, 4};
  for (size_t stage = 0; stage < 3; ++stage) {
    std::string prefix = "stage" + std::to_string(stage + 2);
    for (int64_t unit = 0; unit < repeats[stage]; ++unit)
      x = shufflenet_unit(b, at(prefix, static_cast<size_t>(unit)), x, channels[stage + 1], unit == 0 ? 2 : 1);
  }
  x = b.conv("conv5.0", x, channels[4], 1, 1, 0, 1, false);
  x = b.batchnorm("conv5.1", x);
  x = b.act("conv5.2", "ReLU", x);
  x = blocks::global_mean(b, "mean", x);
  b.linear("fc", x, spec.num_classes);
  return b.finish();
}

// ---- SqueezeNet --------------------------------------------------------------------------------

int fire(GraphBuilder& b, const std::string& prefix, int x, int64_t squeeze, int64_t expand1x1, int64_t expand3x3) {
  x = b.conv(prefix + ".squeeze", x, squeeze, 1);
  x = b.act(prefix + ".squeeze_activation", "ReLU", x);
  int left = b.conv(prefix + ".expand1x1", x, expand1x1, 1);
  left = b.act(prefix + ".expand1x1_activation", "ReLU", left);
  int right = b.conv(prefix + ".expand3x3", x, expand3x3, 3, 1, 1);
  right = b.act(prefix + ".expand3x3_activation", "ReLU", right);
  return b.concat(prefix + ".cat", {left, right});
}

Graph build_squeezenet(const std::string& name, bool version_1_1, const ModelSpec& spec) {
  GraphBuilder b(name, "squeezenet");
  int x = blocks::image_input(b, spec);
  // `features` after the first conv and ReLU: a Fire module (squeeze, expand channels), or {0, 0}
  // for a 3x3/2 ceil-mode max pool.
  struct Fire {
    int64_t squeeze, expand;
  };
  static const std::vector<Fire> layers_1_0 = {{0, 0},    {16, 64},  {16, 64},  {32, 128}, {0, 0},   {32, 128},
                                               {48, 192}, {48, 192}, {64, 256}, {0, 0},    {64, 256}};
  static const std::vector<Fire> layers_1_1 = {{0, 0}, {16, 64},  {16, 64},  {0, 0},    {32, 128}, {32, 128},
                                               {0, 0}, {48, 192}, {48, 192}, {64, 256}, {64, 256}};
  x = version_1_1 ? b.conv("features.0", x, 64, 3, 2) : b.conv("features.0", x, 96, 7, 2);
  x = b.act("features.1", "ReLU", x);
  size_t index = 2;
  for (const Fire& layer : version_1_1 ? layers_1_1 : layers_1_0) {
    if (layer.squeeze == 0)
      x = b.maxpool(at("features", index++), x, 3, 2, 0, true);
    else
      x = fire(b, at("features", index++), x, layer.squeeze, layer.expand, layer.expand);
  }
  x = b.dropout("classifier.0", x, 0.5);
  x = b.conv("classifier.1", x, spec.num_classes, 1);
  x = b.act("classifier.2", "ReLU", x);
  x = b.adaptive_avgpool("classifier.3", x, 1, 1);
  b.flatten("flatten", x);
  return b.finish();
}

}  // namespace

void register_mobile(std::vector<ZooEntry>& entries) {
  const std::vector<int64_t> image{3, 224, 224};
  entries.push_back({"mobilenet_v2", "mobilenet", "cnn", image, build_mobilenet_v2});
  entries.push_back({"mobilenet_v3_large", "mobilenet", "cnn", image, [](const ModelSpec& spec) {
                       return build_mobilenet_v3("mobilenet_v3_large", kMobileNetV3Large, 1280, spec);
                     }});
  entries.push_back({"mobilenet_v3_small", "mobilenet", "cnn", image, [](const ModelSpec& spec) {
                       return build_mobilenet_v3("mobilenet_v3_small", kMobileNetV3Small, 1024, spec);
                     }});
  const std::pair<const char*, double> mnasnets[] = {
      {"mnasnet0_5", 0.5}, {"mnasnet0_75", 0.75}, {"mnasnet1_0", 1.0}, {"mnasnet1_3", 1.3}};
  for (const auto& [name_text, alpha] : mnasnets) {
    std::string name = name_text;
    double width = alpha;
    entries.push_back({name, "mnasnet", "cnn", image,
                       [name, width](const ModelSpec& spec) { return build_mnasnet(name, width, spec); }});
  }
  const std::pair<const char*, std::vector<int64_t>> shufflenets[] = {
      {"shufflenet_v2_x0_5", {24, 48, 96, 192, 1024}},
      {"shufflenet_v2_x1_0", {24, 116, 232, 464, 1024}},
      {"shufflenet_v2_x1_5", {24, 176, 352, 704, 1024}},
      {"shufflenet_v2_x2_0", {24, 244, 488, 976, 2048}},
  };
  for (const auto& [name_text, channels] : shufflenets) {
    std::string name = name_text;
    std::vector<int64_t> widths = channels;
    entries.push_back({name, "shufflenet", "cnn", image,
                       [name, widths](const ModelSpec& spec) { return build_shufflenet_v2(name, widths, spec); }});
  }
  entries.push_back({"squeezenet1_0", "squeezenet", "cnn", image,
                     [](const ModelSpec& spec) { return build_squeezenet("squeezenet1_0", false, spec); }});
  entries.push_back({"squeezenet1_1", "squeezenet", "cnn", image,
                     [](const ModelSpec& spec) { return build_squeezenet("squeezenet1_1", true, spec); }});
}

}  // namespace dnncast::models
