// The libtorch executor's ops (profile/executor_internal.h): batch, layer, group and RMS norms.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Normalizations (BatchNorm in training mode) and ConvNeXt's layer scale.
void add_norm_impls(std::map<std::string, OpImpl>& impls) {
  impls["BatchNorm2d"] = {
      [](GraphModule& m, int index, NodeState& s) {
        int64_t channels = m.graph().node(m.graph().node(index).inputs[0]).shape[1];
        s.params.push_back(m.new_param({channels}, 0, 1.0));
        s.params.push_back(m.new_param({channels}, 0, 0.0));
        s.buffers.push_back(at::zeros({channels}, m.float_options()));
        s.buffers.push_back(at::ones({channels}, m.float_options()));
        s.buffers.push_back(at::zeros({}, m.float_options().dtype(at::kLong)));  // num_batches_tracked
      },
      [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        {
          at::NoGradGuard no_grad;
          s.buffers[2].add_(1);
        }
        return at::batch_norm(in[0], s.params[0], s.params[1], s.buffers[0], s.buffers[1], /*training=*/true,
                              node.attr_float("momentum", 0.1), node.attr_float("eps", 1e-5), /*cudnn_enabled=*/true);
      }};
  impls["LayerNorm"] = {[](GraphModule& m, int index, NodeState& s) {
                          const Node& node = m.graph().node(index);
                          if (node.attr_int("elementwise_affine", 1) == 0) return;
                          std::vector<int64_t> shape = node.attr_ints("normalized_shape");
                          s.params.push_back(m.new_param(shape, 0, 1.0));
                          s.params.push_back(m.new_param(shape, 0, 0.0));
                        },
                        [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                          c10::optional<at::Tensor> weight, bias;
                          if (!s.params.empty()) {
                            weight = s.params[0];
                            bias = s.params[1];
                          }
                          return at::layer_norm(in[0], node.attr_ints("normalized_shape"), weight, bias,
                                                node.attr_float("eps", 1e-5));
                        }};
  impls["GroupNorm"] = {[](GraphModule& m, int index, NodeState& s) {
                          const Node& node = m.graph().node(index);
                          if (node.attr_int("affine", 1) == 0) return;
                          int64_t channels = m.graph().node(node.inputs[0]).shape[1];
                          s.params.push_back(m.new_param({channels}, 0, 1.0));
                          s.params.push_back(m.new_param({channels}, 0, 0.0));
                        },
                        [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                          c10::optional<at::Tensor> weight, bias;
                          if (!s.params.empty()) {
                            weight = s.params[0];
                            bias = s.params[1];
                          }
                          return at::group_norm(in[0], node.attr_int("groups"), weight, bias,
                                                node.attr_float("eps", 1e-5));
                        }};
  impls["RMSNorm"] = {[](GraphModule& m, int index, NodeState& s) {
                        const Graph& g = m.graph();
                        const Node& node = g.node(index);  // GemmaRMSNorm (1 + weight) starts at zeros
                        s.params.push_back(m.new_param({g.node(node.inputs[0]).shape.dims.back()}, 0,
                                                       node.attr_int("unit_offset", 0) != 0 ? 0.0 : 1.0));
                      },
                      [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                        // Hugging Face's LlamaRMSNorm, composite: weight * (x * rsqrt(mean(x^2) + eps));
                        // GemmaRMSNorm's (unit_offset): (x * rsqrt(mean(x^2) + eps)) * (1 + weight).
                        const at::Tensor& x = in[0];
                        at::Tensor rstd =
                            at::rsqrt(x.pow(2).mean({-1}, /*keepdim=*/true) + node.attr_float("eps", 1e-6));
                        if (node.attr_int("unit_offset", 0) == 0) return s.params[0] * (x * rstd);
                        at::Tensor normalized = x * rstd;
                        return normalized * (1.0 + s.params[0]);
                      }};
  impls["LayerScale"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        const TensorShape& in = g.node(node.inputs[0]).shape;
        int64_t axis = wrap_axis(node.attr_int("axis", 1), in.rank());
        std::vector<int64_t> shape{in[static_cast<int>(axis)]};
        for (int64_t rest = axis + 1; rest < in.rank(); ++rest) shape.push_back(1);
        s.params.push_back(m.new_param(shape, 0, 1e-6));  // torchvision ConvNeXt's layer_scale init
      },
      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) { return s.params[0] * in[0]; }};
}

}  // namespace dnncast::profile::detail
