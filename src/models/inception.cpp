// GoogLeNet and Inception v3 as torchvision builds them (torchvision/models/googlenet.py,
// inception.py), auxiliary classifiers off: they only run in training mode with aux_logits=True,
// and torchvision's parameter counts for inference leave them out too. transform_input only
// rescales the three input channels (no parameters, no MACs) and is left out. Every BasicConv2d
// is conv (no bias) -> BatchNorm2d (eps 0.001) -> ReLU, named prefix.conv / prefix.bn / prefix.relu.
#include <string>
#include <vector>

#include "models/cnn_blocks.h"

namespace dnncast::models {

namespace {

int basic_conv(GraphBuilder& b, const std::string& prefix, int x, int64_t out_channels, int64_t kernel,
               int64_t stride = 1, int64_t padding = 0) {
  x = b.conv(prefix + ".conv", x, out_channels, kernel, stride, padding, 1, false);
  x = b.batchnorm(prefix + ".bn", x, 1e-3);
  return b.act(prefix + ".relu", "ReLU", x);
}

// Non-square kernels of Inception v3 (1x7, 7x1, 1x3, 3x1), "same" padding.
int basic_conv_hw(GraphBuilder& b, const std::string& prefix, int x, int64_t out_channels, int64_t kernel_h,
                  int64_t kernel_w) {
  x = b.conv2(prefix + ".conv", x, out_channels, {kernel_h, kernel_w}, {1, 1}, {kernel_h / 2, kernel_w / 2}, 1, false);
  x = b.batchnorm(prefix + ".bn", x, 1e-3);
  return b.act(prefix + ".relu", "ReLU", x);
}

// ---- GoogLeNet ---------------------------------------------------------------------------------

struct GoogLeNetInception {
  const char* name;
  int64_t ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj;
};

int googlenet_inception(GraphBuilder& b, const GoogLeNetInception& block, int x) {
  std::string prefix = block.name;
  int branch1 = basic_conv(b, prefix + ".branch1", x, block.ch1x1, 1);
  int branch2 = basic_conv(b, prefix + ".branch2.0", x, block.ch3x3red, 1);
  branch2 = basic_conv(b, prefix + ".branch2.1", branch2, block.ch3x3, 3, 1, 1);
  // torchvision's "5x5" branch uses a 3x3 kernel (a known quirk kept for its weights).
  int branch3 = basic_conv(b, prefix + ".branch3.0", x, block.ch5x5red, 1);
  branch3 = basic_conv(b, prefix + ".branch3.1", branch3, block.ch5x5, 3, 1, 1);
  int branch4 = b.maxpool(prefix + ".branch4.0", x, 3, 1, 1, true);
  branch4 = basic_conv(b, prefix + ".branch4.1", branch4, block.pool_proj, 1);
  return b.concat(prefix + ".cat", {branch1, branch2, branch3, branch4});
}

Graph build_googlenet(const ModelSpec& spec) {
  GraphBuilder b("googlenet", "googlenet");
  int x = blocks::image_input(b, spec);
  x = basic_conv(b, "conv1", x, 64, 7, 2, 3);
  x = b.maxpool("maxpool1", x, 3, 2, 0, true);
  x = basic_conv(b, "conv2", x, 64, 1);
  x = basic_conv(b, "conv3", x, 192, 3, 1, 1);
  x = b.maxpool("maxpool2", x, 3, 2, 0, true);
  x = googlenet_inception(b, {"inception3a", 64, 96, 128, 16, 32, 32}, x);
  x = googlenet_inception(b, {"inception3b", 128, 128, 192, 32, 96, 64}, x);
  x = b.maxpool("maxpool3", x, 3, 2, 0, true);
  x = googlenet_inception(b, {"inception4a", 192, 96, 208, 16, 48, 64}, x);
  x = googlenet_inception(b, {"inception4b", 160, 112, 224, 24, 64, 64}, x);
  x = googlenet_inception(b, {"inception4c", 128, 128, 256, 24, 64, 64}, x);
  x = googlenet_inception(b, {"inception4d", 112, 144, 288, 32, 64, 64}, x);
  x = googlenet_inception(b, {"inception4e", 256, 160, 320, 32, 128, 128}, x);
  x = b.maxpool("maxpool4", x, 2, 2, 0, true);
  x = googlenet_inception(b, {"inception5a", 256, 160, 320, 32, 128, 128}, x);
  x = googlenet_inception(b, {"inception5b", 384, 192, 384, 48, 128, 128}, x);
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.flatten("flatten", x);
  x = b.dropout("dropout", x, 0.2);
  b.linear("fc", x, spec.num_classes);
  return b.finish();
}

// ---- Inception v3 ------------------------------------------------------------------------------

int inception_a(GraphBuilder& b, const std::string& p, int x, int64_t pool_features) {
  int branch1x1 = basic_conv(b, p + ".branch1x1", x, 64, 1);
  int branch5x5 = basic_conv(b, p + ".branch5x5_1", x, 48, 1);
  branch5x5 = basic_conv(b, p + ".branch5x5_2", branch5x5, 64, 5, 1, 2);
  int branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_1", x, 64, 1);
  branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_2", branch3x3dbl, 96, 3, 1, 1);
  branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_3", branch3x3dbl, 96, 3, 1, 1);
  int branch_pool = b.avgpool(p + ".avg_pool2d", x, 3, 1, 1);
  branch_pool = basic_conv(b, p + ".branch_pool", branch_pool, pool_features, 1);
  return b.concat(p + ".cat", {branch1x1, branch5x5, branch3x3dbl, branch_pool});
}

int inception_b(GraphBuilder& b, const std::string& p, int x) {
  int branch3x3 = basic_conv(b, p + ".branch3x3", x, 384, 3, 2);
  int branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_1", x, 64, 1);
  branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_2", branch3x3dbl, 96, 3, 1, 1);
  branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_3", branch3x3dbl, 96, 3, 2);
  int branch_pool = b.maxpool(p + ".max_pool2d", x, 3, 2);
  return b.concat(p + ".cat", {branch3x3, branch3x3dbl, branch_pool});
}

int inception_c(GraphBuilder& b, const std::string& p, int x, int64_t c7) {
  int branch1x1 = basic_conv(b, p + ".branch1x1", x, 192, 1);
  int branch7x7 = basic_conv(b, p + ".branch7x7_1", x, c7, 1);
  branch7x7 = basic_conv_hw(b, p + ".branch7x7_2", branch7x7, c7, 1, 7);
  branch7x7 = basic_conv_hw(b, p + ".branch7x7_3", branch7x7, 192, 7, 1);
  int branch7x7dbl = basic_conv(b, p + ".branch7x7dbl_1", x, c7, 1);
  branch7x7dbl = basic_conv_hw(b, p + ".branch7x7dbl_2", branch7x7dbl, c7, 7, 1);
  branch7x7dbl = basic_conv_hw(b, p + ".branch7x7dbl_3", branch7x7dbl, c7, 1, 7);
  branch7x7dbl = basic_conv_hw(b, p + ".branch7x7dbl_4", branch7x7dbl, c7, 7, 1);
  branch7x7dbl = basic_conv_hw(b, p + ".branch7x7dbl_5", branch7x7dbl, 192, 1, 7);
  int branch_pool = b.avgpool(p + ".avg_pool2d", x, 3, 1, 1);
  branch_pool = basic_conv(b, p + ".branch_pool", branch_pool, 192, 1);
  return b.concat(p + ".cat", {branch1x1, branch7x7, branch7x7dbl, branch_pool});
}

int inception_d(GraphBuilder& b, const std::string& p, int x) {
  int branch3x3 = basic_conv(b, p + ".branch3x3_1", x, 192, 1);
  branch3x3 = basic_conv(b, p + ".branch3x3_2", branch3x3, 320, 3, 2);
  int branch7x7x3 = basic_conv(b, p + ".branch7x7x3_1", x, 192, 1);
  branch7x7x3 = basic_conv_hw(b, p + ".branch7x7x3_2", branch7x7x3, 192, 1, 7);
  branch7x7x3 = basic_conv_hw(b, p + ".branch7x7x3_3", branch7x7x3, 192, 7, 1);
  branch7x7x3 = basic_conv(b, p + ".branch7x7x3_4", branch7x7x3, 192, 3, 2);
  int branch_pool = b.maxpool(p + ".max_pool2d", x, 3, 2);
  return b.concat(p + ".cat", {branch3x3, branch7x7x3, branch_pool});
}

int inception_e(GraphBuilder& b, const std::string& p, int x) {
  int branch1x1 = basic_conv(b, p + ".branch1x1", x, 320, 1);
  int branch3x3 = basic_conv(b, p + ".branch3x3_1", x, 384, 1);
  int branch3x3_a = basic_conv_hw(b, p + ".branch3x3_2a", branch3x3, 384, 1, 3);
  int branch3x3_b = basic_conv_hw(b, p + ".branch3x3_2b", branch3x3, 384, 3, 1);
  branch3x3 = b.concat(p + ".cat_3x3", {branch3x3_a, branch3x3_b});
  int branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_1", x, 448, 1);
  branch3x3dbl = basic_conv(b, p + ".branch3x3dbl_2", branch3x3dbl, 384, 3, 1, 1);
  int branch3x3dbl_a = basic_conv_hw(b, p + ".branch3x3dbl_3a", branch3x3dbl, 384, 1, 3);
  int branch3x3dbl_b = basic_conv_hw(b, p + ".branch3x3dbl_3b", branch3x3dbl, 384, 3, 1);
  branch3x3dbl = b.concat(p + ".cat_3x3dbl", {branch3x3dbl_a, branch3x3dbl_b});
  int branch_pool = b.avgpool(p + ".avg_pool2d", x, 3, 1, 1);
  branch_pool = basic_conv(b, p + ".branch_pool", branch_pool, 192, 1);
  return b.concat(p + ".cat", {branch1x1, branch3x3, branch3x3dbl, branch_pool});
}

Graph build_inception_v3(const ModelSpec& spec) {
  GraphBuilder b("inception_v3", "inception");
  int x = blocks::image_input(b, spec);
  x = basic_conv(b, "Conv2d_1a_3x3", x, 32, 3, 2);
  x = basic_conv(b, "Conv2d_2a_3x3", x, 32, 3);
  x = basic_conv(b, "Conv2d_2b_3x3", x, 64, 3, 1, 1);
  x = b.maxpool("maxpool1", x, 3, 2);
  x = basic_conv(b, "Conv2d_3b_1x1", x, 80, 1);
  x = basic_conv(b, "Conv2d_4a_3x3", x, 192, 3);
  x = b.maxpool("maxpool2", x, 3, 2);
  x = inception_a(b, "Mixed_5b", x, 32);
  x = inception_a(b, "Mixed_5c", x, 64);
  x = inception_a(b, "Mixed_5d", x, 64);
  x = inception_b(b, "Mixed_6a", x);
  x = inception_c(b, "Mixed_6b", x, 128);
  x = inception_c(b, "Mixed_6c", x, 160);
  x = inception_c(b, "Mixed_6d", x, 160);
  x = inception_c(b, "Mixed_6e", x, 192);
  x = inception_d(b, "Mixed_7a", x);
  x = inception_e(b, "Mixed_7b", x);
  x = inception_e(b, "Mixed_7c", x);
  x = b.adaptive_avgpool("avgpool", x, 1, 1);
  x = b.dropout("dropout", x, 0.5);
  x = b.flatten("flatten", x);
  b.linear("fc", x, spec.num_classes);
  return b.finish();
}

}  // namespace

void register_inception(std::vector<ZooEntry>& entries) {
  entries.push_back({"googlenet", "googlenet", "cnn", {3, 224, 224}, build_googlenet});
  entries.push_back({"inception_v3", "inception", "cnn", {3, 299, 299}, build_inception_v3});
}

}  // namespace dnncast::models
