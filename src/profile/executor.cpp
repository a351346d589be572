// The libtorch executor: an IR graph becomes parameters + a forward function over ATen ops, and
// measure_in_process runs the training iterations of the measurement protocol on it.
//
// Fidelity choices (what PyTorch code of the same network does, torchvision in particular):
// - parameters are created exactly as each op's OpCost::params counts them (checked every run);
// - BatchNorm runs in training mode and updates running stats and num_batches_tracked;
// - ReLU/ReLU6/SiLU/Hardswish run in place (inplace=True in torchvision) when that is safe: their
//   input has no other consumer and comes from an op that does not keep its output for backward
//   (graph/inplace.h, the rule the memory simulator replays);
// - an intermediate tensor is released as soon as its last consumer ran (as Python drops it);
// - zero_grad() of libtorch 1.13 zeroes the gradients in place, like torch 1.13's Python default.
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

#include "profile/executor_internal.h"

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

namespace dnncast::profile {

namespace detail {

// Every op's implementation, keyed by op name (op_completeness_test checks every registered op has one).
std::map<std::string, OpImpl> make_impls() {
  std::map<std::string, OpImpl> impls;
  add_conv_linear_impls(impls);
  add_norm_impls(impls);
  add_activation_impls(impls);
  add_elementwise_pool_impls(impls);
  add_shape_impls(impls);
  add_attention_impls(impls);
  add_input_loss_impls(impls);
  add_moe_impls(impls);
  return impls;
}

const std::map<std::string, OpImpl>& op_impls() {
  static const std::map<std::string, OpImpl> impls = make_impls();
  return impls;
}

}  // namespace detail

namespace {

using namespace detail;

// --- Training ----------------------------------------------------------------------------------

// Autocast for the forward and loss (torch.autocast's C++ equivalent).
class AutocastScope {
 public:
  AutocastScope(Precision precision, bool cuda) : enabled_(is_autocast(precision)), cuda_(cuda) {
    if (!enabled_) return;
    at::ScalarType dtype = precision == Precision::Bf16 ? at::kBFloat16 : at::kHalf;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::DeviceType type = cuda_ ? at::kCUDA : at::kCPU;
    at::autocast::set_autocast_enabled(type, true);
    at::autocast::set_autocast_dtype(type, dtype);
#else
    if (cuda_) {
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(dtype);
    } else {
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(dtype);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(cuda_ ? at::kCUDA : at::kCPU, false);
#else
    if (cuda_) {
      at::autocast::set_enabled(false);
    } else {
      at::autocast::set_cpu_enabled(false);
    }
#endif
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_, cuda_;
};

void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// --- Activation checkpointing ------------------------------------------------------------------

// The default generators a block's recomputation must replay (dropout): the CPU one, and the GPU's on cuda.
std::vector<at::Generator> block_generators(const at::Device& device) {
  std::vector<at::Generator> generators{at::globalContext().defaultGenerator(at::Device(at::kCPU))};
  if (device.is_cuda()) generators.push_back(at::globalContext().defaultGenerator(device));
  return generators;
}

std::vector<at::Tensor> generator_states(std::vector<at::Generator> generators) {
  std::vector<at::Tensor> states;
  for (at::Generator& generator : generators) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    states.push_back(generator.get_state());
  }
  return states;
}

void set_generator_states(std::vector<at::Generator>& generators, const std::vector<at::Tensor>& states) {
  for (size_t index = 0; index < generators.size(); ++index) {
    std::lock_guard<std::mutex> lock(generators[index].mutex());
    generators[index].set_state(states[index]);
  }
}

// torch.utils.checkpoint's CheckpointFunction (use_reentrant=True, preserve_rng_state=True) for one block:
// forward without grad, keeping the block's inputs and the RNG states; backward restores those states (within a
// fork: the RNG goes on afterwards as if nothing had been redrawn), recomputes the block with grad under the
// forward's autocast, back-propagates through it with a nested backward() (the block's weights accumulate their
// gradients there) and returns the gradients of its inputs. The forward's RNG states are dropped once restored.
struct BlockCheckpoint : public torch::autograd::Function<BlockCheckpoint> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                                                int64_t segment, int64_t module_address, bool anchored) {
    auto* module = reinterpret_cast<GraphModule*>(module_address);
    ctx->saved_data["rng"] = at::IValue(generator_states(block_generators(module->device())));
    ctx->saved_data["segment"] = segment;
    ctx->saved_data["module"] = module_address;
    ctx->saved_data["anchored"] = anchored;
    std::vector<at::Tensor> block_inputs(inputs.begin(), inputs.end() - (anchored ? 1 : 0));
    ctx->save_for_backward(block_inputs);
    return module->run_segment(static_cast<size_t>(segment), block_inputs);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto* module = reinterpret_cast<GraphModule*>(ctx->saved_data["module"].toInt());
    const auto segment = static_cast<size_t>(ctx->saved_data["segment"].toInt());
    std::vector<at::Tensor> detached;
    for (const at::Tensor& input : ctx->get_saved_variables()) {
      at::Tensor copy = input.detach();
      copy.set_requires_grad(input.requires_grad());
      detached.push_back(copy);
    }
    std::vector<at::Tensor> outputs;
    {
      std::vector<at::Generator> generators = block_generators(module->device());
      std::vector<at::Tensor> current = generator_states(generators);
      set_generator_states(generators, ctx->saved_data["rng"].toTensorVector());
      ctx->saved_data.erase("rng");
      at::AutoGradMode grad_mode(true);
      AutocastScope autocast(module->precision, module->device().is_cuda());
      outputs = module->run_segment(segment, detached);
      set_generator_states(generators, current);
    }
    std::vector<at::Tensor> with_grad, grads;
    for (size_t index = 0; index < outputs.size(); ++index)
      if (outputs[index].requires_grad() && grad_outputs[index].defined()) {
        with_grad.push_back(outputs[index]);
        grads.push_back(grad_outputs[index]);
      }
    if (!with_grad.empty()) torch::autograd::backward(with_grad, grads);
    torch::autograd::variable_list result;
    for (const at::Tensor& input : detached) result.push_back(input.grad());
    if (ctx->saved_data["anchored"].toBool()) result.emplace_back();  // the grad anchor's
    result.resize(result.size() + 3);                                 // segment, module_address, anchored: not tensors
    return result;
  }
};

}  // namespace

std::vector<at::Tensor> detail::run_checkpointed(GraphModule& module, size_t segment,
                                                 const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> all = inputs;
  bool any_requires_grad = false;
  for (const at::Tensor& input : inputs) any_requires_grad = any_requires_grad || input.requires_grad();
  const bool anchored = !any_requires_grad && at::GradMode::is_enabled();
  if (anchored) all.push_back(module.grad_anchor());
  return BlockCheckpoint::apply(at::TensorList(all), static_cast<int64_t>(segment), reinterpret_cast<int64_t>(&module),
                                anchored);
}

namespace {

// Graph inputs: random floats; i64 indices below the smallest table that reads them (2 otherwise).
std::vector<at::Tensor> make_inputs(const Graph& graph, const at::Device& device) {
  const Consumers consumers = graph.consumers();
  std::vector<at::Tensor> inputs;
  for (int index : graph.inputs()) {
    const Node& node = graph.node(index);
    at::TensorOptions options = at::TensorOptions().device(device);
    if (node.dtype == DType::I64) {
      int64_t bound = 0;
      for (int consumer : consumers[static_cast<size_t>(index)]) {
        const Node& user = graph.node(consumer);
        if (user.op == "Embedding") {
          int64_t rows = user.attr_int("num_embeddings");
          bound = bound == 0 ? rows : std::min(bound, rows);
        }
      }
      inputs.push_back(at::randint(bound > 0 ? bound : 2, node.shape.dims, options.dtype(at::kLong)));
    } else {
      at::ScalarType type = node.dtype == DType::F16    ? at::kHalf
                            : node.dtype == DType::BF16 ? at::kBFloat16
                                                        : at::kFloat;
      inputs.push_back(at::randn(node.shape.dims, options.dtype(type)));
    }
  }
  return inputs;
}

// The loss of the outputs: a loss node is the loss; an N x C output gets cross-entropy on random
// labels (a classifier); an N x ... x V output whose V is the row count of an Embedding of the graph
// gets token-level cross-entropy (a language model head); anything else MSE against a random
// target of its shape.
class LossFunction {
 public:
  LossFunction(const Graph& graph, const at::Device& device) {
    std::set<int64_t> vocabularies;
    for (const Node& node : graph.nodes())
      if (node.op == "Embedding") vocabularies.insert(node.attr_int("num_embeddings"));
    for (int output : graph.outputs()) {
      const Node& node = graph.node(output);
      Target target;
      if (OpRegistry::instance().get(node.op).category == "loss") {
        target.kind = Target::Kind::Given;
      } else if (node.shape.rank() >= 3 && vocabularies.count(node.shape.dims.back()) && node.dtype != DType::I64) {
        target.kind = Target::Kind::Tokens;
        std::vector<int64_t> label_shape(node.shape.dims.begin(), node.shape.dims.end() - 1);
        target.tensor =
            at::randint(node.shape.dims.back(), label_shape, at::TensorOptions().device(device).dtype(at::kLong));
      } else if (node.shape.rank() == 2 && node.dtype != DType::I64) {
        target.kind = Target::Kind::Classes;
        target.tensor =
            at::randint(node.shape[1], {node.shape[0]}, at::TensorOptions().device(device).dtype(at::kLong));
      } else {
        target.kind = Target::Kind::Values;
        target.tensor = at::randn(node.shape.dims, at::TensorOptions().device(device));
      }
      targets_.push_back(target);
    }
  }

  // Per graph output: how its loss is taken, and the random target (undefined for a loss node).
  struct Target {
    enum class Kind { Given, Classes, Tokens, Values } kind;
    at::Tensor tensor;
  };
  const std::vector<Target>& targets() const { return targets_; }
  void to_bf16() {  // pure bf16: MSE's random targets in the model's type
    for (Target& target : targets_)
      if (target.kind == Target::Kind::Values) target.tensor = target.tensor.to(at::kBFloat16);
  }

  at::Tensor operator()(const std::vector<at::Tensor>& outputs) const {
    at::Tensor total;
    for (size_t index = 0; index < outputs.size(); ++index) {
      const Target& target = targets_[index];
      at::Tensor loss;
      if (target.kind == Target::Kind::Given) {
        loss = outputs[index];
      } else if (target.kind == Target::Kind::Classes) {
        loss = at::cross_entropy_loss(outputs[index], target.tensor);
      } else if (target.kind == Target::Kind::Tokens) {
        const at::Tensor& logits = outputs[index];
        loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), target.tensor.reshape({-1}));
      } else {
        loss = at::mse_loss(outputs[index], target.tensor);
      }
      total = total.defined() ? total + loss : loss;
    }
    return total;
  }

 private:
  std::vector<Target> targets_;
};

// One case per Optimizer (core/training_setup.h); -Wswitch names a missing one.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(Optimizer optimizer, const std::vector<at::Tensor>& params) {
  switch (optimizer) {
    case Optimizer::Sgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.01).momentum(0.9));
    case Optimizer::Adam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-3));
    case Optimizer::AdamW:
      return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-3));
  }
  DNNCAST_ASSERT(false);
}

int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer) {
  int64_t total = 0;
  auto add = [&](const at::Tensor& tensor) {
    if (tensor.defined()) total += static_cast<int64_t>(tensor.nbytes());
  };
  for (auto& entry : optimizer.state()) {
    torch::optim::OptimizerParamState* state = entry.second.get();
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(state)) {
      add(sgd->momentum_buffer());
    } else if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(state)) {
      add(adam->exp_avg());
      add(adam->exp_avg_sq());
      add(adam->max_exp_avg_sq());
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(state)) {
      add(adamw->exp_avg());
      add(adamw->exp_avg_sq());
      add(adamw->max_exp_avg_sq());
    }
  }
  return total;
}

struct Trainer {
  Trainer(const Graph& graph, const TrainConfig& config, at::Device device)
      : config(config), device(device), module(graph, device, true), loss_fn(graph, device) {
    inputs = make_inputs(graph, device);
    if (config.precision == Precision::Bf16Pure) to_pure_bf16();
    optimizer = make_optimizer(config.optimizer, module.trainable_parameters());
    module.precision = config.precision;
  }

  // One training iteration; returns its wall time (device synchronised before and after). With gradient
  // accumulation, the micro-batches before the last one accumulate into the gradients zeroed here.
  double iteration(std::vector<at::ScalarType>* dtypes = nullptr) {
    synchronize(device);
    Clock::time_point start = Clock::now();
    if (config.grad_accum > 1) {
      optimizer->zero_grad();
      for (int64_t micro = 1; micro < config.grad_accum; ++micro) micro_batch(micro == 1 ? dtypes : nullptr);
      micro_batch();
    } else {
      forward_backward(dtypes);
    }
    optimizer->step();
    synchronize(device);
    return ms_since(start);
  }

  // Forward, loss and backward of one micro-batch, the gradients accumulating. Returns the loss.
  at::Tensor micro_batch(std::vector<at::ScalarType>* dtypes = nullptr) {
    at::Tensor loss;
    {
      AutocastScope autocast(config.precision, device.is_cuda());
      loss = loss_fn(module.forward(inputs, /*allow_inplace=*/true, dtypes));
    }
    loss.backward();
    return loss;
  }

  // The iteration up to the optimizer step: zero_grad, forward, loss, backward. Returns the loss.
  at::Tensor forward_backward(std::vector<at::ScalarType>* dtypes = nullptr) {
    optimizer->zero_grad();
    at::Tensor loss;
    {
      AutocastScope autocast(config.precision, device.is_cuda());
      loss = loss_fn(module.forward(inputs, /*allow_inplace=*/true, dtypes));
    }
    loss.backward();
    return loss;
  }

  // Pure bf16 (Python's model.bfloat16() and bf16 inputs): every floating parameter, buffer, input and loss
  // target converted in place (set_data, as Module.to does), before the optimizer exists; no autocast.
  void to_pure_bf16() {
    at::NoGradGuard no_grad;
    auto convert = [](at::Tensor& tensor) {
      if (tensor.defined() && tensor.scalar_type() == at::kFloat) tensor.set_data(tensor.to(at::kBFloat16));
    };
    for (int index = 0; index < module.graph().size(); ++index) {
      NodeState& state = module.state(index);
      for (at::Tensor& param : state.params) convert(param);
      for (at::Tensor& buffer : state.buffers) convert(buffer);
    }
    for (at::Tensor& input : inputs) input = input.scalar_type() == at::kFloat ? input.to(at::kBFloat16) : input;
    loss_fn.to_bf16();
  }

  const TrainConfig& config;
  at::Device device;
  GraphModule module;
  LossFunction loss_fn;
  std::vector<at::Tensor> inputs;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

// Per-layer mode: each node alone, fresh inputs of its producers' shapes and observed dtypes.
std::vector<LayerTime> time_layers(Trainer& trainer, const std::vector<at::ScalarType>& dtypes) {
  const Graph& graph = trainer.module.graph();
  std::vector<int> input_nodes = graph.inputs();
  std::vector<LayerTime> layers;
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    if (node.op == "Input") continue;
    std::vector<at::Tensor> inputs;
    for (int producer : node.inputs) {
      const Node& source = graph.node(producer);
      auto position = std::find(input_nodes.begin(), input_nodes.end(), producer);
      if (position != input_nodes.end()) {
        inputs.push_back(trainer.inputs[static_cast<size_t>(position - input_nodes.begin())]);
        continue;
      }
      at::ScalarType type = dtypes[static_cast<size_t>(producer)];
      at::TensorOptions options = at::TensorOptions().device(trainer.device).dtype(type);
      if (at::isFloatingType(type)) {
        inputs.push_back(at::randn(source.shape.dims, options).set_requires_grad(true));
      } else {
        inputs.push_back(at::zeros(source.shape.dims, options));
      }
    }
    std::vector<double> forward_ms, backward_ms;
    Clock::time_point node_start = Clock::now();
    for (int rep = 0; rep < 50; ++rep) {
      for (at::Tensor& input : inputs)
        if (input.requires_grad()) input.mutable_grad() = at::Tensor();
      synchronize(trainer.device);
      Clock::time_point start = Clock::now();
      at::Tensor out;
      {
        AutocastScope autocast(trainer.config.precision, trainer.device.is_cuda());
        out = trainer.module.run_node(index, inputs, /*allow_inplace=*/false);
      }
      synchronize(trainer.device);
      double forward = ms_since(start);
      double backward = 0;
      if (out.requires_grad()) {
        at::Tensor grad = out.dim() == 0 ? at::ones_like(out) : at::randn_like(out);
        synchronize(trainer.device);
        start = Clock::now();
        out.backward(grad);
        synchronize(trainer.device);
        backward = ms_since(start);
      }
      if (rep == 0) continue;  // warm-up
      forward_ms.push_back(forward);
      backward_ms.push_back(backward);
      if (forward_ms.size() >= 3 && ms_since(node_start) > 50) break;
    }
    layers.push_back({node.name, node.op, quantile(forward_ms, 0.5), quantile(backward_ms, 0.5)});
  }
  return layers;
}

// Per-layer mode: the optimizer's two calls alone (gradients exist after the training iterations).
void time_optimizer(Trainer& trainer, double& step_ms, double& zero_grad_ms) {
  std::vector<double> steps, zeros;
  for (int rep = 0; rep < 6; ++rep) {
    synchronize(trainer.device);
    Clock::time_point start = Clock::now();
    trainer.optimizer->step();
    synchronize(trainer.device);
    double step = ms_since(start);
    start = Clock::now();
    trainer.optimizer->zero_grad();
    synchronize(trainer.device);
    double zero = ms_since(start);
    if (rep == 0) continue;
    steps.push_back(step);
    zeros.push_back(zero);
  }
  step_ms = quantile(steps, 0.5);
  zero_grad_ms = quantile(zeros, 0.5);
}

// Per-layer mode: each node inside real training iterations (NodeClock), and the optimizer's two
// calls in the same iterations. A node's backward is the time from its output's gradient being
// complete to the next node's (in the order the engine reached them), which holds its backward
// functions and the accumulation of its parameters' gradients; the last one runs to the end of
// backward(). Medians over `iterations`. Fills LayerTime::iteration_*, and the step, zero_grad and
// loss times of those iterations.
void time_layers_in_iteration(Trainer& trainer, std::vector<LayerTime>& layers, double& step_ms, double& zero_grad_ms,
                              double& loss_ms, int iterations = 5) {
  const Graph& graph = trainer.module.graph();
  const auto nodes = static_cast<size_t>(graph.size());
  std::vector<std::vector<double>> forward(nodes), backward(nodes);
  std::vector<double> steps, zeros, losses;
  for (int rep = 0; rep <= iterations; ++rep) {
    NodeClock clock(nodes);
    synchronize(trainer.device);
    Clock::time_point start = Clock::now();
    trainer.optimizer->zero_grad();
    synchronize(trainer.device);
    double zero = ms_since(start);
    at::Tensor loss;
    {
      AutocastScope autocast(trainer.config.precision, trainer.device.is_cuda());
      std::vector<at::Tensor> outputs = trainer.module.forward(trainer.inputs, /*allow_inplace=*/true, nullptr, &clock);
      Clock::time_point loss_start = Clock::now();
      loss = trainer.loss_fn(outputs);
      synchronize(trainer.device);
      losses.push_back(ms_since(loss_start));
    }
    Clock::time_point backward_start = Clock::now();
    loss.backward();
    synchronize(trainer.device);
    Clock::time_point backward_end = Clock::now();
    start = Clock::now();
    trainer.optimizer->step();
    synchronize(trainer.device);
    double step = ms_since(start);
    if (rep == 0) {  // warm-up: hooks and timers in place for the first time
      losses.clear();
      continue;
    }
    steps.push_back(step);
    zeros.push_back(zero);
    std::vector<std::pair<Clock::time_point, size_t>> ready;
    for (size_t index = 0; index < nodes; ++index)
      if (clock.grad_seen[index]) ready.emplace_back(clock.grad_ready[index], index);
    std::sort(ready.begin(), ready.end());
    // The loss's own backward runs before the first hook.
    if (!ready.empty())
      losses.back() += std::chrono::duration<double, std::milli>(ready.front().first - backward_start).count();
    for (size_t index = 0; index < nodes; ++index) forward[index].push_back(clock.forward_ms[index]);
    std::vector<double> node_backward(nodes, 0.0);
    for (size_t position = 0; position < ready.size(); ++position) {
      Clock::time_point end = position + 1 < ready.size() ? ready[position + 1].first : backward_end;
      node_backward[ready[position].second] =
          std::chrono::duration<double, std::milli>(end - ready[position].first).count();
    }
    for (size_t index = 0; index < nodes; ++index) backward[index].push_back(node_backward[index]);
  }
  size_t position = 0;
  for (size_t index = 0; index < nodes; ++index) {
    if (graph.node(static_cast<int>(index)).op == "Input") continue;
    DNNCAST_ASSERT(position < layers.size() && layers[position].node == graph.node(static_cast<int>(index)).name);
    layers[position].iteration_forward_ms = quantile(forward[index], 0.5);
    layers[position].iteration_backward_ms = quantile(backward[index], 0.5);
    ++position;
  }
  step_ms = quantile(steps, 0.5);
  zero_grad_ms = quantile(zeros, 0.5);
  loss_ms = quantile(losses, 0.5);
}

// --- One step written out, for the numerical comparison with PyTorch ----------------------------

// Names of a node's parameters and buffers as PyTorch's modules name them (suffixes of the node
// name, in NodeState order; "" = the node name itself, torchvision's bare nn.Parameter attributes
// such as ConvNeXt's layer_scale or ViT's class_token).
std::vector<std::string> parameter_suffixes(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> names{{"Conv2d", {"weight", "bias"}},
                                                                     {"ConvTranspose2d", {"weight", "bias"}},
                                                                     {"Linear", {"weight", "bias"}},
                                                                     {"BatchNorm2d", {"weight", "bias"}},
                                                                     {"LayerNorm", {"weight", "bias"}},
                                                                     {"GroupNorm", {"weight", "bias"}},
                                                                     {"RMSNorm", {"weight"}},
                                                                     {"Embedding", {"weight"}},
                                                                     {"LayerScale", {""}},
                                                                     {"PositionEmbedding", {""}},
                                                                     {"ClassToken", {""}}};
  auto found = names.find(op);
  return found == names.end() ? std::vector<std::string>{} : found->second;
}
std::vector<std::string> buffer_suffixes(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> names{
      {"BatchNorm2d", {"running_mean", "running_var", "num_batches_tracked"}},
      {"ScaledDotProductAttention", {"causal_mask"}},
      {"CrossEntropyLoss", {"target"}},
      {"MSELoss", {"target"}}};
  auto found = names.find(op);
  return found == names.end() ? std::vector<std::string>{} : found->second;
}
std::string joined_name(const std::string& node, const std::string& suffix) {
  return suffix.empty() ? node : node + "." + suffix;
}

std::string dtype_name(at::ScalarType type) {
  if (type == at::kFloat) return "f32";
  if (type == at::kLong) return "i64";
  if (type == at::kBool) return "bool";
  throw InputError(std::string("the step dump writes f32, i64 and bool tensors, not ") + c10::toString(type) +
                   " (an f16/bf16 graph input?)");
}

// Raw little-endian bytes of the tensor, C order, no header; the manifest gives shape and type.
nlohmann::json write_tensor(const at::Tensor& tensor, const std::string& dir, const std::string& file) {
  at::Tensor data = tensor.detach().to(at::kCPU).contiguous();
  std::ofstream out(dir + "/" + file, std::ios::binary);
  out.write(static_cast<const char*>(data.data_ptr()), static_cast<std::streamsize>(data.nbytes()));
  if (!out) throw InputError("cannot write " + dir + "/" + file);
  return {{"file", file}, {"shape", data.sizes().vec()}, {"dtype", dtype_name(data.scalar_type())}};
}

at::Tensor read_tensor(const std::string& path, at::IntArrayRef shape) {
  at::Tensor tensor = at::empty(shape, at::kFloat);
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char*>(tensor.data_ptr()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!in || in.gcount() != static_cast<std::streamsize>(tensor.nbytes()))
    throw InputError(path + ": expected " + std::to_string(tensor.nbytes()) + " bytes of f32");
  return tensor;
}

// The graph with every Dropout p and attention dropout_p at 0, so that one step is deterministic.
Graph without_dropout(const Graph& graph) {
  Graph copy = graph;
  for (Node& node : copy.mutable_nodes()) {
    if (node.op == "Dropout") node.attrs["p"] = 0.0;
    if (node.op == "ScaledDotProductAttention") node.attrs["dropout_p"] = 0.0;
  }
  return copy;
}

// Parameters of the module by name, graph order, a shared (tied) tensor once under its first owner.
std::vector<std::pair<std::string, at::Tensor>> named_parameters(GraphModule& module) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  std::set<const void*> seen;
  const Graph& graph = module.graph();
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    std::vector<std::string> suffixes = parameter_suffixes(node.op);
    const std::vector<at::Tensor>& params = module.state(index).params;
    for (size_t position = 0; position < params.size(); ++position) {
      if (!seen.insert(params[position].unsafeGetTensorImpl()).second) continue;
      std::string suffix = position < suffixes.size() ? suffixes[position] : "param" + std::to_string(position);
      named.emplace_back(joined_name(node.name, suffix), params[position]);
    }
  }
  return named;
}

void load_parameters(GraphModule& module, const std::string& dir) {
  std::string path = dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + path);
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path + ": " + error.what());
  }
  std::map<std::string, nlohmann::json> given;
  for (const nlohmann::json& entry : manifest.value("parameters", nlohmann::json::array()))
    given[entry.at("name").get<std::string>()] = entry;
  at::NoGradGuard no_grad;
  for (auto& [name, param] : named_parameters(module)) {
    auto found = given.find(name);
    if (found == given.end()) throw InputError(path + ": no parameter '" + name + "'");
    std::vector<int64_t> shape = found->second.at("shape").get<std::vector<int64_t>>();
    if (shape != param.sizes().vec())
      throw InputError(path + ": parameter '" + name + "' has shape " + TensorShape(shape).to_string() +
                       ", the module's is " + TensorShape(param.sizes().vec()).to_string());
    param.copy_(read_tensor(dir + "/" + found->second.at("file").get<std::string>(), param.sizes()));
  }
}

bool is_out_of_memory_message(const std::string& text) {
  return text.find("can't allocate memory") != std::string::npos || text.find("out of memory") != std::string::npos ||
         text.find("dnncast memory limit") != std::string::npos || text.find("bad_alloc") != std::string::npos;
}

void setup_threads(int64_t threads) {
  at::set_num_threads(static_cast<int>(threads));
  static bool interop_set = false;
  if (!interop_set) {
    interop_set = true;
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // Already fixed by earlier work in this process (in-process measurements in tests).
    }
  }
}

}  // namespace

// --- Public API ----------------------------------------------------------------------------------

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& entry : op_impls()) names.push_back(entry.first);
  return names;
}

void check_supported(const Graph& graph) {
  const auto& impls = op_impls();
  for (const Node& node : graph.nodes()) {
    if (node.op == "ScaledDotProductAttention" && node.attr_int("fused", 0) != 0)
      throw InputError("attention sdpa (node '" + node.name +
                       "'): libtorch 1.13 has no fused attention kernel to run; "
                       "measure with --attention eager (the math path)");
    if (node.has_attr("quantize"))
      throw InputError("quantize " + node.attr_str("quantize", "") + " (node '" + node.name +
                       "'): quantized weights run in bitsandbytes' CUDA kernels, which libtorch here has not; "
                       "nothing measures them (forecast without --quantize to measure the LoRA fine-tune)");
    if (impls.count(node.op)) continue;
    std::string known;
    for (const std::string& name : supported_ops()) known += (known.empty() ? "" : ", ") + name;
    throw InputError("graph '" + graph.name + "': the executor lacks op '" + node.op + "' (node '" + node.name +
                     "'); it runs: " + known);
  }
}

int64_t module_param_count(const Graph& graph) {
  check_supported(graph);
  GraphModule module(graph, at::Device(at::kCPU), /*init_values=*/false);
  return module.parameter_count();
}

StepDump dump_training_step(const Graph& graph_in, const std::string& dir, uint64_t seed, bool load,
                            bool keep_dropout) {
  check_supported(graph_in);
  Graph graph = keep_dropout ? graph_in : without_dropout(graph_in);
  {
    std::ofstream out(dir + "/graph.json");
    out << import::write_graph_json(graph);
    if (!out) throw InputError("cannot write " + dir + "/graph.json (does the folder exist?)");
  }
  setup_threads(1);
  TrainConfig config;  // fp32, SGD, CPU: the optimizer only zeroes the gradients here
  at::manual_seed(seed);
  Trainer trainer(graph, config, at::Device(at::kCPU));
  if (load) load_parameters(trainer.module, dir);
  // Gradients of the float inputs too (an op without parameters has nothing else to compare).
  for (at::Tensor& input : trainer.inputs)
    if (at::isFloatingType(input.scalar_type())) input.set_requires_grad(true);
  at::Tensor loss = trainer.forward_backward();

  nlohmann::json manifest;
  manifest["format"] = "dnncast-step/1";
  manifest["graph"] = graph.name;
  manifest["family"] = graph.family;
  manifest["seed"] = seed;
  manifest["dropout"] = "every Dropout p and attention dropout_p set to 0";
  manifest["loss"] = loss.item<double>();
  StepDump dump;
  dump.loss = manifest["loss"].get<double>();
  nlohmann::json params = nlohmann::json::array();
  std::vector<std::pair<std::string, at::Tensor>> named = named_parameters(trainer.module);
  for (size_t index = 0; index < named.size(); ++index) {
    const auto& [name, param] = named[index];
    std::string stem = "param_" + std::to_string(index);
    nlohmann::json entry = write_tensor(param, dir, stem + ".bin");
    entry["name"] = name;
    if (param.grad().defined()) entry["grad"] = write_tensor(param.grad(), dir, stem + ".grad.bin")["file"];
    params.push_back(entry);
    dump.parameters += param.numel();
  }
  manifest["parameters"] = params;
  nlohmann::json inputs = nlohmann::json::array();
  std::vector<int> input_nodes = graph.inputs();
  for (size_t index = 0; index < input_nodes.size(); ++index) {
    const at::Tensor& input = trainer.inputs[index];
    std::string stem = "input_" + std::to_string(index);
    nlohmann::json entry = write_tensor(input, dir, stem + ".bin");
    entry["node"] = graph.node(input_nodes[index]).name;
    if (input.requires_grad() && input.grad().defined())
      entry["grad"] = write_tensor(input.grad(), dir, stem + ".grad.bin")["file"];
    inputs.push_back(entry);
  }
  manifest["inputs"] = inputs;
  nlohmann::json targets = nlohmann::json::array();
  std::vector<int> output_nodes = graph.outputs();
  const auto& loss_targets = trainer.loss_fn.targets();
  for (size_t index = 0; index < output_nodes.size(); ++index) {
    using Kind = LossFunction::Target::Kind;
    const LossFunction::Target& target = loss_targets[index];
    nlohmann::json entry;
    if (target.tensor.defined()) entry = write_tensor(target.tensor, dir, "target_" + std::to_string(index) + ".bin");
    entry["output"] = graph.node(output_nodes[index]).name;
    entry["kind"] = target.kind == Kind::Given     ? "loss_node"
                    : target.kind == Kind::Classes ? "cross_entropy"
                    : target.kind == Kind::Tokens  ? "token_cross_entropy"
                                                   : "mse";
    targets.push_back(entry);
  }
  manifest["targets"] = targets;
  // Buffers after the step: BatchNorm's running statistics, the random targets of loss nodes.
  nlohmann::json buffers = nlohmann::json::array();
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    std::vector<std::string> suffixes = buffer_suffixes(node.op);
    const std::vector<at::Tensor>& state = trainer.module.state(index).buffers;
    for (size_t position = 0; position < state.size() && position < suffixes.size(); ++position) {
      nlohmann::json entry = write_tensor(state[position], dir, "buffer_" + std::to_string(buffers.size()) + ".bin");
      entry["name"] = joined_name(node.name, suffixes[position]);
      buffers.push_back(entry);
    }
  }
  manifest["buffers"] = buffers;
  std::ofstream out(dir + "/manifest.json");
  out << manifest.dump(1) << "\n";
  if (!out) throw InputError("cannot write " + dir + "/manifest.json");
  return dump;
}

namespace detail {
bool cuda_available() { return torch::cuda::is_available(); }
}  // namespace detail

double reference_probe_ms() {
  // Chosen once: the least contended probe seen on the development machine (docs/MEASUREMENT.md:
  // AMD EPYC, 2 vCPUs, Debian 12's libtorch 1.13, Release build; lowest probe medians of the
  // 40-minute noise-floor run in data/noise/ were 118-125 ms). So a normalised time estimates the
  // time on that machine when nothing else runs. Normalised times are comparable within one
  // environment; across environments only the raw times mean anything.
  return 120.0;
}

double run_probe_ms() {
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  at::NoGradGuard no_grad;
  // Deterministic operands (no RNG state touched): a fixed GEMM and a fixed 3x3 convolution.
  at::Tensor a = at::sin(at::arange(256 * 256, at::kFloat)).reshape({256, 256});
  at::Tensor b = at::cos(at::arange(256 * 256, at::kFloat)).reshape({256, 256});
  at::Tensor image = at::sin(at::arange(32 * 32 * 32, at::kFloat)).reshape({1, 32, 32, 32});
  at::Tensor kernel = at::cos(at::arange(32 * 32 * 9, at::kFloat)).reshape({32, 32, 3, 3}) * 0.1;
  auto pass = [&] {
    at::Tensor c = a;
    for (int step = 0; step < 8; ++step) c = at::mm(c, b) * (1.0 / 256);
    at::Tensor y = image;
    for (int step = 0; step < 4; ++step) y = at::conv2d(y, kernel, {}, 1, 1) * 0.1;
    return c.sum().item<double>() + y.sum().item<double>();
  };
  pass();
  std::vector<double> times;
  for (int rep = 0; rep < 5; ++rep) {
    Clock::time_point start = Clock::now();
    pass();
    times.push_back(ms_since(start));
  }
  at::set_num_threads(threads);
  return quantile(times, 0.5);
}

Measurement measure_in_process(const Graph& graph, const TrainConfig& config_in, const Limits& limits) {
  Clock::time_point wall_start = Clock::now();
  Measurement m;
  TrainConfig config = config_in;
  try {
    validate_config(config);
    check_supported(graph);
  } catch (const InputError& error) {
    m.status = "error";
    m.message = error.what();
    return m;
  }
  if (config.threads == 0) config.threads = static_cast<int64_t>(detail::allowed_cpus().size());
  setup_threads(config.threads);
  m.env = detect_environment(config);
  at::Device device = config.device == Device::Cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  bool cuda = device.is_cuda();
  detail::install_tracking_allocator();
  detail::EnergyMeter energy(config.device);
  m.energy_note = energy.note();

  try {
    m.probe_before_ms = run_probe_ms();
    // The limit holds for the training only (the probes are ours, not the network's).
    detail::set_tracked_limit(cuda ? 0 : limits.memory_bytes);
    at::manual_seed(static_cast<uint64_t>(config.seed));
    Trainer trainer(graph, config, device);
    m.params = trainer.module.parameter_count();
    int64_t ir_params = graph_param_count(graph);
    if (m.params != ir_params)
      throw std::logic_error("parameter count mismatch: module " + std::to_string(m.params) + ", IR " +
                             std::to_string(ir_params) + " (bug in the executor or an op's cost rule)");

    // Memory baseline: parameters, buffers, inputs, targets; gradients and optimizer state come later.
    synchronize(device);
    m.baseline_bytes = detail::tracked_live_bytes();
    detail::reset_tracked_peak();
#ifdef DNNCAST_TORCH_CUDA
    if (cuda) {
      c10::cuda::CUDACachingAllocator::resetPeakStats(0);
      auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
      m.baseline_bytes = stats.allocated_bytes[0].current;
    }
#endif

    // Warm-up: until the last two iterations are no longer clearly faster than the best before them.
    double warmup_budget_s = limits.warmup_budget_s > 0 ? limits.warmup_budget_s : limits.time_budget_s;
    std::vector<at::ScalarType> dtypes;
    std::vector<double> warmup;
    Clock::time_point warmup_start = Clock::now();
    for (;;) {
      warmup.push_back(trainer.iteration(warmup.empty() ? &dtypes : nullptr));
      size_t count = warmup.size();
      if (count >= 3) {
        double best_before = *std::min_element(warmup.begin(), warmup.end() - 2);
        if (warmup[count - 1] >= 0.98 * best_before && warmup[count - 2] >= 0.98 * best_before) break;
      }
      if (count >= 2 && ms_since(warmup_start) > warmup_budget_s * 1000) break;
    }
    m.warmup_iterations = static_cast<int64_t>(warmup.size());

    // Timing.
    m.loadavg_before = detail::loadavg_1min();
    detail::CpuSample cpu_before = detail::sample_cpu();
    double energy_before = energy.read_j();
    Clock::time_point timing_start = Clock::now();
    for (;;) {
      m.iteration_ms.push_back(trainer.iteration());
      auto count = static_cast<int64_t>(m.iteration_ms.size());
      if (count >= limits.max_iterations) break;
      if (count < limits.min_iterations) continue;
      if (ms_since(timing_start) > limits.time_budget_s * 1000) break;
      if (count >= 6 && detail::median_rel_ci(m.iteration_ms) <= limits.ci_target) break;
    }
    double energy_after = energy.read_j();
    detail::CpuSample cpu_after = detail::sample_cpu();
    m.loadavg_after = detail::loadavg_1min();
    m.load_other_cpus = detail::other_busy_cpus(cpu_before, cpu_after);
    m.cpu_wait_share = detail::cpu_wait_share(cpu_before, cpu_after);
    if (energy.available()) m.energy_j = (energy_after - energy_before) / static_cast<double>(m.iteration_ms.size());

    m.peak_bytes = detail::tracked_peak_bytes() - m.baseline_bytes;
#ifdef DNNCAST_TORCH_CUDA
    if (cuda) {
      auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
      m.peak_bytes = stats.allocated_bytes[0].peak - m.baseline_bytes;
      m.peak_reserved_bytes = stats.reserved_bytes[0].peak;
    }
#endif
    m.time_ms = detail::summarize(m.iteration_ms);
    detail::set_tracked_limit(0);
    m.probe_after_ms = run_probe_ms();
    double probe_mean = (m.probe_before_ms + m.probe_after_ms) / 2;
    m.time_ms_normalised = probe_mean > 0 ? m.time_ms.median * reference_probe_ms() / probe_mean : 0;

    for (const at::Tensor& param : trainer.module.parameters()) {
      m.param_bytes += static_cast<int64_t>(param.nbytes());
      if (param.grad().defined()) m.grad_bytes += static_cast<int64_t>(param.grad().nbytes());
    }
    m.optimizer_state_bytes = optimizer_state_bytes(*trainer.optimizer);

    if (config.per_layer) {
      m.layers = time_layers(trainer, dtypes);
      for (const LayerTime& layer : m.layers) m.layer_sum_ms += layer.forward_ms + layer.backward_ms;
      time_optimizer(trainer, m.optimizer_step_ms, m.zero_grad_ms);
      time_layers_in_iteration(trainer, m.layers, m.iteration_step_ms, m.iteration_zero_grad_ms, m.iteration_loss_ms);
      m.layer_gap_ms = m.time_ms.median - m.layer_sum_ms - m.optimizer_step_ms - m.zero_grad_ms;
    }
  } catch (const std::bad_alloc&) {
    m.status = "oom";
    m.message = "std::bad_alloc (memory outside the tracked tensors ran out, or the address-space limit)";
  } catch (const std::exception& error) {
    std::string text = error.what();
    text = text.substr(0, text.find("\nException raised from"));  // drop c10's C++ stack trace
    bool oom = detail::tracked_refused() || dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr ||
               is_out_of_memory_message(text);
    m.status = oom ? "oom" : "error";
    m.message = text;
  }
  if (m.status != "ok") {
    m.iteration_ms.clear();
    m.layers.clear();
  }
  detail::set_tracked_limit(0);
  m.wall_s = ms_since(wall_start) / 1000;
  return m;
}

}  // namespace dnncast::profile

// --- Single-layer benchmarks (measure.h LayerBench) ----------------------------------------------

namespace dnncast::profile {
namespace {

// Writes a buffer of twice the last-level cache (at least 64 MiB): what the layer's tensors had in
// the caches is evicted, as the other layers of a real pass evict it.
class CacheFlusher {
 public:
  CacheFlusher() {
    int64_t l3 = 0;
    std::ifstream size("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string text;
    if (size >> text && !text.empty()) {
      l3 = std::atoll(text.c_str());
      if (text.back() == 'K') l3 <<= 10;
      if (text.back() == 'M') l3 <<= 20;
    }
    buffer_.assign(static_cast<size_t>(std::max<int64_t>(2 * l3, int64_t{64} << 20)), 0);
  }
  void flush() {
    for (size_t at = 0; at < buffer_.size(); at += 64) buffer_[at] = static_cast<char>(buffer_[at] + 1);
  }

 private:
  std::vector<char> buffer_;
};

struct PassTimes {
  double forward_ms = 0, backward_ms = 0;
};

// One forward and backward of the case's node; gradients of the float inputs when `data`, of the
// parameters when `weight`.
PassTimes layer_pass(GraphModule& module, int index, std::vector<at::Tensor>& inputs, bool data, bool weight,
                     const TrainConfig& config, CacheFlusher* flusher) {
  at::Device device = module.device();
  for (at::Tensor& input : inputs)
    if (at::isFloatingType(input.scalar_type())) {
      input.mutable_grad() = at::Tensor();
      input.set_requires_grad(data);
    }
  for (const at::Tensor& param : module.parameters()) {
    at::Tensor handle = param;
    handle.mutable_grad() = at::Tensor();
    handle.set_requires_grad(weight);
  }
  if (flusher != nullptr) flusher->flush();
  PassTimes times;
  synchronize(device);
  Clock::time_point start = Clock::now();
  at::Tensor out;
  {
    AutocastScope autocast(config.precision, device.is_cuda());
    out = module.run_node(index, inputs, /*allow_inplace=*/false);
  }
  synchronize(device);
  times.forward_ms = ms_since(start);
  if (out.requires_grad()) {
    at::Tensor grad = out.dim() == 0 ? at::ones_like(out) : at::randn_like(out);
    if (flusher != nullptr) flusher->flush();
    synchronize(device);
    start = Clock::now();
    out.backward(grad);
    synchronize(device);
    times.backward_ms = ms_since(start);
  }
  return times;
}

}  // namespace

void check_layer_case(const Graph& graph) {
  check_supported(graph);
  int timed = 0;
  for (int index = 0; index < graph.size(); ++index) {
    bool input = graph.node(index).op == "Input";
    if (!input) ++timed;
    if (input && timed > 0)
      throw InputError("layer case '" + graph.name + "': Input node '" + graph.node(index).name +
                       "' after the timed node");
  }
  if (timed != 1)
    throw InputError("layer case '" + graph.name + "': " + std::to_string(timed) +
                     " nodes besides the Input nodes; a layer case times exactly one");
}

LayerBench bench_layer_in_process(const Graph& graph, const TrainConfig& config_in, const Limits& limits) {
  Clock::time_point wall_start = Clock::now();
  LayerBench bench;
  TrainConfig config = config_in;
  try {
    validate_config(config);
    check_layer_case(graph);
  } catch (const InputError& error) {
    bench.status = "error";
    bench.message = error.what();
    return bench;
  }
  if (config.threads == 0) config.threads = static_cast<int64_t>(detail::allowed_cpus().size());
  setup_threads(config.threads);
  at::Device device = config.device == Device::Cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  detail::install_tracking_allocator();
  try {
    detail::set_tracked_limit(device.is_cuda() ? 0 : limits.memory_bytes);
    at::manual_seed(static_cast<uint64_t>(config.seed));
    GraphModule module(graph, device, true);
    std::vector<at::Tensor> inputs = make_inputs(graph, device);
    const int index = graph.size() - 1;
    bool has_data = std::any_of(inputs.begin(), inputs.end(),
                                [](const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); });
    bool has_weight = !module.parameters().empty();
    int64_t baseline = detail::tracked_live_bytes();
    detail::reset_tracked_peak();

    std::vector<double> forward, backward;
    layer_pass(module, index, inputs, has_data, has_weight, config, nullptr);  // warm-up
    bench.peak_bytes = detail::tracked_peak_bytes() - baseline;
    Clock::time_point start = Clock::now();
    while (forward.size() < 50) {
      PassTimes times = layer_pass(module, index, inputs, has_data, has_weight, config, nullptr);
      forward.push_back(times.forward_ms);
      backward.push_back(times.backward_ms);
      if (forward.size() >= 3 && ms_since(start) > limits.time_budget_s * 1000) break;
    }
    bench.forward_ms = quantile(forward, 0.5);
    bench.backward_ms = quantile(backward, 0.5);
    bench.reps = static_cast<int64_t>(forward.size());
    auto median_of = [&](bool data, bool weight, CacheFlusher* flusher, bool want_forward) {
      std::vector<double> times;
      for (int rep = 0; rep < 3; ++rep) {
        PassTimes pass = layer_pass(module, index, inputs, data, weight, config, flusher);
        times.push_back(want_forward ? pass.forward_ms : pass.backward_ms);
      }
      return quantile(times, 0.5);
    };
    if (has_data && has_weight) {
      bench.backward_data_ms = median_of(true, false, nullptr, false);
      bench.backward_weight_ms = median_of(false, true, nullptr, false);
    }
    CacheFlusher flusher;
    std::vector<double> cold_forward, cold_backward;
    for (int rep = 0; rep < 3; ++rep) {
      PassTimes pass = layer_pass(module, index, inputs, has_data, has_weight, config, &flusher);
      cold_forward.push_back(pass.forward_ms);
      cold_backward.push_back(pass.backward_ms);
    }
    bench.cold_forward_ms = quantile(cold_forward, 0.5);
    bench.cold_backward_ms = quantile(cold_backward, 0.5);
  } catch (const std::bad_alloc&) {
    bench.status = "oom";
    bench.message = "std::bad_alloc (memory outside the tracked tensors ran out, or the address-space limit)";
  } catch (const std::exception& error) {
    std::string text = error.what();
    text = text.substr(0, text.find("\nException raised from"));
    bool oom = detail::tracked_refused() || dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr ||
               is_out_of_memory_message(text);
    bench.status = oom ? "oom" : "error";
    bench.message = text;
  }
  detail::set_tracked_limit(0);
  bench.wall_s = ms_since(wall_start) / 1000;
  return bench;
}

}  // namespace dnncast::profile
