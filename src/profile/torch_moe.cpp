// The libtorch executor's ops (profile/executor_internal.h): a mixture of experts' routing (graph/ops_moe.cpp), as
// Hugging Face's sparse MoE blocks compute it, with the tokens each expert takes fixed by the balance assumption
// (models/moe.h) so that what is measured is what the simulator replays.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

namespace {

// The token (position mod T) and the routing weight's flat index (token * top_k + position / T) of each position
// an expert takes: int64 index tensors made once, kept with the node.
at::Tensor position_index(GraphModule& m, const Node& node, int64_t tokens, int64_t top_k, bool weight_slots) {
  const int64_t start = node.attr_int("start"), count = node.attr_int("count");
  std::vector<int64_t> index(static_cast<size_t>(count));
  for (int64_t position = start; position < start + count; ++position) {
    const int64_t token = position % tokens;
    index[static_cast<size_t>(position - start)] = weight_slots ? token * top_k + position / tokens : token;
  }
  return at::tensor(index, at::TensorOptions().dtype(at::kLong).device(m.device()));
}

int64_t rows_of(const TensorShape& shape) { return shape.numel() / shape.dims.back(); }

}  // namespace

void add_moe_impls(std::map<std::string, OpImpl>& impls) {
  // softmax in fp32, the top k, normalized and scaled as asked, in the hidden states' type.
  impls["TopKRouting"] = {no_params, [](const Node& node, const std::vector<at::Tensor>& in, NodeState&, bool) {
                            at::Tensor probabilities = at::softmax(in[0], -1, at::kFloat);
                            at::Tensor weights = std::get<0>(at::topk(probabilities, node.attr_int("top_k"), -1));
                            if (node.attr_int("normalize", 0) != 0) weights = weights / weights.sum(-1, true);
                            const double scale = node.attr_float("scale", 1.0);
                            if (scale != 1.0) weights = weights * scale;
                            return weights.to(in[1].scalar_type());
                          }};
  // hidden_states[tokens]: the rows of the expert's tokens.
  impls["ExpertGather"] = {[](GraphModule& m, int index, NodeState& s) {
                             const Graph& g = m.graph();
                             const Node& node = g.node(index);
                             s.buffers.push_back(position_index(m, node, rows_of(g.node(node.inputs[0]).shape),
                                                                node.attr_int("top_k"), false));
                           },
                           [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                             return at::index_select(in[0].reshape({-1, in[0].size(-1)}), 0, s.buffers[0]);
                           }};
  // sum.index_add_(0, tokens, output * weights.flatten()[slots].unsqueeze(1)); the first expert's sum is new zeros.
  impls["ExpertCombine"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        const TensorShape& weights = g.node(node.inputs[1]).shape;
        s.buffers.push_back(position_index(m, node, rows_of(weights), weights.dims.back(), false));
        s.buffers.push_back(position_index(m, node, rows_of(weights), weights.dims.back(), true));
      },
      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        const at::Tensor& weights = in[1];
        at::Tensor selected = at::index_select(weights.reshape({-1}), 0, s.buffers[1]).unsqueeze(1);
        at::Tensor contribution = in[0] * selected;
        at::Tensor sum =
            in.size() > 2 ? in[2] : at::zeros({weights.numel() / weights.size(-1), in[0].size(1)}, weights.options());
        return sum.index_add_(0, s.buffers[0], contribution);
      }};
}

}  // namespace dnncast::profile::detail
