// EfficientNet B0-B3 (torchvision/models/efficientnet.py), RegNet X/Y (regnet.py) and ConvNeXt
// (convnext.py) as torchvision builds them. StochasticDepth (EfficientNet's MBConv, ConvNeXt's
// CNBlock) drops whole residual branches at random in training and rescales the survivors: identity
// in expectation and without parameters or MACs, so it is left out of the graph.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/cnn_blocks.h"

namespace dnncast::models {

namespace {

std::string at(const std::string& prefix, size_t index) { return prefix + "." + std::to_string(index); }

// ---- EfficientNet ------------------------------------------------------------------------------

struct MBConvStage {
  int64_t expand_ratio, kernel, stride, input_channels, out_channels, num_layers;
};

// The B0 stages; B1-B3 scale channels by width_mult and layer counts by depth_mult.
const MBConvStage kEfficientNetB0[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},
                                       {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                                       {6, 3, 1, 192, 320, 1}};

struct EfficientNetConfig {
  double width_mult, depth_mult, dropout;
};

Graph build_efficientnet(const std::string& name, const EfficientNetConfig& config, const ModelSpec& spec) {
  GraphBuilder b(name, "efficientnet");
  auto adjust = [&](int64_t channels) { return blocks::make_divisible(channels * config.width_mult, 8); };
  int x = blocks::image_input(b, spec);
  x = blocks::conv_norm_act(b, "features.0.", x, adjust(kEfficientNetB0[0].input_channels), 3, 2, 1, "SiLU");
  size_t feature = 1;
  for (const MBConvStage& stage : kEfficientNetB0) {
    int64_t layers = static_cast<int64_t>(std::ceil(static_cast<double>(stage.num_layers) * config.depth_mult));
    int64_t out_channels = adjust(stage.out_channels);
    for (int64_t layer = 0; layer < layers; ++layer) {
      std::string block = at(at("features", feature), static_cast<size_t>(layer));
      std::string prefix = block + ".block";
      // torchvision copies the stage config and sets input = output, stride 1 after the first layer.
      int64_t in_channels = layer == 0 ? adjust(stage.input_channels) : out_channels;
      int64_t stride = layer == 0 ? stage.stride : 1;
      int64_t expanded = blocks::make_divisible(static_cast<double>(in_channels * stage.expand_ratio), 8);
      int y = x;
      size_t part = 0;
      if (expanded != in_channels) y = blocks::conv_norm_act(b, at(prefix, part++) + ".", y, expanded, 1, 1, 1, "SiLU");
      y = blocks::conv_norm_act(b, at(prefix, part++) + ".", y, expanded, stage.kernel, stride, expanded, "SiLU");
      y = blocks::squeeze_excite(b, at(prefix, part++) + ".", y, std::max<int64_t>(1, in_channels / 4), "SiLU",
                                 "Sigmoid");
      y = blocks::conv_norm_act(b, at(prefix, part++) + ".", y, out_channels, 1, 1, 1, "");
      if (stride == 1 && in_channels == out_channels) y = b.add(block + ".add", y, x);
      x = y;
    }
    ++feature;
  }
  x = blocks::conv_norm_act(b, at("features", feature) + ".", x, 4 * b.channels(x), 1, 1, 1, "SiLU");
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("classifier.0", x, config.dropout);
  b.linear("classifier.1", x, spec.num_classes);
  return b.finish();
}

// ---- RegNet ------------------------------------------------------------------------------------

// Stage depths and widths as BlockParams.from_init_params(depth, w_0, w_a, w_m, group_width) works
// them out for the 400MF models (bottleneck multiplier 1, stride 2 per stage, stem width 32).
struct RegNetConfig {
  std::vector<int64_t> depths, widths;
  int64_t group_width;
  double se_ratio;  // 0: no squeeze-excite (RegNetX)
};

Graph build_regnet(const std::string& name, const RegNetConfig& config, const ModelSpec& spec) {
  GraphBuilder b(name, "regnet");
  int x = blocks::image_input(b, spec);
  x = blocks::conv_norm_act(b, "stem.", x, 32, 3, 2, 1, "ReLU");
  for (size_t stage = 0; stage < config.depths.size(); ++stage) {
    int64_t width_out = config.widths[stage];
    for (int64_t block = 0; block < config.depths[stage]; ++block) {
      std::string prefix = "trunk_output.block" + std::to_string(stage + 1) + ".block" + std::to_string(stage + 1) +
                           "-" + std::to_string(block) + ".";
      int64_t width_in = b.channels(x);
      int64_t stride = block == 0 ? 2 : 1;
      int64_t bottleneck = width_out;  // round(width_out * bottleneck_multiplier 1.0)
      int64_t groups = bottleneck / std::min(config.group_width, bottleneck);
      int shortcut = x;
      if (width_in != width_out || stride != 1)
        shortcut = blocks::conv_norm_act(b, prefix + "proj.", x, width_out, 1, stride, 1, "");
      int y = blocks::conv_norm_act(b, prefix + "f.a.", x, bottleneck, 1, 1, 1, "ReLU");
      y = blocks::conv_norm_act(b, prefix + "f.b.", y, bottleneck, 3, stride, groups, "ReLU");
      if (config.se_ratio > 0)
        y = blocks::squeeze_excite(b, prefix + "f.se.", y,
                                   blocks::python_round(config.se_ratio * static_cast<double>(width_in)), "ReLU",
                                   "Sigmoid");
      y = blocks::conv_norm_act(b, prefix + "f.c.", y, width_out, 1, 1, 1, "");
      x = b.add(prefix + "add", shortcut, y);
      x = b.act(prefix + "activation", "ReLU", x);
    }
  }
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("fc", x, spec.num_classes);
  return b.finish();
}

// ---- ConvNeXt ----------------------------------------------------------------------------------

// LayerNorm2d: channels-last LayerNorm over C between two permutes; the LayerNorm node carries the
// module's path.
int layer_norm_2d(GraphBuilder& b, const std::string& name, int x) {
  int64_t channels = b.channels(x);
  x = b.op(name + ".permute", "Permute", {x}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}});
  x = b.op(name, "LayerNorm", {x}, {{"normalized_shape", std::vector<int64_t>{channels}}, {"eps", 1e-6}});
  return b.op(name + ".permute_back", "Permute", {x}, {{"dims", std::vector<int64_t>{0, 3, 1, 2}}});
}

// CNBlock: depthwise 7x7 -> channels last -> LayerNorm -> Linear 4C -> GELU -> Linear C ->
// channels first, scaled per channel by the (C, 1, 1) layer_scale parameter, plus the input.
int convnext_block(GraphBuilder& b, const std::string& prefix, int x) {
  int64_t dim = b.channels(x);
  int y = b.conv(prefix + ".block.0", x, dim, 7, 1, 3, dim, true);
  y = b.op(prefix + ".block.1", "Permute", {y}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}});
  y = b.op(prefix + ".block.2", "LayerNorm", {y}, {{"normalized_shape", std::vector<int64_t>{dim}}, {"eps", 1e-6}});
  y = b.linear(prefix + ".block.3", y, 4 * dim);
  y = b.act(prefix + ".block.4", "GELU", y);
  y = b.linear(prefix + ".block.5", y, dim);
  y = b.op(prefix + ".block.6", "Permute", {y}, {{"dims", std::vector<int64_t>{0, 3, 1, 2}}});
  y = b.op(prefix + ".layer_scale", "LayerScale", {y}, {{"axis", int64_t{1}}});
  return b.add(prefix + ".add", y, x);
}

Graph build_convnext(const std::string& name, const std::vector<int64_t>& depths, const std::vector<int64_t>& dims,
                     const ModelSpec& spec) {
  GraphBuilder b(name, "convnext");
  int x = blocks::image_input(b, spec);
  x = b.conv("features.0.0", x, dims[0], 4, 4, 0, 1, true);
  x = layer_norm_2d(b, "features.0.1", x);
  size_t feature = 1;
  for (size_t stage = 0; stage < depths.size(); ++stage) {
    for (int64_t block = 0; block < depths[stage]; ++block)
      x = convnext_block(b, at(at("features", feature), static_cast<size_t>(block)), x);
    ++feature;
    if (stage + 1 < depths.size()) {
      x = layer_norm_2d(b, at("features", feature) + ".0", x);
      x = b.conv(at("features", feature) + ".1", x, dims[stage + 1], 2, 2, 0, 1, true);
      ++feature;
    }
  }
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = layer_norm_2d(b, "classifier.0", x);
  x = b.flatten("classifier.1", x);
  b.linear("classifier.2", x, spec.num_classes);
  return b.finish();
}

}  // namespace

void register_efficient(std::vector<ZooEntry>& entries) {
  const EfficientNetConfig efficientnets[] = {{1.0, 1.0, 0.2}, {1.0, 1.1, 0.2}, {1.1, 1.2, 0.3}, {1.2, 1.4, 0.3}};
  for (size_t variant = 0; variant < 4; ++variant) {
    std::string name = "efficientnet_b" + std::to_string(variant);
    EfficientNetConfig config = efficientnets[variant];
    entries.push_back({name, "efficientnet", "cnn", {3, 224, 224}, [name, config](const ModelSpec& spec) {
                         return build_efficientnet(name, config, spec);
                       }});
  }
  const std::pair<const char*, RegNetConfig> regnets[] = {
      {"regnet_x_400mf", {{1, 2, 7, 12}, {32, 64, 160, 400}, 16, 0.0}},
      {"regnet_y_400mf", {{1, 3, 6, 6}, {48, 104, 208, 440}, 8, 0.25}},
  };
  for (const auto& [name_text, config] : regnets) {
    std::string name = name_text;
    RegNetConfig regnet = config;
    entries.push_back({name, "regnet", "cnn", {3, 224, 224}, [name, regnet](const ModelSpec& spec) {
                         return build_regnet(name, regnet, spec);
                       }});
  }
  entries.push_back({"convnext_tiny", "convnext", "cnn", {3, 224, 224}, [](const ModelSpec& spec) {
                       return build_convnext("convnext_tiny", {3, 3, 9, 3}, {96, 192, 384, 768}, spec);
                     }});
}

}  // namespace dnncast::models
