// The memory simulator's recipes for one family of ops (memory/trace_internal.h): Normalisations (LayerNorm, GroupNorm,
// RMSNorm) and softmax.
#include "memory/trace_internal.h"

namespace dnncast::memory::detail {

Tensor Trace::run_norm(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  int64_t rows = 0, normalized = 0;
  if (op == "LayerNorm"sv) {
    normalized = TensorShape(node.attr_ints("normalized_shape")).numel();
    rows = in_shape.numel() / normalized;
  } else {
    rows = in_shape[0] * node.attr_int("groups");
    normalized = in_shape.numel() / rows;
  }
  const int64_t bytes = x.bytes;
  int copy = !x.contiguous && cpu_ ? program_.alloc(bytes, Category::Transient, "contiguous") : -1;
  Tensor out = new_output(bytes);
  // mean and rstd have the input's type (bf16 in pure bf16 training).
  int mean = program_.alloc(rows * elem(node.inputs[0]), Category::Activation, "mean");
  int rstd = program_.alloc(rows * elem(node.inputs[0]), Category::Activation, "rstd");
  program_.release(copy);
  const bool affine = !node_params_[static_cast<size_t>(index)].empty();
  const int64_t param_bytes =
      affine ? params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes : 0;
  const int64_t nthreads = threads();
  const bool cpu = cpu_;
  // native_layer_norm_backward's output mask: dX only when the input needs it, dgamma and dbeta (and the
  // kernel's reduction buffer) only for trainable affine parameters.
  const bool input_grad = x.requires_grad();
  const bool param_grad = affine && param_edge(index, 0).kind != Edge::None;
  out.grad_fn =
      make_node(index, {saved(x), mean, rstd}, {edge_of(x), param_edge(index, 0), param_edge(index, 1)},
                [bytes, param_bytes, normalized, nthreads, cpu, input_grad, param_grad, in_elem = elem(node.inputs[0])](
                    Trace& t, const Grad& grad) {
                  int copy = cpu && !grad.contiguous ? t.program().alloc(bytes, Category::Transient, "contiguous") : -1;
                  Grad gi = input_grad ? t.new_grad(bytes) : Grad{};
                  Grad gw = param_grad ? t.new_grad(param_bytes) : Grad{};
                  Grad gb = param_grad ? t.new_grad(param_bytes) : Grad{};
                  if (cpu && param_grad) t.program().temp(nthreads * 2 * normalized * in_elem, "dgamma buffer");
                  t.program().release(copy);
                  return GradList{gi, gw, gb};
                });
  return out;
}

Tensor Trace::run_softmax(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  Tensor out = new_output(out_bytes);
  out.grad_fn = make_node(index, {saved(out)}, {edge_of(x)},
                          [out_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(out_bytes)}; });
  return out;
}

namespace {

Grad product_of(Trace& t, const Grad& grad, int64_t size) {
  Grad result = t.new_grad(size);
  follow_layout(result, grad);
  return result;
}

}  // namespace

// The last step's product of the weight's side (fp32) and the normalized x, whose gradients MulBackward0 computes
// `first_other` (the other operand's) first. Under autocast a bf16 x gives an fp32 product (`promote`): CPU's
// TensorIterator copies the bf16 operand to fp32 first, and the engine casts that operand's gradient back to
// bf16 after summing the weight side's to the width (validate_outputs, in edge order).
struct ScaleStep {
  int64_t bytes = 0;        // the normalized x
  int64_t out_bytes = 0;    // the product (fp32 where promoted)
  int64_t width_bytes = 0;  // the weight side's gradient
  bool promote = false;
};

namespace {

// grad * (a bf16 operand) where promoted: the operand's fp32 copy, the product, the copy released.
Grad promoted_product(Trace& t, const Grad& grad, int64_t out_bytes, bool copy) {
  int temp = copy ? t.program().alloc(out_bytes, Category::Transient, "to fp32") : -1;
  Grad result = product_of(t, grad, out_bytes);
  t.program().release(temp);
  return result;
}

// The weight side's gradient summed to the width, the normalized side's cast to its dtype, in edge order.
void finish_scale(Trace& t, const ScaleStep& step, Grad& weight_side, Grad& normalized_side, bool normalized_first) {
  auto sum = [&] {
    if (weight_side.buffer < 0) return;
    Grad reduced = t.new_grad(step.width_bytes, "sum_to");
    t.program().release(weight_side.buffer);
    weight_side = reduced;
  };
  auto cast = [&] {
    if (!step.promote || normalized_side.buffer < 0) return;
    Grad back = t.new_grad(step.bytes, "to_copy");
    t.program().release(normalized_side.buffer);
    normalized_side = back;
  };
  if (normalized_first) {
    cast();
    sum();
  } else {
    sum();
    cast();
  }
}

}  // namespace

// The product's forward: under promotion the bf16 operand's fp32 copy beside the output.
Tensor Trace::scale_output(const ScaleStep& step, const Tensor& normalized) {
  int temp = step.promote ? program_.alloc(step.out_bytes, Category::Transient, "to fp32") : -1;
  Tensor out = step.promote ? new_output(step.out_bytes) : like(step.bytes, normalized);
  program_.release(temp);
  return out;
}

// LlamaRMSNorm's last step, weight * normalized: the normalized tensor's gradient (grad * weight) first, then the
// weight's (grad * normalized, summed to the width). A frozen weight keeps nothing of the normalized tensor.
Tensor Trace::weight_scale(int index, const Tensor& normalized, const ScaleStep& step) {
  Tensor out = scale_output(step, normalized);
  const Edge weight_edge = param_edge(index, 0);
  const bool weight_grad = weight_edge.kind != Edge::None, normalized_grad = normalized.requires_grad();
  std::vector<int> keep;
  if (normalized_grad)
    keep.push_back(
        saved(make_tensor(params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].buffer, 0, -1)));
  if (weight_grad) keep.push_back(saved(normalized));
  out.grad_fn = make_node(index, keep, {weight_edge, edge_of(normalized)},
                          [step, weight_grad, normalized_grad](Trace& t, const Grad& grad) {
                            Grad g_normalized = normalized_grad ? product_of(t, grad, step.out_bytes) : Grad{};
                            Grad g_weight =
                                weight_grad ? promoted_product(t, grad, step.out_bytes, step.promote) : Grad{};
                            finish_scale(t, step, g_weight, g_normalized, false);
                            return GradList{g_weight, g_normalized};
                          });
  return out;
}

// GemmaRMSNorm's last step, normalized * (1 + weight): the sum a new tensor of the width (AddBackward1 passes its
// gradient to the weight), kept for the normalized tensor's gradient; MulBackward0 computes the sum's gradient
// (grad * normalized) first, then the normalized tensor's (grad * (1 + weight)), then sums the first to the width.
Tensor Trace::offset_scale(int index, const Tensor& normalized, const ScaleStep& step) {
  const Edge weight_edge = param_edge(index, 0);
  const int shifted = scalar_op(step.width_bytes, Category::Activation, "1 + weight", model_elem());
  const int add_node = make_node(index, {}, {weight_edge}, [](Trace& t, const Grad& grad) {
    t.program().retain(grad.buffer);
    return GradList{grad};
  });
  const Tensor shifted_t = make_tensor(shifted, step.width_bytes, add_node);
  Tensor out = scale_output(step, normalized);
  const bool shifted_grad = shifted_t.requires_grad(), normalized_grad = normalized.requires_grad();
  std::vector<int> keep;
  if (shifted_grad) keep.push_back(saved(normalized));
  if (normalized_grad) keep.push_back(saved(shifted_t));
  out.grad_fn = make_node(index, keep, {edge_of(normalized), edge_of(shifted_t)},
                          [step, shifted_grad, normalized_grad](Trace& t, const Grad& grad) {
                            Grad g_shifted =
                                shifted_grad ? promoted_product(t, grad, step.out_bytes, step.promote) : Grad{};
                            Grad g_normalized = normalized_grad ? product_of(t, grad, step.out_bytes) : Grad{};
                            finish_scale(t, step, g_shifted, g_normalized, true);
                            return GradList{g_normalized, g_shifted};
                          });
  program_.release(shifted);  // the temporary 1 + weight
  return out;
}

// Hugging Face's LlamaRMSNorm as the executor composes it, weight * (x * rsqrt(x.pow(2).mean(-1, keepdim) + eps)):
// six autograd nodes. Forward: x^2 (MeanBackward1 keeps it), the row means (then div_ by the width), + eps,
// rsqrt (kept as its result), x * rstd (kept for the weight's gradient), weight * that. Backward, read off
// allocation traces: the weight's gradient is grad * normalized summed to the width, rstd's is grad * x summed
// to the rows; rsqrt's is -0.5 * grad * result.pow(3), the mean's grad.expand / width, pow's
// grad * (2 * x.pow(1)).
Tensor Trace::run_rms_norm(int index, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t bytes = x.bytes;
  // The weight's bytes (its gradient's), and the element size of x's scalar operands (bf16 under bf16-pure).
  const int64_t width_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  const int64_t e = elem(node.inputs[0]);
  const int64_t row_bytes = bytes / graph_.node(node.inputs[0]).shape.dims.back();
  const auto product = &product_of;
  // x.pow(2): PowBackward0 keeps x.
  int squares = program_.alloc(bytes, Category::Activation, "x^2");
  const int pow_node = make_node(index, {saved(x)}, {edge_of(x)}, [bytes, product, e](Trace& t, const Grad& grad) {
    int linear = t.program().alloc(bytes, Category::Transient, "pow");  // self.pow(1): a copy
    int doubled = t.scalar_op(bytes, Category::Transient, "2 * pow", e);
    Grad result = product(t, grad, bytes);
    t.program().release(doubled);
    t.program().release(linear);
    return GradList{result};
  });
  Tensor squares_t = make_tensor(squares, bytes, pow_node);
  // mean(-1, keepdim): sum, then div_ by the width; MeanBackward1 keeps its input.
  int mean = program_.alloc(row_bytes, Category::Activation, "mean");
  scalar_temps(true, e);
  program_.retain(squares);
  const int mean_node = make_node(index, {squares}, {edge_of(squares_t)}, [bytes, e](Trace& t, const Grad&) {
    return GradList{make_grad(t.scalar_op(bytes, Category::Transient, "grad", e), bytes, true)};
  });
  Tensor mean_t = make_tensor(mean, row_bytes, mean_node);
  // + eps: AddBackward1 passes the gradient on.
  int shifted = scalar_op(row_bytes, Category::Activation, "mean + eps", e);
  const int add_node = make_node(index, {}, {edge_of(mean_t)}, [](Trace& t, const Grad& grad) {
    t.program().retain(grad.buffer);
    return GradList{grad};
  });
  Tensor shifted_t = make_tensor(shifted, row_bytes, add_node);
  // rsqrt: RsqrtBackward0 keeps its result.
  int rstd = program_.alloc(row_bytes, Category::Activation, "rstd");
  program_.retain(rstd);
  const int rsqrt_node = make_node(index, {rstd}, {edge_of(shifted_t)}, [row_bytes, e](Trace& t, const Grad&) {
    int cube = t.program().alloc(row_bytes, Category::Transient, "pow");  // result.pow(3), evaluated first
    int scaled = t.scalar_op(row_bytes, Category::Transient, "-0.5 * grad", e);
    Grad result = t.new_grad(row_bytes);
    t.program().release(scaled);
    t.program().release(cube);
    return GradList{result};
  });
  Tensor rstd_t = make_tensor(rstd, row_bytes, rsqrt_node);
  program_.release(shifted);
  program_.release(mean);
  program_.release(squares);
  // x * rstd: MulBackward0 gives rstd's gradient (grad * x, summed to the rows) first, then x's (grad * rstd).
  Tensor normalized = like(bytes, x);
  const bool x_grad = x.requires_grad(), rstd_grad = rstd_t.requires_grad();
  std::vector<int> keep;
  if (rstd_grad) keep.push_back(saved(x));
  if (x_grad) keep.push_back(saved(rstd_t));
  normalized.grad_fn = make_node(index, keep, {edge_of(x), edge_of(rstd_t)},
                                 [bytes, row_bytes, x_grad, rstd_grad, product](Trace& t, const Grad& grad) {
                                   Grad g_rstd = rstd_grad ? product(t, grad, bytes) : Grad{};
                                   Grad g_x = x_grad ? product(t, grad, bytes) : Grad{};
                                   if (g_rstd.buffer >= 0) {
                                     Grad reduced = t.new_grad(row_bytes, "sum_to");
                                     t.program().release(g_rstd.buffer);
                                     g_rstd = reduced;
                                   }
                                   return GradList{g_x, g_rstd};
                                 });
  ScaleStep step;
  step.bytes = bytes;
  step.promote = amp_ && e == 2 && model_elem() == kF32;  // a bf16 x times the fp32 weight under autocast
  step.out_bytes = step.promote ? bytes / 2 * kF32 : bytes;
  step.width_bytes = width_bytes;
  Tensor out = node.attr_int("unit_offset", 0) != 0 ? offset_scale(index, normalized, step)
                                                    : weight_scale(index, normalized, step);
  program_.release(normalized.buffer);  // the temporary x * rstd, then the local rstd
  program_.release(rstd);
  return out;
}

}  // namespace dnncast::memory::detail
