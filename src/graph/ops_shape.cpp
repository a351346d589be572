// Shape ops: no arithmetic. Flatten (start_dim default 1, end_dim default -1) is a view;
// Concat (axis default 1) copies its inputs into the output. Nothing saved for backward.
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

int normalize_axis(const OpView& view, int64_t axis, int rank) {
  int64_t normal = axis < 0 ? axis + rank : axis;
  view.check(normal >= 0 && normal < rank,
             "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int>(normal);
}

OpCost copy_cost(const OpView& view) {
  OpCost cost;
  cost.bytes_read = ops::all_in_bytes(view);
  cost.bytes_written = ops::out_bytes(view);
  return cost;
}

}  // namespace

void register_shape_ops(OpRegistry& registry) {
  OpDef flatten;
  flatten.name = "Flatten";
  flatten.category = "shape";
  flatten.shape = [](const OpView& view) {
    const TensorShape& in = view.in(0);
    int start = normalize_axis(view, view.node.attr_int("start_dim", 1), in.rank());
    int end = normalize_axis(view, view.node.attr_int("end_dim", -1), in.rank());
    view.check(start <= end, "start_dim after end_dim");
    TensorShape out;
    for (int axis = 0; axis < start; ++axis) out.dims.push_back(in[axis]);
    int64_t merged = 1;
    for (int axis = start; axis <= end; ++axis) merged *= in[axis];
    out.dims.push_back(merged);
    for (int axis = end + 1; axis < in.rank(); ++axis) out.dims.push_back(in[axis]);
    return out;
  };
  flatten.cost = [](const OpView&) { return OpCost{}; };
  registry.add(flatten);

  OpDef concat;
  concat.name = "Concat";
  concat.category = "shape";
  concat.min_inputs = 1;
  concat.max_inputs = -1;
  concat.shape = [](const OpView& view) {
    TensorShape out = view.in(0);
    int axis = normalize_axis(view, view.node.attr_int("axis", 1), out.rank());
    for (size_t index = 1; index < view.inputs.size(); ++index) {
      const TensorShape& other = view.in(static_cast<int>(index));
      bool same = other.rank() == out.rank();
      for (int dim = 0; same && dim < out.rank(); ++dim) same = dim == axis || other[dim] == out[dim];
      view.check(same, "input " + std::to_string(index) + " shape " + other.to_string() + " does not match " +
                           view.in(0).to_string() + " outside axis " + std::to_string(axis));
      out.dims[static_cast<size_t>(axis)] += other[axis];
    }
    return out;
  };
  concat.cost = copy_cost;
  registry.add(concat);
}

}  // namespace dnncast
