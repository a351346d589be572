// The libtorch executor's ops (profile/executor_internal.h): activations, elementwise ops and pooling.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Activations; those with an in-place variant run it when the in-place rule allows (graph/inplace.h).
void add_activation_impls(std::map<std::string, OpImpl>& impls) {
  impls["ReLU"] = unary([](const at::Tensor& x) { return at::relu(x); }, [](at::Tensor& x) { return at::relu_(x); });
  impls["ReLU6"] = unary([](const at::Tensor& x) { return at::hardtanh(x, 0, 6); },
                         [](at::Tensor& x) { return at::hardtanh_(x, 0, 6); });
  impls["GELU"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                     return at::gelu(in[0], node.attr_str("approximate", "none"));  // "tanh": gelu_pytorch_tanh
                   }};
  impls["SiLU"] = unary([](const at::Tensor& x) { return at::silu(x); }, [](at::Tensor& x) { return at::silu_(x); });
  impls["Sigmoid"] = unary([](const at::Tensor& x) { return at::sigmoid(x); });
  impls["Tanh"] = unary([](const at::Tensor& x) { return at::tanh(x); });
  impls["Hardswish"] =
      unary([](const at::Tensor& x) { return at::hardswish(x); }, [](at::Tensor& x) { return at::hardswish_(x); });
  impls["Hardsigmoid"] = unary([](const at::Tensor& x) { return at::hardsigmoid(x); });
}

// Element-wise ops, dropout and pooling.
void add_elementwise_pool_impls(std::map<std::string, OpImpl>& impls) {
  impls["Softmax"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                        return at::softmax(in[0], node.attr_int("axis", -1));
                      }};
  impls["Add"] = {no_params,
                  [](const Node&, const std::vector<at::Tensor>& in, NodeState&, bool) { return in[0] + in[1]; }};
  impls["Mul"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                    if (in.size() == 1) return in[0] * node.attr_float("scalar", 1.0);  // LoRA's scaling
                    return in[0] * in[1];
                  }};
  impls["Dropout"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                        double p = node.attr_float("p", 0.5);
                        if (p == 0.0) return in[0];
                        return at::dropout(in[0], p, /*train=*/true);
                      }};
  impls["MaxPool2d"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                          std::vector<int64_t> kernel = pair_of(node, "kernel", 1);
                          return at::max_pool2d(in[0], kernel, node.attr_ints("stride", kernel),
                                                pair_of(node, "padding", 0), pair_of(node, "dilation", 1),
                                                node.attr_int("ceil_mode", 0) != 0);
                        }};
  impls["AvgPool2d"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                          std::vector<int64_t> kernel = pair_of(node, "kernel", 1);
                          return at::avg_pool2d(in[0], kernel, node.attr_ints("stride", kernel),
                                                pair_of(node, "padding", 0), node.attr_int("ceil_mode", 0) != 0,
                                                node.attr_int("count_include_pad", 1) != 0);
                        }};
  impls["AdaptiveAvgPool2d"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                                  return at::adaptive_avg_pool2d(in[0], pair_of(node, "output_size", 1));
                                }};
}

}  // namespace dnncast::profile::detail
