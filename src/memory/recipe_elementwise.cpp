// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Inputs, activations (in place or
// not), additions, products, dropout, and the generic elementwise recipe.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_activation(int index, const Node& /*node*/, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t bytes = x.bytes;
  const bool inplace = inplace_safe_[static_cast<size_t>(index)];
  // threshold_backward(grad, result) & co: a new tensor laid out like the incoming gradient.
  auto grad_like_incoming = [bytes](Trace& t, const Grad& grad) {
    Grad out = t.new_grad(bytes);
    follow_layout(out, grad);
    return GradList{out};
  };
  // Which tensor autograd keeps, as the op declares it: ReLU, Sigmoid, Tanh their result; the
  // others their input (an in-place variant keeps a clone of its input, except one that keeps its
  // result, relu_, which keeps that).
  const bool saves_result = saves_result_[static_cast<size_t>(index)];
  if (inplace && x.view_of_result) return run_inplace_on_view(index, x, saves_result);
  if (inplace) {
    if (saves_result) {
      Tensor out = view(x, bytes, x.contiguous);
      out.grad_fn = make_node(index, {saved(out)}, {edge_of(x)}, grad_like_incoming);
      return out;
    }
    int clone = program_.alloc(bytes, Category::Activation, "clone");
    Tensor out = view(x, bytes, x.contiguous);
    out.grad_fn = make_node(index, {clone}, {edge_of(x)}, grad_like_incoming);
    return out;
  }
  Tensor out = like(bytes, x);
  std::vector<int> keep{saves_result ? saved(out) : saved(x)};
  out.grad_fn = make_node(index, keep, {edge_of(x)}, grad_like_incoming);
  return out;
}

// An in-place activation (relu_, silu_) on a view of a fresh result (a 3-D Linear with bias, GPT-NeoX's and OPT's
// MLP): autograd rebases the view's history onto its base as CopySlices around the activation's node, and
// regenerates the view's grad_fn as AsStridedBackward0. Backward, read off allocation traces: as_strided_backward's
// zero storage, then CopySlices' copy of the base's gradient, a contiguous clone of the slice for the activation's
// backward and that backward's result (both freed before it returns).
Tensor Trace::run_inplace_on_view(int index, const Tensor& x, bool saves_result) {
  const int64_t bytes = x.bytes;
  std::vector<int> keep{saves_result ? saved(x) : program_.alloc(bytes, Category::Activation, "clone")};
  Tensor rebased = view(x, bytes, x.contiguous);
  rebased.grad_fn = make_node(index, keep, {edge_of(x)}, [bytes](Trace& t, const Grad& grad) {
    Grad result = t.new_grad(bytes, "copy_slices");
    follow_layout(result, grad);
    int slice = t.program().alloc(bytes, Category::Transient, "clone");
    int inner = t.program().alloc(bytes, Category::Transient, "grad");
    t.program().release(slice);
    t.program().release(inner);
    return GradList{result};
  });
  Tensor out = rebased;
  out.grad_fn = make_node(index, {}, {edge_of(rebased)}, [bytes](Trace& t, const Grad&) {
    return GradList{t.new_grad(bytes, "as_strided_backward")};
  });
  return out;  // the view's reference, which the executor holds
}

Tensor Trace::run_generic(int index, const Node& node, const std::vector<Tensor>& in) {
  // Approximation from the op's declaration: output, its saved tensors, one gradient per input.
  OpCost computed;
  const OpCost& cost = node_cost(graph_, index, computed);
  Tensor out = new_output(bytes_of(node));
  std::vector<int> keep;
  for (const SavedTensor& saved_tensor : cost.saved) {
    if (saved_tensor.kind == SavedTensor::Kind::Input)
      keep.push_back(saved(in.at(static_cast<size_t>(saved_tensor.index))));
    else if (saved_tensor.kind == SavedTensor::Kind::Output)
      keep.push_back(saved(out));
    else
      keep.push_back(program_.alloc(saved_tensor.bytes, Category::Activation, "saved"));
  }
  std::vector<Edge> edges;
  std::vector<int64_t> sizes;
  for (const Tensor& tensor : in) {
    edges.push_back(edge_of(tensor));
    sizes.push_back(tensor.bytes);
  }
  // A frozen node's parameters take no gradient: autograd computes none (no edge, nothing allocated).
  for (size_t position = 0; position < node_params_[static_cast<size_t>(index)].size() && !node.frozen(); ++position) {
    edges.push_back(param_edge(index, position));
    sizes.push_back(params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][position])].bytes);
  }
  out.grad_fn = make_node(index, keep, edges, [sizes](Trace& t, const Grad&) {
    GradList grads;
    for (int64_t bytes : sizes) grads.push_back(t.new_grad(bytes));
    return grads;
  });
  return out;
}

Tensor Trace::run_input(int, const Node&, const std::vector<Tensor>& in) {
  Tensor input = in[0];
  program_.retain(input.buffer);
  return input;
}

Tensor Trace::run_add(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  const int promoted = promoted_copy(node);
  Tensor out = like(out_bytes, x.bytes == out_bytes ? x : y);
  program_.release(promoted);
  const int64_t a_bytes = x.bytes, b_bytes = y.bytes;
  out.grad_fn =
      make_node(index, {}, {edge_of(x), edge_of(y)}, [out_bytes, a_bytes, b_bytes](Trace& t, const Grad& grad) {
        auto pass = [&](int64_t bytes) {
          if (bytes != out_bytes) return t.new_grad(bytes, "sum_to");
          Grad shared = grad;
          shared.shared_tensor = a_bytes == b_bytes;
          t.program().retain(grad.buffer);
          return shared;
        };
        Grad ga = pass(a_bytes);
        Grad gb = pass(b_bytes);
        return GradList{ga, gb};
      });
  return out;
}

Tensor Trace::run_mul(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  if (op == "Mul"sv && in.size() == 1) {
    // x * scalar (LoRA's scaling) as libtorch runs it: the wrapped double and its f32 copy around the output;
    // MulBackward1 keeps nothing and computes grad * scalar the same way.
    int wrapped = cpu_ ? program_.alloc(8, Category::Transient, "scalar") : -1;
    const int64_t elem_bytes = elem(index);
    int converted = cpu_ ? program_.alloc(elem_bytes, Category::Transient, "scalar") : -1;
    Tensor out = like(out_bytes, x);
    program_.release(converted);
    program_.release(wrapped);
    const bool cpu = cpu_;
    out.grad_fn = make_node(index, {}, {edge_of(x)}, [out_bytes, cpu, elem_bytes](Trace& t, const Grad& grad) {
      int scalar = cpu ? t.program().alloc(8, Category::Transient, "scalar") : -1;
      int scalar_f32 = cpu ? t.program().alloc(elem_bytes, Category::Transient, "scalar") : -1;
      Grad product = t.new_grad(out_bytes);
      follow_layout(product, grad);
      t.program().release(scalar_f32);
      t.program().release(scalar);
      return GradList{product};
    });
    return out;
  }
  // LayerScale is gamma * x with gamma a parameter (the executor's operand order).
  Tensor a = x, b = op == "Mul"sv ? in[1] : x;
  if (op == "LayerScale"sv) {
    const int param = node_params_[static_cast<size_t>(index)][0];
    a = make_tensor(params_[static_cast<size_t>(param)].buffer, params_[static_cast<size_t>(param)].bytes, -1, param);
    b = x;
  }
  const int promoted = op == "Mul"sv ? promoted_copy(node) : -1;
  Tensor out = like(out_bytes, a.bytes == out_bytes ? a : b);
  program_.release(promoted);
  std::vector<int> keep;
  if (b.requires_grad()) keep.push_back(saved(a));  // other's grad needs self
  if (a.requires_grad()) keep.push_back(saved(b));  // self's grad needs other
  const int64_t a_bytes = a.bytes, b_bytes = b.bytes;
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  out.grad_fn = make_node(index, keep, {edge_of(a), edge_of(b)},
                          [out_bytes, a_bytes, b_bytes, need_a, need_b](Trace& t, const Grad& grad) {
                            // MulBackward0 computes other's gradient (grad * self) first, then self's (grad * other),
                            // both laid out like the incoming gradient.
                            auto product = [&]() {
                              Grad full = t.new_grad(out_bytes);
                              follow_layout(full, grad);
                              return full;
                            };
                            Grad gb = need_b ? product() : Grad{};
                            Grad ga = need_a ? product() : Grad{};
                            // validate_outputs: broadcast operands are summed back to their shape, self first.
                            if (ga.buffer >= 0 && a_bytes != out_bytes) {
                              Grad reduced = t.new_grad(a_bytes, "sum_to");
                              t.program().release(ga.buffer);
                              ga = reduced;
                            }
                            if (gb.buffer >= 0 && b_bytes != out_bytes) {
                              Grad reduced = t.new_grad(b_bytes, "sum_to");
                              t.program().release(gb.buffer);
                              gb = reduced;
                            }
                            return GradList{ga, gb};
                          });
  return out;
}

Tensor Trace::run_dropout(int index, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  double p = node.attr_float("p", 0.5);
  if (p == 0.0) return view(x, x.bytes, x.contiguous);
  const int64_t bytes = x.bytes;
  // CPU (ATen's _dropout_impl): a noise tensor of the input's dtype, bernoulli_, div_(1 - p),
  // then input * noise; MulBackward0 keeps the noise. CUDA (the fused native_dropout): a bool
  // mask (1 byte per element), allocated before the output; NativeDropoutBackward0 keeps it.
  int noise = program_.alloc(dropout_mask_bytes(bytes), Category::Activation, cpu_ ? "dropout noise" : "dropout mask");
  if (cpu_) scalar_temps(true, elem(index));  // noise.div_(1 - p)
  Tensor out = like(bytes, x);
  out.grad_fn =
      make_node(index, {noise}, {edge_of(x)}, [bytes](Trace& t, const Grad&) { return GradList{t.new_grad(bytes)}; });
  return out;
}

}  // namespace dnncast::memory::detail
