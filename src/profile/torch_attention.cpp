// The libtorch executor's ops (profile/executor_internal.h): attention, rotary embeddings, embeddings of transformers.
#include "profile/executor_internal.h"

namespace dnncast::profile::detail {

// Transformer ops: matmul, embeddings, libtorch 1.13's math attention, ViT's position embedding and class token.
void add_attention_impls(std::map<std::string, OpImpl>& impls) {
  impls["MatMul"] = {no_params, [](const Node&, const std::vector<at::Tensor>& in, NodeState&, bool) {
                       return at::matmul(in[0], in[1]);
                     }};
  impls["Embedding"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Node& node = m.graph().node(index);
        s.params.push_back(m.new_normal({node.attr_int("num_embeddings"), node.attr_int("embedding_dim")}, 1.0));
      },
      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        return at::embedding(s.params[0], in[0]);
      }};
  impls["ScaledDotProductAttention"] = {
      [](GraphModule& m, int index, NodeState& s) {
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        if (node.attr_int("causal", 0) == 0) return;
        int64_t query_len = g.node(node.inputs[0]).shape[2];
        int64_t key_len = g.node(node.inputs[1]).shape[2];
        // Positions a query may not see: key index > query index (upper triangle), and with a sliding window
        // keys `window` or more behind it.
        at::Tensor hidden = at::ones({query_len, key_len}, m.float_options().dtype(at::kBool)).triu(1);
        const int64_t window = node.attr_int("window", 0);
        if (window > 0 && window < query_len)
          hidden = hidden.logical_or(at::ones({query_len, key_len}, m.float_options().dtype(at::kBool)).tril(-window));
        s.buffers.push_back(hidden);
      },
      [](const Node& node, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        // libtorch 1.13's math attention: scale q, q k^T, [soft-cap], [mask], softmax, [dropout], times v.
        const double scale = node.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(in[0].size(-1))));
        at::Tensor scores = at::matmul(in[0] * scale, in[1].transpose(-2, -1));
        const double softcap = node.attr_float("softcap", 0.0);
        if (softcap > 0) {  // Gemma 2: softcap * tanh(scores / softcap)
          at::Tensor bounded = at::tanh(scores / softcap);
          scores = bounded * softcap;
        }
        if (!s.buffers.empty()) scores = scores.masked_fill(s.buffers[0], -std::numeric_limits<double>::infinity());
        at::Tensor probabilities = at::softmax(scores, -1);
        double p = node.attr_float("dropout_p", 0.0);
        if (p > 0) probabilities = at::dropout(probabilities, p, true);
        return at::matmul(probabilities, in[2]);
      }};
  impls["PositionEmbedding"] = {[](GraphModule& m, int index, NodeState& s) {
                                  const Graph& g = m.graph();
                                  const Node& node = g.node(index);
                                  int64_t dim = g.node(node.inputs[0]).shape[2];
                                  s.params.push_back(m.new_normal({1, node.attr_int("length"), dim}, 0.02));
                                },
                                [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                                  int64_t length = in[0].size(1);
                                  if (length == s.params[0].size(1)) return in[0] + s.params[0];
                                  return in[0] + s.params[0].slice(1, 0, length);
                                }};
  impls["RotaryEmbedding"] = {
      [](GraphModule& m, int index, NodeState& s) {
        // cos and sin of position l and frequency theta^(-2i/r), each L x r (the half frequencies twice).
        const Graph& g = m.graph();
        const Node& node = g.node(index);
        const TensorShape& in = g.node(node.inputs[0]).shape;
        int64_t rotary_dim = node.attr_int("rotary_dim", in[3]);
        at::TensorOptions options = m.float_options();
        at::Tensor exponents = at::arange(0, rotary_dim, 2, options) / static_cast<double>(rotary_dim);
        at::Tensor inverse = at::pow(node.attr_float("theta", 10000.0), exponents).reciprocal();
        at::Tensor angles = at::outer(at::arange(in[2], options), inverse);
        angles = at::cat({angles, angles}, -1);
        s.buffers.push_back(angles.cos());
        s.buffers.push_back(angles.sin());
      },
      [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
        const at::Tensor& x = in[0];
        int64_t head_dim = x.size(-1), rotary_dim = s.buffers[0].size(-1), half = rotary_dim / 2;
        at::Tensor part = rotary_dim == head_dim ? x : x.narrow(-1, 0, rotary_dim);
        at::Tensor turned = at::cat({-part.narrow(-1, half, half), part.narrow(-1, 0, half)}, -1);
        at::Tensor rotated = part * s.buffers[0] + turned * s.buffers[1];
        if (rotary_dim == head_dim) return rotated;
        return at::cat({rotated, x.narrow(-1, rotary_dim, head_dim - rotary_dim)}, -1);
      }};
  impls["ClassToken"] = {[](GraphModule& m, int index, NodeState& s) {
                           const Graph& g = m.graph();
                           int64_t dim = g.node(g.node(index).inputs[0]).shape[2];
                           s.params.push_back(m.new_param({1, 1, dim}, 0, 0.0));  // torchvision ViT: zeros
                         },
                         [](const Node&, const std::vector<at::Tensor>& in, NodeState& s, bool) {
                           const at::Tensor& x = in[0];
                           return at::cat({s.params[0].expand({x.size(0), -1, -1}), x}, 1);
                         }};
}

}  // namespace dnncast::profile::detail
