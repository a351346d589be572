// Binary element-wise ops with NumPy broadcasting, and Dropout.
// Add: FLOPs fwd = 1 per output element, bwd = reductions over broadcast axes (~1 per output);
//   nothing saved. Mul: fwd 1, bwd 2 per output (one product per operand); saves both operands.
//   Mul of one input and attr `scalar` (a number): x * scalar (LoRA's scaling), bwd 1 per element, saves nothing.
// Dropout (attr p): fwd 2 per element (mask, scale), bwd 1; saves a 1-byte mask per element.
//   p = 0 is the identity in PyTorch (F.dropout returns its input): no cost, nothing saved.
// LayerScale (attr axis, default 1): y = x * gamma with a learnable gamma broadcast along `axis`
//   (torchvision ConvNeXt's layer_scale of shape C x 1 x 1 on NCHW). params = size of that axis;
//   FLOPs fwd 1 per element, bwd 2 per element (input and gamma gradients); saves its input.
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

TensorShape broadcast(const OpView& view) {
  TensorShape out = view.in(0);
  for (size_t index = 1; index < view.inputs.size(); ++index) {
    const TensorShape& other = view.in(static_cast<int>(index));
    size_t rank = std::max(out.dims.size(), other.dims.size());
    std::vector<int64_t> dims(rank);
    for (size_t axis = 0; axis < rank; ++axis) {
      int64_t left = axis < rank - out.dims.size() ? 1 : out.dims[axis - (rank - out.dims.size())];
      int64_t right = axis < rank - other.dims.size() ? 1 : other.dims[axis - (rank - other.dims.size())];
      if (!(left == right || left == 1 || right == 1))
        view.fail("cannot broadcast " + out.to_string() + " with " + other.to_string());
      dims[axis] = std::max(left, right);
    }
    out.dims = dims;
  }
  return out;
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  OpDef add;
  add.name = "Add";
  add.memory_recipe = "add";
  add.fresh_output = true;
  add.category = "elementwise";
  add.min_inputs = 2;
  add.max_inputs = 2;
  add.shape = broadcast;
  add.cost = [](const OpView& view) {
    OpCost cost;
    cost.flops_fwd = view.node.shape.numel();
    cost.flops_bwd = view.node.shape.numel();
    cost.bytes_read = ops::all_in_bytes(view);
    cost.bytes_written = ops::out_bytes(view);
    return cost;
  };
  registry.add(add);

  OpDef mul;
  mul.name = "Mul";
  mul.memory_recipe = "mul";
  mul.category = "elementwise";
  mul.min_inputs = 1;
  mul.max_inputs = 2;
  mul.shape = [](const OpView& view) {
    const bool scalar = view.node.has_attr("scalar");
    view.check(scalar == (view.inputs.size() == 1), "expected two inputs, or one input and attribute 'scalar'");
    if (scalar) view.node.attr_float("scalar", 1.0);  // type check
    return broadcast(view);
  };
  mul.cost = [](const OpView& view) {
    OpCost cost;
    const bool scalar = view.inputs.size() == 1;
    cost.flops_fwd = view.node.shape.numel();
    cost.flops_bwd = (scalar ? 1 : 2) * view.node.shape.numel();
    cost.bytes_read = ops::all_in_bytes(view);
    cost.bytes_written = ops::out_bytes(view);
    if (!scalar) cost.saved = {ops::saved_input(view, 0), ops::saved_input(view, 1)};
    return cost;
  };
  registry.add(mul);

  OpDef dropout;
  dropout.name = "Dropout";
  dropout.memory_recipe = "dropout";
  dropout.category = "regularization";
  dropout.shape = [](const OpView& view) {
    double p = view.node.attr_float("p", 0.5);
    view.check(p >= 0.0 && p <= 1.0, "dropout probability must be in [0, 1]");
    return view.in(0);
  };
  dropout.cost = [](const OpView& view) {
    OpCost cost;
    if (view.node.attr_float("p", 0.5) == 0.0) return cost;
    int64_t elements = view.node.shape.numel();
    cost.flops_fwd = 2 * elements;
    cost.flops_bwd = elements;
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = ops::out_bytes(view) + elements;
    cost.saved = {ops::saved_extra(elements, "mask")};
    return cost;
  };
  registry.add(dropout);

  OpDef layer_scale;
  layer_scale.name = "LayerScale";
  layer_scale.memory_recipe = "mul";
  layer_scale.feature_kind = "Mul";
  layer_scale.category = "elementwise";
  layer_scale.shape = [](const OpView& view) {
    ops::normalize_axis(view, view.node.attr_int("axis", 1), view.in(0).rank());
    return view.in(0);
  };
  layer_scale.cost = [](const OpView& view) {
    OpCost cost;
    int axis = ops::normalize_axis(view, view.node.attr_int("axis", 1), view.in(0).rank());
    int64_t elements = view.node.shape.numel();
    cost.params = view.in(0)[axis];
    cost.flops_fwd = elements;
    cost.flops_bwd = 2 * elements;
    cost.bytes_read = ops::in_bytes(view, 0) + cost.params * dtype_bytes(view.node.dtype);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0)};
    return cost;
  };
  registry.add(layer_scale);
}

}  // namespace dnncast
