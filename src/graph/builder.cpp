#include "graph/builder.h"

namespace dnncast {

GraphBuilder::GraphBuilder(std::string name, std::string family) {
  graph_.name = std::move(name);
  graph_.family = std::move(family);
}

int GraphBuilder::op(const std::string& name, const std::string& op_name, std::vector<int> inputs,
                     std::map<std::string, AttrValue> attrs) {
  Node node;
  node.name = name;
  node.op = op_name;
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  if (block_ >= 0) node.attrs["block"] = block_;
  int index = graph_.add(std::move(node));
  graph_.infer_node(index);
  return index;
}

int GraphBuilder::input(const TensorShape& shape, DType dtype, const std::string& name) {
  return op(name, "Input", {}, {{"shape", shape.dims}, {"dtype", std::string(dtype_name(dtype))}});
}

int GraphBuilder::conv(const std::string& name, int x, int64_t out_channels, int64_t kernel, int64_t stride,
                       int64_t padding, int64_t groups, bool bias, int64_t dilation) {
  std::map<std::string, AttrValue> attrs{{"out_channels", out_channels},
                                         {"kernel", std::vector<int64_t>{kernel, kernel}},
                                         {"stride", std::vector<int64_t>{stride, stride}},
                                         {"padding", std::vector<int64_t>{padding, padding}},
                                         {"groups", groups},
                                         {"bias", int64_t{bias ? 1 : 0}}};
  if (dilation != 1) attrs["dilation"] = std::vector<int64_t>{dilation, dilation};
  return op(name, "Conv2d", {x}, std::move(attrs));
}

int GraphBuilder::conv2(const std::string& name, int x, int64_t out_channels, std::vector<int64_t> kernel,
                        std::vector<int64_t> stride, std::vector<int64_t> padding, int64_t groups, bool bias) {
  return op(name, "Conv2d", {x},
            {{"out_channels", out_channels},
             {"kernel", std::move(kernel)},
             {"stride", std::move(stride)},
             {"padding", std::move(padding)},
             {"groups", groups},
             {"bias", int64_t{bias ? 1 : 0}}});
}

int GraphBuilder::batchnorm(const std::string& name, int x, double eps, double momentum) {
  std::map<std::string, AttrValue> attrs{{"eps", eps}};
  if (momentum != 0.1) attrs["momentum"] = momentum;
  return op(name, "BatchNorm2d", {x}, attrs);
}

int GraphBuilder::act(const std::string& name, const std::string& op_name, int x) { return op(name, op_name, {x}); }

int GraphBuilder::linear(const std::string& name, int x, int64_t out_features, bool bias) {
  return op(name, "Linear", {x}, {{"out_features", out_features}, {"bias", int64_t{bias ? 1 : 0}}});
}

int GraphBuilder::maxpool(const std::string& name, int x, int64_t kernel, int64_t stride, int64_t padding,
                          bool ceil_mode) {
  return op(name, "MaxPool2d", {x},
            {{"kernel", std::vector<int64_t>{kernel, kernel}},
             {"stride", std::vector<int64_t>{stride, stride}},
             {"padding", std::vector<int64_t>{padding, padding}},
             {"ceil_mode", int64_t{ceil_mode ? 1 : 0}}});
}

int GraphBuilder::avgpool(const std::string& name, int x, int64_t kernel, int64_t stride, int64_t padding,
                          bool ceil_mode, bool count_include_pad) {
  return op(name, "AvgPool2d", {x},
            {{"kernel", std::vector<int64_t>{kernel, kernel}},
             {"stride", std::vector<int64_t>{stride, stride}},
             {"padding", std::vector<int64_t>{padding, padding}},
             {"ceil_mode", int64_t{ceil_mode ? 1 : 0}},
             {"count_include_pad", int64_t{count_include_pad ? 1 : 0}}});
}

int GraphBuilder::adaptive_avgpool(const std::string& name, int x, int64_t height, int64_t width) {
  return op(name, "AdaptiveAvgPool2d", {x}, {{"output_size", std::vector<int64_t>{height, width}}});
}

int GraphBuilder::flatten(const std::string& name, int x, int64_t start_dim) {
  return op(name, "Flatten", {x}, {{"start_dim", start_dim}});
}

int GraphBuilder::add(const std::string& name, int a, int b) { return op(name, "Add", {a, b}); }
int GraphBuilder::mul(const std::string& name, int a, int b) { return op(name, "Mul", {a, b}); }

int GraphBuilder::concat(const std::string& name, std::vector<int> xs, int64_t axis) {
  return op(name, "Concat", std::move(xs), {{"axis", axis}});
}

int GraphBuilder::dropout(const std::string& name, int x, double p) { return op(name, "Dropout", {x}, {{"p", p}}); }

Graph GraphBuilder::finish() {
  // op() inferred each node as it came and graph_ is private: inferring them all again (validate()) was
  // half the time of building a zoo or synthetic network.
  graph_.validate_inferred();
  return std::move(graph_);
}

}  // namespace dnncast
