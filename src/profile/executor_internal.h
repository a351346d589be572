// The libtorch executor's module (profile/executor.cpp), shared with its op files: a graph's parameters and
// forward function over ATen ops (GraphModule) and one OpImpl per op. Each op family's implementations are one
// file: profile/torch_conv_linear.cpp, torch_norm, torch_elementwise, torch_shape, torch_attention,
// torch_input_loss; the table of every op is op_impls() in executor.cpp. Only profile/ includes this header
// (it includes libtorch's).
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <thread>

#ifdef DNNCAST_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "core/error.h"
#include "core/stats.h"
#include "graph/checkpoint.h"
#include "graph/inplace.h"
#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "profile/internal.h"

namespace dnncast::profile::detail {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

inline std::vector<int64_t> pair_of(const Node& node, const std::string& key, int64_t fallback) {
  std::vector<int64_t> values = node.attr_ints(key, {fallback, fallback});
  if (values.size() == 1) values.push_back(values[0]);
  return values;
}

inline int64_t wrap_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// --- Fault injection for the tests of the isolation (DNNCAST_PROFILE_FAULT=kind:node) ----------
// kind = throw (a C++ exception), abort (SIGABRT), hang (sleeps past any timeout). Read once.
struct Fault {
  std::string kind, node;
};
inline const Fault& fault() {
  static const Fault value = [] {
    Fault parsed;
    const char* text = std::getenv("DNNCAST_PROFILE_FAULT");
    if (text == nullptr) return parsed;
    std::string spec = text;
    size_t colon = spec.find(':');
    if (colon == std::string::npos) return parsed;
    parsed.kind = spec.substr(0, colon);
    parsed.node = spec.substr(colon + 1);
    return parsed;
  }();
  return value;
}
inline void maybe_fault(const Node& node) {
  const Fault& f = fault();
  if (f.kind.empty() || f.node != node.name) return;
  if (f.kind == "throw") throw std::runtime_error("injected fault in node '" + node.name + "'");
  if (f.kind == "abort") std::abort();
  if (f.kind == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// --- The module --------------------------------------------------------------------------------

struct NodeState {
  std::vector<at::Tensor> params;   // trainable, torch order (weight, bias)
  std::vector<at::Tensor> buffers;  // running stats, implied loss targets, masks
};

class GraphModule;

struct OpImpl {
  // Creates the node's parameters and buffers.
  std::function<void(GraphModule& module, int index, NodeState& state)> make;
  // Runs the node. `inplace` allows an in-place activation (the caller checked it is safe).
  std::function<at::Tensor(const Node& node, const std::vector<at::Tensor>& in, NodeState& state, bool inplace)>
      forward;
};

const std::map<std::string, OpImpl>& op_impls();

// In-iteration timing of each node (per-layer mode): its forward call timed inside the forward
// pass, and when the gradient of its output was complete in the backward pass (a tensor hook, run
// just before the engine runs the node's backward functions).
struct NodeClock {
  std::vector<double> forward_ms;
  std::vector<Clock::time_point> grad_ready;
  std::vector<char> grad_seen;
  explicit NodeClock(size_t nodes) : forward_ms(nodes, 0.0), grad_ready(nodes), grad_seen(nodes, 0) {}
};

// A checkpointed block (graph/checkpoint.h) run through the autograd function that recomputes it in the
// backward pass (BlockCheckpoint, below).
std::vector<at::Tensor> run_checkpointed(GraphModule& module, size_t segment, const std::vector<at::Tensor>& inputs);

class GraphModule {
 public:
  GraphModule(const Graph& graph, at::Device device, bool init_values)
      : graph_(graph), device_(device), init_(init_values) {
    states_.resize(static_cast<size_t>(graph.size()));
    consumers_ = graph.consumers();
    std::vector<int> outputs = graph.outputs();
    is_output_.assign(static_cast<size_t>(graph.size()), false);
    for (int output : outputs) is_output_[static_cast<size_t>(output)] = true;
    for (int index = 0; index < graph.size(); ++index) {
      const Node& node = graph.node(index);
      auto found = op_impls().find(node.op);
      DNNCAST_ASSERT(found != op_impls().end());  // check_supported ran before
      impls_.push_back(&found->second);
      found->second.make(*this, index, states_[static_cast<size_t>(index)]);
    }
    // Parameters in graph order, each tensor once (a tied Linear shares its Embedding's weight). A frozen
    // node's (Node::frozen) do not require grad: a shared tensor is frozen or not with the node that made it.
    std::set<const void*> seen;
    for (int index = 0; index < graph.size(); ++index)
      for (at::Tensor& param : states_[static_cast<size_t>(index)].params) {
        if (!seen.insert(param.unsafeGetTensorImpl()).second) continue;
        parameters_.push_back(param);
        const bool frozen = graph.node(index).frozen();
        param.set_requires_grad(!frozen);
        if (!frozen) trainable_.push_back(param);
      }
    inplace_safe_ = inplace_safe_nodes(graph);
    segments_ = checkpoint_segments(graph);
    segment_at_.assign(static_cast<size_t>(graph.size()), -1);
    for (size_t segment = 0; segment < segments_.size(); ++segment)
      segment_at_[static_cast<size_t>(segments_[segment].first)] = static_cast<int>(segment);
    // A block none of whose inputs requires grad (the hidden states as the graph's input, a frozen embedding
    // under LoRA) takes this zero-size tensor as one more input, so that its output requires grad and its
    // backward runs: torch.utils.checkpoint(use_reentrant=True) would leave its weights without gradients.
    if (!segments_.empty()) grad_anchor_ = at::empty({0}, float_options()).set_requires_grad(true);
  }

  const Graph& graph() const { return graph_; }
  at::Device device() const { return device_; }
  void synchronize_device() const {
    if (device_.is_cuda()) torch::cuda::synchronize();
  }
  bool init_values() const { return init_; }
  NodeState& state(int index) { return states_.at(static_cast<size_t>(index)); }
  const std::vector<at::Tensor>& parameters() const { return parameters_; }
  const std::vector<at::Tensor>& trainable_parameters() const { return trainable_; }  // what the optimizer updates
  int64_t parameter_count() const {
    int64_t total = 0;
    for (const at::Tensor& param : parameters_) total += param.numel();
    return total;
  }
  at::TensorOptions float_options() const { return at::TensorOptions().device(device_).dtype(at::kFloat); }

  // A new parameter of `shape`: uniform(-bound, bound) (bound 0 = constant `fill`).
  at::Tensor new_param(at::IntArrayRef shape, double bound, double fill = 0) const {
    if (!init_) return at::empty(shape, float_options());
    if (bound > 0) return at::empty(shape, float_options()).uniform_(-bound, bound);
    return at::full(shape, fill, float_options());
  }
  at::Tensor new_normal(at::IntArrayRef shape, double std) const {
    if (!init_) return at::empty(shape, float_options());
    return at::randn(shape, float_options()) * std;
  }

  at::Tensor run_node(int index, const std::vector<at::Tensor>& inputs, bool allow_inplace) {
    const Node& node = graph_.node(index);
    maybe_fault(node);
    return impls_[static_cast<size_t>(index)]->forward(node, inputs, states_[static_cast<size_t>(index)],
                                                       allow_inplace && inplace_safe_[static_cast<size_t>(index)]);
  }

  // Forward over the whole graph. `graph_inputs[i]` feeds the i-th Input node (graph order).
  // Returns the outputs' tensors (graph order); `dtypes`, when given, receives every node's output type.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& graph_inputs, bool allow_inplace,
                                  std::vector<at::ScalarType>* dtypes = nullptr, NodeClock* clock = nullptr) {
    size_t count = static_cast<size_t>(graph_.size());
    std::vector<at::Tensor> values(count);
    std::vector<size_t> pending(count);
    for (size_t index = 0; index < count; ++index) pending[index] = consumers_[index].size();
    if (dtypes) dtypes->assign(count, at::kFloat);
    size_t next_input = 0;
    std::vector<at::Tensor> inputs;
    for (int index = 0; index < graph_.size(); ++index) {
      const Node& node = graph_.node(index);
      inputs.clear();
      if (node.op == "Input") {
        inputs.push_back(graph_inputs.at(next_input++));
      } else if (segment_at_[static_cast<size_t>(index)] >= 0) {
        index = forward_checkpointed(static_cast<size_t>(segment_at_[static_cast<size_t>(index)]), values, pending,
                                     allow_inplace, dtypes);
        continue;
      } else {
        for (int producer : node.inputs) inputs.push_back(values[static_cast<size_t>(producer)]);
      }
      if (clock != nullptr && node.op != "Input") {
        synchronize_device();
        Clock::time_point start = Clock::now();
        values[static_cast<size_t>(index)] = run_node(index, inputs, allow_inplace);
        synchronize_device();
        clock->forward_ms[static_cast<size_t>(index)] =
            std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        at::Tensor& value = values[static_cast<size_t>(index)];
        if (value.requires_grad()) {
          auto slot = static_cast<size_t>(index);
          value.register_hook([clock, slot](const at::Tensor&) {
            clock->grad_ready[slot] = Clock::now();
            clock->grad_seen[slot] = 1;
          });
        }
      } else {
        values[static_cast<size_t>(index)] = run_node(index, inputs, allow_inplace);
      }
      if (dtypes) (*dtypes)[static_cast<size_t>(index)] = values[static_cast<size_t>(index)].scalar_type();
      inputs.clear();
      for (int producer : node.inputs) {
        auto slot = static_cast<size_t>(producer);
        if (--pending[slot] == 0 && !is_output_[slot]) values[slot].reset();
      }
    }
    std::vector<at::Tensor> outputs;
    for (int output : graph_.outputs()) outputs.push_back(values[static_cast<size_t>(output)]);
    return outputs;
  }

  // The nodes of a checkpointed block on `inputs` (CheckpointSegment::inputs' values), each intermediate tensor
  // released after its last consumer in the block; returns the values of CheckpointSegment::outputs.
  std::vector<at::Tensor> run_segment(size_t segment_index, const std::vector<at::Tensor>& inputs) {
    const CheckpointSegment& segment = segments_.at(segment_index);
    const auto first = static_cast<size_t>(segment.first);
    std::vector<at::Tensor> local(static_cast<size_t>(segment.last - segment.first + 1));
    std::vector<size_t> pending(local.size(), 0);
    std::vector<bool> kept(local.size(), false);
    for (int output : segment.outputs) kept[static_cast<size_t>(output) - first] = true;
    for (int index = segment.first; index <= segment.last; ++index)
      for (int producer : graph_.node(index).inputs)
        if (producer >= segment.first) ++pending[static_cast<size_t>(producer) - first];
    std::vector<at::Tensor> in;
    for (int index = segment.first; index <= segment.last; ++index) {
      const Node& node = graph_.node(index);
      in.clear();
      for (int producer : node.inputs) {
        if (producer >= segment.first) {
          in.push_back(local[static_cast<size_t>(producer) - first]);
        } else {
          auto found = std::find(segment.inputs.begin(), segment.inputs.end(), producer);
          in.push_back(inputs.at(static_cast<size_t>(found - segment.inputs.begin())));
        }
      }
      local[static_cast<size_t>(index) - first] = run_node(index, in, segment_inplace_);
      in.clear();
      for (int producer : node.inputs) {
        if (producer < segment.first) continue;
        const size_t slot = static_cast<size_t>(producer) - first;
        if (--pending[slot] == 0 && !kept[slot]) local[slot].reset();
      }
    }
    std::vector<at::Tensor> outputs;
    for (int output : segment.outputs) outputs.push_back(local[static_cast<size_t>(output) - first]);
    return outputs;
  }
  const CheckpointSegment& segment(size_t index) const { return segments_.at(index); }
  const at::Tensor& grad_anchor() const { return grad_anchor_; }
  // The autocast the recomputation re-enters (the Trainer's precision; torch.utils.checkpoint keeps the forward's).
  Precision precision = Precision::Fp32;

 private:
  // Runs checkpointed block `segment_index` inside forward(): its inputs' pending counts go down as its nodes'
  // would, its outputs take the values. Returns the block's last node index.
  int forward_checkpointed(size_t segment_index, std::vector<at::Tensor>& values, std::vector<size_t>& pending,
                           bool allow_inplace, std::vector<at::ScalarType>* dtypes) {
    const CheckpointSegment& segment = segments_.at(segment_index);
    std::vector<at::Tensor> inputs;
    for (int producer : segment.inputs) inputs.push_back(values[static_cast<size_t>(producer)]);
    segment_inplace_ = allow_inplace;
    std::vector<at::Tensor> outputs = run_checkpointed(*this, segment_index, inputs);
    inputs.clear();
    for (size_t position = 0; position < segment.outputs.size(); ++position) {
      const auto slot = static_cast<size_t>(segment.outputs[position]);
      values[slot] = outputs[position];
      if (dtypes) (*dtypes)[slot] = outputs[position].scalar_type();
      pending[slot] = 0;
      for (int consumer : consumers_[slot]) pending[slot] += consumer > segment.last ? 1 : 0;
    }
    outputs.clear();
    for (int index = segment.first; index <= segment.last; ++index)
      for (int producer : graph_.node(index).inputs) {
        auto slot = static_cast<size_t>(producer);
        if (producer < segment.first && --pending[slot] == 0 && !is_output_[slot]) values[slot].reset();
      }
    return segment.last;
  }

  std::vector<CheckpointSegment> segments_;
  std::vector<int> segment_at_;  // per node: the segment it starts, -1
  bool segment_inplace_ = true;
  at::Tensor grad_anchor_;
  const Graph& graph_;
  at::Device device_;
  bool init_;
  std::vector<NodeState> states_;
  std::vector<const OpImpl*> impls_;
  Consumers consumers_;
  std::vector<bool> is_output_;
  std::vector<bool> inplace_safe_;
  std::vector<at::Tensor> parameters_;
  std::vector<at::Tensor> trainable_;
};

// --- Op implementations ------------------------------------------------------------------------

inline void no_params(GraphModule&, int, NodeState&) {}

inline OpImpl unary(std::function<at::Tensor(const at::Tensor&)> out_of_place,
                    std::function<at::Tensor(at::Tensor&)> in_place = nullptr) {
  OpImpl impl;
  impl.make = no_params;
  impl.forward = [out_of_place, in_place](const Node&, const std::vector<at::Tensor>& in, NodeState&, bool inplace) {
    if (inplace && in_place) {
      at::Tensor target = in[0];
      return in_place(target);
    }
    return out_of_place(in[0]);
  };
  return impl;
}

// Fan-in bound of PyTorch's default init of conv/linear (kaiming_uniform with a = sqrt(5)).
inline double fan_in_bound(int64_t fan_in) { return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0; }

// Each op family's implementations, added to the table by name (the torch_ files named above).
void add_conv_linear_impls(std::map<std::string, OpImpl>& impls);
void add_norm_impls(std::map<std::string, OpImpl>& impls);
void add_activation_impls(std::map<std::string, OpImpl>& impls);
void add_elementwise_pool_impls(std::map<std::string, OpImpl>& impls);
void add_shape_impls(std::map<std::string, OpImpl>& impls);
void add_attention_impls(std::map<std::string, OpImpl>& impls);
void add_input_loss_impls(std::map<std::string, OpImpl>& impls);
void add_moe_impls(std::map<std::string, OpImpl>& impls);

}  // namespace dnncast::profile::detail
