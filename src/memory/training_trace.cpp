#include "memory/training_trace.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graph/checkpoint.h"
#include "graph/inplace.h"
#include "graph/op_registry.h"
#include "hardware/cpu_conv.h"
#include "memory/onednn_scratchpad.h"

namespace dnncast::memory {

// A convolution's allocations come from kernels/cpu_conv (what libtorch's CPU kernels allocate).
using hardware::ConvRecipe;
using hardware::ConvShape;
using hardware::Step;
using hardware::conv_shape;
using hardware::cpu_conv_recipe;
using hardware::kFirstTemp;
using hardware::kSlotGradBias;
using hardware::kSlotGradInput;
using hardware::kSlotGradWeight;
using hardware::kSlotOutput;

namespace {

constexpr int64_t kF32 = 4;
constexpr int64_t kI64 = 8;
// torch.get_rng_state()'s tensor: libtorch 1.13's CPUGeneratorImplState (the Mersenne twister and the normal
// samples' cache), which a checkpointed block keeps from its forward to its backward.
constexpr int64_t kCpuRngStateBytes = 5056;

std::vector<int64_t> pair_attr(const Node& node, const std::string& key, int64_t fallback) {
  std::vector<int64_t> values = node.attr_ints(key, {fallback, fallback});
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

[[maybe_unused]] int64_t bytes_of(const Node& node) { return node.shape.numel() * dtype_bytes(node.dtype); }

// Whether a slice / narrow along `axis` of a contiguous tensor of `dims` stays contiguous:
// only when every dimension before it has size 1.
bool narrow_is_contiguous(const std::vector<int64_t>& dims, int axis) {
  for (int before = 0; before < axis; ++before)
    if (dims[static_cast<size_t>(before)] != 1) return false;
  return true;
}

// Memory layout of a strided tensor: its logical dimensions from the outermost to the innermost
// in memory. rank 0 stands for the plain (row-major) layout of whatever rank (also used for
// tensors of more than kMaxRank dimensions, whose layouts are not tracked).
constexpr int kMaxRank = 8;
struct Layout {
  int8_t rank = 0;
  std::array<int8_t, kMaxRank> order{};

  static Layout plain(int rank_in) {
    if (rank_in > kMaxRank) return Layout{};
    Layout layout;
    layout.rank = static_cast<int8_t>(rank_in);
    for (int dim = 0; dim < rank_in; ++dim) layout.order[static_cast<size_t>(dim)] = static_cast<int8_t>(dim);
    return layout;
  }
  // NCHW sizes stored as NHWC.
  static Layout nhwc() {
    Layout layout;
    layout.rank = 4;
    layout.order = {0, 2, 3, 1};
    return layout;
  }
  // The layout of x.permute(dims) (out dim i is in dim dims[i]).
  Layout permuted(const std::vector<int64_t>& dims) const {
    const int count = static_cast<int>(dims.size());
    if (count > kMaxRank) return Layout{};
    Layout base = rank == 0 ? plain(count) : *this;
    if (base.rank != count) return plain(count);
    std::array<int8_t, kMaxRank> position{};  // input dim -> output dim
    for (int out = 0; out < count; ++out) {
      int64_t in = dims[static_cast<size_t>(out)];
      if (in < 0) in += count;
      position[static_cast<size_t>(in)] = static_cast<int8_t>(out);
    }
    Layout result;
    result.rank = base.rank;
    for (int slot = 0; slot < count; ++slot)
      result.order[static_cast<size_t>(slot)] = position[static_cast<size_t>(base.order[static_cast<size_t>(slot)])];
    return result;
  }
  bool identity() const {
    for (int slot = 0; slot < rank; ++slot)
      if (order[static_cast<size_t>(slot)] != slot) return false;
    return true;
  }
  // Memory order of the dimensions larger than one (the only ones strides constrain).
  std::vector<int> significant(const std::vector<int64_t>& sizes) const {
    std::vector<int> dims;
    if (rank == 0) {
      for (size_t dim = 0; dim < sizes.size(); ++dim)
        if (sizes[dim] != 1) dims.push_back(static_cast<int>(dim));
      return dims;
    }
    for (int slot = 0; slot < rank; ++slot) {
      int dim = order[static_cast<size_t>(slot)];
      if (static_cast<size_t>(dim) < sizes.size() && sizes[static_cast<size_t>(dim)] != 1) dims.push_back(dim);
    }
    return dims;
  }
  bool contiguous(const std::vector<int64_t>& sizes) const {
    std::vector<int> dims = significant(sizes);
    return std::is_sorted(dims.begin(), dims.end());
  }
  // NCHW sizes stored NHWC (channels-last), and not also plain-contiguous.
  bool channels_last(const std::vector<int64_t>& sizes) const {
    return !contiguous(sizes) && channels_last_contiguous(sizes);
  }
  // c10's is_contiguous(ChannelsLast): the dimensions larger than one in N, H, W, C order (a
  // tensor whose H and W are 1 is both this and plain-contiguous).
  bool channels_last_contiguous(const std::vector<int64_t>& sizes) const {
    if (sizes.size() != 4) return false;
    std::vector<int> dims = significant(sizes), expected;
    for (int dim : {0, 2, 3, 1})
      if (sizes[static_cast<size_t>(dim)] != 1) expected.push_back(dim);
    return dims == expected;
  }
  // What suggest_memory_format() says, and so whether a convolution takes its channels-last kernels:
  // c10's is_channels_last_strides_2d_s4 on the strides this memory order gives, size-1 dimensions
  // included. An N x C x 1 x 1 tensor permuted from N x 1 x 1 x C counts as channels-last
  // (strides C, 1, C, C), a plain one does not (C, 1, 1, 1) -- ConvNeXt's last stage at 32 px.
  bool suggests_channels_last(const std::vector<int64_t>& sizes) const {
    if (sizes.size() != 4) return false;
    const Layout base = rank == 0 ? plain(4) : *this;
    if (base.rank != 4) return false;
    std::array<int64_t, 4> strides{};
    int64_t running = 1;
    for (int slot = 3; slot >= 0; --slot) {
      const auto dim = static_cast<size_t>(base.order[static_cast<size_t>(slot)]);
      strides[dim] = running;
      running *= std::max<int64_t>(sizes[dim], 1);
    }
    int64_t min = 0;
    for (size_t dim : {1, 3, 2, 0}) {
      if (sizes[dim] == 0 || strides[dim] < min) return false;
      if (dim == 0 && min == strides[1]) return false;  // N x 1 x 1 x 1: ambiguous, c10 says plain
      min = strides[dim];
      if (sizes[dim] > 1) min *= sizes[dim];
    }
    return true;
  }
};

// A forward value: a view of a storage (buffer) with autograd metadata.
struct Tensor {
  int buffer = -1;      // storage; -1 for a zero-size tensor
  int64_t bytes = 0;    // bytes of this view
  bool contiguous = true;
  bool channels_last = false;
  bool dense = true;    // covers its storage without gaps (false for a narrowed view)
  Layout layout;        // rank 0: plain
  int grad_fn = -1;     // autograd node producing it
  int param = -1;       // parameter id (a leaf that requires grad)
  int expanded_dim = -1;  // a dimension expand() made of a size-1 one (stride 0); the rest dense in `layout`
  // A differentiable view of its op's fresh result (_flatten_3d_linear's .view()): an in-place op on it is
  // recorded on the base as CopySlices.
  bool view_of_result = false;
  bool requires_grad() const { return grad_fn >= 0 || param >= 0; }
};

// A gradient handed along the backward pass; `buffer` carries one reference (or is -1: undefined).
struct Grad {
  int buffer = -1;
  int64_t bytes = 0;
  bool contiguous = true;
  bool channels_last = false;
  Layout layout;
  bool dense = true;
  bool shared_tensor = false;  // the same tensor also went to another edge (AddBackward0)
};

Grad make_grad(int buffer, int64_t bytes, bool contiguous) {
  Grad grad;
  grad.buffer = buffer;
  grad.bytes = bytes;
  grad.contiguous = contiguous;
  grad.dense = contiguous;
  return grad;
}

// Element strides of a dense tensor of `sizes` stored in `layout`'s order.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes, const Layout& layout) {
  std::vector<int64_t> strides(sizes.size(), 1);
  Layout order = layout.rank == static_cast<int>(sizes.size()) ? layout : Layout::plain(static_cast<int>(sizes.size()));
  int64_t stride = 1;
  if (order.rank == 0) {  // untracked rank: row-major
    for (size_t dim = sizes.size(); dim-- > 0;) {
      strides[dim] = stride;
      stride *= sizes[dim];
    }
    return strides;
  }
  for (int slot = order.rank - 1; slot >= 0; --slot) {
    auto dim = static_cast<size_t>(order.order[static_cast<size_t>(slot)]);
    strides[dim] = stride;
    stride *= sizes[dim];
  }
  return strides;
}

// The layout of a tensor with these strides: dimensions by decreasing stride (ties: in order).
Layout layout_of_strides(const std::vector<int64_t>& strides) {
  if (strides.size() > static_cast<size_t>(kMaxRank)) return Layout{};
  Layout layout;
  layout.rank = static_cast<int8_t>(strides.size());
  std::vector<int> dims(strides.size());
  for (size_t dim = 0; dim < dims.size(); ++dim) dims[dim] = static_cast<int>(dim);
  std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return strides[static_cast<size_t>(a)] > strides[static_cast<size_t>(b)]; });
  for (size_t slot = 0; slot < dims.size(); ++slot) layout.order[slot] = static_cast<int8_t>(dims[slot]);
  return layout;
}

// ATen's rule for reshape as a view (computeStride): the new shape must split or merge only
// dimensions that are contiguous with each other. Returns false when reshape copies.
bool view_strides(const std::vector<int64_t>& old_sizes, const std::vector<int64_t>& old_strides,
                  const std::vector<int64_t>& new_sizes, std::vector<int64_t>& new_strides) {
  new_strides.assign(new_sizes.size(), 1);
  if (old_sizes.empty()) return true;
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[static_cast<size_t>(tensor_d)];
    const bool chunk_end = tensor_d == 0 || (old_sizes[static_cast<size_t>(tensor_d - 1)] != 1 &&
                                             old_strides[static_cast<size_t>(tensor_d - 1)] != tensor_numel * chunk_base_stride);
    if (!chunk_end) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[static_cast<size_t>(view_d)] == 1)) {
      new_strides[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
      view_numel *= new_sizes[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return false;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[static_cast<size_t>(tensor_d - 1)];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

// Whether matmul's reshape of a batched operand to 3-D (batch dimensions merged; `transposed`: of its last
// two dimensions swapped, k^T) copies it: a non-dense tensor, or strides that allow no view.
bool folds_by_copy(const Layout& layout, bool dense, std::vector<int64_t> dims, bool transposed, int expanded_dim = -1) {
  const size_t rank = dims.size();
  if (rank < 3) return false;
  // Merging batch dimensions of which at most one is larger than 1 is a view whatever the strides.
  int batch_dims = 0;
  for (size_t dim = 0; dim + 2 < rank; ++dim) batch_dims += dims[dim] > 1;
  if (batch_dims <= 1) return false;
  if (!dense && expanded_dim < 0) return true;
  std::vector<int64_t> strides;
  if (expanded_dim >= 0) {
    std::vector<int64_t> stored = dims;
    stored[static_cast<size_t>(expanded_dim)] = 1;
    strides = dense_strides(stored, layout);
    strides[static_cast<size_t>(expanded_dim)] = 0;
  } else {
    strides = dense_strides(dims, layout);
  }
  if (transposed) {
    std::swap(dims[rank - 1], dims[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
  int64_t batch = 1;
  for (size_t dim = 0; dim + 2 < rank; ++dim) batch *= dims[dim];
  std::vector<int64_t> folded_strides;
  return !view_strides(dims, strides, {batch, dims[rank - 2], dims[rank - 1]}, folded_strides);
}

// A new result of an element-wise op on `source`: TensorIterator keeps a dense input's layout,
// and allocates a plain tensor for anything else.
template <typename T, typename S>
void follow_layout(T& result, const S& source) {
  if (!source.dense) return;
  result.layout = source.layout;
  result.contiguous = source.contiguous;
  result.channels_last = source.channels_last;
}

// Sets the layout flags of a value of `sizes`.
template <typename T>
T& with_layout(T& value, const Layout& layout, const std::vector<int64_t>& sizes) {
  value.layout = layout;
  value.contiguous = layout.contiguous(sizes);
  value.channels_last = layout.channels_last(sizes);
  return value;
}

Tensor make_tensor(int buffer, int64_t bytes, int grad_fn, int param = -1) {
  Tensor tensor;
  tensor.buffer = buffer;
  tensor.bytes = bytes;
  tensor.grad_fn = grad_fn;
  tensor.param = param;
  return tensor;
}

struct Edge {
  enum Kind : uint8_t { None, Node, Param };
  Kind kind = None;
  int target = -1;
};

class Trace;
using BackwardFn = std::function<std::vector<Grad>(Trace& trace, const Grad& grad)>;

struct GradNode {
  int ir_node = -1;
  std::vector<int> saved;  // buffers held until this node's backward ran (one reference each)
  std::vector<Edge> edges;
  BackwardFn backward;
  Grad input;  // the incoming gradient, summed over consumers
  bool received = false;
};

struct Parameter {
  int buffer = -1;
  int64_t bytes = 0;
  int grad = -1;
  std::vector<int> state;  // optimizer state buffers
  bool frozen = false;     // requires_grad false (Node::frozen): no gradient, no state
};

class Trace {
 public:
  Trace(const Graph& graph, const TraceOptions& options)
      : graph_(graph), options_(options), cpu_(options.device != Device::Cuda), consumers_(graph.consumers()) {
    is_output_.assign(static_cast<size_t>(graph.size()), false);
    outputs_ = graph.outputs();
    for (int output : outputs_) is_output_[static_cast<size_t>(output)] = true;
    inplace_safe_ = inplace_safe_nodes(graph);
    for (const Node& node : graph.nodes()) {
      auto found = recipes().find(OpRegistry::instance().get(node.op).memory_recipe);
      DNNCAST_ASSERT(found != recipes().end());  // every registered op has one (op_completeness_test)
      recipes_.push_back(&found->second);
      // An activation: which tensor autograd keeps, as the op declares it (graph/ops_activation.cpp).
      bool saves_result = false;
      if (found->second.run == &Trace::run_activation) {
        const std::vector<SavedTensor> kept = node_cost(graph, static_cast<int>(saves_result_.size())).saved;
        DNNCAST_ASSERT(kept.size() == 1);
        saves_result = kept[0].kind == SavedTensor::Kind::Output;
      }
      saves_result_.push_back(saves_result);
    }
    amp_ = is_autocast(options.precision);
    pure_ = options.precision == Precision::Bf16Pure;
    // bf16 products go to oneDNN, whose scratchpad is asked of this host's library: only when the simulated ISA
    // is this host's dispatch (another ISA's kernels, and their scratchpads, are not this library's answer).
    onednn_bf16_ = cpu_ && (amp_ || pure_) && aten_uses_onednn_for_bf16() &&
                   options.isa == hardware::host_dispatch().onednn;
    compute_elems();
    if (amp_ || pure_) check_amp_ops();
    segments_ = checkpoint_segments(graph);
    segment_at_.assign(static_cast<size_t>(graph.size()), -1);
    for (size_t segment = 0; segment < segments_.size(); ++segment) {
      if (segments_[segment].outputs.size() != 1)
        throw InputError("checkpointed block " + std::to_string(segments_[segment].block) + " has " +
                         std::to_string(segments_[segment].outputs.size()) +
                         " outputs; the memory simulator replays blocks of one output (a transformer layer's)");
      segment_at_[static_cast<size_t>(segments_[segment].first)] = static_cast<int>(segment);
    }
  }

  // An op's memory recipe: the member that replays its allocations; `approximate` is set (the why)
  // when the recipe is not allocator-exact.
  struct OpRecipe {
    Tensor (Trace::*run)(int index, const Node& node, const std::vector<Tensor>& in);
    const char* approximate = nullptr;
  };
  static const std::map<std::string, OpRecipe>& recipes();

  Program run() {
    program_.reserve(static_cast<size_t>(graph_.size()) * 40 * static_cast<size_t>(options_.iterations + 1));
    setup();
    for (int iteration = 1; iteration <= options_.iterations; ++iteration) train(iteration);
    return std::move(program_);
  }

  Program& program() { return program_; }
  int64_t threads() const { return std::max<int64_t>(options_.threads, 1); }

  // The convolution recipe of node `index` (cached: the same shapes every iteration).
  const ConvRecipe& conv_recipe(int index, const ConvShape& shape) {
    if (conv_cache_.empty()) conv_cache_.resize(static_cast<size_t>(graph_.size()));
    std::unique_ptr<ConvRecipe>& slot = conv_cache_[static_cast<size_t>(index)][shape.grad_copy ? 1 : 0];
    if (slot) return *slot;
    if (cpu_) {
      slot = std::make_unique<ConvRecipe>(cpu_conv_recipe(shape, threads(), options_.isa));
      return *slot;
    }
    // cuDNN: the output and the gradients; workspaces are not modelled (docs/MEMORY.md). In the node's type (fp16 /
    // bf16 under autocast or bf16-pure; autocast's casts of a convolution's arguments are not replayed).
    slot = std::make_unique<ConvRecipe>();
    const int64_t e = elem(index);
    const int64_t out_bytes = shape.batch * shape.out_channels * shape.out_h * shape.out_w * e;
    const int64_t in_bytes = shape.batch * shape.in_channels * shape.in_h * shape.in_w * e;
    const int64_t weight_bytes =
        shape.out_channels * (shape.in_channels / shape.groups) * shape.kernel_h * shape.kernel_w * e;
    slot->forward.push_back({Step::Alloc, kSlotOutput, out_bytes});
    if (shape.input_grad) slot->backward.push_back({Step::Alloc, kSlotGradInput, in_bytes});
    slot->backward.push_back({Step::Alloc, kSlotGradWeight, weight_bytes});
    if (shape.bias) slot->backward.push_back({Step::Alloc, kSlotGradBias, shape.out_channels * e});
    return *slot;
  }
  bool cpu() const { return cpu_; }

  Grad new_grad(int64_t bytes, const char* what = "grad") {
    return make_grad(program_.alloc(bytes, Category::Transient, what), bytes, true);
  }
  Grad share(const Grad& grad, int64_t bytes, bool contiguous) {
    program_.retain(grad.buffer);
    return make_grad(grad.buffer, bytes, contiguous);
  }
  // Bytes of a node's output in the dtype it runs in (autocast: elems_, below); shadows the free bytes_of.
  int64_t bytes_of(const Node& node) const {
    const auto index = static_cast<size_t>(&node - graph_.nodes().data());
    return node.shape.numel() * elems_.at(index);
  }
  int64_t elem(int index) const { return elems_[static_cast<size_t>(index)]; }
  // Bytes per element of the parameters, their gradients and states, and the loss: bf16 when training is pure bf16.
  int64_t model_elem() const { return pure_ ? 2 : kF32; }
  // What dropout keeps for backward for an fp32 tensor of `bytes`: CPU libtorch 1.13 has no fused
  // kernel and keeps an fp32 noise tensor; CUDA's native_dropout keeps a bool mask.
  int64_t dropout_mask_bytes(int64_t bytes) const { return cpu_ ? bytes : bytes / kF32; }
  // An ATen op with a Python scalar operand: the wrapped double tensor and its f32 copy.
  // (CPU tensors: not in a CUDA allocator's count.)
  // The copy has the tensor's element type (`elem_bytes`: 2 for a bf16 tensor).
  void scalar_temps(bool convert = true, int64_t elem_bytes = kF32) {
    if (!cpu_) return;
    int wrapped = program_.alloc(8, Category::Transient, "scalar");
    if (convert) program_.temp(elem_bytes, "scalar");
    program_.release(wrapped);
  }

 private:
  // --- autocast (precision bf16 / fp16: torch.autocast over the forward and the loss) ------------
  // The dtype each node's output runs in, as libtorch 1.13's autocast lists and type promotion decide
  // (checked op by op under torch.autocast("cpu")): linear, matmul, attention's bmm and convolutions run in
  // the low type; the losses in fp32; embeddings read an fp32 table; element-wise ops of two tensors give
  // the wider type; every other op keeps its input's type.
  void compute_elems() {
    const auto count = static_cast<size_t>(graph_.size());
    elems_.assign(count, kF32);
    const int64_t low = 2;  // bf16 and fp16
    for (size_t index = 0; index < count; ++index) {
      const Node& node = graph_.node(static_cast<int>(index));
      elems_[index] = pure_ && node.dtype == DType::F32 ? 2 : dtype_bytes(node.dtype);
      if (!amp_ || node.op == "Input" || node.dtype == DType::I64) continue;
      const std::string& recipe = OpRegistry::instance().get(node.op).memory_recipe;
      int64_t widest = 0;
      for (int producer : node.inputs) widest = std::max(widest, elems_[static_cast<size_t>(producer)]);
      if (node.op == "Linear" || node.op == "MatMul" || node.op == "ScaledDotProductAttention" || recipe == "conv")
        elems_[index] = low;
      else if (recipe == "cross_entropy" || recipe == "mse" || node.op == "Embedding")
        elems_[index] = kF32;
      else if (!cpu_ && cuda_fp32_op(node))
        elems_[index] = kF32;  // CUDA's autocast list runs norms and softmax in fp32 (unverified, as all of cuda)
      else if (node.op == "PositionEmbedding" || node.op == "LayerScale" || node.op == "ClassToken" ||
               node.op == "RotaryEmbedding")
        elems_[index] = kF32;  // with an fp32 parameter (rotary: x * cos with fp32 tables)
      else if (widest > 0)
        elems_[index] = widest;
    }
  }

  // Ops CUDA's autocast (1.13) runs in fp32 that CPU's does not: layer_norm, group_norm, softmax.
  static bool cuda_fp32_op(const Node& node) {
    return node.op == "LayerNorm" || node.op == "GroupNorm" || node.op == "Softmax";
  }
  // What the autocast trace models: ops on low-precision tensors whose kernels were read off allocation logs.
  void check_amp_ops() const {
    const std::string precision = quote(name(options_.precision));
    for (int index = 0; index < graph_.size(); ++index) {
      const Node& node = graph_.node(index);
      const OpRecipe& recipe = *recipes_[static_cast<size_t>(index)];
      const bool low_input = !node.inputs.empty() && elem(node.inputs[0]) == 2;
      std::string why;
      if (!cpu_) continue;  // cuda: cuDNN's kernels are not modelled in any precision (docs/MEMORY.md)
      if (recipe.run == &Trace::run_conv)
        why = "convolutions in bf16 (oneDNN's low-precision kernels) are not modelled yet";
      else if (recipe.run == &Trace::run_batchnorm && low_input)
        why = "batch norm of a bf16 tensor is not modelled";
      else if (recipe.run == &Trace::run_norm && low_input && amp_)
        why = "a norm of a bf16 tensor under autocast (fp32 weights) fails in libtorch 1.13";
      else if (node.op == "ScaledDotProductAttention" && amp_ && elem(node.inputs[2]) != 2)
        why = "attention on an fp32 v under autocast is not modelled";
      if (!why.empty())
        throw InputError("precision " + precision + ": node " + quote(node.name) + " (" + node.op + "): " + why +
                         " (docs/MEMORY.md, \"Mixed precision\")");
    }
  }

  // autocast's cast of a tensor that is not a cached parameter (an activation, a frozen weight): a new tensor
  // of the same layout and, when the source requires grad, a ToCopyBackward0 node that casts the gradient
  // back. Returns the tensor holding one reference.
  Tensor cast(int ir_node, const Tensor& x, int64_t numel, int64_t from, int64_t to) {
    Tensor out = make_tensor(program_.alloc(numel * to, Category::Activation, "autocast"), numel * to, -1);
    follow_layout(out, x);
    out.grad_fn = make_node(ir_node, {}, {edge_of(x)}, [numel, from](Trace& t, const Grad& grad) {
      Grad back = t.new_grad(numel * from, "to_copy");
      follow_layout(back, grad);
      return std::vector<Grad>{back};
    });
    return out;
  }
  // `x`, the output of node `producer`, in fp32 (autocast's fp32 ops): itself (one more reference) or a cast.
  Tensor to_fp32(int producer, const Tensor& x) {
    const int64_t from = elem(producer);
    if (!amp_ || from == kF32 || graph_.node(producer).dtype == DType::I64) {
      program_.retain(x.buffer);
      return x;
    }
    return cast(-1, x, graph_.node(producer).shape.numel(), from, kF32);
  }
  // Parameter `position` of node `index` as an op under autocast reads it, holding one reference: the fp32
  // parameter itself without autocast; with it, a low-precision copy, which autocast caches for the scope
  // (until the loss is computed) when the parameter requires grad, with its ToCopyBackward0 node feeding
  // AccumulateGrad, and makes anew at each use when it is frozen.
  Tensor param_as_input(int index, size_t position) {
    const int id = node_params_[static_cast<size_t>(index)].at(position);
    const Parameter& param = params_[static_cast<size_t>(id)];
    if (!amp_) {
      program_.retain(param.buffer);
      return make_tensor(param.buffer, param.bytes, -1, param.frozen ? -1 : id);
    }
    const int64_t numel = param.bytes / kF32;
    if (param.frozen) return make_tensor(program_.alloc(numel * 2, Category::Activation, "autocast"), numel * 2, -1);
    auto cached = cast_cache_.find(id);
    if (cached == cast_cache_.end()) {
      Tensor copy = make_tensor(program_.alloc(numel * 2, Category::Activation, "autocast weight"), numel * 2, -1);
      copy.grad_fn = make_node(index, {}, {Edge{Edge::Param, id}}, [numel](Trace& t, const Grad&) {
        return std::vector<Grad>{t.new_grad(numel * kF32, "to_copy")};
      });
      cached = cast_cache_.emplace(id, copy).first;
    }
    program_.retain(cached->second.buffer);
    return cached->second;
  }
  // Two inputs of different float types (autocast's bf16 beside fp32): on CPU, TensorIterator copies the narrower
  // one to the common type before it allocates the output; the copy goes when the op returns.
  int promoted_copy(const Node& node) {
    if (!amp_ || !cpu_ || node.inputs.size() != 2) return -1;
    const int a = node.inputs[0], b = node.inputs[1];
    if (elem(a) == elem(b) || graph_.node(a).dtype == DType::I64 || graph_.node(b).dtype == DType::I64) return -1;
    const int narrow = elem(a) < elem(b) ? a : b;
    return program_.alloc(graph_.node(narrow).shape.numel() * std::max(elem(a), elem(b)), Category::Transient,
                          "type promotion");
  }
  // The autocast scope exits after the loss: its cache of parameter casts is cleared.
  void end_autocast() {
    for (auto& entry : cast_cache_) program_.release(entry.second.buffer);
    cast_cache_.clear();
  }

  // --- setup: the profiler's baseline ---------------------------------------------------------
  void setup() {
    program_.set_context(0, Phase::Setup, -1);
    node_params_.resize(static_cast<size_t>(graph_.size()));
    for (int index = 0; index < graph_.size(); ++index) {
      const Node& node = graph_.node(index);
      program_.set_node(index);
      program_node_ = index;
      make_params(index, node);
    }
    program_.set_node(-1);
    // Loss targets of the LossFunction: class labels for an N x C output, a tensor for others.
    for (int output : outputs_) {
      const Node& node = graph_.node(output);
      if (OpRegistry::instance().get(node.op).category == "loss") continue;
      if (token_logits(node))
        targets_.push_back(program_.alloc(node.shape.numel() / node.shape.dims.back() * kI64, Category::State, "labels"));
      else if (node.shape.rank() == 2 && node.dtype != DType::I64)
        targets_.push_back(program_.alloc(node.shape[0] * kI64, Category::State, "labels"));
      else
        targets_.push_back(program_.alloc(node.shape.numel() * model_elem(), Category::State, "target"));
    }
    for (int index : graph_.inputs()) input_buffers_.push_back(program_.alloc(bytes_of(graph_.node(index)), Category::State, "input"));
  }

  // The executor's LossFunction: an N x ... x V output whose V is the row count of one of the graph's
  // Embeddings gets token-level cross-entropy (a language model's head).
  bool token_logits(const Node& node) const {
    if (node.shape.rank() < 3 || node.dtype == DType::I64) return false;
    for (const Node& other : graph_.nodes())
      if (other.op == "Embedding" && other.attr_int("num_embeddings") == node.shape.dims.back()) return true;
    return false;
  }

  int add_param(int64_t fp32_bytes) {
    const int64_t bytes = fp32_bytes / kF32 * model_elem();
    Parameter param;
    param.buffer = program_.alloc(bytes, Category::Parameter, "parameter");
    param.bytes = bytes;
    param.frozen = graph_.node(program_node_).frozen();
    params_.push_back(param);
    return static_cast<int>(params_.size()) - 1;
  }
  void add_buffer(int64_t bytes, const char* what) { program_.alloc(bytes, Category::State, what); }

  void make_params(int index, const Node& node) {
    std::vector<int>& ids = node_params_[static_cast<size_t>(index)];
    const std::string& op = node.op;
    auto in_shape = [&](int input) -> const TensorShape& { return graph_.node(node.inputs.at(static_cast<size_t>(input))).shape; };
    if (op == "Conv2d" || op == "ConvTranspose2d") {
      int64_t in_channels = in_shape(0)[1];
      int64_t out_channels = node.attr_int("out_channels");
      int64_t groups = node.attr_int("groups", 1);
      std::vector<int64_t> kernel = pair_attr(node, "kernel", 1);
      ids.push_back(add_param(out_channels * (in_channels / groups) * kernel[0] * kernel[1] * kF32));
      if (node.attr_int("bias", 1) != 0) ids.push_back(add_param(out_channels * kF32));
    } else if (op == "Linear") {
      int64_t in_features = in_shape(0).dims.back();
      int64_t out_features = node.attr_int("out_features");
      std::string tied = node.attr_str("tied_to", "");
      int target = tied.empty() ? -1 : graph_.find(tied);
      if (target >= 0 && target < index && !node_params_[static_cast<size_t>(target)].empty())
        ids.push_back(node_params_[static_cast<size_t>(target)][0]);
      else
        ids.push_back(add_param(out_features * in_features * kF32));
      if (node.attr_int("bias", 1) != 0) ids.push_back(add_param(out_features * kF32));
    } else if (op == "BatchNorm2d") {
      int64_t channels = in_shape(0)[1];
      ids.push_back(add_param(channels * kF32));
      ids.push_back(add_param(channels * kF32));
      add_buffer(channels * model_elem(), "running_mean");
      add_buffer(channels * model_elem(), "running_var");
      add_buffer(kI64, "num_batches_tracked");
    } else if (op == "LayerNorm") {
      if (node.attr_int("elementwise_affine", 1) == 0) return;
      int64_t elements = TensorShape(node.attr_ints("normalized_shape")).numel();
      ids.push_back(add_param(elements * kF32));
      ids.push_back(add_param(elements * kF32));
    } else if (op == "GroupNorm") {
      if (node.attr_int("affine", 1) == 0) return;
      ids.push_back(add_param(in_shape(0)[1] * kF32));
      ids.push_back(add_param(in_shape(0)[1] * kF32));
    } else if (op == "LayerScale" || op == "ClassToken" || op == "PositionEmbedding" || op == "Embedding" ||
               op == "RMSNorm") {
      int64_t params = node_cost(graph_, index).params;
      if (op == "Embedding" || op == "PositionEmbedding") program_.temp(params * kF32, "randn");  // randn * std
      ids.push_back(add_param(params * kF32));
    } else if (op == "ScaledDotProductAttention") {
      if (node.attr_int("causal", 0) != 0) {
        int64_t cells = in_shape(0)[2] * in_shape(1)[2];
        program_.temp(cells, "ones");
        add_buffer(cells, "causal_mask");
      }
    } else if (op == "RotaryEmbedding") {
      const int64_t table_bytes = in_shape(0)[2] * node.attr_int("rotary_dim", in_shape(0)[3]) * kF32;
      add_buffer(table_bytes, "cos");
      add_buffer(table_bytes, "sin");
    } else if (op == "CrossEntropyLoss") {
      const TensorShape& logits = in_shape(0);
      add_buffer(logits.numel() / logits[1] * kI64, "labels");
    } else if (op == "MSELoss") {
      if (node.inputs.size() == 1) add_buffer(in_shape(0).numel() * model_elem(), "target");
    } else {
      // Every other op the executor runs owns no parameters; a new op with parameters must get
      // a recipe here (the profiler checks the same count).
      DNNCAST_ASSERT(node_cost(graph_, index).params == 0);
    }
  }

  // --- one training iteration ------------------------------------------------------------------
  void train(int iteration) {
    iteration_ = iteration;
    // zero_grad(): gradients are zeroed in place (libtorch 1.13), nothing is allocated; PyTorch 2's Python
    // default (set_to_none) frees them.
    if (options_.python_defaults)
      for (Parameter& param : params_) {
        program_.release(param.grad);
        param.grad = -1;
      }
    // Gradient accumulation: the micro-batches before the last, each loss and graph gone before the next.
    for (int64_t micro = 1; micro < options_.grad_accum; ++micro) {
      program_.set_context(iteration, Phase::Forward, -1);
      std::vector<Tensor> outputs = forward();
      program_.set_context(iteration, Phase::Loss, -1);
      Tensor loss = compute_loss(outputs);
      for (Tensor& output : outputs) program_.release(output.buffer);
      end_autocast();  // each micro-batch's autocast scope ends after its loss (Trainer::micro_batch)
      program_.set_context(iteration, Phase::Backward, -1);
      backward(loss);
      program_.release(loss.buffer);
      for (GradNode& node : nodes_)
        for (int buffer : node.saved) program_.release(buffer);
      nodes_.clear();
      for (int rng : checkpoint_rng_) program_.release(rng);
      checkpoint_rng_.clear();
    }
    program_.set_context(iteration, Phase::Forward, -1);
    std::vector<Tensor> outputs = forward();
    program_.set_context(iteration, Phase::Loss, -1);
    Tensor loss = compute_loss(outputs);
    for (Tensor& output : outputs) program_.release(output.buffer);
    end_autocast();
    program_.set_context(iteration, Phase::Backward, -1);
    backward(loss);
    // The executor's Trainer::iteration() drops the loss forward_backward() returns before the step; a Python
    // loop keeps its `loss` through it.
    if (!options_.python_defaults) program_.release(loss.buffer);
    program_.set_context(iteration, Phase::Optimizer, -1);
    step();
    if (options_.python_defaults) program_.release(loss.buffer);
    // Nodes never reached (outputs that do not lead to the loss) go with the graph.
    for (GradNode& node : nodes_)
      for (int buffer : node.saved) program_.release(buffer);
    nodes_.clear();
    for (int rng : checkpoint_rng_) program_.release(rng);  // with the graph, the nodes never reached
    checkpoint_rng_.clear();
  }

  std::vector<Tensor> forward() {
    const size_t count = static_cast<size_t>(graph_.size());
    std::vector<Tensor> values(count);
    std::vector<size_t> pending(count);
    for (size_t index = 0; index < count; ++index) pending[index] = consumers_[index].size();
    size_t next_input = 0;
    for (int index = 0; index < graph_.size(); ++index) {
      const Node& node = graph_.node(index);
      if (segment_at_[static_cast<size_t>(index)] >= 0) {
        index = forward_checkpointed(static_cast<size_t>(segment_at_[static_cast<size_t>(index)]), values, pending);
        continue;
      }
      program_.set_node(index);
      std::vector<Tensor> inputs;
      if (node.op == "Input") {
        Tensor input;
        input.buffer = input_buffers_.at(next_input++);
        input.bytes = bytes_of(node);
        inputs.push_back(input);
      } else {
        for (int producer : node.inputs) inputs.push_back(values[static_cast<size_t>(producer)]);
      }
      values[static_cast<size_t>(index)] = run_node(index, node, inputs);
      for (int producer : node.inputs) {
        auto slot = static_cast<size_t>(producer);
        if (--pending[slot] == 0 && !is_output_[slot]) program_.release(values[slot].buffer);
      }
    }
    program_.set_node(-1);
    std::vector<Tensor> outputs;
    for (int output : outputs_) {
      Tensor value = values[static_cast<size_t>(output)];
      program_.retain(value.buffer);
      outputs.push_back(value);
    }
    for (int output : outputs_) program_.release(values[static_cast<size_t>(output)].buffer);
    return outputs;
  }

  // --- activation checkpointing (graph/checkpoint.h; the executor's BlockCheckpoint) ---------------
  // The nodes of a segment on `inputs` (its CheckpointSegment::inputs' values, borrowed), each intermediate value
  // released after its last consumer in the segment; returns its output's value (one reference).
  Tensor run_segment(const CheckpointSegment& segment, const std::vector<Tensor>& inputs) {
    const auto first = static_cast<size_t>(segment.first);
    std::vector<Tensor> local(static_cast<size_t>(segment.last - segment.first + 1));
    std::vector<size_t> pending(local.size(), 0);
    for (int index = segment.first; index <= segment.last; ++index)
      for (int producer : graph_.node(index).inputs)
        if (producer >= segment.first) ++pending[static_cast<size_t>(producer) - first];
    const auto output = static_cast<size_t>(segment.outputs.at(0)) - first;
    for (int index = segment.first; index <= segment.last; ++index) {
      const Node& node = graph_.node(index);
      program_.set_node(index);
      std::vector<Tensor> in;
      for (int producer : node.inputs) {
        if (producer >= segment.first) {
          in.push_back(local[static_cast<size_t>(producer) - first]);
        } else {
          auto found = std::find(segment.inputs.begin(), segment.inputs.end(), producer);
          in.push_back(inputs.at(static_cast<size_t>(found - segment.inputs.begin())));
        }
      }
      local[static_cast<size_t>(index) - first] = run_node(index, node, in);
      for (int producer : node.inputs) {
        if (producer < segment.first) continue;
        const size_t slot = static_cast<size_t>(producer) - first;
        if (--pending[slot] == 0 && slot != output) program_.release(local[slot].buffer);
      }
    }
    return local[output];
  }

  // Checkpointed block `segment_index` inside forward(): the RNG state kept, the block run without grad, one
  // autograd node (BlockCheckpoint) keeping the block's inputs, with an edge to each (and to the executor's
  // zero-size grad anchor when none requires grad). Returns the block's last node index.
  int forward_checkpointed(size_t segment_index, std::vector<Tensor>& values, std::vector<size_t>& pending) {
    const CheckpointSegment& segment = segments_[segment_index];
    program_.set_node(segment.first);
    int rng = cpu_ ? program_.alloc(kCpuRngStateBytes, Category::Activation, "rng state") : -1;
    std::vector<Tensor> inputs, plain;
    bool any_grad = false;
    for (int producer : segment.inputs) {
      const Tensor& value = values[static_cast<size_t>(producer)];
      inputs.push_back(value);
      any_grad = any_grad || value.requires_grad();
      Tensor without_grad = value;
      without_grad.grad_fn = -1;
      without_grad.param = -1;
      plain.push_back(without_grad);
    }
    grad_enabled_ = false;
    Tensor output = run_segment(segment, plain);
    grad_enabled_ = true;
    program_.set_node(segment.last);
    std::vector<int> kept;
    std::vector<Edge> edges;
    for (const Tensor& input : inputs) {
      kept.push_back(saved(input));
      edges.push_back(edge_of(input));
    }
    if (!any_grad) edges.push_back(Edge{Edge::Param, -1});  // the anchor: its gradient is undefined
    output.grad_fn = make_node(segment.last, kept, edges, [segment_index, inputs, any_grad, rng](Trace& t, const Grad& grad) {
      return t.backward_checkpointed(segment_index, inputs, !any_grad, rng, grad);
    });
    if (output.grad_fn < 0) program_.release(rng);
    else if (rng >= 0) checkpoint_rng_.insert(rng);
    const auto slot = static_cast<size_t>(segment.outputs[0]);
    values[slot] = output;
    pending[slot] = 0;
    for (int consumer : consumers_[slot]) pending[slot] += consumer > segment.last ? 1 : 0;
    for (int index = segment.first; index <= segment.last; ++index)
      for (int producer : graph_.node(index).inputs) {
        auto at = static_cast<size_t>(producer);
        if (producer < segment.first && --pending[at] == 0 && !is_output_[at]) program_.release(values[at].buffer);
      }
    return segment.last;
  }

  // BlockCheckpoint::backward: the forward's RNG state restored inside a fork (the current state kept meanwhile)
  // and dropped, the block recomputed with grad on detached inputs (leaves: their gradients are summed by their
  // AccumulateGrad and stolen into .grad), a nested backward from the incoming gradient, the recomputed output
  // dropped on return; the inputs' .grad are the node's gradients.
  std::vector<Grad> backward_checkpointed(size_t segment_index, const std::vector<Tensor>& inputs, bool anchored,
                                          int rng, const Grad& grad) {
    const CheckpointSegment& segment = segments_[segment_index];
    int fork = cpu_ ? program_.alloc(kCpuRngStateBytes, Category::Transient, "rng state") : -1;
    program_.release(rng);
    checkpoint_rng_.erase(rng);
    const size_t first_param = params_.size();
    const int begin = static_cast<int>(nodes_.size());
    std::vector<Tensor> detached;
    std::vector<int> leaf_params;
    for (const Tensor& input : inputs) {
      Tensor leaf = input;
      leaf.grad_fn = -1;
      leaf.param = -1;
      leaf_params.push_back(-1);
      if (input.requires_grad()) {
        Parameter param;
        param.buffer = input.buffer;
        param.bytes = input.bytes;
        params_.push_back(param);
        leaf_params.back() = static_cast<int>(params_.size()) - 1;
        // The leaf's AccumulateGrad: its incoming gradients summed in its input buffer, then stolen or cloned.
        leaf.grad_fn = make_node(-1, {}, {Edge{Edge::Param, leaf_params.back()}}, [](Trace& t, const Grad& g) {
          t.program().retain(g.buffer);
          return std::vector<Grad>{g};
        });
      }
      detached.push_back(leaf);
    }
    Tensor output = run_segment(segment, detached);
    program_.release(fork);
    end_autocast();  // the recompute's autocast scope exits before the nested backward: its weight casts go
                     // with the saved variables that hold them (the bias casts at once)
    if (output.grad_fn >= 0) {
      GradNode& root = nodes_[static_cast<size_t>(output.grad_fn)];
      root.input = grad;
      root.input.shared_tensor = true;  // the engine's root and this node's input hold it too
      program_.retain(grad.buffer);
      root.received = true;
      run_nodes_backward(begin);
    }
    for (size_t index = static_cast<size_t>(begin); index < nodes_.size(); ++index)
      for (int buffer : nodes_[index].saved) program_.release(buffer);
    nodes_.resize(static_cast<size_t>(begin));
    std::vector<Grad> grads;
    for (size_t position = 0; position < inputs.size(); ++position) {
      const int id = leaf_params[position];
      const int buffer = id >= 0 ? params_[static_cast<size_t>(id)].grad : -1;
      if (buffer >= 0) program_.relabel(buffer, Category::Transient);
      grads.push_back(buffer >= 0 ? make_grad(buffer, inputs[position].bytes, true) : Grad{});
    }
    if (anchored) grads.emplace_back();
    params_.resize(first_param);
    program_.release(output.buffer);
    return grads;
  }

  // --- autograd --------------------------------------------------------------------------------
  Edge edge_of(const Tensor& tensor) const {
    if (tensor.grad_fn >= 0) return Edge{Edge::Node, tensor.grad_fn};
    if (tensor.param >= 0) return Edge{Edge::Param, tensor.param};
    return Edge{};
  }
  Edge param_edge(int ir_node, size_t position) const {
    if (!grad_enabled_) return Edge{};  // a checkpointed block's forward (no_grad)
    const std::vector<int>& ids = node_params_.at(static_cast<size_t>(ir_node));
    if (position >= ids.size() || params_[static_cast<size_t>(ids[position])].frozen) return Edge{};
    return Edge{Edge::Param, ids[position]};
  }

  // Creates the node when any edge needs a gradient; takes over one reference of each saved
  // buffer (callers retain inputs they save; new buffers pass their creation reference).
  int make_node(int ir_node, std::vector<int> saved, std::vector<Edge> edges, BackwardFn backward) {
    bool needed = false;
    for (const Edge& edge : edges) needed = needed || edge.kind != Edge::None;
    needed = needed && grad_enabled_;
    if (!needed) {
      for (int buffer : saved) program_.release(buffer);
      return -1;
    }
    GradNode node;
    node.ir_node = ir_node;
    node.saved = std::move(saved);
    node.edges = std::move(edges);
    node.backward = std::move(backward);
    nodes_.push_back(std::move(node));
    return static_cast<int>(nodes_.size()) - 1;
  }

  void route(const Edge& edge, Grad grad, std::vector<std::pair<int, Grad>>& accumulate) {
    // (A checkpointed block's recomputation adds leaf parameters past those counted: never tied.
    // A checkpointed block's anchor edge has no parameter, -1.)
    if (edge.kind == Edge::Param && edge.target >= 0 && static_cast<size_t>(edge.target) < tied_waiting_.size() &&
        tied_waiting_[static_cast<size_t>(edge.target)] > 0) {
      route_tied(edge.target, grad, accumulate);
      return;
    }
    if (edge.kind == Edge::None || grad.buffer < 0) {
      program_.release(grad.buffer);
      return;
    }
    if (edge.kind == Edge::Param) {
      accumulate.emplace_back(edge.target, grad);
      return;
    }
    GradNode& target = nodes_[static_cast<size_t>(edge.target)];
    if (!target.received) {
      target.input = grad;
      target.received = true;
      return;
    }
    // InputBuffer::accumulate: old + new, out of place.
    Grad sum = new_grad(grad.bytes, "grad sum");  // old + new: laid out like old
    follow_layout(sum, target.input);
    program_.release(target.input.buffer);
    program_.release(grad.buffer);
    target.input = sum;
  }

  // A parameter with several gradient edges (an LM head tied to the embedding): its AccumulateGrad runs once
  // every edge delivered, the gradients summed out of place in its input buffer meanwhile (the LM head's
  // gradient waits there through the whole backward pass).
  void count_tied_edges(int root) {
    tied_waiting_.assign(params_.size(), 0);
    tied_held_.assign(params_.size(), Grad{});
    std::vector<char> reachable(nodes_.size(), 0);
    reachable[static_cast<size_t>(root)] = 1;
    for (int index = root; index >= 0; --index) {
      if (!reachable[static_cast<size_t>(index)]) continue;
      for (const Edge& edge : nodes_[static_cast<size_t>(index)].edges) {
        if (edge.kind == Edge::Node) reachable[static_cast<size_t>(edge.target)] = 1;
        if (edge.kind == Edge::Param && edge.target >= 0) ++tied_waiting_[static_cast<size_t>(edge.target)];
      }
    }
    for (int& waiting : tied_waiting_)
      if (waiting < 2) waiting = 0;  // one edge: AccumulateGrad runs as soon as it arrives
  }
  void route_tied(int param_id, const Grad& grad, std::vector<std::pair<int, Grad>>& accumulate) {
    const auto slot = static_cast<size_t>(param_id);
    Grad& held = tied_held_[slot];
    if (held.buffer < 0) {
      held = grad;
    } else if (grad.buffer >= 0) {
      Grad sum = new_grad(grad.bytes, "grad sum");
      follow_layout(sum, held);
      program_.release(held.buffer);
      program_.release(grad.buffer);
      held = sum;
    }
    if (--tied_waiting_[slot] > 0) return;
    if (held.buffer >= 0) accumulate.emplace_back(param_id, held);
    held = Grad{};
  }

  void accumulate_grad(int param_id, Grad grad) {
    Parameter& param = params_[static_cast<size_t>(param_id)];
    if (param.grad < 0) {
      // AccumulateGrad steals a gradient tensor nobody else holds that has the parameter's
      // layout -- with its whole storage, even when it is a view into a bigger one.
      if (grad.contiguous && !grad.shared_tensor) {
        param.grad = grad.buffer;
        program_.relabel(param.grad, Category::Gradient);
        return;
      }
      param.grad = program_.alloc(param.bytes, Category::Gradient, "grad clone");
    }
    program_.release(grad.buffer);  // added in place into .grad
  }

  void backward(const Tensor& loss) {
    if (loss.grad_fn < 0) return;
    count_tied_edges(loss.grad_fn);
    int ones = program_.alloc(model_elem(), Category::Transient, "ones_like");
    program_.retain(ones);
    GradNode& root = nodes_[static_cast<size_t>(loss.grad_fn)];
    root.input = make_grad(ones, model_elem(), true);
    root.received = true;
    run_nodes_backward(0);
    program_.set_node(-1);
    program_.release(ones);
  }

  // Runs the reached nodes from the last down to `begin` (a checkpointed block's nested backward: its
  // recomputed nodes). A node's backward may append nodes (that nested pass): it is called from a copy.
  void run_nodes_backward(int begin) {
    for (int index = static_cast<int>(nodes_.size()) - 1; index >= begin; --index) {
      if (!nodes_[static_cast<size_t>(index)].received) continue;
      program_.set_node(nodes_[static_cast<size_t>(index)].ir_node);
      Grad input = nodes_[static_cast<size_t>(index)].input;
      nodes_[static_cast<size_t>(index)].received = false;
      const BackwardFn backward_fn = nodes_[static_cast<size_t>(index)].backward;
      std::vector<Grad> grads = backward_fn(*this, input);
      GradNode& node = nodes_[static_cast<size_t>(index)];
      program_.release(input.buffer);
      for (int buffer : node.saved) program_.release(buffer);
      node.saved.clear();
      DNNCAST_ASSERT(grads.size() == node.edges.size());
      std::vector<std::pair<int, Grad>> accumulate;
      for (size_t edge = 0; edge < grads.size(); ++edge) route(node.edges[edge], grads[edge], accumulate);
      for (auto& [param, grad] : accumulate) accumulate_grad(param, grad);
    }
  }

  // --- optimizer step (libtorch 1.13 torch::optim) ---------------------------------------------
  // One case per Optimizer (core/training_setup.h); -Wswitch names a missing one.
  void step() {
    if (options_.python_defaults) {
      foreach_step();
      return;
    }
    for (Parameter& param : params_) {
      if (param.grad < 0) continue;
      switch (options_.optimizer) {
        case Optimizer::Sgd: sgd_step(param); break;
        case Optimizer::Adam: adam_step(param, false); break;
        case Optimizer::AdamW: adam_step(param, true); break;
      }
    }
  }

  // torch.optim's _multi_tensor_sgd / _multi_tensor_adam(w): every update in place over the lists, except
  // Adam's torch._foreach_sqrt(exp_avg_sqs), a list of new tensors that the later in-place ops reuse and
  // _foreach_addcdiv_ consumes. SGD's momentum buffers start as clones of the gradients.
  void foreach_step() {
    std::vector<int> roots;
    for (Parameter& param : params_) {
      if (param.grad < 0) continue;
      if (!param.state.empty()) continue;
      if (options_.optimizer == Optimizer::Sgd) {
        param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "momentum"));
        continue;
      }
      param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "exp_avg"));
      param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "exp_avg_sq"));
    }
    if (options_.optimizer == Optimizer::Sgd) return;
    for (Parameter& param : params_)
      if (param.grad >= 0) roots.push_back(program_.alloc(param.bytes, Category::Transient, "foreach sqrt"));
    for (int root : roots) program_.release(root);
  }

  void sgd_step(Parameter& param) {
    if (param.state.empty()) {
      param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "momentum"));
    } else {
      scalar_temps(true, model_elem());  // buf.mul_(momentum)
    }
  }

  void adam_step(Parameter& param, bool decoupled_weight_decay) {
    if (decoupled_weight_decay) scalar_temps(true, model_elem());  // AdamW: p.mul_(1 - lr * weight_decay)
    if (param.state.empty()) {
      param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "exp_avg"));
      param.state.push_back(program_.alloc(param.bytes, Category::OptimizerState, "exp_avg_sq"));
    }
    scalar_temps(true, model_elem());  // exp_avg.mul_(beta1)
    scalar_temps(true, model_elem());  // exp_avg_sq.mul_(beta2)
    int root = program_.alloc(param.bytes, Category::Transient, "sqrt");
    int wrapped = cpu_ ? program_.alloc(8, Category::Transient, "scalar") : -1;
    int converted = cpu_ ? program_.alloc(model_elem(), Category::Transient, "scalar") : -1;
    int denom = program_.alloc(param.bytes, Category::Transient, "denom");
    program_.release(converted);
    program_.release(wrapped);
    scalar_temps(true, model_elem());  // .add_(eps)
    program_.release(root);
    program_.release(denom);  // after p.addcdiv_(exp_avg, denom, -step_size)
  }

  // --- loss (executor's LossFunction) ----------------------------------------------------------
  Tensor cross_entropy(const Tensor& logits, int64_t logits_bytes, int labels) {
    int log_probs = program_.alloc(logits_bytes, Category::Activation, "log_softmax");
    int lsm = make_node(-1, {}, {edge_of(logits)}, [logits_bytes](Trace& t, const Grad&) {
      return std::vector<Grad>{t.new_grad(logits_bytes)};
    });
    Tensor log_probs_tensor = make_tensor(log_probs, logits_bytes, lsm);
    if (lsm >= 0) {
      program_.retain(log_probs);
      nodes_[static_cast<size_t>(lsm)].saved.push_back(log_probs);  // LogSoftmaxBackward0: result
    }
    (void)labels;
    int output = program_.alloc(model_elem(), Category::Activation, "loss");
    int total_weight = program_.alloc(model_elem(), Category::Activation, "total_weight");
    program_.retain(log_probs);
    int nll = make_node(-1, {log_probs, total_weight}, {edge_of(log_probs_tensor)}, [logits_bytes](Trace& t, const Grad&) {
      return std::vector<Grad>{t.new_grad(logits_bytes)};
    });
    program_.release(log_probs);
    return make_tensor(output, model_elem(), nll);
  }

  Tensor mse(const Tensor& prediction, int64_t bytes, int target) {
    (void)target;
    int output = program_.alloc(model_elem(), Category::Activation, "loss");
    program_.retain(prediction.buffer);
    int node = make_node(-1, {prediction.buffer}, {edge_of(prediction)}, [bytes](Trace& t, const Grad&) {
      return std::vector<Grad>{t.new_grad(bytes)};
    });
    return make_tensor(output, model_elem(), node);
  }

  Tensor compute_loss(const std::vector<Tensor>& outputs) {
    Tensor total;
    size_t target = 0;
    for (size_t index = 0; index < outputs.size(); ++index) {
      const Node& node = graph_.node(outputs_[index]);
      Tensor loss;
      if (OpRegistry::instance().get(node.op).category == "loss") {
        loss = outputs[index];
        program_.retain(loss.buffer);
      } else if (token_logits(node)) {
        // cross_entropy(logits.reshape(-1, V), labels.reshape(-1)): the reshape is a view of the contiguous
        // logits (its backward a view of the gradient). Autocast runs cross_entropy_loss in fp32: low-precision
        // logits are cast first (the cast freed once log_softmax has run; its backward casts the gradient back).
        Tensor logits = to_fp32(outputs_[index], outputs[index]);
        loss = cross_entropy(logits, node.shape.numel() * model_elem(), targets_.at(target++));
        program_.release(logits.buffer);
      } else if (node.shape.rank() == 2 && node.dtype != DType::I64) {
        // Autocast runs the losses in fp32: a low-precision output is cast first (freed after cross-entropy,
        // which keeps its log-probabilities; kept by MSE, which saves its input).
        Tensor logits = to_fp32(outputs_[index], outputs[index]);
        loss = cross_entropy(logits, node.shape.numel() * model_elem(), targets_.at(target++));
        program_.release(logits.buffer);
      } else {
        Tensor prediction = to_fp32(outputs_[index], outputs[index]);
        loss = mse(prediction, node.shape.numel() * model_elem(), targets_.at(target++));
        program_.release(prediction.buffer);
      }
      if (total.buffer < 0 && total.grad_fn < 0) {
        total = loss;
        continue;
      }
      int sum = program_.alloc(model_elem(), Category::Activation, "loss sum");
      int node_id = make_node(-1, {}, {edge_of(total), edge_of(loss)}, [elem_bytes = model_elem()](Trace& t, const Grad& grad) {
        return std::vector<Grad>{t.share(grad, elem_bytes, true), t.share(grad, elem_bytes, true)};
      });
      program_.release(total.buffer);
      program_.release(loss.buffer);
      total = make_tensor(sum, model_elem(), node_id);
    }
    return total;
  }

  // --- the ops ---------------------------------------------------------------------------------
  Tensor new_output(int64_t bytes, const char* what = "output") {
    return make_tensor(program_.alloc(bytes, Category::Activation, what), bytes, -1);
  }
  // A new output laid out like `source` (TensorIterator follows its inputs' layout).
  Tensor like(int64_t bytes, const Tensor& source) {
    Tensor out = new_output(bytes);
    follow_layout(out, source);
    return out;
  }
  Tensor view(const Tensor& input, int64_t bytes, bool contiguous) {
    program_.retain(input.buffer);
    Tensor out = input;
    out.bytes = bytes;
    out.contiguous = contiguous;
    out.param = -1;
    out.expanded_dim = -1;
    out.view_of_result = false;
    return out;
  }
  int saved(const Tensor& tensor) {
    program_.retain(tensor.buffer);
    return tensor.buffer;
  }

  Tensor run_node(int index, const Node& node, const std::vector<Tensor>& in);
  // The recipes (recipes()): one per op or family of ops, each the allocations of its kernels.
  Tensor run_conv(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_batchnorm(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_activation(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_inplace_on_view(int index, const Tensor& x, bool saves_result);
  Tensor run_linear(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_linear_amp(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_input(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_max_pool(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_avg_pool(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_reshape(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_add(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_mul(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_dropout(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_concat(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_slice(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_channel_shuffle(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_permute(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_fused_attention(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_norm(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_softmax(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_class_token(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_position_embedding(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_attention(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_cross_entropy(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_mse(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_generic(int index, const Node& node, const std::vector<Tensor>& in);
  // Llama / Mistral / GPT-NeoX ops as the executor composes them (Hugging Face's modules).
  Tensor run_rms_norm(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_rotary(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_repeat_kv(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_embedding(int index, const Node& node, const std::vector<Tensor>& in);

 public:
  // oneDNN's scratchpad of a bf16 product C[m x n] = A[m x k] B[k x n] (onednn_scratchpad.h), booked and freed
  // inside the kernel, after its output; A or B stored transposed as flagged.
  void bf16_scratch(int64_t batch, int64_t m, int64_t n, int64_t k, bool a_transposed, bool b_transposed) {
    if (!onednn_bf16_) return;
    const std::optional<int64_t> bytes =
        onednn_bf16_scratchpad(Bf16Matmul{batch, m, n, k, a_transposed, b_transposed, threads()});
    if (bytes.has_value() && *bytes > 0) program_.temp(*bytes, "oneDNN scratchpad");
  }
  // A Linear's three products: forward x W^T, the input's gradient g W, the weight's gradient g^T x.
  struct LinearDims {
    int64_t rows = 0, in = 0, out = 0;
  };
  LinearDims linear_dims(const Node& node) const {
    const int64_t in = graph_.node(node.inputs[0]).shape.dims.back();
    return LinearDims{graph_.node(node.inputs[0]).shape.numel() / std::max<int64_t>(in, 1), in, node.shape.dims.back()};
  }
  void linear_forward_scratch(const LinearDims& d) { bf16_scratch(1, d.rows, d.out, d.in, false, true); }
  void linear_input_grad_scratch(const LinearDims& d) { bf16_scratch(1, d.rows, d.in, d.out, false, false); }
  void linear_weight_grad_scratch(const LinearDims& d) { bf16_scratch(1, d.out, d.in, d.rows, true, false); }

  // An ATen op with a Python scalar operand whose result is new: the wrapped scalar and its f32 copy
  // around the output (tensor * 2.0, tensor + eps).
  int scalar_op(int64_t bytes, Category category, const char* what, int64_t elem_bytes = kF32) {
    int wrapped = cpu_ ? program_.alloc(8, Category::Transient, "scalar") : -1;
    int converted = cpu_ ? program_.alloc(elem_bytes, Category::Transient, "scalar") : -1;
    int result = program_.alloc(bytes, category, what);
    program_.release(converted);
    program_.release(wrapped);
    return result;
  }

 private:

  const Graph& graph_;
  TraceOptions options_;
  bool cpu_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<int> outputs_;
  std::vector<bool> inplace_safe_;
  std::vector<const OpRecipe*> recipes_;  // per node
  std::vector<bool> saves_result_;         // per node: an activation that keeps its output for backward
  Program program_;
  std::vector<Parameter> params_;
  std::vector<std::vector<int>> node_params_;
  int program_node_ = -1;  // the node whose parameters setup() creates
  std::vector<int> targets_;
  std::vector<int> input_buffers_;
  std::vector<GradNode> nodes_;
  std::vector<int> tied_waiting_;  // per parameter: gradient edges still to come (0: not tied)
  std::vector<Grad> tied_held_;    // per parameter: their sum so far
  bool grad_enabled_ = true;  // false in a checkpointed block's forward: no autograd node, nothing saved
  std::set<int> checkpoint_rng_;  // RNG states kept by checkpointed blocks whose backward has not run (cpu)
  std::vector<CheckpointSegment> segments_;
  std::vector<int> segment_at_;  // per node: the segment it starts, -1
  std::vector<std::array<std::unique_ptr<ConvRecipe>, 2>> conv_cache_;
  int iteration_ = 0;
  bool amp_ = false;                 // precision bf16 / fp16: autocast over the forward and the loss
  bool pure_ = false;                // precision bf16-pure: parameters, activations, gradients, states in bf16
  bool onednn_bf16_ = false;         // bf16 products on this host's oneDNN: their scratchpads are booked
  std::vector<int64_t> elems_;       // per node: bytes per element of its output as it runs
  std::map<int, Tensor> cast_cache_;  // parameter id -> its low-precision copy (autocast's cache)
};

// Runs a recipe's steps: slot buffers; the kept slots are returned (or passed in `keep`).
void run_steps(Program& program, const std::vector<Step>& steps, std::vector<int>& slots, Category kept_category) {
  for (const Step& step : steps) {
    auto slot = static_cast<size_t>(step.slot);
    if (slot >= slots.size()) slots.resize(slot + 1, -1);
    if (step.kind == Step::Alloc) {
      bool kept = step.slot < kFirstTemp;
      slots[slot] = program.alloc(step.bytes, kept ? kept_category : Category::Transient, kept ? "output" : "workspace");
    } else {
      program.release(slots[slot]);
      slots[slot] = -1;
    }
  }
}

Tensor Trace::run_conv(int index, const Node& node, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const TensorShape& in = graph_.node(node.inputs[0]).shape;
  ConvShape s = conv_shape(graph_, node);
  s.input_grad = x.requires_grad();
  s.channels_last = cpu_ && x.layout.suggests_channels_last(in.dims);
  const int64_t out_bytes = bytes_of(node);
  const int64_t in_bytes = x.bytes;
  // A non-contiguous input (neither plain nor channels-last) is made contiguous first.
  const bool copy_input = cpu_ && !x.contiguous && !x.channels_last;
  int copy = copy_input ? program_.alloc(in_bytes, Category::Transient, "contiguous") : -1;
  std::vector<int> slots;
  run_steps(program_, conv_recipe(index, s).forward, slots, Category::Activation);
  program_.release(copy);
  Tensor out = make_tensor(slots[kSlotOutput], out_bytes, -1);
  const std::vector<int64_t> out_dims = node.shape.dims, in_dims = in.dims;
  if (s.channels_last) with_layout(out, Layout::nhwc(), out_dims);
  out.grad_fn = make_node(index, {saved(x)}, {edge_of(x), param_edge(index, 0), s.bias ? param_edge(index, 1) : Edge{}},
                          [index, s, copy_input, in_bytes, out_dims, in_dims](Trace& t, const Grad& grad) {
                            ConvShape shape = s;
                            shape.grad_copy = t.cpu() && (shape.channels_last ? !(grad.dense && grad.layout.channels_last_contiguous(out_dims))
                                                                              : !grad.contiguous);
                            const ConvRecipe& backward = t.conv_recipe(index, shape);
                            int copy = copy_input ? t.program().alloc(in_bytes, Category::Transient, "contiguous") : -1;
                            std::vector<int> slots;
                            run_steps(t.program(), backward.backward, slots, Category::Transient);
                            t.program().release(copy);
                            slots.resize(kFirstTemp, -1);
                            auto result = [&](int slot) {
                              int buffer = slots[static_cast<size_t>(slot)];
                              return make_grad(buffer, buffer >= 0 ? t.program().bytes(buffer) : 0, true);
                            };
                            Grad gi = result(kSlotGradInput);
                            if (shape.channels_last) with_layout(gi, Layout::nhwc(), in_dims);
                            Grad gw = result(kSlotGradWeight);
                            gw.contiguous = backward.weight_grad_contiguous;
                            return std::vector<Grad>{gi, gw, result(kSlotGradBias)};
                          });
  return out;
}

Tensor Trace::run_batchnorm(int index, const Node& node, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const TensorShape& in = graph_.node(node.inputs[0]).shape;
  const int64_t channel_bytes = in[1] * kF32;
  const int64_t image_size = in.numel() / in[0] / in[1];
  const int64_t bytes = x.bytes;
  const bool cpu = cpu_;
  const int64_t nthreads = threads();
  int mean = -1, invstd = -1;
  if (cpu) {
    program_.temp(kI64, "scalar");  // num_batches_tracked.add_(1): the wrapped integer
    mean = program_.alloc(channel_bytes, Category::Activation, "save_mean");
    invstd = program_.alloc(channel_bytes, Category::Activation, "save_invstd");
    int sum_mean = program_.alloc(channel_bytes, Category::Transient, "mean");
    int var_sum = program_.alloc(channel_bytes, Category::Transient, "var_sum");
    // An N x C x 1 x 1 input takes the channels-last statistics kernel, with a per-thread buffer.
    if (image_size == 1) program_.temp(nthreads * channel_bytes, "stats buffer");
    program_.release(var_sum);
    program_.release(sum_mean);
  } else {
    mean = program_.alloc(channel_bytes, Category::Activation, "save_mean");
    invstd = program_.alloc(channel_bytes, Category::Activation, "save_invstd");
  }
  Tensor out = new_output(bytes);
  if (cpu) {
    int alpha = program_.alloc(channel_bytes, Category::Transient, "alpha");
    program_.temp(channel_bytes, "beta");
    program_.release(alpha);
  }
  out.grad_fn = make_node(index, {saved(x), mean, invstd}, {edge_of(x), param_edge(index, 0), param_edge(index, 1)},
                          [bytes, channel_bytes, image_size, cpu, nthreads](Trace& t, const Grad&) {
                            Program& p = t.program();
                            int first = cpu ? p.alloc(bytes, Category::Transient, "grad_input") : -1;
                            Grad gw = t.new_grad(channel_bytes), gb = t.new_grad(channel_bytes);
                            Grad gi = t.new_grad(bytes);
                            p.release(first);
                            if (cpu && image_size == 1) p.temp(2 * nthreads * channel_bytes, "reduce buffer");
                            return std::vector<Grad>{gi, gw, gb};
                          });
  return out;
}

Tensor Trace::run_activation(int index, const Node& /*node*/, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t bytes = x.bytes;
  const bool inplace = inplace_safe_[static_cast<size_t>(index)];
  // threshold_backward(grad, result) & co: a new tensor laid out like the incoming gradient.
  auto grad_like_incoming = [bytes](Trace& t, const Grad& grad) {
    Grad out = t.new_grad(bytes);
    follow_layout(out, grad);
    return std::vector<Grad>{out};
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
    return std::vector<Grad>{result};
  });
  Tensor out = rebased;
  out.grad_fn = make_node(index, {}, {edge_of(rebased)}, [bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(bytes, "as_strided_backward")};
  });
  return out;  // the view's reference, which the executor holds
}

Tensor Trace::run_linear(int index, const Node& node, const std::vector<Tensor>& in) {
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
      return std::vector<Grad>{grad};
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
    out.grad_fn = make_node(index, keep, {bias_edge, edge_of(input), edge_of(transposed)},
                            [in_bytes, weight_bytes, bias_bytes, input_grad, weight_grad, bias_grad, dims](Trace& t, const Grad&) {
                              Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                              if (input_grad) t.linear_input_grad_scratch(dims);
                              Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                              if (weight_grad) t.linear_weight_grad_scratch(dims);
                              Grad gb = bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{};
                              return std::vector<Grad>{gb, gi, gw};
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
  if (weight_grad) keep.push_back(folded >= 0 ? folded : saved(x));
  else program_.release(folded);  // the folded copy goes when matmul returns
  int mm = make_node(index, keep, {edge_of(x), weight_edge},
                     [in_bytes, weight_bytes, input_grad, weight_grad, dims](Trace& t, const Grad&) {
                       Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                       if (weight_grad) t.linear_weight_grad_scratch(dims);
                       Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                       if (input_grad) t.linear_input_grad_scratch(dims);
                       return std::vector<Grad>{gi, gw};
                     });
  Tensor mm_out = out;
  mm_out.grad_fn = mm;
  const std::vector<int64_t> out_dims = node.shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(mm_out)}, [out_bytes, out_dims](Trace& t, const Grad& grad) {
    if (grad.contiguous) return std::vector<Grad>{t.share(grad, out_bytes, true)};
    // A strided gradient the 2-D view can still take (a batch of one): mm reads it as it is.
    std::vector<int64_t> strides;
    const int64_t features = out_dims.back();
    if (grad.dense && grad.layout.rank == static_cast<int>(out_dims.size()) &&
        view_strides(out_dims, dense_strides(out_dims, grad.layout), {TensorShape(out_dims).numel() / features, features}, strides)) {
      Grad viewed = t.share(grad, out_bytes, false);
      with_layout(viewed, layout_of_strides(strides), {TensorShape(out_dims).numel() / features, features});
      viewed.dense = true;
      return std::vector<Grad>{viewed};
    }
    return std::vector<Grad>{t.new_grad(out_bytes, "reshape")};
  });
  if (bias) {
    Tensor viewed = out;
    out.grad_fn = make_node(index, {}, {edge_of(viewed), bias_edge}, [bias_bytes, bias_grad](Trace& t, const Grad& grad) {
      Grad passed = grad;
      t.program().retain(grad.buffer);
      return std::vector<Grad>{passed, bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{}};
    });
  }
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
    out.grad_fn = make_node(index, keep, {edge_of(b), edge_of(x), edge_of(w)},
                            [in_bytes, weight_bytes, bias_bytes, input_grad, weight_grad, bias_grad, dims](Trace& t, const Grad&) {
                              Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                              if (input_grad) t.linear_input_grad_scratch(dims);
                              Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                              if (weight_grad) t.linear_weight_grad_scratch(dims);
                              Grad gb = bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{};
                              return std::vector<Grad>{gb, gi, gw};
                            });
  } else {
    // matmul(input, weight.t()) [+ bias in place]: the fp32 recipe's nodes (run_linear).
    int folded = !x.contiguous ? program_.alloc(in_bytes, Category::Activation, "contiguous") : -1;
    out = new_output(out_bytes);
    linear_forward_scratch(dims);
    if (weight_grad) keep.push_back(folded >= 0 ? folded : saved(x));
    else program_.release(folded);
    if (input_grad) keep.push_back(saved(w));
    int mm = make_node(index, keep, {edge_of(x), edge_of(w)},
                       [in_bytes, weight_bytes, input_grad, weight_grad, dims](Trace& t, const Grad&) {
                         Grad gw = weight_grad ? t.new_grad(weight_bytes) : Grad{};
                         if (weight_grad) t.linear_weight_grad_scratch(dims);
                         Grad gi = input_grad ? t.new_grad(in_bytes) : Grad{};
                         if (input_grad) t.linear_input_grad_scratch(dims);
                         return std::vector<Grad>{gi, gw};
                       });
    Tensor mm_out = out;
    mm_out.grad_fn = mm;
    out.grad_fn = make_node(index, {}, {edge_of(mm_out)}, [out_bytes](Trace& t, const Grad& grad) {
      if (grad.contiguous) return std::vector<Grad>{t.share(grad, out_bytes, true)};
      return std::vector<Grad>{t.new_grad(out_bytes, "reshape")};
    });
    if (bias) {
      Tensor viewed = out;
      out.grad_fn = make_node(index, {}, {edge_of(viewed), edge_of(b)}, [bias_bytes, bias_grad](Trace& t, const Grad& grad) {
        Grad passed = grad;
        t.program().retain(grad.buffer);
        return std::vector<Grad>{passed, bias_grad ? t.new_grad(bias_bytes, "sum_to") : Grad{}};
      });
    }
  }
  program_.release(x.buffer);
  program_.release(w.buffer);
  program_.release(b.buffer);
  return out;
}

Tensor Trace::run_generic(int index, const Node& node, const std::vector<Tensor>& in) {
  // Approximation from the op's declaration: output, its saved tensors, one gradient per input.
  OpCost cost = node_cost(graph_, index);
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
    std::vector<Grad> grads;
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

Tensor Trace::run_max_pool(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  Tensor out = new_output(out_bytes);
  int indices = program_.alloc(node.shape.numel() * kI64, Category::Activation, "indices");
  const int64_t in_bytes = x.bytes;
  out.grad_fn = make_node(index, {saved(x), indices}, {edge_of(x)}, [in_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(in_bytes)};
  });
  return out;
}

Tensor Trace::run_avg_pool(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  const bool mean = op == "AdaptiveAvgPool2d" && node.shape[2] == 1 && node.shape[3] == 1;
  Tensor out = new_output(out_bytes);
  if (mean && cpu_) scalar_temps();  // mean: sum, then div_ by the element count
  const int64_t in_bytes = x.bytes;
  const bool cpu = cpu_;
  out.grad_fn = make_node(index, {saved(x)}, {edge_of(x)}, [in_bytes, mean, cpu](Trace& t, const Grad&) {
    if (!mean || !cpu) return std::vector<Grad>{t.new_grad(in_bytes)};
    // grad.expand(sizes) / count
    int wrapped = t.program().alloc(8, Category::Transient, "scalar");
    int converted = t.program().alloc(4, Category::Transient, "scalar");
    Grad gi = t.new_grad(in_bytes);
    t.program().release(converted);
    t.program().release(wrapped);
    return std::vector<Grad>{gi};
  });
  return out;
}

Tensor Trace::run_reshape(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const std::vector<int64_t>& out_dims = node.shape.dims;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  if (op == "Flatten" && in_shape.rank() == node.shape.rank()) return view(x, x.bytes, x.contiguous);  // no-op
  const int64_t bytes = x.bytes;
  const std::vector<int64_t> in_dims = in_shape.dims;
  // reshape: a view when the strides allow it (ATen's computeStride), a copy otherwise; the same
  // for the gradient on the way back.
  std::vector<int64_t> strides;
  const bool viewable = x.dense && view_strides(in_dims, dense_strides(in_dims, x.layout), out_dims, strides);
  Tensor out;
  if (viewable) {
    out = view(x, bytes, x.contiguous);
    with_layout(out, layout_of_strides(strides), out_dims);
  } else {
    out = new_output(bytes, "reshape copy");
  }
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [bytes, out_dims, in_dims](Trace& t, const Grad& grad) {
    std::vector<int64_t> grad_strides;
    if (grad.dense && view_strides(out_dims, dense_strides(out_dims, grad.layout), in_dims, grad_strides)) {
      Grad passed = t.share(grad, bytes, true);
      with_layout(passed, layout_of_strides(grad_strides), in_dims);
      return std::vector<Grad>{passed};
    }
    return std::vector<Grad>{t.new_grad(bytes, "reshape")};
  });
  return out;
}

Tensor Trace::run_add(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  const int promoted = promoted_copy(node);
  Tensor out = like(out_bytes, x.bytes == out_bytes ? x : y);
  program_.release(promoted);
  const int64_t a_bytes = x.bytes, b_bytes = y.bytes;
  out.grad_fn = make_node(index, {}, {edge_of(x), edge_of(y)}, [out_bytes, a_bytes, b_bytes](Trace& t, const Grad& grad) {
    auto pass = [&](int64_t bytes) {
      if (bytes != out_bytes) return t.new_grad(bytes, "sum_to");
      Grad shared = grad;
      shared.shared_tensor = a_bytes == b_bytes;
      t.program().retain(grad.buffer);
      return shared;
    };
    Grad ga = pass(a_bytes);
    Grad gb = pass(b_bytes);
    return std::vector<Grad>{ga, gb};
  });
  return out;
}

Tensor Trace::run_mul(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  if (op == "Mul" && in.size() == 1) {
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
      return std::vector<Grad>{product};
    });
    return out;
  }
  // LayerScale is gamma * x with gamma a parameter (the executor's operand order).
  Tensor a = x, b = op == "Mul" ? in[1] : x;
  if (op == "LayerScale") {
    const int param = node_params_[static_cast<size_t>(index)][0];
    a = make_tensor(params_[static_cast<size_t>(param)].buffer, params_[static_cast<size_t>(param)].bytes, -1, param);
    b = x;
  }
  const int promoted = op == "Mul" ? promoted_copy(node) : -1;
  Tensor out = like(out_bytes, a.bytes == out_bytes ? a : b);
  program_.release(promoted);
  std::vector<int> keep;
  if (b.requires_grad()) keep.push_back(saved(a));  // other's grad needs self
  if (a.requires_grad()) keep.push_back(saved(b));  // self's grad needs other
  const int64_t a_bytes = a.bytes, b_bytes = b.bytes;
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  out.grad_fn = make_node(index, keep, {edge_of(a), edge_of(b)}, [out_bytes, a_bytes, b_bytes, need_a, need_b](Trace& t, const Grad& grad) {
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
    return std::vector<Grad>{ga, gb};
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
  out.grad_fn = make_node(index, {noise}, {edge_of(x)}, [bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(bytes)};
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
    std::vector<Grad> grads;
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
  const int64_t in_bytes = x.bytes;
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [in_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(in_bytes, "slice_backward")};
  });
  return out;
}

Tensor Trace::run_channel_shuffle(int index, const Node&, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  // view, transpose, contiguous (a copy), view: backward reshapes a transposed gradient (a copy).
  const int64_t bytes = x.bytes;
  Tensor out = new_output(bytes, "shuffle copy");
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(bytes, "reshape")};
  });
  return out;
}

Tensor Trace::run_permute(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const std::vector<int64_t>& out_dims = node.shape.dims;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  std::vector<int64_t> dims;
  if (op == "Permute") {
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
  const bool contiguous_copy =
      node.attr_int("contiguous", 0) != 0 && !(x.dense && permuted_layout.contiguous(out_dims));
  Tensor out;
  if (contiguous_copy) {
    out = new_output(bytes, "contiguous");
  } else {
    out = view(x, bytes, false);
    Layout base = x.layout.rank == 0 ? Layout::plain(in_shape.rank()) : x.layout;
    with_layout(out, base.permuted(dims), out_dims);
  }
  const std::vector<int64_t> in_dims = in_shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(x)}, [bytes, inverse, in_dims](Trace& t, const Grad& grad) {
    Grad permuted = t.share(grad, bytes, false);
    permuted.dense = grad.dense;
    Layout base = grad.layout.rank == 0 ? Layout::plain(static_cast<int>(in_dims.size())) : grad.layout;
    with_layout(permuted, base.permuted(inverse), in_dims);
    return std::vector<Grad>{permuted};
  });
  return out;
}

Tensor Trace::run_norm(int index, const Node& node, const std::vector<Tensor>& in) {
  const std::string& op = node.op;
  const Tensor& x = in[0];
  const TensorShape& in_shape = graph_.node(node.inputs[0]).shape;
  int64_t rows = 0, normalized = 0;
  if (op == "LayerNorm") {
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
  const int64_t param_bytes = affine ? params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes : 0;
  const int64_t nthreads = threads();
  const bool cpu = cpu_;
  // native_layer_norm_backward's output mask: dX only when the input needs it, dgamma and dbeta (and the
  // kernel's reduction buffer) only for trainable affine parameters.
  const bool input_grad = x.requires_grad();
  const bool param_grad = affine && param_edge(index, 0).kind != Edge::None;
  out.grad_fn = make_node(index, {saved(x), mean, rstd}, {edge_of(x), param_edge(index, 0), param_edge(index, 1)},
                          [bytes, param_bytes, normalized, nthreads, cpu, input_grad, param_grad,
                           in_elem = elem(node.inputs[0])](Trace& t, const Grad& grad) {
                            int copy = cpu && !grad.contiguous ? t.program().alloc(bytes, Category::Transient, "contiguous") : -1;
                            Grad gi = input_grad ? t.new_grad(bytes) : Grad{};
                            Grad gw = param_grad ? t.new_grad(param_bytes) : Grad{};
                            Grad gb = param_grad ? t.new_grad(param_bytes) : Grad{};
                            if (cpu && param_grad) t.program().temp(nthreads * 2 * normalized * in_elem, "dgamma buffer");
                            t.program().release(copy);
                            return std::vector<Grad>{gi, gw, gb};
                          });
  return out;
}

Tensor Trace::run_softmax(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  const Tensor& x = in[0];
  Tensor out = new_output(out_bytes);
  out.grad_fn = make_node(index, {saved(out)}, {edge_of(x)}, [out_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(out_bytes)};
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
                            Grad token = views_contiguous ? t.share(grad, token_bytes, true) : t.new_grad(token_bytes, "sum_to");
                            return std::vector<Grad>{token, t.share(grad, x_bytes, views_contiguous)};
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
  out.grad_fn = make_node(index, {}, {edge_of(x), table_edge}, [table_bytes, same, table_grad](Trace& t, const Grad& grad) {
    Grad passed = grad;
    passed.shared_tensor = same && table_grad;
    t.program().retain(grad.buffer);
    if (!table_grad) return std::vector<Grad>{passed, Grad{}};
    Grad table = same ? passed : t.new_grad(table_bytes, "sum_to");
    if (same) t.program().retain(grad.buffer);
    return std::vector<Grad>{passed, table};
  });
  return out;
}

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
                            return std::vector<Grad>{gq, gk, gv};
                          });
  return out;
}

Tensor Trace::run_attention(int index, const Node& node, const std::vector<Tensor>& in) {
  if (node.attr_int("fused", 0) != 0) return run_fused_attention(index, node, in);
  const int64_t out_bytes = bytes_of(node);
  // libtorch 1.13's math path as the executor writes it: (q * scale) @ k^T, softmax, @ v; the
  // scores stay alive until the op returns; autograd keeps q * scale, k, the probabilities, v.
  const TensorShape& q_shape = graph_.node(node.inputs[0]).shape;
  const TensorShape& k_shape = graph_.node(node.inputs[1]).shape;
  const int64_t q_elem = elem(node.inputs[0]);  // fp32, or the low type; fp32 under autocast after rotary
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
    return std::vector<Grad>{g};
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
  int q_copy = folds_by_copy(q_order, true, q_shape.dims, false) ? program_.alloc(q_op_bytes, Category::Activation, "q reshape") : -1;
  int k_copy = folds_by_copy(k_op.layout, k_op.dense, k_shape.dims, true, k_op.expanded_dim) ? program_.alloc(k_bytes, Category::Activation, "k^T reshape") : -1;
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
                         return std::vector<Grad>{gq, gk};
                       });
  if (cast_k) program_.release(k_op.buffer);
  if (cast_q) program_.release(q_op.buffer);
  Tensor scores_tensor = make_tensor(scores, scores_bytes, bmm1);
  program_.release(scaled_q);
  if (causal) {
    int masked = program_.alloc(scores_bytes, Category::Activation, "masked scores");
    int mask_node = make_node(index, {}, {edge_of(scores_tensor)}, [scores_bytes](Trace& t, const Grad&) {
      return std::vector<Grad>{t.new_grad(scores_bytes)};
    });
    program_.release(scores);
    scores = masked;
    scores_tensor = make_tensor(masked, scores_bytes, mask_node);
  }
  int probabilities = program_.alloc(scores_bytes, Category::Activation, "softmax");
  int softmax_node = make_node(index, {}, {edge_of(scores_tensor)}, [scores_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(scores_bytes)};
  });
  if (softmax_node >= 0) {  // none where neither q nor k needs a gradient (LoRA on v alone), nor in a checkpointed block's forward (no_grad)
    program_.retain(probabilities);
    nodes_[static_cast<size_t>(softmax_node)].saved.push_back(probabilities);
  }
  Tensor probs = make_tensor(probabilities, scores_bytes, softmax_node);
  if (dropout_p > 0) {
    int noise = program_.alloc(dropout_mask_bytes(scores_bytes), Category::Activation,
                               cpu_ ? "dropout noise" : "dropout mask");
    if (cpu_) scalar_temps(true, elem_bytes);
    int dropped = program_.alloc(scores_bytes, Category::Activation, "dropout");
    int drop_node = make_node(index, {noise}, {edge_of(probs)}, [scores_bytes](Trace& t, const Grad&) {
      return std::vector<Grad>{t.new_grad(scores_bytes)};
    });
    program_.release(probabilities);
    probabilities = dropped;
    probs = make_tensor(dropped, scores_bytes, drop_node);
  }
  const TensorShape& v_shape = graph_.node(node.inputs[2]).shape;
  int v_copy = folds_by_copy(in[2].layout, in[2].dense, v_shape.dims, false, in[2].expanded_dim) ? program_.alloc(v_bytes, Category::Activation, "v reshape") : -1;
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
                            return std::vector<Grad>{gp, gv};
                          });
  // matmul's _unsafe_view of the 3-D product back to N x heads x L x head_dim: UnsafeViewBackward0 reshapes
  // the gradient, a copy when it arrives permuted (through the heads' merge).
  const Tensor product = out;
  const std::vector<int64_t> out_dims = node.shape.dims;
  out.grad_fn = make_node(index, {}, {edge_of(product)}, [out_bytes, out_dims](Trace& t, const Grad& grad) {
    const int64_t batch = out_dims[0] * out_dims[1];
    std::vector<int64_t> strides;
    if (grad.dense && view_strides(out_dims, dense_strides(out_dims, grad.layout), {batch, out_dims[2], out_dims[3]}, strides))
      return std::vector<Grad>{t.share(grad, out_bytes, true)};
    return std::vector<Grad>{t.new_grad(out_bytes, "reshape")};
  });
  program_.release(probabilities);
  program_.release(scores);  // the local `scores` goes when the op returns
  return out;
}

Tensor Trace::run_cross_entropy(int, const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const TensorShape& logits = graph_.node(node.inputs[0]).shape;
  return cross_entropy(x, logits.numel() * model_elem(), -1);
}

Tensor Trace::run_mse(int, const Node&, const std::vector<Tensor>& in) { return mse(in[0], in[0].bytes, -1); }

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
  auto product = [](Trace& t, const Grad& grad, int64_t size) {
    Grad result = t.new_grad(size);
    follow_layout(result, grad);
    return result;
  };
  // x.pow(2): PowBackward0 keeps x.
  int squares = program_.alloc(bytes, Category::Activation, "x^2");
  const int pow_node = make_node(index, {saved(x)}, {edge_of(x)}, [bytes, product, e](Trace& t, const Grad& grad) {
    int linear = t.program().alloc(bytes, Category::Transient, "pow");  // self.pow(1): a copy
    int doubled = t.scalar_op(bytes, Category::Transient, "2 * pow", e);
    Grad result = product(t, grad, bytes);
    t.program().release(doubled);
    t.program().release(linear);
    return std::vector<Grad>{result};
  });
  Tensor squares_t = make_tensor(squares, bytes, pow_node);
  // mean(-1, keepdim): sum, then div_ by the width; MeanBackward1 keeps its input.
  int mean = program_.alloc(row_bytes, Category::Activation, "mean");
  scalar_temps(true, e);
  program_.retain(squares);
  const int mean_node = make_node(index, {squares}, {edge_of(squares_t)}, [bytes, e](Trace& t, const Grad&) {
    return std::vector<Grad>{make_grad(t.scalar_op(bytes, Category::Transient, "grad", e), bytes, true)};
  });
  Tensor mean_t = make_tensor(mean, row_bytes, mean_node);
  // + eps: AddBackward1 passes the gradient on.
  int shifted = scalar_op(row_bytes, Category::Activation, "mean + eps", e);
  const int add_node = make_node(index, {}, {edge_of(mean_t)}, [](Trace& t, const Grad& grad) {
    t.program().retain(grad.buffer);
    return std::vector<Grad>{grad};
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
    return std::vector<Grad>{result};
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
                                   return std::vector<Grad>{g_x, g_rstd};
                                 });
  // weight * normalized: the normalized tensor's gradient (grad * weight) first, then the weight's (grad *
  // normalized, summed to the width). A frozen weight keeps nothing of the normalized tensor.
  Tensor out = like(bytes, normalized);
  const Edge weight_edge = param_edge(index, 0);
  const bool weight_grad = weight_edge.kind != Edge::None, normalized_grad = normalized.requires_grad();
  keep.clear();
  if (normalized_grad) keep.push_back(saved(make_tensor(params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].buffer, 0, -1)));
  if (weight_grad) keep.push_back(saved(normalized));
  out.grad_fn = make_node(index, keep, {weight_edge, edge_of(normalized)},
                          [bytes, width_bytes, weight_grad, normalized_grad, product](Trace& t, const Grad& grad) {
                            Grad g_normalized = normalized_grad ? product(t, grad, bytes) : Grad{};
                            Grad g_weight = weight_grad ? product(t, grad, bytes) : Grad{};
                            if (g_weight.buffer >= 0) {
                              Grad reduced = t.new_grad(width_bytes, "sum_to");
                              t.program().release(g_weight.buffer);
                              g_weight = reduced;
                            }
                            return std::vector<Grad>{g_weight, g_normalized};
                          });
  program_.release(normalized.buffer);  // the temporary x * rstd, then the local rstd
  program_.release(rstd);
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
    return [input_bytes](Trace& t, const Grad&) { return std::vector<Grad>{t.new_grad(input_bytes, "slice_backward")}; };
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
  const int neg_node = make_node(index, {}, {edge_of(upper)}, [half_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(half_bytes)};
  });
  Tensor lower = narrowed(part, part_bytes);
  int turned = program_.alloc(part_bytes, Category::Activation, "rotate_half");
  const int cat_node = make_node(index, {}, {edge_of(make_tensor(negated, half_bytes, neg_node)), edge_of(lower)},
                                 [half_bytes](Trace& t, const Grad& grad) {
                                   return std::vector<Grad>{t.share(grad, half_bytes, false), t.share(grad, half_bytes, false)};
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
      return std::vector<Grad>{g};
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
  Tensor rotated = make_tensor(program_.alloc(wide_bytes, Category::Activation, partial ? "rotated" : "output"), wide_bytes, -1);
  with_layout(rotated, order, part_dims);
  rotated.grad_fn = make_node(index, {}, {edge_of(with_cos), edge_of(with_sin)}, [](Trace& t, const Grad& grad) {
    Grad shared = grad;
    shared.shared_tensor = true;
    t.program().retain(grad.buffer);
    t.program().retain(grad.buffer);
    return std::vector<Grad>{shared, shared};
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
    out.grad_fn = make_node(index, {}, {edge_of(rotated), edge_of(rest)}, [wide_bytes, rest_bytes](Trace& t, const Grad& grad) {
      return std::vector<Grad>{t.share(grad, wide_bytes, false), t.share(grad, rest_bytes, false)};
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
    return std::vector<Grad>{grad};
  };
  Tensor unsqueezed = x;
  unsqueezed.param = -1;
  unsqueezed.grad_fn = make_node(index, {}, {edge_of(x)}, pass);
  Tensor expanded = unsqueezed;
  expanded.grad_fn = make_node(index, {}, {edge_of(unsqueezed)}, [in_bytes](Trace& t, const Grad&) {
    return std::vector<Grad>{t.new_grad(in_bytes, "sum_to")};
  });
  // The expanded sizes and strides (the new axis has stride 0), and whether reshape can view them.
  std::vector<int64_t> sizes = shape.dims, strides;
  bool viewable = false;
  if (x.dense) {
    strides = dense_strides(sizes, x.layout);
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
  } else {
    out = new_output(out_bytes, "repeat_kv");
    out.grad_fn = make_node(index, {}, {edge_of(expanded)}, pass);  // CloneBackward0
  }
  out.grad_fn = make_node(index, {}, {edge_of(viewable ? expanded : out)}, pass);  // the reshape: a view of the gradient
  return out;
}

// at::embedding: index_select of the rows (EmbeddingBackward0 keeps the indices). Backward
// (embedding_dense_backward_cpu): a zero table the rows are added into, after a contiguous copy of a strided
// gradient. A frozen table takes no gradient.
Tensor Trace::run_embedding(int index, const Node& node, const std::vector<Tensor>& in) {
  const int64_t out_bytes = bytes_of(node);
  Tensor out = new_output(out_bytes);
  const int64_t table_bytes = params_[static_cast<size_t>(node_params_[static_cast<size_t>(index)][0])].bytes;
  out.grad_fn = make_node(index, {saved(in[0])}, {param_edge(index, 0)}, [table_bytes, out_bytes](Trace& t, const Grad& grad) {
    Grad table = t.new_grad(table_bytes, "embedding grad");
    if (!grad.contiguous) t.program().temp(out_bytes, "contiguous");
    return std::vector<Grad>{table};
  });
  return out;
}

// The recipes, by the name an op declares (OpDef::memory_recipe): one per op or family of ops,
// each the allocations of its kernels. "generic" is not replayed kernel by kernel: an op that
// declares it is approximate (docs/MEMORY.md).
const std::map<std::string, Trace::OpRecipe>& Trace::recipes() {
  static const char* const kGeneric = "approximate: generic elementwise recipe (the OpDef's saved tensors)";
  static const std::map<std::string, OpRecipe> table{
      {"input", {&Trace::run_input}},
      {"conv", {&Trace::run_conv}},
      {"generic", {&Trace::run_generic, kGeneric}},
      {"linear", {&Trace::run_linear}},
      {"batchnorm", {&Trace::run_batchnorm}},
      {"norm", {&Trace::run_norm}},
      {"activation", {&Trace::run_activation}},
      {"max_pool", {&Trace::run_max_pool}},
      {"avg_pool", {&Trace::run_avg_pool}},
      {"add", {&Trace::run_add}},
      {"mul", {&Trace::run_mul}},
      {"dropout", {&Trace::run_dropout}},
      {"reshape", {&Trace::run_reshape}},
      {"concat", {&Trace::run_concat}},
      {"slice", {&Trace::run_slice}},
      {"channel_shuffle", {&Trace::run_channel_shuffle}},
      {"permute", {&Trace::run_permute}},
      {"softmax", {&Trace::run_softmax}},
      {"class_token", {&Trace::run_class_token}},
      {"position_embedding", {&Trace::run_position_embedding}},
      {"attention", {&Trace::run_attention}},
      {"cross_entropy", {&Trace::run_cross_entropy}},
      {"mse", {&Trace::run_mse}},
      {"rms_norm", {&Trace::run_rms_norm}},
      {"rotary", {&Trace::run_rotary}},
      {"repeat_kv", {&Trace::run_repeat_kv}},
      {"embedding", {&Trace::run_embedding}},
  };
  return table;
}

Tensor Trace::run_node(int index, const Node& node, const std::vector<Tensor>& in) {
  const OpRecipe& recipe = *recipes_[static_cast<size_t>(index)];
  const bool low_op = node.op == "MatMul";  // Linear casts its own arguments (run_linear_amp)
  const bool fp32_op = recipe.run == &Trace::run_cross_entropy || recipe.run == &Trace::run_mse ||
                       (!cpu_ && cuda_fp32_op(node));
  if (!amp_ || (!low_op && !fp32_op)) return (this->*recipe.run)(index, node, in);
  // autocast's casts of the tensor arguments, right to left; each goes when the op returns unless saved.
  std::vector<Tensor> args = in;
  std::vector<int> held;
  for (size_t position = in.size(); position-- > 0;) {
    const int producer = node.inputs[position];
    const int64_t to = low_op ? 2 : kF32;
    if (graph_.node(producer).dtype == DType::I64 || elem(producer) == to) continue;
    args[position] = cast(index, in[position], graph_.node(producer).shape.numel(), elem(producer), to);
    held.push_back(args[position].buffer);
  }
  Tensor out = (this->*recipe.run)(index, node, args);
  for (int buffer : held) program_.release(buffer);
  return out;
}

}  // namespace

RecipeKind recipe_kind(const std::string& op) {
  if (!OpRegistry::instance().has(op)) return RecipeKind::None;
  auto found = Trace::recipes().find(OpRegistry::instance().get(op).memory_recipe);
  if (found == Trace::recipes().end()) return RecipeKind::None;
  return found->second.approximate ? RecipeKind::Approximate : RecipeKind::Exact;
}

Program trace_training(const Graph& graph, const TraceOptions& options) {
  if (options.precision == Precision::Fp16 && options.device == Device::Cpu)
    throw InputError("precision 'fp16': autocast to fp16 runs on cuda only (the executor's); on cpu use bf16");
  if (options.threads < 1) throw InputError("threads must be at least 1, got " + std::to_string(options.threads));
  if (options.iterations < 1) throw InputError("iterations must be at least 1");
  for (const Node& node : graph.nodes())
    if (node.dtype != DType::F32 && node.dtype != DType::I64)
      throw InputError("node " + quote(node.name) + " has dtype " + dtype_name(node.dtype) +
                       ": the memory simulator models fp32 training only");
  if (options.device == Device::Cpu)
    for (const Node& node : graph.nodes())
      if (node.op == "ScaledDotProductAttention" && node.attr_int("fused", 0) != 0)
        throw InputError("attention sdpa (node " + quote(node.name) +
                         "): fused attention is modelled on cuda only (libtorch 1.13 on cpu runs the math path: "
                         "--attention eager)");
  static const char* const kFreezable[] = {"Linear", "Embedding", "PositionEmbedding", "LayerNorm", "GroupNorm",
                                           "RMSNorm"};
  for (const Node& node : graph.nodes()) {
    if (!node.frozen()) continue;
    bool freezable = false;
    for (const char* op : kFreezable) freezable = freezable || node.op == op;
    if (!freezable)
      throw InputError("node " + quote(node.name) + " (" + node.op +
                       ") is frozen: the memory simulator models frozen Linear, embedding and norm layers only");
  }
  Trace trace(graph, options);
  return trace.run();
}

}  // namespace dnncast::memory
