// The kernels a graph node runs on a GPU, forward and backward, as the per-kernel model sees them
// (kernel_model.h node_kernels). Matrix ops become the GEMMs / convolutions PyTorch launches; everything
// else is memory-bound work in the family closest to it (norms, softmax, elementwise).
#include <algorithm>
#include <string_view>

#include "gpu/eager_kernels.h"
#include "gpu/kernel_model.h"
#include "graph/op_helpers.h"
#include "graph/op_registry.h"

namespace dnncast::gpu {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

double dim(const TensorShape& shape, int index) {
  return static_cast<double>(shape[index < 0 ? shape.rank() + index : index]);
}

double rows_before_last(const TensorShape& shape) {
  return static_cast<double>(shape.numel()) / std::max(1.0, dim(shape, -1));
}

// `column` / `row`: one GPU's share of a Linear split over `tp` GPUs by its output / input features.
void linear_kernels(const OpView& view, NodeKernels& out, NodePart part = NodePart::Whole, double tp = 1) {
  double k = dim(view.in(0), -1), m = rows_before_last(view.in(0)), n = dim(view.node.shape, -1);
  if (part == NodePart::Column) n /= tp;
  if (part == NodePart::Row) k /= tp;
  out.forward.push_back(gemm_kernel(1, m, n, k, true));
  out.backward.push_back(gemm_kernel(1, m, k, n, true));                           // input gradient: dY . W
  if (!view.node.frozen()) out.backward.push_back(gemm_kernel(1, n, k, m, true));  // weight gradient: dY^T . X
  if (view.node.has_attr("quantize")) {
    // bitsandbytes dequantizes the whole weight to the compute dtype (2 bytes) in forward and again in backward:
    // nf4 reads half a byte and its block's absmax per weight, int8 a byte (graph/quantize.h; not measured).
    const double weights = k * n;
    const double read = view.node.attr_str("quantize", "nf4") == "int8" ? 1.0 : 0.5 + 1.0 / 64;
    for (std::vector<KernelShape>* list : {&out.forward, &out.backward})
      list->push_back(elementwise_kernel(weights, 3 * weights, (read + 2) * weights));
  }
}

void matmul_kernels(const OpView& view, NodeKernels& out) {
  const TensorShape& a = view.in(0);
  const TensorShape& b = view.in(1);
  const double m = dim(a, -2), k = dim(a, -1), n = dim(b, -1);
  const double batch = std::max(1.0, static_cast<double>(view.node.shape.numel()) / (m * n));
  out.forward.push_back(gemm_kernel(batch, m, n, k));
  out.backward.push_back(gemm_kernel(batch, m, k, n));
  out.backward.push_back(gemm_kernel(batch, k, n, m));
}

void attention_kernels(const OpView& view, bool training, NodeKernels& out) {
  const TensorShape& q = view.in(0);
  const TensorShape& v = view.in(2);
  const double heads = dim(q, 0) * dim(q, 1), l = dim(q, 2), d = dim(q, 3), s = dim(view.in(1), 2), dv = dim(v, 3);
  const double scores = heads * l * s;
  if (view.node.attr_int("fused", 0) != 0) {
    // PyTorch 2's fused kernels (--attention sdpa): one kernel each way whose work is its matrix products, the
    // scores kept on chip; timed as those GEMMs (backward computes q k^T again). A model: no fused kernel is
    // among the public per-kernel measurements.
    out.forward.push_back(gemm_kernel(heads, l, s, d));
    out.forward.push_back(gemm_kernel(heads, l, dv, s));
    out.backward.push_back(gemm_kernel(heads, l, s, d));  // the scores again
    out.backward.push_back(gemm_kernel(heads, s, dv, l));
    out.backward.push_back(gemm_kernel(heads, l, s, dv));
    out.backward.push_back(gemm_kernel(heads, l, d, s));
    out.backward.push_back(gemm_kernel(heads, s, d, l));
    return;
  }
  out.forward.push_back(elementwise_kernel(heads * l * d, heads * l * d, 8 * heads * l * d));  // q / sqrt(d)
  out.forward.push_back(gemm_kernel(heads, l, s, d));                                          // q k^T
  out.forward.push_back(row_kernel(KernelFamily::Softmax, heads * l, s, 5, 8));
  out.forward.push_back(gemm_kernel(heads, l, dv, s));  // P v
  if (view.node.attr_int("causal", 0) != 0) out.forward.push_back(elementwise_kernel(scores, scores, 8 * scores));
  if (training && view.node.attr_float("dropout_p", 0.0) > 0)
    out.forward.push_back(elementwise_kernel(scores, scores, 9 * scores));
  out.backward.push_back(gemm_kernel(heads, s, dv, l));                         // dV = P^T dO
  out.backward.push_back(gemm_kernel(heads, l, s, dv));                         // dP = dO V^T
  out.backward.push_back(elementwise_kernel(scores, 4 * scores, 12 * scores));  // softmax backward
  out.backward.push_back(gemm_kernel(heads, l, d, s));                          // dQ = dS K
  out.backward.push_back(gemm_kernel(heads, s, d, l));                          // dK = dS^T Q
  out.backward.push_back(elementwise_kernel(heads * l * d, heads * l * d, 8 * heads * l * d));
}

// A dense convolution as cuDNN runs it: the forward pass, then the input gradient (none for a convolution of the
// graph's input, which requires no gradient) and the weight gradient (none for frozen weights), each its own
// implicit GEMM.
bool conv_kernels(const OpView& view, const OpCost& cost, bool input_grad, NodeKernels& out) {
  const TensorShape& x = view.in(0);
  if (x.rank() != 4 || view.node.op != "Conv2d"sv) return false;
  const auto kernel = ops::pair_attr(view, "kernel", 1), stride = ops::pair_attr(view, "stride", 1),
             padding = ops::pair_attr(view, "padding", 0);
  if (view.node.attr_int("groups", 1) != 1 || kernel[0] != kernel[1] || stride[0] != stride[1] || x[2] != x[3] ||
      padding[0] != padding[1])
    return false;
  auto pass = [&](ConvPass which) {
    return conv_kernel(dim(x, 0), dim(x, 1), dim(view.node.shape, 1), static_cast<double>(kernel[0]), dim(x, 2),
                       static_cast<double>(stride[0]), static_cast<double>(padding[0]), which);
  };
  out.forward.push_back(pass(ConvPass::Forward));
  if (cost.flops_bwd <= 0) return true;
  if (input_grad) out.backward.push_back(pass(ConvPass::InputGrad));
  if (!view.node.frozen()) out.backward.push_back(pass(ConvPass::WeightGrad));
  return true;
}

// The family's eager kernels of this op (eager_kernels.h): the defaults' elementwise kernels dropped where a row
// replaces them, each row's kernels added over its operand.
void apply_eager_kernels(const Graph& graph, const OpView& view, const OpCost& cost, bool training, NodeKernels& out) {
  const std::vector<const EagerKernel*>& rows = eager_kernels(graph.family, view.node.op);
  if (rows.empty()) return;
  const bool attention = view.node.op == "ScaledDotProductAttention"sv;
  if (attention && view.node.attr_int("fused", 0) != 0) return;  // PyTorch 2's fused kernels: none of these
  const bool replace = std::any_of(rows.begin(), rows.end(), [](const EagerKernel* row) { return row->replaces; });
  if (replace)  // the GEMMs and the softmax stay
    for (std::vector<KernelShape>* list : {&out.forward, &out.backward})
      list->erase(std::remove_if(list->begin(), list->end(),
                                 [](const KernelShape& k) {
                                   return k.family == KernelFamily::Elementwise || k.family == KernelFamily::Norm;
                                 }),
                  list->end());
  const bool causal = view.node.attr_int("causal", 0) != 0;
  const bool dropout = training && view.node.attr_float("dropout_p", 0.0) > 0;
  const bool softcap = view.node.attr_float("softcap", 0.0) > 0;
  // More than one sequence: the heads of a permuted projection (batch x heads x L x d laid out as batch x L x heads x
  // d) cannot be merged into one batch of matrices without a copy, which the batched GEMM makes (at batch 1 they can).
  // kv_views: so are the keys and values, straight from their head split rather than from repeat_kv's copy.
  const bool batched = attention && dim(view.in(0), 0) > 1;
  // repeat_kv of one key head expands it without a copy (the batched GEMM copies it instead); of several, it copies.
  auto repeat_copies = [&](const Node& node) {
    return node.op == "RepeatInterleave"sv &&
           dim(graph.node(node.inputs.at(0)).shape, static_cast<int>(node.attr_int("axis", 1))) > 1;
  };
  const bool kv_views = batched && !repeat_copies(graph.node(view.node.inputs.at(1)));
  const bool copies = repeat_copies(view.node);
  using Operand = EagerKernel::Operand;
  using Condition = EagerKernel::Condition;
  const double output_elements = static_cast<double>(view.node.shape.numel());
  for (const EagerKernel* row : rows) {
    const Condition condition = row->condition_kind;
    if ((condition == Condition::Causal && !causal) || (condition == Condition::Dropout && !dropout) ||
        (condition == Condition::Softcap && !softcap) || (condition == Condition::Batched && !batched) ||
        (condition == Condition::KvViews && !kv_views) || (condition == Condition::Copies && !copies))
      continue;
    const Operand operand = row->operand_kind;
    double elements = output_elements;
    if (operand == Operand::Input || (operand == Operand::Query && attention)) {
      elements = static_cast<double>(view.in(0).numel());
    } else if (operand == Operand::Rows) {
      elements = rows_before_last(view.in(0));  // a norm's statistics: one per row of its input
    } else if (operand == Operand::Scores && attention) {
      const TensorShape& q = view.in(0);
      elements = dim(q, 0) * dim(q, 1) * dim(q, 2) * dim(view.in(1), 2);
    } else if (operand == Operand::Weight) {
      if (row->backward && view.node.frozen()) continue;  // no weight gradient
      elements = static_cast<double>(cost.params);
    }
    const double byte_elements =  // what bytes_per_element counts over
        elements + (operand == Operand::OutputAndInput ? static_cast<double>(view.in(0).numel()) : 0);
    if (elements <= 0) continue;
    std::vector<KernelShape>& list = row->backward ? out.backward : out.forward;
    for (int copy = 0; copy < row->count; ++copy)
      list.push_back(
          elementwise_kernel(elements, row->flops_per_element * elements, row->bytes_per_element * byte_elements));
  }
}

// Whether every consumer of a node reads it as an attention's keys (input 1), and something does. Consumers come
// later in the graph, and a head split's soon after it: the scan stops at the first other use.
bool attention_key_only(const Graph& graph, int index) {
  bool consumed = false;
  for (int later = index + 1; later < graph.size(); ++later) {
    const Node& node = graph.node(later);
    for (size_t position = 0; position < node.inputs.size(); ++position) {
      if (node.inputs[position] != index) continue;
      if (node.op != "ScaledDotProductAttention"sv || position != 1) return false;
      consumed = true;
    }
  }
  return consumed;
}

// A head split of keys read only by the attention's q k^T: their gradient leaves that GEMM transposed, which undoes
// the permute, so it reaches the projection uncopied when a split's cat takes it as it is (GPT-2's c_attn) or when
// there is one sequence; a projection of its own flattens it over several with a copy (BERT's key: traced).
bool key_gradient_uncopied(const Graph& graph, int index) {
  int source = graph.node(index).inputs.at(0);
  if (graph.node(source).op == "Reshape"sv) source = graph.node(source).inputs.at(0);
  return (graph.node(source).split_part() || dim(graph.node(index).shape, 0) == 1) && attention_key_only(graph, index);
}

// Whether a permute moves only dimensions of size 1 (one key head, N x L x 1 x d viewed as N x 1 x L x d): the
// order of the others, and so the layout, stays; its gradient comes back without a copy (traced).
bool keeps_order(const Graph& graph, int index) {
  const Node& node = graph.node(index);
  const TensorShape& in = graph.node(node.inputs.at(0)).shape;
  std::vector<int64_t> dims;
  if (node.op == "Permute"sv) {
    dims = node.attr_ints("dims");
  } else {
    for (int axis = 0; axis < in.rank(); ++axis) dims.push_back(axis);
    auto axis = [&](const char* key) {
      const int64_t value = node.attr_int(key);
      return static_cast<size_t>(value < 0 ? value + in.rank() : value);
    };
    std::swap(dims.at(axis("dim0")), dims.at(axis("dim1")));
  }
  int64_t last = -1;
  for (int64_t axis : dims) {
    const int64_t normal = axis < 0 ? axis + in.rank() : axis;
    if (normal < 0 || normal >= in.rank() || in[static_cast<int>(normal)] == 1) continue;
    if (normal < last) return false;
    last = normal;
  }
  return true;
}

// 1/parts of a kernel's work: its batch of matrices (or its rows) divided, as when attention heads or an MLP's
// hidden units are split over a tensor-parallel group.
KernelShape kernel_share(KernelShape kernel, double parts) {
  if (kernel.family == KernelFamily::Gemm && kernel.batch >= parts) {
    kernel.batch /= parts;
  } else if (kernel.family == KernelFamily::Conv) {
    kernel.batch /= parts;
    (kernel.pass == ConvPass::WeightGrad ? kernel.k : kernel.m) /= parts;  // the batch is the weight gradient's k
  } else {
    kernel.m = std::max(1.0, kernel.m / parts);
  }
  kernel.flops /= parts, kernel.bytes /= parts;
  return kernel;
}

}  // namespace

KernelShape gradient_sum_kernel(double elements) { return elementwise_kernel(elements, elements, 12 * elements); }

bool requires_gradient(const Node& node, const OpCost& cost, const std::vector<char>& requires_grad) {
  if (node.dtype == DType::I64) return false;
  if (cost.params > cost.frozen_params) return true;
  return std::any_of(node.inputs.begin(), node.inputs.end(),
                     [&](int producer) { return requires_grad[static_cast<size_t>(producer)] != 0; });
}

std::vector<std::vector<double>> gradient_sums(const Graph& graph) {
  std::vector<char> requires_grad(static_cast<size_t>(graph.size()), 0);
  for (size_t index = 0; index < requires_grad.size(); ++index) {
    const Node& node = graph.nodes()[index];
    if (OpRegistry::instance().get(node.op).category == "input"sv) continue;
    OpCost computed;
    const OpCost& cost = node_cost(graph, static_cast<int>(index), computed);
    requires_grad[index] = requires_gradient(node, cost, requires_grad) ? 1 : 0;
  }
  return gradient_sums(graph, requires_grad);
}

std::vector<std::vector<double>> gradient_sums(const Graph& graph, const std::vector<char>& requires_grad) {
  const auto count = static_cast<size_t>(graph.size());
  // The parts of one split hand their input a single gradient (SplitBackward0's cat): only the first part counts as
  // a use of it.
  std::vector<int> first_part(count, -1);
  for (size_t index = 0; index < count; ++index) {
    const Node& node = graph.nodes()[index];
    if (node.split_part() && first_part[static_cast<size_t>(node.inputs.at(0))] < 0)
      first_part[static_cast<size_t>(node.inputs.at(0))] = static_cast<int>(index);
  }
  auto counted = [&](size_t index) {
    const Node& node = graph.nodes()[index];
    return requires_grad[index] != 0 &&
           (!node.split_part() || first_part[static_cast<size_t>(node.inputs.at(0))] == static_cast<int>(index));
  };
  std::vector<int> last_consumer(count, -1);
  for (size_t index = 0; index < count; ++index)
    if (counted(index))
      for (int producer : graph.nodes()[index].inputs)
        last_consumer[static_cast<size_t>(producer)] = static_cast<int>(index);
  std::vector<std::vector<double>> sums(count);
  for (size_t index = 0; index < count; ++index) {
    if (!counted(index)) continue;
    const std::vector<int>& inputs = graph.nodes()[index].inputs;
    for (size_t position = 0; position < inputs.size(); ++position) {
      const auto producer = static_cast<size_t>(inputs[position]);
      if (requires_grad[producer] == 0) continue;
      // The last use of the producer's output is its last consumer's last input slot holding it.
      const bool last_use = last_consumer[producer] == static_cast<int>(index) &&
                            std::find(inputs.begin() + static_cast<std::ptrdiff_t>(position) + 1, inputs.end(),
                                      inputs[position]) == inputs.end();
      if (last_use) continue;
      sums[index].push_back(static_cast<double>(graph.nodes()[producer].shape.numel()));
    }
  }
  return sums;
}

std::string node_time_kind(const Graph& graph, int index) {
  const Node& node = graph.node(index);
  const OpDef& def = OpRegistry::instance().get(node.op);
  if (def.category == "input"sv) return "";
  if (node.op == "Linear"sv || node.op == "MatMul"sv) return "gemm";
  if (def.category == "conv"sv) return "conv";
  if (def.category == "loss"sv) return "loss";
  const std::string& name = node.name;
  if (node.op == "ScaledDotProductAttention"sv || name.find(".attn.") != std::string::npos ||
      name.find(".attention.") != std::string::npos || name.find(".self_attn.") != std::string::npos)
    return "attention";
  if (node.op == "LayerNorm"sv || node.op == "RMSNorm"sv || node.op == "GroupNorm"sv || node.op == "BatchNorm2d"sv)
    return "norm";
  if (node.op == "GELU"sv || node.op == "ReLU"sv || node.op == "SiLU"sv || node.op == "Tanh"sv ||
      node.op == "Sigmoid"sv || node.op == "HardSwish"sv || node.op == "HardSigmoid"sv)
    return "activation";
  if (node.op == "Embedding"sv || node.op == "PositionEmbedding"sv) return "embedding";
  return "elementwise";
}

NodeKernels node_kernels(const Graph& graph, int index) { return node_kernels(graph, index, NodePart::Whole, 1); }

NodeKernels node_kernels(const Graph& graph, int index, NodePart part, double tp) {
  if (OpRegistry::instance().get(graph.node(index).op).category == "input"sv) return {};
  return node_kernels(graph, index, node_cost(graph, index), part, tp);
}

NodeKernels node_kernels(const Graph& graph, int index, const OpCost& cost, NodePart part, double tp, bool training) {
  const Node& node = graph.nodes()[static_cast<size_t>(index)];
  const OpDef& def = OpRegistry::instance().get(node.op);
  NodeKernels out;
  if (def.category == "input"sv || part == NodePart::Skip || (!training && node.op == "Dropout"sv)) return out;
  const double bytes = static_cast<double>(cost.bytes_read + cost.bytes_written);
  if (bytes == 0 && cost.flops_fwd == 0 && cost.flops_bwd == 0) {  // a view: at most kernels of its gradient
    const double elements = static_cast<double>(node.shape.numel());
    if ((node.op == "Permute"sv || node.op == "Transpose"sv) && !key_gradient_uncopied(graph, index) &&
        !keeps_order(graph, index)) {
      // A permuted view hands its input a permuted gradient, which the op before it copies to read it whole (the
      // view of a head split: ViewBackward0's reshape; a GEMM's input): one copy, traced in PyTorch's eager backward
      // (scripts/eager-kernels-trace.py).
      out.backward.push_back(elementwise_kernel(elements, 0, 8 * elements));
    } else if (node.op == "Slice"sv) {
      const double whole = static_cast<double>(graph.node(node.inputs.at(0)).shape.numel());
      if (!node.split_part()) {  // SliceBackward0: zeros of the input's size, then the part's gradient copied in
        out.backward.push_back(elementwise_kernel(whole, 0, 4 * whole));
        out.backward.push_back(elementwise_kernel(elements, 0, 8 * elements));
      } else if (node.attr_int("start") == 0) {  // a split's parts: one cat of their gradients, booked at the first
        out.backward.push_back(elementwise_kernel(whole, 0, 8 * whole));
      }
    }
    if (part == NodePart::Split)
      for (KernelShape& kernel : out.backward) kernel = kernel_share(kernel, tp);
    return out;
  }
  const OpView view = view_of(graph, index);
  out.forward.reserve(4);  // a node's kernels, each list grown once rather than step by step
  out.backward.reserve(8);
  if (node.op == "Linear"sv) {
    linear_kernels(view, out, part, tp);
  } else if (node.op == "MatMul"sv) {
    matmul_kernels(view, out);
  } else if (node.op == "ScaledDotProductAttention"sv) {
    attention_kernels(view, training, out);
  } else if (def.category == "conv"sv && conv_kernels(view, cost, graph.node(node.inputs.at(0)).op != "Input"sv, out)) {
  } else {
    // Depthwise / grouped convolutions and every other op: memory-bound, traffic and work from the op's cost.
    const TensorShape& shape = node.shape;
    const double elements = static_cast<double>(shape.numel());
    const bool norm =
        node.op == "LayerNorm"sv || node.op == "RMSNorm"sv || node.op == "GroupNorm"sv || node.op == "BatchNorm2d"sv;
    const KernelFamily family = norm                     ? KernelFamily::Norm
                                : node.op == "Softmax"sv ? KernelFamily::Softmax
                                                         : KernelFamily::Elementwise;
    auto shaped = [&](double flops, double traffic) {
      if (family == KernelFamily::Elementwise) return elementwise_kernel(elements, flops, traffic);
      const double cols = std::max(1.0, dim(shape, -1)), rows = elements / cols;
      return row_kernel(family, rows, cols, flops / std::max(1.0, elements), traffic / std::max(1.0, elements));
    };
    out.forward.push_back(shaped(static_cast<double>(cost.flops_fwd), bytes));
    // Autograd's AddBackward0 hands the gradient to both inputs of a sum of equal shapes without a kernel, and a
    // permute made contiguous (.contiguous()'s clone) hands back a permuted view of it: no kernel either way.
    const bool passes_gradient = (node.op == "Add"sv && view.in(0).dims == view.in(1).dims) ||
                                 (node.op == "Permute"sv && node.attr_int("contiguous", 0) != 0);
    // An activation's backward reads the gradient and what it kept, and writes one (silu_backward, threshold_backward:
    // 1.5 times the forward's traffic); a product of two tensors computes each input's gradient in its own kernel.
    const bool two_gradients = node.op == "Mul"sv && node.inputs.size() == 2 && view.in(0).dims == view.in(1).dims;
    if (two_gradients) {
      out.backward.push_back(shaped(static_cast<double>(cost.flops_bwd) / 2, bytes));
      out.backward.push_back(shaped(static_cast<double>(cost.flops_bwd) / 2, bytes));
    } else if (node.op == "LayerNorm"sv) {
      // CUDA's layer norm backward: the input's gradient (reads the gradient and the input, writes one), then the
      // weight's and bias's, reduced over the rows (reads both again) when they are trained.
      const bool affine_grad = cost.params > cost.frozen_params;
      out.backward.push_back(shaped(static_cast<double>(cost.flops_bwd) * (affine_grad ? 7.0 / 9 : 1), 1.5 * bytes));
      if (affine_grad) out.backward.push_back(shaped(static_cast<double>(cost.flops_bwd) * 2.0 / 9, bytes));
    } else if ((cost.flops_bwd > 0 || def.category != "loss"sv) && !passes_gradient) {
      out.backward.push_back(
          shaped(static_cast<double>(cost.flops_bwd), (def.category == "activation"sv ? 1.5 : 2) * bytes));
    }
  }
  apply_eager_kernels(graph, view, cost, training, out);
  if (node.op == "Linear"sv && node.attr_int("bias", 1) != 0 && !node.frozen()) {
    // The bias is added in the GEMM's epilogue (addmm); its gradient is a reduction over the rows.
    // Megatron keeps a row-parallel Linear's bias whole; a column-parallel one's is split with its outputs.
    const double outputs = static_cast<double>(node.shape.numel()) / (part == NodePart::Column ? tp : 1);
    out.backward.push_back(elementwise_kernel(outputs, outputs, 4 * outputs));
  }
  if (part == NodePart::Split)
    for (std::vector<KernelShape>* list : {&out.forward, &out.backward})
      for (KernelShape& kernel : *list) kernel = kernel_share(kernel, tp);
  return out;
}

}  // namespace dnncast::gpu
