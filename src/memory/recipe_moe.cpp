// The memory simulator's recipes for a mixture of experts' routing (graph/ops_moe.cpp; memory/trace_internal.h), as
// the executor runs them in libtorch 1.13 (profile/torch_moe.cpp); what each autograd node keeps was read off the
// nodes' saved attributes (IndexAddBackward0 keeps its source, IndexSelectBackward0 only the index, TopkBackward0
// the indices, DivBackward0 both operands).
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

// softmax(logits, -1, float) (a low-precision input converted first: ToCopyBackward0), topk, / sum, * scale, and the
// cast to the hidden states' type.
Tensor Trace::run_topk_routing(int index, const Node& node, const std::vector<Tensor>& in) {
  const TensorShape& shape = graph_.node(node.inputs[0]).shape;
  const int64_t cells = shape.numel();
  const int64_t rows = cells / shape.dims.back();
  const int64_t picked = rows * node.attr_int("top_k");
  const int64_t from = elem(node.inputs[0]), to = elem(index);
  Tensor source = in[0];
  int converted = -1;
  if (from != kF32) {
    source = cast(index, in[0], cells, from, kF32);
    converted = source.buffer;
  }
  const int64_t probs_bytes = cells * kF32, picked_bytes = picked * kF32;
  Tensor probs = new_output(probs_bytes, "softmax");
  probs.grad_fn = make_node(index, {saved(probs)}, {edge_of(source)}, [probs_bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(probs_bytes)};  // _softmax_backward_data
  });
  program_.release(converted);
  // topk: values, then the int64 indices TopkBackward0 keeps; its backward scatters into zeros of the input's size.
  Tensor values = new_output(picked_bytes, "topk values");
  const int indices = program_.alloc(picked * kI64, Category::Activation, "topk indices");
  values.grad_fn = make_node(index, {indices}, {edge_of(probs)}, [probs_bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(probs_bytes, "scatter")};
  });
  program_.release(probs.buffer);
  Tensor weights = values;
  if (node.attr_int("normalize", 0) != 0) {
    const int64_t row_bytes = rows * kF32;
    Tensor sum = new_output(row_bytes, "sum");
    sum.grad_fn = make_node(index, {}, {edge_of(values)}, [picked_bytes](Trace& t, const Grad& grad) {
      Grad expanded = t.share(grad, picked_bytes, false);  // grad.expand(sizes): a view
      expanded.dense = false;
      return GradList{expanded};
    });
    Tensor quotient = new_output(picked_bytes, "normalized");
    // DivBackward0 keeps self and other; other's gradient first: -grad * ((self / other) / other), summed to the
    // row; then self's, grad / other.
    quotient.grad_fn = make_node(index, {saved(values), saved(sum)}, {edge_of(values), edge_of(sum)},
                                 [picked_bytes, row_bytes](Trace& t, const Grad&) {
                                   Program& p = t.program();
                                   const int negated = p.alloc(picked_bytes, Category::Transient, "neg");
                                   const int first = p.alloc(picked_bytes, Category::Transient, "div");
                                   const int second = p.alloc(picked_bytes, Category::Transient, "div");
                                   Grad other = t.new_grad(picked_bytes);
                                   p.release(second);
                                   p.release(first);
                                   p.release(negated);
                                   Grad self = t.new_grad(picked_bytes);
                                   Grad reduced = t.new_grad(row_bytes, "sum_to");
                                   p.release(other.buffer);
                                   return GradList{self, reduced};
                                 });
    program_.release(sum.buffer);
    program_.release(values.buffer);
    weights = quotient;
  }
  const double scale = node.attr_float("scale", 1.0);
  if (scale != 1.0) {
    Tensor scaled = make_tensor(scalar_op(picked_bytes, Category::Activation, "scaled"), picked_bytes, -1);
    const bool cpu = cpu_;
    scaled.grad_fn = make_node(index, {}, {edge_of(weights)}, [picked_bytes, cpu](Trace& t, const Grad&) {
      const int wrapped = cpu ? t.program().alloc(8, Category::Transient, "scalar") : -1;
      const int converted_scalar = cpu ? t.program().alloc(kF32, Category::Transient, "scalar") : -1;
      Grad product = t.new_grad(picked_bytes);
      t.program().release(converted_scalar);
      t.program().release(wrapped);
      return GradList{product};
    });
    program_.release(weights.buffer);
    weights = scaled;
  }
  if (to != kF32) {
    Tensor low = cast(index, weights, picked, kF32, to);
    program_.release(weights.buffer);
    weights = low;
  }
  return weights;
}

// index_select of the expert's token rows; IndexSelectBackward0 keeps the index (a buffer of the node) and
// scatters the gradient into zeros of the hidden states' size.
Tensor Trace::run_expert_gather(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t full_bytes = graph_.node(node.inputs[0]).shape.numel() * elem(node.inputs[0]);
  Tensor out = new_output(bytes_of(node), "expert tokens");
  out.grad_fn = make_node(index, {}, {edge_of(in[0])}, [full_bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(full_bytes, "index_select_backward")};
  });
  return out;
}

// The routing weights of the expert's slots (index_select of the flattened weights), the product with the expert's
// output (a bf16 output promoted to fp32 by a copy under autocast on the CPU), and index_add_ into the sum (zeros
// allocated by the first expert). MulBackward0 keeps both operands, IndexAddBackward0 the product.
Tensor Trace::run_expert_combine(int index, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& out = in[0];
  const Tensor& weights = in[1];
  const int64_t count = node.attr_int("count");
  const int64_t width = graph_.node(node.inputs[0]).shape[1];
  const int64_t out_elem = elem(node.inputs[0]), weight_elem = elem(node.inputs[1]);
  const int64_t wide = std::max(out_elem, weight_elem);
  const int64_t slots_bytes = graph_.node(node.inputs[1]).shape.numel() * weight_elem;
  const int64_t selected_bytes = count * weight_elem, rows_bytes = count * width * wide;
  Tensor selected = new_output(selected_bytes, "routing weights");
  selected.grad_fn = make_node(index, {}, {edge_of(weights)}, [slots_bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(slots_bytes, "index_select_backward")};
  });
  const int promoted =
      cpu_ && out_elem != wide ? program_.alloc(rows_bytes, Category::Transient, "type promotion") : -1;
  Tensor product = new_output(rows_bytes, "weighted output");
  program_.release(promoted);
  const bool cpu = cpu_;
  const int64_t out_bytes = count * width * out_elem;
  const bool need_out = out.requires_grad(), need_selected = selected.requires_grad();
  std::vector<int> keep;
  if (need_selected) keep.push_back(saved(out));
  if (need_out) keep.push_back(saved(selected));
  product.grad_fn = make_node(
      index, keep, {edge_of(out), edge_of(selected)},
      [rows_bytes, out_bytes, selected_bytes, need_out, need_selected, cpu](Trace& t, const Grad&) {
        Program& p = t.program();
        // other's gradient (grad * self: the bf16 self promoted by a copy), then self's (grad * other).
        Grad other;
        if (need_selected) {
          const int copy =
              cpu && out_bytes != rows_bytes ? p.alloc(rows_bytes, Category::Transient, "type promotion") : -1;
          other = t.new_grad(rows_bytes);
          p.release(copy);
        }
        Grad self = need_out ? t.new_grad(rows_bytes) : Grad{};
        // validate_outputs, in edge order: self cast to the output's type, other summed to its column.
        if (self.buffer >= 0 && out_bytes != rows_bytes) {
          Grad cast_back = t.new_grad(out_bytes, "to_copy");
          p.release(self.buffer);
          self = cast_back;
        }
        if (other.buffer >= 0) {
          Grad reduced = t.new_grad(selected_bytes, "sum_to");
          p.release(other.buffer);
          other = reduced;
        }
        return GradList{self, other};
      });
  program_.release(selected.buffer);
  const int64_t sum_bytes = bytes_of(node);
  Tensor sum = in.size() > 2 ? view(in[2], sum_bytes, true) : new_output(sum_bytes, "zeros");
  const Edge previous = in.size() > 2 ? edge_of(in[2]) : Edge{};
  sum.grad_fn = make_node(index, {saved(product)}, {previous, edge_of(product)}, [rows_bytes](Trace& t, const Grad& g) {
    Grad passed = t.share(g, g.bytes, true);  // self: grad
    return GradList{passed, t.new_grad(rows_bytes, "index_select")};
  });
  program_.release(product.buffer);
  return sum;
}

}  // namespace dnncast::memory::detail
