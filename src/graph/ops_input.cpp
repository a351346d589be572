// Input: a graph input; attrs shape (ints, batch first), dtype ("f32" default, "i64" for tokens).
#include "core/error.h"
#include "graph/op_helpers.h"

namespace dnncast {

void register_input_ops(OpRegistry& registry) {
  OpDef input;
  input.name = "Input";
  input.memory_recipe = "input";
  input.category = "input";
  input.min_inputs = 0;
  input.max_inputs = 0;
  input.required_attrs = {"shape"};
  input.shape = [](const OpView& view) {
    TensorShape shape(view.node.attr_ints("shape"));
    view.check(shape.rank() >= 1, "shape must have at least one dimension");
    for (int64_t dim : shape.dims)
      if (dim <= 0) view.fail("shape " + shape.to_string() + " has a non-positive dimension");
    return shape;
  };
  input.dtype = [](const OpView& view) {
    try {
      return parse_dtype(view.node.attr_str("dtype", "f32"));
    } catch (const InputError& error) {
      view.fail(error.what());
    }
  };
  input.cost = [](const OpView& view) {
    OpCost cost;
    cost.bytes_written = ops::out_bytes(view);
    return cost;
  };
  registry.add(input);
}

}  // namespace dnncast
