// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Linear layers (fp32 and under
// autocast) and embeddings.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_linear(int index, const Node& node, const std::vector<Tensor>& in) {
  if (node.has_attr("quantize")) return run_linear_quantized(index, node, in);
  if (amp_) return run_linear_amp(index, node, in);
  const Tensor& x = in[0];
  const int64_t out_bytes = bytes_of(node);
  const int64_t in_bytes = x.bytes;
  const bool bias = node.attr_int("bias", 1) != 0;
  const int64_t weight_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  const int64_t bias_bytes = node.shape.dims.back() * elem(index);
  const int rank = graph_.node(node.inputs[0]).shape.rank();
  const bool input_grad = x.requires_grad();
  // A frozen weight (or bias) takes no gradient; mm and addmm then do not save the input either (autograd
  // saves mat1 only for mat2's gradient).
  const Edge weight_edge = param_edge(index, 0), bias_edge = bias ? param_edge(index, 1) : Edge{};
  const bool weight_grad = weight_edge.kind != Edge::None, bias_grad = bias_edge.kind != Edge::None;
  const LinearDims dims = linear_dims(node);
  if (bias && (rank == 2 || (rank == 3 && x.contiguous))) {
    // addmm(bias, input, weight.t()): AddmmBackward0 gives mat1, mat2; the bias gradient is summed
    // over rows by the engine; outputs are routed bias, input, weight (via TBackward0).
    // The pass-through nodes in their creation order (arguments evaluated right to left): TBackward0 of
    // weight.t(), and for a 3-D input (_flatten_3d_linear) the ViewBackward0 of its 2-D view, which the engine
    // runs first: the input's gradient is routed before the weight's AccumulateGrad runs.
    auto pass = [](Trace& t, const Grad& grad) {
      t.program().retain(grad.buffer);
      return GradList{grad};
    };
    Tensor transposed;
    transposed.grad_fn = make_node(index, {}, {weight_edge}, pass);
    Tensor input = x;
    if (rank == 3) input.grad_fn = make_node(index, {}, {edge_of(x)}, pass);
    Tensor out = new_output(out_bytes);
    linear_forward_scratch(dims);
    out.view_of_result = rank == 3;  // result.view(N, L, out_features)
    std::vector<int> keep;
    if (weight_grad) keep.push_back(saved(x));
    out.grad_fn = make_node(
        index, keep, {bias_edge, edge_of(input), edge_of(transposed)},
        [in_bytes, weight_bytes, bias_bytes, input_grad, weight_grad, bias_grad, dims](Trace& t, const Grad&) {
          Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
          if (input_grad) t.linear_input_grad_scratch(dims);
          Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
          if (weight_grad) t.linear_weight_grad_scratch(dims);
          Grad gb = bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{};
          return GradList{gb, gi, gw};
        });
    return out;
  }
  // matmul(input, weight.t()): the input folded to 2-D (a copy when it is not contiguous), mm,
  // _unsafe_view back, then add_(bias) in place. Backward: AddBackward0 sums the bias gradient,
  // UnsafeViewBackward0 reshapes (a copy of a non-contiguous gradient), MmBackward0 gives the
  // weight gradient first.
  int folded = !x.contiguous ? program_.alloc(in_bytes, Category::Activation, "contiguous") : -1;
  Tensor out = new_output(out_bytes);
  linear_forward_scratch(dims);
  std::vector<int> keep;
  if (weight_grad)
    keep.push_back(folded >= 0 ? folded : saved(x));
  else
    program_.release(folded);  // the folded copy goes when matmul returns
  int mm = make_node(index, keep, {edge_of(x), weight_edge},
                     [in_bytes, weight_bytes, input_grad, weight_grad, dims](Trace& t, const Grad&) {
                       Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                       if (weight_grad) t.linear_weight_grad_scratch(dims);
                       Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                       if (input_grad) t.linear_input_grad_scratch(dims);
                       return GradList{gi, gw};
                     });
  Tensor mm_out = out;
  mm_out.grad_fn = mm;
  const std::vector<int64_t> out_dims = node.shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(mm_out)}, [out_bytes, out_dims](Trace& t, const Grad& grad) {
    if (grad.contiguous) return GradList{t.share(grad, out_bytes, true)};
    // A strided gradient the 2-D view can still take (a batch of one): mm reads it as it is.
    std::vector<int64_t> strides;
    const int64_t features = out_dims.back();
    if (grad.dense && grad.layout.rank == static_cast<int>(out_dims.size()) &&
        view_strides(out_dims, dense_strides(out_dims, grad.layout),
                     {TensorShape(out_dims).numel() / features, features}, strides)) {
      Grad viewed = t.share(grad, out_bytes, false);
      with_layout(viewed, layout_of_strides(strides), {TensorShape(out_dims).numel() / features, features});
      viewed.dense = true;
      return GradList{viewed};
    }
    return GradList{t.new_grad(out_bytes, "reshape")};
  });
  if (bias) {
    Tensor viewed = out;
    out.grad_fn =
        make_node(index, {}, {edge_of(viewed), bias_edge}, [bias_bytes, bias_grad](Trace& t, const Grad& grad) {
          Grad passed = grad;
          t.program().retain(grad.buffer);
          return GradList{passed, bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{}};
        });
  }
  return out;
}

// A frozen Linear whose weight bitsandbytes stores quantized (graph/quantize.h; no measurement): Linear4bit casts
// its input (and bias) to the compute dtype, MatMul4Bit dequantizes the whole weight into that dtype for
// F.linear and drops it, keeping nothing but the quantized weight; backward dequantizes it again for the input's
// gradient (grad @ W). The output stays in the compute dtype (bitsandbytes casts it back to the input's dtype,
// the same under autocast and bf16-pure, where this is modelled).
Tensor Trace::run_linear_quantized(int index, const Node& node, const std::vector<Tensor>& in) {
  const int producer = node.inputs[0];
  const int64_t compute = elem(index);
  const int64_t numel = graph_.node(producer).shape.dims.back() * node.shape.dims.back();
  const int64_t dequantized = numel * compute, out_bytes = bytes_of(node);
  Tensor x = in[0];
  if (elem(producer) != compute) {
    x = cast(index, in[0], graph_.node(producer).shape.numel(), elem(producer), compute);
  } else {
    program_.retain(x.buffer);
  }
  const int64_t in_bytes = x.bytes;
  const bool bias = node.attr_int("bias", 1) != 0;
  const int64_t bias_stored =
      bias ? params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][1])].bytes : 0;
  const int64_t bias_bytes = node.shape.dims.back() * compute;
  int bias_cast = bias && bias_stored != bias_bytes ? program_.alloc(bias_bytes, Category::Transient, "bias cast") : -1;
  int weight = program_.alloc(dequantized, Category::Transient, "dequantized weight");
  Tensor out = new_output(out_bytes);
  program_.release(weight);
  program_.release(bias_cast);
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [dequantized, in_bytes](Trace& t, const Grad&) {
    int again = t.program().alloc(dequantized, Category::Transient, "dequantized weight");
    Grad gi = t.new_grad(in_bytes);
    t.program().release(again);
    return GradList{gi};
  });
  program_.release(x.buffer);
  return out;
}

// Linear under autocast: at::linear's arguments cast to the low type, right to left as GCC evaluates the
// wrapper's arguments (bias, weight, input; parameters through the cast cache), then the fp32 recipe's kernels
// in the low type. The weight's copy is saved for the input's gradient (mat2 of addmm / mm), which the
// fp32 recipe need not book (the parameter itself); gradients of the copies reach the fp32 parameters
// through ToCopyBackward0 (param_as_input).
Tensor Trace::run_linear_amp(int index, const Node& node, const std::vector<Tensor>& in) {
  const bool bias = node.attr_int("bias", 1) != 0;
  const Tensor b = bias ? param_as_input(index, 1) : Tensor{};
  const Tensor w = param_as_input(index, 0);
  const int producer = node.inputs[0];
  const int64_t low = elem(index);
  Tensor x = in[0];
  if (elem(producer) != low) {
    x = cast(index, in[0], graph_.node(producer).shape.numel(), elem(producer), low);
  } else {
    program_.retain(x.buffer);
  }
  const int64_t out_bytes = bytes_of(node);
  const int64_t in_bytes = x.bytes;
  const int64_t weight_bytes = w.bytes, bias_bytes = b.bytes;
  const int rank = graph_.node(producer).shape.rank();
  const bool input_grad = x.requires_grad(), weight_grad = w.requires_grad(), bias_grad = bias && b.requires_grad();
  const LinearDims dims = linear_dims(node);
  std::vector<int> keep;
  Tensor out;
  if (bias && (rank == 2 || (rank == 3 && x.contiguous))) {
    out = new_output(out_bytes);
    linear_forward_scratch(dims);
    if (weight_grad) keep.push_back(saved(x));
    if (input_grad) keep.push_back(saved(w));
    out.grad_fn = make_node(
        index, keep, {edge_of(b), edge_of(x), edge_of(w)},
        [in_bytes, weight_bytes, bias_bytes, input_grad, weight_grad, bias_grad, dims](Trace& t, const Grad&) {
          Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
          if (input_grad) t.linear_input_grad_scratch(dims);
          Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
          if (weight_grad) t.linear_weight_grad_scratch(dims);
          Grad gb = bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{};
          return GradList{gb, gi, gw};
        });
  } else {
    // matmul(input, weight.t()) [+ bias in place]: the fp32 recipe's nodes (run_linear).
    int folded = !x.contiguous ? program_.alloc(in_bytes, Category::Activation, "contiguous") : -1;
    out = new_output(out_bytes);
    linear_forward_scratch(dims);
    if (weight_grad)
      keep.push_back(folded >= 0 ? folded : saved(x));
    else
      program_.release(folded);
    if (input_grad) keep.push_back(saved(w));
    int mm = make_node(index, keep, {edge_of(x), edge_of(w)},
                       [in_bytes, weight_bytes, input_grad, weight_grad, dims](Trace& t, const Grad&) {
                         Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                         if (weight_grad) t.linear_weight_grad_scratch(dims);
                         Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                         if (input_grad) t.linear_input_grad_scratch(dims);
                         return GradList{gi, gw};
                       });
    Tensor mm_out = out;
    mm_out.grad_fn = mm;
    out.grad_fn = make_node(index, {}, {edge_of(mm_out)}, [out_bytes](Trace& t, const Grad& grad) {
      if (grad.contiguous) return GradList{t.share(grad, out_bytes, true)};
      return GradList{t.new_grad(out_bytes, "reshape")};
    });
    if (bias) {
      Tensor viewed = out;
      out.grad_fn =
          make_node(index, {}, {edge_of(viewed), edge_of(b)}, [bias_bytes, bias_grad](Trace& t, const Grad& grad) {
            Grad passed = grad;
            t.program().retain(grad.buffer);
            return GradList{passed, bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{}};
          });
    }
  }
  program_.release(x.buffer);
  program_.release(w.buffer);
  program_.release(b.buffer);
  return out;
}

// at::embedding: index_select of the rows (EmbeddingBackward0 keeps the indices). Backward
// (embedding_dense_backward_cpu): a zero table the rows are added into, after a contiguous copy of a strided
// gradient. A frozen table takes no gradient.
Tensor Trace::run_embedding(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  Tensor out = new_output(out_bytes);
  const int64_t table_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  out.grad_fn =
      make_node(index, {saved(in[0])}, {param_edge(index, 0)}, [table_bytes, out_bytes](Trace& t, const Grad& grad) {
        Grad table = t.new_grad(table_bytes, "embedding grad");
        if (!grad.contiguous) t.program().temp(out_bytes, "contiguous");
        return GradList{table};
      });
  return out;
}

}  // namespace dnncast::memory::detail
