// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Views and copies: reshape, permute,
// concat, slice, channel shuffle, class token, position embedding.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_reshape(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const std::vector<int64_t>& out_dims = node.shape.dims;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  if (op == "Flatten"sv && in_shape.rank() == node.shape.rank()) return view(x, x.bytes, x.contiguous);  // no-op
  const int64_t bytes = x.bytes;
  const std::vector<int64_t>& in_dims = in_shape.dims;
  // reshape: a view when the strides allow it (ATen's computeStride), a copy otherwise; the same
  // for the gradient on the way back.
  std::vector<int64_t> strides;
  const bool strided = !x.dense && !x.strides.empty();
  const std::vector<int64_t> in_strides = strided ? x.strides : dense_strides(in_dims, x.layout);
  const bool viewable = (x.dense || strided) && view_strides(in_dims, in_strides, out_dims, strides);
  Tensor out;
  if (viewable) {
    out = view(x, bytes, x.contiguous);
    with_layout(out, layout_of_strides(strides), out_dims);
    out.strides.clear();
    if (strided) {  // still with gaps: its own strides
      out.contiguous = strides_contiguous(out_dims, strides);
      out.channels_last = false;
      out.strides = strides;
    }
  } else {
    out = new_output(bytes, "reshape copy");
  }
  // The shapes read from the graph when backward runs (it outlives the trace): a capture of two numbers fits in
  // std::function without an allocation, where copies of both shapes took three allocations.
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [bytes, index](Trace& t, const Grad& grad) {
    const Node& reshaped = t.graph_.node(index);
    const std::vector<int64_t>& to = reshaped.shape.dims;
    const std::vector<int64_t>& from = t.graph_.node(reshaped.inputs[0]).shape.dims;
    std::vector<int64_t> grad_strides;
    if (grad.dense && view_strides(to, dense_strides(to, grad.layout), from, grad_strides)) {
      Grad passed = t.share(grad, bytes, true);
      with_layout(passed, layout_of_strides(grad_strides), from);
      return GradList{passed};
    }
    return GradList{t.new_grad(bytes, "reshape")};
  });
  return out;
}

Tensor Trace::run_concat(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  Tensor out = new_output(out_bytes);
  int axis = static_cast<int>(node.attr_int("axis", 1));
  if (axis < 0) axis += node.shape.rank();
  const bool views_contiguous = in.size() == 1 || narrow_is_contiguous(node.shape.dims, axis);
  std::vector<Edge> edges;
  std::vector<int64_t> sizes;
  for (const Tensor& tensor : in) {
    edges.push_back(edge_of(tensor));
    sizes.push_back(tensor.bytes);
  }
  out.grad_fn = make_node(index, {}, edges, [sizes, views_contiguous](Trace& t, const Grad& grad) {
    GradList grads;
    for (int64_t bytes : sizes) grads.push_back(t.share(grad, bytes, views_contiguous));
    return grads;
  });
  return out;
}

Tensor Trace::run_slice(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  int axis = static_cast<int>(node.attr_int("axis"));
  if (axis < 0) axis += in_shape.rank();
  const bool whole = node.shape == in_shape;
  Tensor out = view(x, out_bytes, x.contiguous && (whole || narrow_is_contiguous(in_shape.dims, axis)));
  out.dense = out.contiguous;
  // A slice keeps its source's strides (dense ones in its layout, or its own).
  if (!out.dense && x.expanded_dim < 0 && (x.dense || !x.strides.empty()))
    out.strides = x.dense ? dense_strides(in_shape.dims, x.layout) : x.strides;
  else
    out.strides.clear();
  const int64_t in_bytes = x.bytes;
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [in_bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(in_bytes, "slice_backward")};
  });
  return out;
}

Tensor Trace::run_channel_shuffle(int index, const Node&, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  // view, transpose, contiguous (a copy), view: backward reshapes a transposed gradient (a copy).
  const int64_t bytes = x.bytes;
  Tensor out = new_output(bytes, "shuffle copy");
  out.grad_fn = make_node(index, {}, {edge_of(x)},
                          [bytes](Trace& t, const Grad&) { return GradList{t.new_grad(bytes, "reshape")}; });
  return out;
}

Tensor Trace::run_permute(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const std::vector<int64_t>& out_dims = node.shape.dims;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  std::vector<int64_t> dims;
  if (op == "Permute"sv) {
    dims = node.attr_ints("dims");
  } else {
    for (int dim = 0; dim < in_shape.rank(); ++dim) dims.push_back(dim);
    int64_t dim0 = node.attr_int("dim0"), dim1 = node.attr_int("dim1");
    if (dim0 < 0) dim0 += in_shape.rank();
    if (dim1 < 0) dim1 += in_shape.rank();
    std::swap(dims[static_cast<size_t>(dim0)], dims[static_cast<size_t>(dim1)]);
  }
  std::vector<int64_t> inverse(dims.size());
  for (size_t out = 0; out < dims.size(); ++out) {
    int64_t in_dim = dims[out] < 0 ? dims[out] + static_cast<int64_t>(dims.size()) : dims[out];
    inverse[static_cast<size_t>(in_dim)] = static_cast<int64_t>(out);
  }
  const int64_t bytes = x.bytes;
  // .contiguous() copies unless the permuted view already is contiguous (c10 ignores size-1 dimensions: one
  // head, a batch of one).
  const Layout permuted_layout = (x.layout.rank == 0 ? Layout::plain(in_shape.rank()) : x.layout).permuted(dims);
  std::vector<int64_t> strides;  // a strided x's, permuted
  if (!x.dense && !x.strides.empty())
    for (int64_t dim : dims) strides.push_back(x.strides[static_cast<size_t>(dim < 0 ? dim + in_shape.rank() : dim)]);
  const bool view_contiguous =
      strides.empty() ? x.dense && permuted_layout.contiguous(out_dims) : strides_contiguous(out_dims, strides);
  const bool contiguous_copy = node.attr_int("contiguous", 0) != 0 && !view_contiguous;
  Tensor out;
  if (contiguous_copy) {
    out = new_output(bytes, "contiguous");
  } else {
    out = view(x, bytes, false);
    Layout base = x.layout.rank == 0 ? Layout::plain(in_shape.rank()) : x.layout;
    with_layout(out, base.permuted(dims), out_dims);
    out.strides = strides;
    if (!strides.empty()) out.contiguous = view_contiguous, out.channels_last = false;
  }
  const std::vector<int64_t> in_dims = in_shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [bytes, inverse, in_dims](Trace& t, const Grad& grad) {
    Grad permuted = t.share(grad, bytes, false);
    permuted.dense = grad.dense;
    Layout base = grad.layout.rank == 0 ? Layout::plain(static_cast<int>(in_dims.size())) : grad.layout;
    with_layout(permuted, base.permuted(inverse), in_dims);
    return GradList{permuted};
  });
  return out;
}

Tensor Trace::run_class_token(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  // cat({token.expand(N, -1, -1), x}, 1): CatBackward0 hands out narrowed views; the token's
  // ExpandBackward0 sums over the batch.
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  Tensor out = new_output(out_bytes);
  const int64_t token_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  const int64_t x_bytes = x.bytes;
  const bool views_contiguous = in_shape[0] == 1;
  out.grad_fn = make_node(index, {}, {param_edge(index, 0), edge_of(x)},
                          [token_bytes, x_bytes, views_contiguous, out_bytes](Trace& t, const Grad& grad) {
                            (void)out_bytes;
                            // batch 1: expand was a no-op, the token's gradient is the view itself
                            Grad token =
                                views_contiguous ? t.share(grad, token_bytes, true) : t.new_grad(token_bytes, "sum_to");
                            return GradList{token, t.share(grad, x_bytes, views_contiguous)};
                          });
  return out;
}

Tensor Trace::run_position_embedding(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  // x + table (or table[:, :L]): the table's gradient is summed over the batch (batch 1: the
  // incoming gradient itself).
  Tensor out = like(out_bytes, x);
  const int64_t table_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  const bool same = table_bytes == out_bytes;
  const Edge table_edge = param_edge(index, 0);  // none for a frozen table: no gradient, no sum over the batch
  const bool table_grad = table_edge.kind != Edge::None;
  out.grad_fn =
      make_node(index, {}, {edge_of(x), table_edge}, [table_bytes, same, table_grad](Trace& t, const Grad& grad) {
        Grad passed = grad;
        passed.shared_tensor = same && table_grad;
        t.program().retain(grad.buffer);
        if (!table_grad) return GradList{passed, Grad{}};
        Grad table = same ? passed : t.new_grad(table_bytes, "sum_to");
        if (same) t.program().retain(grad.buffer);
        return GradList{passed, table};
      });
  return out;
}

}  // namespace dnncast::memory::detail
