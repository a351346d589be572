// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Losses: cross-entropy and mean
// squared error.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_cross_entropy(int, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const TensorShape& logits = graph_.node(node.inputs[0]).shape;
  return cross_entropy(x, logits.numel() * model_elem(), -1);
}

Tensor Trace::run_mse(int, const Node&, const std::vector<Tensor>& in) { return mse(in[0], in[0].bytes, -1); }

}  // namespace dnncast::memory::detail
