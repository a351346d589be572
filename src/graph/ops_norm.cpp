// Normalisation layers in training mode.
// BatchNorm2d (attrs eps, momentum): params 2C (weight, bias), buffers 2C+1 (running mean/var,
//   num_batches_tracked). FLOPs fwd = 7 per element (mean, variance: 3; normalise, scale, shift: 4),
//   bwd = 9 per element. Saved: input, plus per-channel mean and inverse std (2C floats).
// LayerNorm (normalized_shape: the last k dims of the input, eps, elementwise_affine default 1):
//   params 2*prod(normalized_shape) when affine. rows = numel / prod(normalized_shape).
// GroupNorm (groups, eps, affine default 1): input N x C x *, C divisible by groups; params 2C when
//   affine. rows = N * groups.
// Both: FLOPs fwd = 5 per element (mean 1, variance 2, normalise 2) + 2 with affine (scale, shift);
//   bwd = 7 per element + 2 with affine (weight and bias gradients). Saved (native_layer_norm /
//   native_group_norm): the input and per-row mean and inverse std (2 * rows floats).
// RMSNorm (eps, default 1e-6): y = weight * x / sqrt(mean(x^2) + eps) over the last dimension, a
//   weight and no bias (Llama's, Mistral's LlamaRMSNorm); attr unit_offset 1: x / rms * (1 + weight), Gemma's
//   GemmaRMSNorm (the sum a width-sized tensor, kept for backward). params = the last dimension. FLOPs fwd = 4
//   per element (square, mean, normalise, scale), bwd = 8 per element (input and weight gradients).
//   Saved, as torch 1.13's autograd keeps it for Hugging Face's composite module in fp32: the input,
//   its squares (mean's input: 1.13 keeps it), the normalised x / rms (the weight's factor) and the
//   per-row inverse rms. Memory recipe "generic".
#include "graph/op_helpers.h"

namespace dnncast {

void register_norm_ops(OpRegistry& registry) {
  OpDef batchnorm;
  batchnorm.name = "BatchNorm2d";
  batchnorm.memory_recipe = "batchnorm";
  batchnorm.fresh_output = true;
  batchnorm.category = "norm";
  batchnorm.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 4);
    return view.in(0);
  };
  batchnorm.cost = [](const OpView& view) {
    OpCost cost;
    int64_t channels = view.in(0)[1];
    int64_t elements = view.in(0).numel();
    cost.params = 2 * channels;
    cost.buffers = 2 * channels + 1;
    cost.flops_fwd = 7 * elements;
    cost.flops_bwd = 9 * elements;
    cost.bytes_read = ops::in_bytes(view, 0) + 4 * channels * 4;
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(2 * channels * 4, "mean+invstd")};
    return cost;
  };
  registry.add(batchnorm);

  OpDef layernorm;
  layernorm.name = "LayerNorm";
  layernorm.memory_recipe = "norm";
  layernorm.fresh_output = true;
  layernorm.category = "norm";
  layernorm.required_attrs = {"normalized_shape"};
  layernorm.shape = [](const OpView& view) {
    const TensorShape& in = view.in(0);
    std::vector<int64_t> normalized = view.node.attr_ints("normalized_shape");
    view.check(!normalized.empty(), "normalized_shape is empty");
    if (in.rank() < static_cast<int>(normalized.size()))
      view.fail("normalized_shape " + TensorShape(normalized).to_string() + " has more axes than the input " +
                in.to_string());
    size_t offset = in.dims.size() - normalized.size();
    for (size_t axis = 0; axis < normalized.size(); ++axis)
      if (in.dims[offset + axis] != normalized[axis])
        view.fail("normalized_shape " + TensorShape(normalized).to_string() +
                  " does not match the last dimensions of the input " + in.to_string());
    view.check(view.node.attr_float("eps", 1e-5) >= 0.0, "eps must be non-negative");
    return in;
  };
  layernorm.cost = [](const OpView& view) {
    OpCost cost;
    int64_t normalized = ops::product(view.node.attr_ints("normalized_shape"));
    bool affine = view.node.attr_int("elementwise_affine", 1) != 0;
    int64_t elements = view.in(0).numel();
    int64_t rows = elements / normalized;
    cost.params = affine ? 2 * normalized : 0;
    cost.flops_fwd = (affine ? 7 : 5) * elements;
    cost.flops_bwd = (affine ? 9 : 7) * elements;
    cost.bytes_read = ops::in_bytes(view, 0) + cost.params * dtype_bytes(view.node.dtype);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(2 * rows * 4, "mean+rstd")};
    return cost;
  };
  registry.add(layernorm);

  OpDef groupnorm;
  groupnorm.name = "GroupNorm";
  groupnorm.memory_recipe = "norm";
  groupnorm.fresh_output = true;
  groupnorm.category = "norm";
  groupnorm.required_attrs = {"groups"};
  groupnorm.shape = [](const OpView& view) {
    const TensorShape& in = view.in(0);
    if (in.rank() < 2) view.fail("expected an input N x C x ..., got " + in.to_string());
    int64_t groups = view.node.attr_int("groups");
    view.check(groups > 0, "groups must be positive");
    if (in[1] % groups != 0)
      view.fail("channels " + std::to_string(in[1]) + " not divisible by groups " + std::to_string(groups));
    view.check(view.node.attr_float("eps", 1e-5) >= 0.0, "eps must be non-negative");
    return in;
  };
  groupnorm.cost = [](const OpView& view) {
    OpCost cost;
    int64_t channels = view.in(0)[1];
    bool affine = view.node.attr_int("affine", 1) != 0;
    int64_t elements = view.in(0).numel();
    int64_t rows = view.in(0)[0] * view.node.attr_int("groups");
    cost.params = affine ? 2 * channels : 0;
    cost.flops_fwd = (affine ? 7 : 5) * elements;
    cost.flops_bwd = (affine ? 9 : 7) * elements;
    cost.bytes_read = ops::in_bytes(view, 0) + cost.params * dtype_bytes(view.node.dtype);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(2 * rows * 4, "mean+rstd")};
    return cost;
  };
  registry.add(groupnorm);

  OpDef rmsnorm;
  rmsnorm.name = "RMSNorm";
  rmsnorm.memory_recipe = "rms_norm";
  rmsnorm.feature_kind = "LayerNorm";
  rmsnorm.fresh_output = true;
  rmsnorm.category = "norm";
  rmsnorm.shape = [](const OpView& view) {
    view.check(view.in(0).rank() >= 1, "expected an input of rank 1 or more");
    view.check(view.node.attr_float("eps", 1e-6) >= 0.0, "eps must be non-negative");
    return view.in(0);
  };
  rmsnorm.cost = [](const OpView& view) {
    OpCost cost;
    int64_t width = view.in(0).dims.back();
    int64_t elements = view.in(0).numel();
    cost.params = width;
    cost.flops_fwd = checked_mul(4, elements);
    cost.flops_bwd = checked_mul(8, elements);
    cost.bytes_read = ops::in_bytes(view, 0) + width * dtype_bytes(view.node.dtype);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0), ops::saved_extra(ops::out_bytes(view), "squares"),
                  ops::saved_extra(ops::out_bytes(view), "normalized"), ops::saved_extra(elements / width * 4, "rstd")};
    return cost;
  };
  registry.add(rmsnorm);
}

}  // namespace dnncast
