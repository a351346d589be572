// A mixture of experts' routing, as Hugging Face's sparse MoE blocks (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock,
// DeepSeek-V2's MoE) compute it, split so that each expert's MLP is ordinary Linear nodes (LoRA, QLoRA, autocast and
// the GPU kernel model apply to them as to any Linear):
//   TopKRouting (inputs: router logits T x E, the hidden states; attrs top_k, normalize, scale): softmax over the
//     experts in fp32, the top k, divided by their sum when `normalize`, times `scale`, cast to the hidden states'
//     type: the routing weights, T x k (the hidden states are read for their type only).
//   ExpertGather (input: the hidden states, T tokens; attrs start, count, top_k): the rows of the tokens routed to
//     one expert, count x hidden (hidden_states[top_x]).
//   ExpertCombine (inputs: the expert's output count x hidden, the routing weights, and the sum so far, T x hidden,
//     but for the first expert's, which allocates the zero sum): sum.index_add_(0, tokens, output * weights[slots]).
// Which tokens an expert gets is the balance assumption (models/moe.h): position p of the T x top_k routed slots
// is token p mod T, slot p / T, and expert e takes positions [start, start + count). Every token gets top_k
// distinct experts when no expert takes more than T positions; the routing weights still come from the router.
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

int64_t token_count(const TensorShape& shape) { return shape.numel() / std::max<int64_t>(shape.dims.back(), 1); }

// The positions an expert takes, checked against the T x top_k slots of the routing weights.
void check_positions(const OpView& view, int64_t tokens, int64_t top_k) {
  const int64_t start = view.node.attr_int("start"), count = view.node.attr_int("count");
  view.check(top_k > 0, "top_k must be positive");
  if (!(count > 0 && count <= tokens))
    view.fail("an expert takes 1 to " + std::to_string(tokens) + " tokens, got " + std::to_string(count));
  if (!(start >= 0 && start + count <= checked_mul(tokens, top_k)))
    view.fail("positions [" + std::to_string(start) + ", " + std::to_string(start + count) + ") outside the " +
              std::to_string(tokens * top_k) + " routed slots");
}

OpDef routing_op() {
  OpDef routing;
  routing.name = "TopKRouting";
  routing.memory_recipe = "topk_routing";
  routing.feature_kind = "Softmax";
  routing.category = "activation";
  routing.min_inputs = 2;
  routing.max_inputs = 2;
  routing.required_attrs = {"top_k"};
  routing.shape = [](const OpView& view) {
    TensorShape out = view.in(0);
    const int64_t experts = out.dims.back(), top_k = view.node.attr_int("top_k");
    if (!(top_k > 0 && top_k <= experts))
      view.fail("top_k " + std::to_string(top_k) + " of " + std::to_string(experts) + " experts");
    view.check(token_count(view.in(1)) == token_count(out), "router logits and hidden states differ in tokens");
    out.dims.back() = top_k;
    return out;
  };
  routing.dtype = [](const OpView& view) { return view.in_dtype(1); };
  routing.cost = [](const OpView& view) {
    OpCost cost;
    const int64_t logits = view.in(0).numel();
    cost.flops_fwd = checked_mul(logits, 5);  // exp, sum, divide, and the top-k's comparisons
    cost.flops_bwd = checked_mul(logits, 3);
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = checked_add(checked_mul(logits, 4), ops::out_bytes(view));  // fp32 probabilities
    const int64_t picked = view.node.shape.numel();
    cost.saved = {ops::saved_extra(checked_mul(logits, 4), "probabilities"),
                  ops::saved_extra(checked_mul(picked, 8), "indices")};
    if (view.node.attr_int("normalize", 0) != 0) {  // DivBackward0: the top-k values and their row sums
      cost.saved.push_back(ops::saved_extra(checked_mul(picked, 4), "top-k values"));
      cost.saved.push_back(ops::saved_extra(checked_mul(token_count(view.node.shape), 4), "row sums"));
    }
    return cost;
  };
  return routing;
}

OpDef gather_op() {
  OpDef gather;
  gather.name = "ExpertGather";
  gather.memory_recipe = "expert_gather";
  gather.sized_by_batch = true;  // start and count: its share of the tokens
  gather.feature_kind = "Slice";
  gather.category = "shape";
  gather.required_attrs = {"start", "count", "top_k"};
  gather.shape = [](const OpView& view) {
    const TensorShape& in = view.in(0);
    if (in.rank() < 2) view.fail("expected the hidden states (tokens x width), got " + in.to_string());
    check_positions(view, token_count(in), view.node.attr_int("top_k"));
    return TensorShape{view.node.attr_int("count"), in.dims.back()};
  };
  gather.cost = [](const OpView& view) {
    OpCost cost;
    cost.bytes_read = ops::out_bytes(view);
    cost.bytes_written = ops::out_bytes(view);
    cost.flops_bwd = view.node.shape.numel();  // the gradient scattered back
    return cost;                               // IndexSelectBackward0 keeps only the index, the node's buffer
  };
  return gather;
}

OpDef combine_op() {
  OpDef combine;
  combine.name = "ExpertCombine";
  combine.memory_recipe = "expert_combine";
  combine.sized_by_batch = true;  // start and count: its share of the tokens
  combine.feature_kind = "Add";
  combine.category = "elementwise";
  combine.min_inputs = 2;
  combine.max_inputs = 3;
  combine.required_attrs = {"start", "count"};
  // index_add_ on the sum so far, which only this node reads (moe_mlp builds it so): in place by construction, not
  // by graph/inplace.h's rule for single-input ops.
  combine.shape = [](const OpView& view) {
    const TensorShape& output = view.in(0);
    const TensorShape& weights = view.in(1);
    if (!(output.rank() == 2 && output[0] == view.node.attr_int("count")))
      view.fail("expected the expert's output (count x width), got " + output.to_string());
    check_positions(view, token_count(weights), weights.dims.back());
    TensorShape out{token_count(weights), output[1]};
    if (view.inputs.size() == 3)
      if (view.in(2) != out) view.fail("the sum so far is " + view.in(2).to_string() + ", expected " + out.to_string());
    return out;
  };
  combine.dtype = [](const OpView& view) { return view.in_dtype(1); };
  combine.cost = [](const OpView& view) {
    OpCost cost;
    const int64_t rows = view.in(0).numel();
    cost.flops_fwd = checked_mul(rows, 2);  // the product and the sum
    cost.flops_bwd = checked_mul(rows, 3);
    cost.bytes_read = checked_mul(ops::in_bytes(view, 0), 2);
    cost.bytes_written = ops::in_bytes(view, 0);
    // MulBackward0 keeps the expert's output and its weights, IndexAddBackward0 the weighted output (the index
    // tensors are the node's buffers, made once).
    cost.saved = {ops::saved_input(view, 0, "expert output"),
                  ops::saved_extra(checked_mul(view.in(0)[0], dtype_bytes(view.in_dtype(1))), "weights"),
                  ops::saved_extra(ops::in_bytes(view, 0), "weighted output")};
    return cost;
  };
  return combine;
}

}  // namespace

void register_moe_ops(OpRegistry& registry) {
  registry.add(routing_op());
  registry.add(gather_op());
  registry.add(combine_op());
}

}  // namespace dnncast
