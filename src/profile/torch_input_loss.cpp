// The libtorch executor's ops (profile/executor_internal.h): inputs and losses.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Graph inputs and losses (their implied targets are buffers).
void add_input_loss_impls(std::map<std::string, OpImpl>& impls) {
  impls["Input"] = {no_params, [](const Node&, const std::vector<at::Tensor>& in, NodeState&, bool) { return in[0]; }};
  impls["CrossEntropyLoss"] = {[](GraphModule& m, int index, NodeState& s) {
                                 const Graph& g = m.graph();
                                 const TensorShape& logits = g.node(g.node(index).inputs[0]).shape;
                                 std::vector<int64_t> target_shape;
                                 for (int axis = 0; axis < logits.rank(); ++axis)
                                   if (axis != 1) target_shape.push_back(logits[axis]);
                                 at::TensorOptions options = m.float_options().dtype(at::kLong);
                                 s.buffers.push_back(m.init_values() ? at::randint(logits[1], target_shape, options)
                                                                     : at::empty(target_shape, options));
                               },
                               [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                                 return at::cross_entropy_loss(in[0], s.buffers[0]);
                               }};
  impls["MSELoss"] = {[](GraphModule& m, int index, NodeState& s) {
                        const Graph& g = m.graph();
                        const Node& node = g.node(index);
                        if (node.inputs.size() == 2) return;
                        std::vector<int64_t> shape = g.node(node.inputs[0]).shape.dims;
                        s.buffers.push_back(m.init_values() ? at::randn(shape, m.float_options())
                                                            : at::empty(shape, m.float_options()));
                      },
                      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                        const at::Tensor& target = in.size() == 2 ? in[1] : s.buffers[0];
                        return at::mse_loss(in[0], target);
                      }};
}

}  // namespace dnncast::profile::detail
