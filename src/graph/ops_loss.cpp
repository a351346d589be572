// Loss ops; output is a scalar (reduction "mean"), f32. Targets are implied (class indices or a
// tensor like the input), not graph nodes.
// CrossEntropyLoss: logits N x C (or N x C x d1 x ..., classes on axis 1, as PyTorch).
//   rows = numel / C. FLOPs fwd = 5 per logit (log-softmax: max, subtract, exp, sum, log) + 1 per row
//   (NLL gather and mean); bwd = 4 per logit (log-softmax backward) + 1 per row (NLL scatter).
//   Saved: the log-softmax (numel f32, a new tensor) and NLL's total weight (one f32).
// MSELoss (1 input with an implied target of the same shape, or 2 inputs of equal shape):
//   FLOPs fwd = 3 per element (subtract, square, sum), bwd = 3 per element (subtract, scale by 2/n,
//   multiply by the incoming gradient). Saves its inputs.
#include "graph/op_helpers.h"

namespace dnncast {

void register_loss_ops(OpRegistry& registry) {
  OpDef cross_entropy;
  cross_entropy.name = "CrossEntropyLoss";
  cross_entropy.memory_recipe = "cross_entropy";
  cross_entropy.feature_kind = "Loss";
  cross_entropy.category = "loss";
  cross_entropy.shape = [](const OpView& view) {
    if (view.in(0).rank() < 2) view.fail("expected logits N x C, got " + view.in(0).to_string());
    return TensorShape{};
  };
  cross_entropy.dtype = [](const OpView&) { return DType::F32; };
  cross_entropy.cost = [](const OpView& view) {
    OpCost cost;
    int64_t logits = view.in(0).numel();
    int64_t rows = logits / view.in(0)[1];
    cost.flops_fwd = 5 * logits + rows;
    cost.flops_bwd = 4 * logits + rows;
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = logits * 4 + ops::out_bytes(view);
    cost.saved = {ops::saved_extra(logits * 4, "log-softmax"), ops::saved_extra(4, "total weight")};
    return cost;
  };
  registry.add(cross_entropy);

  OpDef mse;
  mse.name = "MSELoss";
  mse.memory_recipe = "mse";
  mse.feature_kind = "Loss";
  mse.category = "loss";
  mse.min_inputs = 1;
  mse.max_inputs = 2;
  mse.shape = [](const OpView& view) {
    if (view.inputs.size() == 2)
      if (view.in(0) != view.in(1))
        view.fail("prediction " + view.in(0).to_string() + " and target " + view.in(1).to_string() +
                  " differ in shape");
    return TensorShape{};
  };
  mse.dtype = [](const OpView&) { return DType::F32; };
  mse.cost = [](const OpView& view) {
    OpCost cost;
    int64_t elements = view.in(0).numel();
    cost.flops_fwd = 3 * elements;
    cost.flops_bwd = 3 * elements;
    cost.bytes_read = ops::in_bytes(view, 0) * 2;  // prediction and target
    cost.bytes_written = ops::out_bytes(view);
    for (size_t input = 0; input < view.inputs.size(); ++input)
      cost.saved.push_back(ops::saved_input(view, static_cast<int>(input)));
    return cost;
  };
  registry.add(mse);
}

}  // namespace dnncast
