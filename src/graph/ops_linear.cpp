// Linear: y = x W^T + b over the last dimension. Attributes: out_features, bias (0/1, default 1).
// MACs = rows * in_features * out_features where rows = numel(x) / in_features.
// FLOPs fwd = 2 MACs (+ rows*out for the bias); bwd = 4 MACs (+ rows*out).
// Saved for backward: the input.
// Attr tied_to (optional): the name of an Embedding node whose weight this layer shares (GPT-2's
// LM head); the weight then counts in that node's params, not here (the bias still does).
// Graph::validate checks that the node exists and its table is out_features x in_features.
// Attr quantize (nf4 | int8, graph/quantize.h): a frozen weight bitsandbytes stores quantized and dequantizes in
// forward and backward: 3 FLOPs a weight each way, its quantized bytes read and 2 bytes a weight written; nothing
// saved but the quantized weight.
#include "graph/op_helpers.h"

namespace dnncast {

void register_linear_ops(OpRegistry& registry) {
  OpDef linear;
  linear.name = "Linear";
  linear.memory_recipe = "linear";
  linear.fresh_output = true;
  linear.category = "linear";
  linear.required_attrs = {"out_features"};
  linear.shape = [](const OpView& view) {
    if (view.in(0).rank() < 2) view.fail("expected an input of rank 2 or more, got " + view.in(0).to_string());
    int64_t out_features = view.node.attr_int("out_features");
    view.check(out_features > 0, "out_features must be positive");
    view.node.attr_str("tied_to", "");  // type check; the target is checked by Graph::validate
    TensorShape out = view.in(0);
    out.dims.back() = out_features;
    return out;
  };
  linear.cost = [](const OpView& view) {
    OpCost cost;
    int64_t in_features = view.in(0).dims.back();
    int64_t out_features = view.node.shape.dims.back();
    int64_t rows = view.in(0).numel() / in_features;
    bool bias = view.node.attr_int("bias", 1) != 0;
    cost.macs = checked_product({rows, in_features, out_features});
    bool tied = !view.node.attr_str("tied_to", "").empty();
    int64_t weight = checked_mul(in_features, out_features);
    int64_t weights = checked_add(weight, bias ? out_features : 0);
    cost.params = weights - (tied ? weight : 0);
    int64_t bias_flops = bias ? checked_mul(rows, out_features) : 0;
    cost.flops_fwd = checked_add(checked_mul(2, cost.macs), bias_flops);
    cost.flops_bwd = checked_add(checked_mul(4, cost.macs), bias_flops);
    cost.bytes_read = checked_add(ops::in_bytes(view, 0), checked_mul(weights, dtype_bytes(view.node.dtype)));
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0)};
    if (view.node.has_attr("quantize")) {
      // bitsandbytes dequantizes the weight in forward and again in backward (graph/quantize.h): 3 FLOPs a weight
      // each way, the quantized weight read and a 2-byte copy written (the forward's here).
      const bool int8 = view.node.attr_str("quantize", "nf4") == "int8";
      cost.flops_fwd = checked_add(cost.flops_fwd, checked_mul(3, weight));
      cost.flops_bwd = checked_add(cost.flops_bwd, checked_mul(3, weight));
      cost.bytes_read = checked_add(cost.bytes_read, int8 ? weight : weight / 2 + weight / 64);
      cost.bytes_written = checked_add(cost.bytes_written, checked_mul(2, weight));
      cost.saved.clear();  // MatMul4Bit keeps the quantized weight only (a parameter)
    }
    return cost;
  };
  registry.add(linear);
}

}  // namespace dnncast
