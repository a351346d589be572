// The libtorch executor's ops (profile/executor_internal.h): convolutions and the fully connected layer.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Convolutions and the fully connected layer: weights and biases with PyTorch's default init.
void add_conv_linear_impls(std::map<std::string, OpImpl>& impls) {
  impls["Conv2d"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        int64_t in_channels = g.node(node.inputs[0]).shape[1];
        int64_t groups = node.attr_int("groups", 1);
        std::vector<int64_t> kernel = pair_of(node, "kernel", 1);
        int64_t fan_in = in_channels / groups * kernel[0] * kernel[1];
        s.params.push_back(m.new_param({node.attr_int("out_channels"), in_channels / groups, kernel[0], kernel[1]},
                                       fan_in_bound(fan_in)));
        if (node.attr_int("bias", 1) != 0)
          s.params.push_back(m.new_param({node.attr_int("out_channels")}, fan_in_bound(fan_in)));
      },
      [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        c10::optional<at::Tensor> bias;
        if (s.params.size() > 1) bias = s.params[1];
        return at::conv2d(in[0], s.params[0], bias, pair_of(node, "stride", 1), pair_of(node, "padding", 0),
                          pair_of(node, "dilation", 1), node.attr_int("groups", 1));
      }};
  impls["ConvTranspose2d"] = {[](GraphModule& m, int index, NodeState& s) {
                                const Graph& g = m.graph();
                                const Node& node = g.node(index);
                                int64_t in_channels = g.node(node.inputs[0]).shape[1];
                                int64_t out_channels = node.attr_int("out_channels");
                                int64_t groups = node.attr_int("groups", 1);
                                std::vector<int64_t> kernel = pair_of(node, "kernel", 1);
                                // PyTorch's fan-in of a transposed conv weight (C_in x C_out/g x kh x kw) is its dim 1
                                // * kh * kw.
                                int64_t fan_in = out_channels / groups * kernel[0] * kernel[1];
                                s.params.push_back(m.new_param(
                                    {in_channels, out_channels / groups, kernel[0], kernel[1]}, fan_in_bound(fan_in)));
                                if (node.attr_int("bias", 1) != 0)
                                  s.params.push_back(m.new_param({out_channels}, fan_in_bound(fan_in)));
                              },
                              [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                                c10::optional<at::Tensor> bias;
                                if (s.params.size() > 1) bias = s.params[1];
                                return at::conv_transpose2d(in[0], s.params[0], bias, pair_of(node, "stride", 1),
                                                            pair_of(node, "padding", 0),
                                                            pair_of(node, "output_padding", 0),
                                                            node.attr_int("groups", 1), pair_of(node, "dilation", 1));
                              }};
  impls["Linear"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        int64_t in_features = g.node(node.inputs[0]).shape.dims.back();
        int64_t out_features = node.attr_int("out_features");
        std::string tied = node.attr_str("tied_to", "");
        if (!tied.empty()) {
          int target = g.find(tied);
          if (target < 0 || target >= index || g.node(target).op != "Embedding")
            throw InputError("node '" + node.name + "': tied_to '" + tied + "' must name an Embedding node before it");
          s.params.push_back(m.state(target).params.at(0));  // the same tensor: one parameter
        } else {
          s.params.push_back(m.new_param({out_features, in_features}, fan_in_bound(in_features)));
        }
        if (node.attr_int("bias", 1) != 0) s.params.push_back(m.new_param({out_features}, fan_in_bound(in_features)));
      },
      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        c10::optional<at::Tensor> bias;
        if (s.params.size() > 1) bias = s.params[1];
        return at::linear(in[0], s.params[0], bias);
      }};
}

}  // namespace dnncast::profile::detail
