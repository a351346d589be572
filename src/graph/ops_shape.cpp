// Shape ops: no arithmetic, nothing saved for backward.
// Flatten (start_dim default 1, end_dim default -1): a view, no cost.
// Concat (axis default 1): copies its inputs into the output (bytes read + written).
// Reshape (shape: ints; one -1 is inferred from the element count; 0 keeps the input's dimension
//   at that position): a view, no cost.
// Permute (dims: a permutation of the axes, negatives allowed), Transpose (dim0, dim1): views in
//   PyTorch, no cost; attr contiguous=1 (default 0) adds the copy of .contiguous(): bytes read and
//   written = the tensor.
// Slice (axis, start, end; negatives count from the end, end clamped to the size, step 1): the view
//   x[..., start:end, ...], no cost.
// ChannelShuffle (groups): N x C x H x W with C divisible by groups; torchvision's
//   view/transpose/contiguous/view is one copy: bytes read + written, no FLOPs.
// RepeatInterleave (axis, repeats): each slice along `axis` repeated `repeats` times in place
//   (torch.repeat_interleave; Hugging Face's repeat_kv, which widens grouped-query attention's k and v
//   to every query head): a copy, bytes read + written; backward sums the repeats, (repeats - 1) FLOPs
//   per input element. Memory recipe "generic".
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

using ops::normalize_axis;

OpCost copy_cost(const OpView& view) {
  OpCost cost;
  cost.bytes_read = ops::all_in_bytes(view);
  cost.bytes_written = ops::out_bytes(view);
  return cost;
}

OpCost view_cost(const OpView& view) {
  if (view.node.attr_int("contiguous", 0) != 0) return copy_cost(view);
  return OpCost{};
}

TensorShape permuted(const OpView& view, const std::vector<int64_t>& dims) {
  const TensorShape& in = view.in(0);
  if (static_cast<int>(dims.size()) != in.rank())
    view.fail("permutation " + TensorShape(dims).to_string() + " has " + std::to_string(dims.size()) + " axes, input " +
              in.to_string() + " has " + std::to_string(in.rank()));
  std::vector<bool> used(dims.size(), false);
  TensorShape out;
  for (int64_t axis : dims) {
    int normal = normalize_axis(view, axis, in.rank());
    if (used[static_cast<size_t>(normal)]) view.fail("axis " + std::to_string(axis) + " repeated in the permutation");
    used[static_cast<size_t>(normal)] = true;
    out.dims.push_back(in[normal]);
  }
  return out;
}

OpDef flatten_op() {
  OpDef flatten;
  flatten.name = "Flatten";
  flatten.memory_recipe = "reshape";
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
  return flatten;
}

OpDef concat_op() {
  OpDef concat;
  concat.name = "Concat";
  concat.memory_recipe = "concat";
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
      if (!same)
        view.fail("input " + std::to_string(index) + " shape " + other.to_string() + " does not match " +
                  view.in(0).to_string() + " outside axis " + std::to_string(axis));
      out.dims[static_cast<size_t>(axis)] += other[axis];
    }
    return out;
  };
  concat.cost = copy_cost;
  return concat;
}

OpDef reshape_op() {
  OpDef reshape;
  reshape.name = "Reshape";
  reshape.memory_recipe = "reshape";
  reshape.category = "shape";
  reshape.required_attrs = {"shape"};
  reshape.shape = [](const OpView& view) {
    const TensorShape& in = view.in(0);
    std::vector<int64_t> dims = view.node.attr_ints("shape");
    view.check(!dims.empty(), "attribute 'shape' is empty");
    int inferred = -1;
    int64_t known = 1;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      if (dims[axis] == -1) {
        if (inferred >= 0) view.fail("attribute 'shape' " + TensorShape(dims).to_string() + " has more than one -1");
        inferred = static_cast<int>(axis);
        continue;
      }
      if (dims[axis] == 0) {
        if (static_cast<int>(axis) >= in.rank())
          view.fail("shape entry 0 at position " + std::to_string(axis) + " but the input " + in.to_string() +
                    " has rank " + std::to_string(in.rank()));
        dims[axis] = in[static_cast<int>(axis)];
      }
      if (dims[axis] <= 0) view.fail("shape entry " + std::to_string(dims[axis]) + " must be positive, 0 or -1");
      // known never exceeds the input's elements, so the product cannot wrap (a wrap to 0 was a SIGFPE).
      if (dims[axis] > in.numel() / known)
        view.fail("cannot reshape " + in.to_string() + " (" + std::to_string(in.numel()) + " elements) into " +
                  TensorShape(view.node.attr_ints("shape")).to_string());
      known *= dims[axis];
    }
    if (inferred >= 0) {
      if (in.numel() % known != 0)
        view.fail("cannot reshape " + in.to_string() + " (" + std::to_string(in.numel()) + " elements) with -1 and " +
                  std::to_string(known) + " known");
      dims[static_cast<size_t>(inferred)] = in.numel() / known;
    }
    TensorShape out(dims);
    if (out.numel() != in.numel())
      view.fail("cannot reshape " + in.to_string() + " (" + std::to_string(in.numel()) + " elements) into " +
                out.to_string() + " (" + std::to_string(out.numel()) + ")");
    return out;
  };
  reshape.cost = [](const OpView&) { return OpCost{}; };
  return reshape;
}

OpDef permute_op() {
  OpDef permute;
  permute.name = "Permute";
  permute.memory_recipe = "permute";
  permute.category = "shape";
  permute.required_attrs = {"dims"};
  permute.shape = [](const OpView& view) { return permuted(view, view.node.attr_ints("dims")); };
  permute.cost = view_cost;
  return permute;
}

OpDef transpose_op() {
  OpDef transpose;
  transpose.name = "Transpose";
  transpose.memory_recipe = "permute";
  transpose.feature_kind = "Permute";
  transpose.category = "shape";
  transpose.required_attrs = {"dim0", "dim1"};
  transpose.shape = [](const OpView& view) {
    int rank = view.in(0).rank();
    int dim0 = normalize_axis(view, view.node.attr_int("dim0"), rank);
    int dim1 = normalize_axis(view, view.node.attr_int("dim1"), rank);
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int axis = 0; axis < rank; ++axis) dims[static_cast<size_t>(axis)] = axis;
    std::swap(dims[static_cast<size_t>(dim0)], dims[static_cast<size_t>(dim1)]);
    return permuted(view, dims);
  };
  transpose.cost = view_cost;
  return transpose;
}

OpDef slice_op() {
  OpDef slice;
  slice.name = "Slice";
  slice.memory_recipe = "slice";
  slice.category = "shape";
  slice.required_attrs = {"axis", "start", "end"};
  slice.shape = [](const OpView& view) {
    TensorShape out = view.in(0);
    int axis = normalize_axis(view, view.node.attr_int("axis"), out.rank());
    int64_t size = out[axis];
    int64_t start = view.node.attr_int("start");
    int64_t end = view.node.attr_int("end");
    if (start < 0) start += size;
    if (end < 0) end += size;
    end = std::min(end, size);
    if (!(start >= 0 && start < end))
      view.fail("empty or out-of-range slice [" + std::to_string(view.node.attr_int("start")) + ", " +
                std::to_string(view.node.attr_int("end")) + ") of axis " + std::to_string(axis) + " (size " +
                std::to_string(size) + ")");
    out.dims[static_cast<size_t>(axis)] = end - start;
    return out;
  };
  slice.cost = [](const OpView&) { return OpCost{}; };
  return slice;
}

OpDef shuffle_op() {
  OpDef shuffle;
  shuffle.name = "ChannelShuffle";
  shuffle.memory_recipe = "channel_shuffle";
  shuffle.category = "shape";
  shuffle.required_attrs = {"groups"};
  shuffle.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 4);
    int64_t groups = view.node.attr_int("groups");
    int64_t channels = view.in(0)[1];
    view.check(groups > 0, "groups must be positive");
    if (channels % groups != 0)
      view.fail("channels " + std::to_string(channels) + " not divisible by groups " + std::to_string(groups));
    return view.in(0);
  };
  shuffle.cost = copy_cost;
  return shuffle;
}

OpDef repeat_op() {
  OpDef repeat;
  repeat.name = "RepeatInterleave";
  repeat.memory_recipe = "repeat_kv";
  repeat.feature_kind = "Concat";
  repeat.category = "shape";
  repeat.required_attrs = {"axis", "repeats"};
  repeat.shape = [](const OpView& view) {
    TensorShape out = view.in(0);
    int axis = normalize_axis(view, view.node.attr_int("axis"), out.rank());
    int64_t repeats = view.node.attr_int("repeats");
    view.check(repeats > 0, "repeats must be positive");
    out.dims[static_cast<size_t>(axis)] = checked_mul(out.dims[static_cast<size_t>(axis)], repeats);
    return out;
  };
  repeat.cost = [](const OpView& view) {
    OpCost cost = copy_cost(view);
    cost.flops_bwd = checked_mul(view.node.attr_int("repeats") - 1, view.in(0).numel());
    return cost;
  };
  return repeat;
}

}  // namespace

void register_shape_ops(OpRegistry& registry) {
  registry.add(flatten_op());
  registry.add(concat_op());
  registry.add(reshape_op());
  registry.add(permute_op());
  registry.add(transpose_op());
  registry.add(slice_op());
  registry.add(shuffle_op());
  registry.add(repeat_op());
}

}  // namespace dnncast
