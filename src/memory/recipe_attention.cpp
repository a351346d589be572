// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Attention (the math path and the
// fused kernel), rotary position embedding, grouped-query key/value repeats.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

// PyTorch 2's fused scaled_dot_product_attention on CUDA (flash or memory-efficient kernels, `--attention sdpa`;
// issue 35), unverified: no S x S matrix is allocated. Forward: the output and each row's log-sum-exp (fp32);
// kept for backward: q, k, v, the output and the log-sum-exp. Backward: each row's sum of dO * O (fp32), then dq,
// dk and dv (only those needed).
Tensor Trace::run_fused_attention(int index, const Node& node, const std::vector<Tensor>& in) {
  const TensorShape& q_shape = graph_.node(node.inputs[0]).shape;
  const int64_t rows_bytes = q_shape[0] * q_shape[1] * q_shape[2] * kF32;
  const int64_t q_bytes = in[0].bytes, k_bytes = in[1].bytes, v_bytes = in[2].bytes;
  const bool q_grad = in[0].requires_grad(), k_grad = in[1].requires_grad(), v_grad = in[2].requires_grad();
  Tensor out = new_output(bytes_of(node));
  int logsumexp = program_.alloc(rows_bytes, Category::Activation, "logsumexp");
  program_.retain(out.buffer);
  out.grad_fn = make_node(index, {saved(in[0]), saved(in[1]), saved(in[2]), out.buffer, logsumexp},
                          {edge_of(in[0]), edge_of(in[1]), edge_of(in[2])},
                          [rows_bytes, q_bytes, k_bytes, v_bytes, q_grad, k_grad, v_grad](Trace& t, const Grad&) {
                            Grad row_sums = t.new_grad(rows_bytes, "attention row sums");
                            Grad gq = q_grad ? t.new_grad(q_bytes) : Grad{};
                            Grad gk = k_grad ? t.new_grad(k_bytes) : Grad{};
                            Grad gv = v_grad ? t.new_grad(v_bytes) : Grad{};
                            t.program().release(row_sums.buffer);
                            return GradList{gq, gk, gv};
                          });
  return out;
}

// The math path's middle: the causal mask (a masked copy of the scores), softmax (autograd keeps its output) and
// attention dropout (the mask kept, the dropped probabilities). `scores` and `probabilities` are the buffers the
// caller releases when the op returns.
Tensor Trace::attention_probabilities(int index, Tensor scores_tensor, int64_t scores_bytes, int64_t elem_bytes,
                                      bool causal, double dropout_p, int& scores, int& probabilities) {
  if (causal) {
    int masked = program_.alloc(scores_bytes, Category::Activation, "masked scores");
    int mask_node = make_node(index, {}, {edge_of(scores_tensor)},
                              [scores_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(scores_bytes)}; });
    program_.release(scores);
    scores = masked;
    scores_tensor = make_tensor(masked, scores_bytes, mask_node);
  }
  probabilities = program_.alloc(scores_bytes, Category::Activation, "softmax");
  int softmax_node = make_node(index, {}, {edge_of(scores_tensor)},
                               [scores_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(scores_bytes)}; });
  if (softmax_node >= 0) {  // none where neither q nor k needs a gradient (LoRA on v alone), nor in a checkpointed
                            // block's forward (no_grad)
    program_.retain(probabilities);
    nodes_[static_cast<size_t>(softmax_node)].saved.push_back(probabilities);
  }
  Tensor probs = make_tensor(probabilities, scores_bytes, softmax_node);
  if (dropout_p > 0) {
    int noise =
        program_.alloc(dropout_mask_bytes(scores_bytes), Category::Activation, cpu_ ? "dropout noise" : "dropout mask");
    if (cpu_) scalar_temps(true, elem_bytes);
    int dropped = program_.alloc(scores_bytes, Category::Activation, "dropout");
    int drop_node = make_node(index, {noise}, {edge_of(probs)},
                              [scores_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(scores_bytes)}; });
    program_.release(probabilities);
    probabilities = dropped;
    probs = make_tensor(dropped, scores_bytes, drop_node);
  }
  return probs;
}

// Gemma 2's soft-capping of the scores as the executor writes it: bounded = tanh(scores / softcap) (the quotient a
// temporary of that statement; TanhBackward0 keeps its result), then scores = bounded * softcap (the old scores go).
// Backward: the product's gradient times the scalar, tanh_backward, the quotient's gradient over the scalar.
Tensor Trace::soft_cap(int index, const Tensor& scores_tensor, int64_t scores_bytes, int64_t elem_bytes, int& scores) {
  auto scalar_grad = [scores_bytes, elem_bytes](Trace& t, const Grad&) {
    return GradList{make_grad(t.scalar_op(scores_bytes, Category::Transient, "grad", elem_bytes), scores_bytes, true)};
  };
  const int quotient = scalar_op(scores_bytes, Category::Activation, "scores / softcap", elem_bytes);
  const Tensor quotient_t =
      make_tensor(quotient, scores_bytes, make_node(index, {}, {edge_of(scores_tensor)}, scalar_grad));
  const int bounded = program_.alloc(scores_bytes, Category::Activation, "tanh");
  program_.retain(bounded);
  const int tanh_node = make_node(index, {bounded}, {edge_of(quotient_t)},
                                  [scores_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(scores_bytes)}; });
  program_.release(quotient);
  const int capped = scalar_op(scores_bytes, Category::Activation, "tanh * softcap", elem_bytes);
  program_.release(scores);
  program_.release(bounded);  // the local `bounded` (autograd's reference stays)
  scores = capped;
  return make_tensor(capped, scores_bytes,
                     make_node(index, {}, {edge_of(make_tensor(bounded, scores_bytes, tanh_node))}, scalar_grad));
}

Tensor Trace::run_attention(int index, const Node& node, const std::vector<Tensor>& in) {
  if (node.attr_int("fused", 0) != 0) return run_fused_attention(index, node, in);
  const int64_t out_bytes = bytes_of(node);
  // libtorch 1.13's math path as the executor writes it: (q * scale) @ k^T, softmax, @ v; the
  // scores stay alive until the op returns; autograd keeps q * scale, k, the probabilities, v.
  const TensorShape& q_shape = graph_.node(node.inputs[0]).shape;
  const TensorShape& k_shape = graph_.node(node.inputs[1]).shape;
  const int64_t q_elem = elem(node.inputs[0]);   // fp32, or the low type; fp32 under autocast after rotary
  const int64_t elem_bytes = amp_ ? 2 : q_elem;  // what the matmuls run in: autocast's low type
  const int64_t scores_bytes = q_shape[0] * q_shape[1] * q_shape[2] * k_shape[2] * elem_bytes;
  const int64_t q_bytes = in[0].bytes, v_bytes = in[2].bytes;
  const bool causal = node.attr_int("causal", 0) != 0;
  const double dropout_p = node.attr_float("dropout_p", 0.0);
  int wrapped = cpu_ ? program_.alloc(8, Category::Transient, "scalar") : -1;
  int converted = cpu_ ? program_.alloc(q_elem, Category::Transient, "scalar") : -1;
  int scaled_q = program_.alloc(q_bytes, Category::Activation, "q * scale");
  program_.release(converted);
  program_.release(wrapped);
  const bool cpu = cpu_;
  int scaled_node = make_node(index, {}, {edge_of(in[0])}, [q_bytes, cpu, q_elem](Trace& t, const Grad&) {
    int scalar = cpu ? t.program().alloc(8, Category::Transient, "scalar") : -1;
    int scalar_f32 = cpu ? t.program().alloc(q_elem, Category::Transient, "scalar") : -1;
    Grad g = t.new_grad(q_bytes);
    t.program().release(scalar_f32);
    t.program().release(scalar);
    return GradList{g};
  });
  Tensor scaled = make_tensor(scaled_q, q_bytes, scaled_node);
  // Autocast casts fp32 operands of the first matmul (rotary's fp32 q and k) to the low type, q' first; the
  // casts replace them as bmm's operands (q * scale goes when the op returns: ToCopyBackward0 keeps nothing).
  const bool cast_q = amp_ && q_elem != 2, cast_k = amp_ && elem(node.inputs[1]) != 2;
  const Tensor q_op = cast_q ? cast(index, scaled, q_shape.numel(), q_elem, 2) : scaled;
  const Tensor k_op = cast_k ? cast(index, in[1], k_shape.numel(), elem(node.inputs[1]), 2) : in[1];
  const int64_t q_op_bytes = q_op.bytes, k_bytes = k_op.bytes;
  // scores = bmm(q', k^T): BmmBackward0 gives mat2's gradient (k^T, a transposed view) first. Each operand is
  // saved for the other's gradient only, and a gradient is computed only where it is needed (a frozen
  // projection's k, q or v without one: LoRA, graph/lora.h).
  const bool q_grad = q_op.requires_grad(), k_grad = k_op.requires_grad(), v_grad = in[2].requires_grad();
  // matmul folds q' and k^T to 3-D by reshape: a contiguous copy where the strides allow no view (q' laid out
  // like q, which TensorIterator follows; a k permuted from the projection's N x L x heads x head_dim), kept by
  // bmm in place of the operand.
  const Layout q_order = in[0].layout.rank == 4 ? in[0].layout : Layout::plain(4);
  int q_copy = folds_by_copy(q_order, true, q_shape.dims, false)
                   ? program_.alloc(q_op_bytes, Category::Activation, "q reshape")
                   : -1;
  int k_copy = folds_by_copy(k_op.layout, k_op.dense, k_shape.dims, true, k_op.expanded_dim)
                   ? program_.alloc(k_bytes, Category::Activation, "k^T reshape")
                   : -1;
  int scores = program_.alloc(scores_bytes, Category::Activation, "scores");
  // The products' sizes for oneDNN's bf16 scratchpads: batch x heads, query and key lengths, head widths; k^T is
  // a transposed view of k unless matmul copied it.
  const int64_t bh = q_shape[0] * q_shape[1], lq = q_shape[2], lk = k_shape[2], dq = q_shape[3];
  const int64_t dv = graph_.node(node.inputs[2]).shape[3];
  const bool kt_plain = k_copy >= 0;
  bf16_scratch(bh, lq, lk, dq, false, !kt_plain);
  std::vector<int> bmm1_saved;
  if (k_grad) {
    const int kept = q_copy >= 0 ? q_copy : q_op.buffer;
    program_.retain(kept);
    bmm1_saved.push_back(kept);
  }
  if (q_grad) {
    if (k_copy >= 0) program_.retain(k_copy);
    bmm1_saved.push_back(k_copy >= 0 ? k_copy : saved(k_op));
  }
  program_.release(k_copy);
  program_.release(q_copy);
  const std::vector<int64_t> k_dims = k_shape.dims;
  int bmm1 = make_node(index, bmm1_saved, {edge_of(q_op), edge_of(k_op)},
                       [q_op_bytes, k_bytes, q_grad, k_grad, k_dims, bh, lq, lk, dq, kt_plain](Trace& t, const Grad&) {
                         Grad gk;
                         if (k_grad) {
                           gk = t.new_grad(k_bytes);
                           t.bf16_scratch(bh, dq, lk, lq, true, false);  // q'^T grad
                           // the gradient of k^T, transposed back: stored batch, head, feature, position
                           with_layout(gk, Layout::plain(4).permuted({0, 1, 3, 2}), k_dims);
                         }
                         Grad gq = q_grad ? t.new_grad(q_op_bytes) : Grad{};
                         if (q_grad) t.bf16_scratch(bh, lq, dq, lk, false, kt_plain);  // grad k
                         return GradList{gq, gk};
                       });
  if (cast_k) program_.release(k_op.buffer);
  if (cast_q) program_.release(q_op.buffer);
  Tensor scores_tensor = make_tensor(scores, scores_bytes, bmm1);
  program_.release(scaled_q);
  if (node.attr_float("softcap", 0.0) > 0)
    scores_tensor = soft_cap(index, scores_tensor, scores_bytes, elem_bytes, scores);
  int probabilities = -1;
  Tensor probs =
      attention_probabilities(index, scores_tensor, scores_bytes, elem_bytes, causal, dropout_p, scores, probabilities);
  const TensorShape& v_shape = graph_.node(node.inputs[2]).shape;
  int v_copy = folds_by_copy(in[2].layout, in[2].dense, v_shape.dims, false, in[2].expanded_dim)
                   ? program_.alloc(v_bytes, Category::Activation, "v reshape")
                   : -1;
  Tensor out = new_output(out_bytes);
  bf16_scratch(bh, lq, dv, lk, false, false);
  const bool p_grad = probs.requires_grad();
  std::vector<int> bmm2_saved;
  if (v_grad) {
    program_.retain(probabilities);
    bmm2_saved.push_back(probabilities);
  }
  if (p_grad) {
    if (v_copy >= 0) program_.retain(v_copy);
    bmm2_saved.push_back(v_copy >= 0 ? v_copy : saved(in[2]));
  }
  program_.release(v_copy);
  out.grad_fn = make_node(index, bmm2_saved, {edge_of(probs), edge_of(in[2])},
                          [scores_bytes, v_bytes, p_grad, v_grad, bh, lq, lk, dv](Trace& t, const Grad&) {
                            Grad gv = v_grad ? t.new_grad(v_bytes) : Grad{};
                            if (v_grad) t.bf16_scratch(bh, lk, dv, lq, true, false);  // p^T grad
                            Grad gp = p_grad ? t.new_grad(scores_bytes) : Grad{};
                            if (p_grad) t.bf16_scratch(bh, lq, lk, dv, false, true);  // grad v^T
                            return GradList{gp, gv};
                          });
  // matmul's _unsafe_view of the 3-D product back to N x heads x L x head_dim: UnsafeViewBackward0 reshapes
  // the gradient, a copy when it arrives permuted (through the heads' merge).
  const Tensor product = out;
  const std::vector<int64_t> out_dims = node.shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(product)}, [out_bytes, out_dims](Trace& t, const Grad& grad) {
    const int64_t batch = out_dims[0] * out_dims[1];
    std::vector<int64_t> strides;
    if (grad.dense &&
        view_strides(out_dims, dense_strides(out_dims, grad.layout), {batch, out_dims[2], out_dims[3]}, strides))
      return GradList{t.share(grad, out_bytes, true)};
    return GradList{t.new_grad(out_bytes, "reshape")};
  });
  program_.release(probabilities);
  program_.release(scores);  // the local `scores` goes when the op returns
  return out;
}

// Rotary q or k as the executor writes Hugging Face's apply_rotary_pos_emb (cos and sin are buffers):
// part = x, or x[..., :rotary_dim] (GPT-NeoX's rotary_pct); rotate_half = cat(-part[..., h:], part[..., :h]);
// rotated = part * cos + rotate_half * sin; with a partial rotary cat(rotated, x[..., rotary_dim:]). Nothing is
// kept for backward but cos and sin. Backward: the slices' gradients are zeros of their input with the slice
// copied in, the negation's a new tensor, and each product's grad * cos (sin); x's gradients are summed.
Tensor Trace::run_rotary(int index, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const TensorShape& shape = graph_.node(node.inputs[0]).shape;
  const int64_t head_dim = shape[3];
  const int64_t rotary_dim = node.attr_int("rotary_dim", head_dim);
  const bool partial = rotary_dim != head_dim;
  const int64_t full_bytes = x.bytes;
  const int64_t part_bytes = full_bytes / head_dim * rotary_dim;
  const int64_t half_bytes = part_bytes / 2;
  auto slice_backward = [](int64_t input_bytes) {
    return [input_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(input_bytes, "slice_backward")}; };
  };
  auto narrowed = [&](const Tensor& source, int64_t input_bytes) {
    Tensor slice = source;  // a view; the storage is held by the executor until the op returns
    slice.dense = false;
    slice.contiguous = false;
    slice.param = -1;
    slice.grad_fn = make_node(index, {}, {edge_of(source)}, slice_backward(input_bytes));
    return slice;
  };
  const Tensor part = partial ? narrowed(x, full_bytes) : x;
  // rotate_half: -part[..., h:] (a new tensor), part[..., :h], concatenated.
  Tensor upper = narrowed(part, part_bytes);
  int negated = program_.alloc(half_bytes, Category::Activation, "neg");
  const int neg_node = make_node(index, {}, {edge_of(upper)},
                                 [half_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(half_bytes)}; });
  Tensor lower = narrowed(part, part_bytes);
  int turned = program_.alloc(part_bytes, Category::Activation, "rotate_half");
  const int cat_node = make_node(index, {}, {edge_of(make_tensor(negated, half_bytes, neg_node)), edge_of(lower)},
                                 [half_bytes](Trace& t, const Grad& grad) {
                                   return GradList{t.share(grad, half_bytes, false), t.share(grad, half_bytes, false)};
                                 });
  program_.release(negated);
  const Tensor turned_t = make_tensor(turned, part_bytes, cat_node);
  // Under autocast a bf16 x meets the fp32 tables: on the CPU TensorIterator copies each bf16 operand to fp32 first
  // (CUDA casts inside the kernel), the products and their sum are fp32, and each gradient comes back fp32 and is
  // cast to bf16 by the engine.
  const int64_t widen = elem(index) / elem(node.inputs[0]);
  const int64_t wide_bytes = part_bytes * widen;
  // part * cos + rotate_half * sin: each MulBackward0 keeps only the table.
  auto times_table = [&](const Tensor& source, const char* what) {
    const int promoted = widen > 1 && cpu_ ? program_.alloc(wide_bytes, Category::Transient, "type promotion") : -1;
    Tensor result = make_tensor(program_.alloc(wide_bytes, Category::Activation, what), wide_bytes, -1);
    program_.release(promoted);
    result.grad_fn = make_node(index, {}, {edge_of(source)}, [part_bytes, wide_bytes](Trace& t, const Grad& grad) {
      Grad g = t.new_grad(wide_bytes);
      follow_layout(g, grad);
      if (wide_bytes != part_bytes) {  // validate_outputs: the gradient in the input's dtype
        Grad narrow = t.new_grad(part_bytes, "to_copy");
        follow_layout(narrow, grad);
        t.program().release(g.buffer);
        g = narrow;
      }
      return GradList{g};
    });
    return result;
  };
  const Tensor with_cos = times_table(part, "x * cos");
  const Tensor with_sin = times_table(turned_t, "rotate_half * sin");
  // TensorIterator lays the products and their sum out in the strides' order of x (a permuted view of the
  // projection: batch, position, head, feature).
  const Layout order = x.layout.rank == 4 ? x.layout : Layout::plain(4);
  std::vector<int64_t> part_dims = shape.dims;
  part_dims[3] = rotary_dim;
  Tensor rotated =
      make_tensor(program_.alloc(wide_bytes, Category::Activation, partial ? "rotated" : "output"), wide_bytes, -1);
  with_layout(rotated, order, part_dims);
  rotated.grad_fn = make_node(index, {}, {edge_of(with_cos), edge_of(with_sin)}, [](Trace& t, const Grad& grad) {
    Grad shared = grad;
    shared.shared_tensor = true;
    t.program().retain(grad.buffer);
    t.program().retain(grad.buffer);
    return GradList{shared, shared};
  });
  program_.release(with_sin.buffer);
  program_.release(with_cos.buffer);
  Tensor out = rotated;
  if (partial) {
    // cat(rotated, x[..., rotary_dim:]): a plain tensor (fp32 under autocast: cat promotes; the engine's cast of
    // the pass-through slice's gradient back to bf16 is not replayed, unmeasured).
    const Tensor rest = narrowed(x, full_bytes);
    out = new_output(full_bytes * widen);
    const int64_t rest_bytes = (full_bytes - part_bytes) * widen;
    out.grad_fn =
        make_node(index, {}, {edge_of(rotated), edge_of(rest)}, [wide_bytes, rest_bytes](Trace& t, const Grad& grad) {
          return GradList{t.share(grad, wide_bytes, false), t.share(grad, rest_bytes, false)};
        });
    program_.release(rotated.buffer);
  }
  program_.release(turned);
  return out;
}

// Hugging Face's repeat_kv as the executor runs it: x.unsqueeze(axis + 1).expand(..., repeats, ...).reshape(...),
// a contiguous copy (CloneBackward0 + UnsafeViewBackward0) unless the strides allow a view (one kv head).
// Backward: the reshape and the clone pass the gradient on, ExpandBackward0 sums it over the repeats (a new
// tensor of x's size), the unsqueeze is a view.
Tensor Trace::run_repeat_kv(int index, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const TensorShape& shape = graph_.node(node.inputs[0]).shape;
  int64_t axis = node.attr_int("axis");
  if (axis < 0) axis += shape.rank();
  const int64_t repeats = node.attr_int("repeats");
  const int64_t in_bytes = x.bytes, out_bytes = bytes_of(node);
  auto pass = [](Trace& t, const Grad& grad) {
    t.program().retain(grad.buffer);
    return GradList{grad};
  };
  Tensor unsqueezed = x;
  unsqueezed.param = -1;
  unsqueezed.grad_fn = make_node(index, {}, {edge_of(x)}, pass);
  Tensor expanded = unsqueezed;
  expanded.grad_fn = make_node(index, {}, {edge_of(unsqueezed)},
                               [in_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(in_bytes, "sum_to")}; });
  // The expanded sizes and strides (the new axis has stride 0), and whether reshape can view them.
  std::vector<int64_t> sizes = shape.dims, strides;
  bool viewable = false;
  if (x.dense || !x.strides.empty()) {
    strides = x.dense ? dense_strides(sizes, x.layout) : x.strides;
    sizes.insert(sizes.begin() + axis + 1, repeats);
    strides.insert(strides.begin() + axis + 1, 0);
    std::vector<int64_t> view;
    viewable = view_strides(sizes, strides, node.shape.dims, view);
  }
  Tensor out;
  if (viewable) {
    out = view(x, out_bytes, false);
    out.dense = false;  // overlapping: the same k and v for every query head
    out.expanded_dim = static_cast<int>(axis);
    out.strides.clear();
  } else {
    out = new_output(out_bytes, "repeat_kv");
    out.grad_fn = make_node(index, {}, {edge_of(expanded)}, pass);  // CloneBackward0
  }
  out.grad_fn =
      make_node(index, {}, {edge_of(viewable ? expanded : out)}, pass);  // the reshape: a view of the gradient
  return out;
}

}  // namespace dnncast::memory::detail
