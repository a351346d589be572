// The memory simulator's trace of one training iteration (memory/training_trace.h), shared by its recipe files:
// tensors as the simulator sees them (buffer, bytes, layout, the gradient function that saved them) and the Trace
// that replays forward, backward and the optimizer step allocation by allocation. Each op family's recipes are
// one file: memory/recipe_conv.cpp, recipe_linear, recipe_attention, recipe_norm, recipe_elementwise,
// recipe_shape, recipe_loss; the table of recipes by name is Trace::recipes() in training_trace.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graph/checkpoint.h"
#include "graph/inplace.h"
#include "graph/op_registry.h"
#include "graph/quantize.h"
#include "hardware/cpu_conv.h"
#include "memory/onednn_scratchpad.h"
#include "memory/training_trace.h"

namespace dnncast::memory::detail {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

// A convolution's allocations come from kernels/cpu_conv (what libtorch's CPU kernels allocate).
using hardware::conv_shape;
using hardware::ConvRecipe;
using hardware::ConvShape;
using hardware::cpu_conv_recipe;
using hardware::kFirstTemp;
using hardware::kSlotGradBias;
using hardware::kSlotGradInput;
using hardware::kSlotGradWeight;
using hardware::kSlotOutput;
using hardware::Step;

constexpr int64_t kF32 = 4;
constexpr int64_t kI64 = 8;
// torch.get_rng_state()'s tensor: libtorch 1.13's CPUGeneratorImplState (the Mersenne twister and the normal
// samples' cache), which a checkpointed block keeps from its forward to its backward.
constexpr int64_t kCpuRngStateBytes = 5056;

inline std::vector<int64_t> pair_attr(const Node& node, const std::string& key, int64_t fallback) {
  std::vector<int64_t> values = node.attr_ints(key, {fallback, fallback});
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

[[maybe_unused]] inline int64_t bytes_of(const Node& node) { return node.shape.numel() * dtype_bytes(node.dtype); }

// Whether a slice / narrow along `axis` of a contiguous tensor of `dims` stays contiguous:
// only when every dimension before it has size 1.
inline bool narrow_is_contiguous(const std::vector<int64_t>& dims, int axis) {
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
  // Calls `visit(dim)` for the dimensions larger than one (the only ones strides constrain) in memory order, outermost
  // first, until it returns false; returns whether every call returned true. (No list is built: this runs for
  // most tensors of a memory forecast.)
  template <typename Visit>
  bool each_significant(const std::vector<int64_t>& sizes, Visit visit) const {
    if (rank == 0) {
      for (size_t dim = 0; dim < sizes.size(); ++dim)
        if (sizes[dim] != 1 && !visit(static_cast<int>(dim))) return false;
      return true;
    }
    for (int slot = 0; slot < rank; ++slot) {
      const int dim = order[static_cast<size_t>(slot)];
      if (static_cast<size_t>(dim) < sizes.size() && sizes[static_cast<size_t>(dim)] != 1 && !visit(dim)) return false;
    }
    return true;
  }
  bool contiguous(const std::vector<int64_t>& sizes) const {
    int previous = -1;  // the significant dimensions in rising order
    return each_significant(sizes, [&previous](int dim) {
      if (dim < previous) return false;
      previous = dim;
      return true;
    });
  }
  // NCHW sizes stored NHWC (channels-last), and not also plain-contiguous.
  bool channels_last(const std::vector<int64_t>& sizes) const {
    return !contiguous(sizes) && channels_last_contiguous(sizes);
  }
  // c10's is_contiguous(ChannelsLast): the dimensions larger than one in N, H, W, C order (a
  // tensor whose H and W are 1 is both this and plain-contiguous).
  bool channels_last_contiguous(const std::vector<int64_t>& sizes) const {
    if (sizes.size() != 4) return false;
    std::array<int, 4> expected{};
    size_t count = 0;
    for (int dim : {0, 2, 3, 1})
      if (sizes[static_cast<size_t>(dim)] != 1) expected[count++] = dim;
    size_t seen = 0;
    return each_significant(sizes, [&](int dim) { return seen < count && expected[seen++] == dim; }) && seen == count;
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

struct ScaleStep;  // memory/recipe_norm.cpp

// A forward value: a view of a storage (buffer) with autograd metadata.
struct Tensor {
  int buffer = -1;    // storage; -1 for a zero-size tensor
  int64_t bytes = 0;  // bytes of this view
  bool contiguous = true;
  bool channels_last = false;
  bool dense = true;      // covers its storage without gaps (false for a narrowed view)
  Layout layout;          // rank 0: plain
  int grad_fn = -1;       // autograd node producing it
  int param = -1;         // parameter id (a leaf that requires grad)
  int expanded_dim = -1;  // a dimension expand() made of a size-1 one (stride 0); the rest dense in `layout`
  // A differentiable view of its op's fresh result (_flatten_3d_linear's .view()): an in-place op on it is
  // recorded on the base as CopySlices.
  bool view_of_result = false;
  // A strided view with gaps (a slice of a dense tensor, and the views reshape and permute make of it): its
  // strides in elements, so that a reshape the strides allow stays a view (phi3's q, k, v sliced from qkv_proj,
  // viewed as heads). Empty where the tensor is dense in `layout` or its strides are not followed.
  std::vector<int64_t> strides;
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

inline Grad make_grad(int buffer, int64_t bytes, bool contiguous) {
  Grad grad;
  grad.buffer = buffer;
  grad.bytes = bytes;
  grad.contiguous = contiguous;
  grad.dense = contiguous;
  return grad;
}

// Element strides of a dense tensor of `sizes` stored in `layout`'s order.
inline std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes, const Layout& layout) {
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
inline Layout layout_of_strides(const std::vector<int64_t>& strides) {
  if (strides.size() > static_cast<size_t>(kMaxRank)) return Layout{};
  Layout layout;
  layout.rank = static_cast<int8_t>(strides.size());
  std::vector<int> dims(strides.size());
  for (size_t dim = 0; dim < dims.size(); ++dim) dims[dim] = static_cast<int>(dim);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int a, int b) { return strides[static_cast<size_t>(a)] > strides[static_cast<size_t>(b)]; });
  for (size_t slot = 0; slot < dims.size(); ++slot) layout.order[slot] = static_cast<int8_t>(dims[slot]);
  return layout;
}

// ATen's rule for reshape as a view (computeStride): the new shape must split or merge only
// dimensions that are contiguous with each other. Returns false when reshape copies.
// c10's is_contiguous from sizes and strides (size-1 dimensions ignored).
inline bool strides_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t dim = sizes.size(); dim-- > 0;) {
    if (sizes[dim] == 1) continue;
    if (strides[dim] != expected) return false;
    expected *= sizes[dim];
  }
  return true;
}

inline bool view_strides(const std::vector<int64_t>& old_sizes, const std::vector<int64_t>& old_strides,
                         const std::vector<int64_t>& new_sizes, std::vector<int64_t>& new_strides) {
  new_strides.assign(new_sizes.size(), 1);
  if (old_sizes.empty()) return true;
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[static_cast<size_t>(tensor_d)];
    const bool chunk_end =
        tensor_d == 0 || (old_sizes[static_cast<size_t>(tensor_d - 1)] != 1 &&
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
inline bool folds_by_copy(const Layout& layout, bool dense, std::vector<int64_t> dims, bool transposed,
                          int expanded_dim = -1) {
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

inline Tensor make_tensor(int buffer, int64_t bytes, int grad_fn, int param = -1) {
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

// A short list held inline, on the heap only past N items: a grad node's saved buffers and edges (a few each, for
// every node of every simulated iteration).
template <typename T, size_t N>
class ShortList {
 public:
  ShortList() = default;
  ShortList(std::initializer_list<T> items) {
    for (const T& item : items) push_back(item);
  }
  ShortList(const std::vector<T>& items) {  // NOLINT(google-explicit-constructor): make_node's callers pass either
    for (const T& item : items) push_back(item);
  }
  void push_back(const T& item) {
    if (size_ < N) {
      inline_[size_] = item;
    } else {
      if (size_ == N) spill_.assign(inline_.begin(), inline_.end());
      spill_.push_back(item);
    }
    ++size_;
  }
  const T* begin() const { return size_ <= N ? inline_.data() : spill_.data(); }
  const T* end() const { return begin() + size_; }
  const T& operator[](size_t index) const { return begin()[index]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    size_ = 0;
    spill_.clear();
  }

 private:
  std::array<T, N> inline_{};
  std::vector<T> spill_;  // every item once there are more than N
  size_t size_ = 0;
};
using SavedList = ShortList<int, 4>;
using EdgeList = ShortList<Edge, 4>;
using GradList = ShortList<Grad, 4>;  // a backward's gradients, one per edge

class Trace;
// A grad node's backward (Trace& trace, const Grad& grad) -> GradList: the recipe's lambda held inline when its
// captures fit in kInline bytes (a recipe's sizes, flags and a shape or two), on the heap past that. A std::function
// allocated for every capture past 16 bytes: once for most autograd nodes of every simulated iteration. Moved, never
// copied (a node's backward runs once).
class BackwardFn {
 public:
  static constexpr size_t kInline = 96;
  BackwardFn() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, BackwardFn>>>
  BackwardFn(F&& function) {  // NOLINT(google-explicit-constructor): make_node takes the recipes' lambdas as they are
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= kInline && alignof(Fn) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<Fn>) {
      new (storage_) Fn(std::forward<F>(function));
      call_ = [](void* held, Trace& trace, const Grad& grad) -> GradList {
        return (*static_cast<Fn*>(held))(trace, grad);
      };
      move_ = [](void* to, void* from) noexcept {
        new (to) Fn(std::move(*static_cast<Fn*>(from)));
        static_cast<Fn*>(from)->~Fn();
      };
      destroy_ = [](void* held) noexcept { static_cast<Fn*>(held)->~Fn(); };
    } else {
      Fn* outside = new Fn(std::forward<F>(function));
      std::memcpy(storage_, &outside, sizeof(outside));
      call_ = [](void* held, Trace& trace, const Grad& grad) -> GradList {
        Fn* function_held = nullptr;
        std::memcpy(&function_held, held, sizeof(function_held));
        return (*function_held)(trace, grad);
      };
      move_ = [](void* to, void* from) noexcept { std::memcpy(to, from, sizeof(Fn*)); };
      destroy_ = [](void* held) noexcept {
        Fn* function_held = nullptr;
        std::memcpy(&function_held, held, sizeof(function_held));
        delete function_held;
      };
    }
  }
  BackwardFn(BackwardFn&& other) noexcept { take(other); }
  BackwardFn& operator=(BackwardFn&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  BackwardFn(const BackwardFn&) = delete;
  BackwardFn& operator=(const BackwardFn&) = delete;
  ~BackwardFn() { reset(); }

  GradList operator()(Trace& trace, const Grad& grad) { return call_(storage_, trace, grad); }

 private:
  void take(BackwardFn& other) noexcept {
    if (other.call_ == nullptr) return;
    other.move_(storage_, other.storage_);
    call_ = other.call_;
    move_ = other.move_;
    destroy_ = other.destroy_;
    other.call_ = nullptr;
  }
  void reset() noexcept {
    if (call_ != nullptr) destroy_(storage_);
    call_ = nullptr;
  }
  alignas(std::max_align_t) unsigned char storage_[kInline];
  GradList (*call_)(void*, Trace&, const Grad&) = nullptr;
  void (*move_)(void*, void*) noexcept = nullptr;
  void (*destroy_)(void*) noexcept = nullptr;
};

struct GradNode {
  int ir_node = -1;
  SavedList saved;  // buffers held until this node's backward ran (one reference each)
  EdgeList edges;
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
    for (int index = 0; index < graph.size(); ++index)  // Graph::outputs(), from the consumers at hand
      if (consumers_[static_cast<size_t>(index)].empty()) outputs_.push_back(index);
    for (int output : outputs_) is_output_[static_cast<size_t>(output)] = true;
    inplace_safe_ = inplace_safe_nodes(graph);
    // Each op's definition and recipe looked up by name once, not once per node (a transformer repeats a dozen
    // ops over a thousand nodes).
    std::map<std::string, std::pair<const OpDef*, const OpRecipe*>> by_op;
    for (const Node& node : graph.nodes()) {
      auto [known, added] = by_op.try_emplace(node.op);
      if (added) {
        const OpDef& def = OpRegistry::instance().get(node.op);
        auto found = recipes().find(def.memory_recipe);
        DNNCAST_ASSERT(found != recipes().end());  // every registered op has one (op_completeness_test)
        known->second = {&def, &found->second};
      }
      defs_.push_back(known->second.first);
      recipes_.push_back(known->second.second);
      // An activation: which tensor autograd keeps, as the op declares it (graph/ops_activation.cpp).
      bool saves_result = false;
      if (recipes_.back()->run == &Trace::run_activation) {
        OpCost computed;
        const std::vector<SavedTensor>& kept = node_cost(graph, static_cast<int>(saves_result_.size()), computed).saved;
        DNNCAST_ASSERT(kept.size() == 1);
        saves_result = kept[0].kind == SavedTensor::Kind::Output;
      }
      saves_result_.push_back(saves_result);
    }
    amp_ = is_autocast(options.precision);
    pure_ = options.precision == Precision::Bf16Pure;
    // bf16 products go to oneDNN, whose scratchpad is asked of this host's library: only when the simulated ISA
    // is this host's dispatch (another ISA's kernels, and their scratchpads, are not this library's answer).
    onednn_bf16_ =
        cpu_ && (amp_ || pure_) && aten_uses_onednn_for_bf16() && options.isa == hardware::host_dispatch().onednn;
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
      if (!amp_ || node.op == "Input"sv || node.dtype == DType::I64) continue;
      const std::string& recipe = defs_[index]->memory_recipe;
      int64_t widest = 0;
      for (int producer : node.inputs) widest = std::max(widest, elems_[static_cast<size_t>(producer)]);
      if (node.op == "Linear"sv || node.op == "MatMul"sv || node.op == "ScaledDotProductAttention"sv ||
          recipe == "conv")
        elems_[index] = low;
      else if (recipe == "cross_entropy" || recipe == "mse" || node.op == "Embedding"sv)
        elems_[index] = kF32;
      else if (!cpu_ && cuda_fp32_op(node))
        elems_[index] = kF32;  // CUDA's autocast list runs norms and softmax in fp32 (unverified, as all of cuda)
      else if (node.op == "PositionEmbedding"sv || node.op == "LayerScale"sv || node.op == "ClassToken"sv ||
               node.op == "RotaryEmbedding"sv || node.op == "RMSNorm"sv)
        elems_[index] = kF32;  // with an fp32 parameter (rotary: x * cos with fp32 tables; RMSNorm: weight * x)
      else if (widest > 0)
        elems_[index] = widest;
    }
  }

  // Ops CUDA's autocast (1.13) runs in fp32 that CPU's does not: layer_norm, group_norm, softmax.
  static bool cuda_fp32_op(const Node& node) {
    return node.op == "LayerNorm"sv || node.op == "GroupNorm"sv || node.op == "Softmax"sv;
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
      else if (node.op == "ScaledDotProductAttention"sv && amp_ && elem(node.inputs[2]) != 2)
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
      return GradList{back};
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
        return GradList{t.new_grad(numel * kF32, "to_copy")};
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
      if (OpRegistry::instance().get(node.op).category == "loss"sv) continue;
      if (token_logits(node))
        targets_.push_back(
            program_.alloc(node.shape.numel() / node.shape.dims.back() * kI64, Category::State, "labels"));
      else if (node.shape.rank() == 2 && node.dtype != DType::I64)
        targets_.push_back(program_.alloc(node.shape[0] * kI64, Category::State, "labels"));
      else
        targets_.push_back(program_.alloc(node.shape.numel() * model_elem(), Category::State, "target"));
    }
    for (int index : graph_.inputs())
      input_buffers_.push_back(program_.alloc(bytes_of(graph_.node(index)), Category::State, "input"));
  }

  // The executor's LossFunction: an N x ... x V output whose V is the row count of one of the graph's
  // Embeddings gets token-level cross-entropy (a language model's head).
  bool token_logits(const Node& node) const {
    if (node.shape.rank() < 3 || node.dtype == DType::I64) return false;
    for (const Node& other : graph_.nodes())
      if (other.op == "Embedding"sv && other.attr_int("num_embeddings") == node.shape.dims.back()) return true;
    return false;
  }

  int add_param(int64_t fp32_bytes, int64_t stored_bytes = -1) {
    const int64_t bytes = stored_bytes >= 0 ? stored_bytes : fp32_bytes / kF32 * model_elem();
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
    auto in_shape = [&](int input) -> const TensorShape& {
      return graph_.node(node.inputs.at(static_cast<size_t>(input))).shape;
    };
    if (op == "Conv2d"sv || op == "ConvTranspose2d"sv) {
      int64_t in_channels = in_shape(0)[1];
      int64_t out_channels = node.attr_int("out_channels");
      int64_t groups = node.attr_int("groups", 1);
      std::vector<int64_t> kernel = pair_attr(node, "kernel", 1);
      ids.push_back(add_param(out_channels * (in_channels / groups) * kernel[0] * kernel[1] * kF32));
      if (node.attr_int("bias", 1) != 0) ids.push_back(add_param(out_channels * kF32));
    } else if (op == "Linear"sv) {
      int64_t in_features = in_shape(0).dims.back();
      int64_t out_features = node.attr_int("out_features");
      std::string tied = node.attr_str("tied_to", "");
      int target = tied.empty() ? -1 : graph_.find(tied);
      if (target >= 0 && target < index && !node_params_[static_cast<size_t>(target)].empty())
        ids.push_back(node_params_[static_cast<size_t>(target)][0]);
      else if (node.has_attr("quantize"))  // bitsandbytes' layout (graph/quantize.h), frozen
        ids.push_back(add_param(
            0, quantized_weight_bytes(out_features * in_features, out_features, node.attr_str("quantize", "nf4"))));
      else
        ids.push_back(add_param(out_features * in_features * kF32));
      if (node.attr_int("bias", 1) != 0) ids.push_back(add_param(out_features * kF32));
    } else if (op == "BatchNorm2d"sv) {
      int64_t channels = in_shape(0)[1];
      ids.push_back(add_param(channels * kF32));
      ids.push_back(add_param(channels * kF32));
      add_buffer(channels * model_elem(), "running_mean");
      add_buffer(channels * model_elem(), "running_var");
      add_buffer(kI64, "num_batches_tracked");
    } else if (op == "LayerNorm"sv) {
      if (node.attr_int("elementwise_affine", 1) == 0) return;
      int64_t elements = TensorShape(node.attr_ints("normalized_shape")).numel();
      ids.push_back(add_param(elements * kF32));
      ids.push_back(add_param(elements * kF32));
    } else if (op == "GroupNorm"sv) {
      if (node.attr_int("affine", 1) == 0) return;
      ids.push_back(add_param(in_shape(0)[1] * kF32));
      ids.push_back(add_param(in_shape(0)[1] * kF32));
    } else if (op == "LayerScale"sv || op == "ClassToken"sv || op == "PositionEmbedding"sv || op == "Embedding"sv ||
               op == "RMSNorm"sv) {
      OpCost computed;
      const int64_t params = node_cost(graph_, index, computed).params;
      if (op == "Embedding"sv || op == "PositionEmbedding"sv) program_.temp(params * kF32, "randn");  // randn * std
      ids.push_back(add_param(params * kF32));
    } else if (op == "ScaledDotProductAttention"sv) {
      if (node.attr_int("causal", 0) != 0) {
        int64_t cells = in_shape(0)[2] * in_shape(1)[2];
        program_.temp(cells, "ones");
        add_buffer(cells, "causal_mask");
      }
    } else if (op == "RotaryEmbedding"sv) {
      const int64_t table_bytes = in_shape(0)[2] * node.attr_int("rotary_dim", in_shape(0)[3]) * kF32;
      add_buffer(table_bytes, "cos");
      add_buffer(table_bytes, "sin");
    } else if (op == "ExpertGather"sv || op == "ExpertCombine"sv) {
      // the int64 indices of the expert's tokens (and, for the combine, of its routing weights)
      const int64_t index_bytes = node.attr_int("count") * kI64;
      add_buffer(index_bytes, "expert tokens");
      if (op == "ExpertCombine"sv) add_buffer(index_bytes, "expert slots");
    } else if (op == "CrossEntropyLoss"sv) {
      const TensorShape& logits = in_shape(0);
      add_buffer(logits.numel() / logits[1] * kI64, "labels");
    } else if (op == "MSELoss"sv) {
      if (node.inputs.size() == 1) add_buffer(in_shape(0).numel() * model_elem(), "target");
    } else {
      // Every other op the executor runs owns no parameters; a new op with parameters must get
      // a recipe here (the profiler checks the same count).
      OpCost computed;
      DNNCAST_ASSERT(node_cost(graph_, index, computed).params == 0);
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
    std::vector<Tensor> inputs;  // each node's, in one list reused (a node has a few)
    inputs.reserve(8);
    for (int index = 0; index < graph_.size(); ++index) {
      const Node& node = graph_.node(index);
      if (segment_at_[static_cast<size_t>(index)] >= 0) {
        index = forward_checkpointed(static_cast<size_t>(segment_at_[static_cast<size_t>(index)]), values, pending);
        continue;
      }
      program_.set_node(index);
      inputs.clear();
      if (node.op == "Input"sv) {
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
    output.grad_fn =
        make_node(segment.last, kept, edges, [segment_index, inputs, any_grad, rng](Trace& t, const Grad& grad) {
          return t.backward_checkpointed(segment_index, inputs, !any_grad, rng, grad);
        });
    if (output.grad_fn < 0)
      program_.release(rng);
    else if (rng >= 0)
      checkpoint_rng_.insert(rng);
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
  GradList backward_checkpointed(size_t segment_index, const std::vector<Tensor>& inputs, bool anchored, int rng,
                                 const Grad& grad) {
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
          return GradList{g};
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
    GradList grads;
    for (size_t position = 0; position < inputs.size(); ++position) {
      const int id = leaf_params[position];
      const int buffer = id >= 0 ? params_[static_cast<size_t>(id)].grad : -1;
      if (buffer >= 0) program_.relabel(buffer, Category::Transient);
      grads.push_back(buffer >= 0 ? make_grad(buffer, inputs[position].bytes, true) : Grad{});
    }
    if (anchored) grads.push_back(Grad{});
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
  int make_node(int ir_node, SavedList saved, EdgeList edges, BackwardFn backward) {
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
      // Moved out, not copied (a copy allocates its captures): a node runs once, and its backward may add nodes
      // (a checkpointed block's recomputation), which moves nodes_.
      BackwardFn backward_fn = std::move(nodes_[static_cast<size_t>(index)].backward);
      const GradList grads = backward_fn(*this, input);
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
        case Optimizer::Sgd:
          sgd_step(param);
          break;
        case Optimizer::Adam:
          adam_step(param, false);
          break;
        case Optimizer::AdamW:
          adam_step(param, true);
          break;
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
      param.state.reserve(2);
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
    int lsm = make_node(-1, {}, {edge_of(logits)},
                        [logits_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(logits_bytes)}; });
    Tensor log_probs_tensor = make_tensor(log_probs, logits_bytes, lsm);
    if (lsm >= 0) {
      program_.retain(log_probs);
      nodes_[static_cast<size_t>(lsm)].saved.push_back(log_probs);  // LogSoftmaxBackward0: result
    }
    (void)labels;
    int output = program_.alloc(model_elem(), Category::Activation, "loss");
    int total_weight = program_.alloc(model_elem(), Category::Activation, "total_weight");
    program_.retain(log_probs);
    int nll = make_node(-1, {log_probs, total_weight}, {edge_of(log_probs_tensor)},
                        [logits_bytes](Trace& t, const Grad&) { return GradList{t.new_grad(logits_bytes)}; });
    program_.release(log_probs);
    return make_tensor(output, model_elem(), nll);
  }

  Tensor mse(const Tensor& prediction, int64_t bytes, int target) {
    (void)target;
    int output = program_.alloc(model_elem(), Category::Activation, "loss");
    program_.retain(prediction.buffer);
    int node = make_node(-1, {prediction.buffer}, {edge_of(prediction)},
                         [bytes](Trace& t, const Grad&) { return GradList{t.new_grad(bytes)}; });
    return make_tensor(output, model_elem(), node);
  }

  Tensor compute_loss(const std::vector<Tensor>& outputs) {
    Tensor total;
    size_t target = 0;
    for (size_t index = 0; index < outputs.size(); ++index) {
      const Node& node = graph_.node(outputs_[index]);
      Tensor loss;
      if (OpRegistry::instance().get(node.op).category == "loss"sv) {
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
      int node_id =
          make_node(-1, {}, {edge_of(total), edge_of(loss)}, [elem_bytes = model_elem()](Trace& t, const Grad& grad) {
            return GradList{t.share(grad, elem_bytes, true), t.share(grad, elem_bytes, true)};
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
  Tensor run_linear_quantized(int index, const Node& node, const std::vector<Tensor>& in);
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
  Tensor attention_probabilities(int index, Tensor scores_tensor, int64_t scores_bytes, int64_t elem_bytes, bool causal,
                                 double dropout_p, int& scores, int& probabilities);
  Tensor soft_cap(int index, const Tensor& scores_tensor, int64_t scores_bytes, int64_t elem_bytes, int& scores);
  Tensor run_attention(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_cross_entropy(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_mse(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_generic(int index, const Node& node, const std::vector<Tensor>& in);
  // Llama / Mistral / GPT-NeoX ops as the executor composes them (Hugging Face's modules).
  Tensor run_rms_norm(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor scale_output(const ScaleStep& step, const Tensor& normalized);
  Tensor weight_scale(int index, const Tensor& normalized, const ScaleStep& step);
  Tensor offset_scale(int index, const Tensor& normalized, const ScaleStep& step);
  Tensor run_rotary(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_repeat_kv(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_embedding(int index, const Node& node, const std::vector<Tensor>& in);
  // A mixture of experts' routing (memory/recipe_moe.cpp).
  Tensor run_topk_routing(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_expert_gather(int index, const Node& node, const std::vector<Tensor>& in);
  Tensor run_expert_combine(int index, const Node& node, const std::vector<Tensor>& in);

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
  Consumers consumers_;
  std::vector<bool> is_output_;
  std::vector<int> outputs_;
  std::vector<bool> inplace_safe_;
  std::vector<const OpRecipe*> recipes_;  // per node
  std::vector<const OpDef*> defs_;        // per node: its op's definition
  std::vector<bool> saves_result_;        // per node: an activation that keeps its output for backward
  Program program_;
  std::vector<Parameter> params_;
  std::vector<std::vector<int>> node_params_;
  int program_node_ = -1;  // the node whose parameters setup() creates
  std::vector<int> targets_;
  std::vector<int> input_buffers_;
  std::vector<GradNode> nodes_;
  std::vector<int> tied_waiting_;  // per parameter: gradient edges still to come (0: not tied)
  std::vector<Grad> tied_held_;    // per parameter: their sum so far
  bool grad_enabled_ = true;       // false in a checkpointed block's forward: no autograd node, nothing saved
  std::set<int> checkpoint_rng_;   // RNG states kept by checkpointed blocks whose backward has not run (cpu)
  std::vector<CheckpointSegment> segments_;
  std::vector<int> segment_at_;  // per node: the segment it starts, -1
  std::vector<std::array<std::unique_ptr<ConvRecipe>, 2>> conv_cache_;
  int iteration_ = 0;
  bool amp_ = false;                  // precision bf16 / fp16: autocast over the forward and the loss
  bool pure_ = false;                 // precision bf16-pure: parameters, activations, gradients, states in bf16
  bool onednn_bf16_ = false;          // bf16 products on this host's oneDNN: their scratchpads are booked
  std::vector<int64_t> elems_;        // per node: bytes per element of its output as it runs
  std::map<int, Tensor> cast_cache_;  // parameter id -> its low-precision copy (autocast's cache)
};

// Runs a recipe's steps: slot buffers; the kept slots are returned (or passed in `keep`).
inline void run_steps(Program& program, const std::vector<Step>& steps, std::vector<int>& slots,
                      Category kept_category) {
  for (const Step& step : steps) {
    auto slot = static_cast<size_t>(step.slot);
    if (slot >= slots.size()) slots.resize(slot + 1, -1);
    if (step.kind == Step::Alloc) {
      bool kept = step.slot < kFirstTemp;
      slots[slot] =
          program.alloc(step.bytes, kept ? kept_category : Category::Transient, kept ? "output" : "workspace");
    } else {
      program.release(slots[slot]);
      slots[slot] = -1;
    }
  }
}

}  // namespace dnncast::memory::detail
