// The GPU time model (gpu_forecast.h, docs/GPU.md): kernels of an iteration, their roofline times on a
// catalogued GPU, the calibrated efficiencies and overheads, and the forecast with memory.
#include "gpu/gpu_forecast.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/checked.h"
#include "core/csv.h"
#include "core/error.h"
#include "gpu/gpu_memory.h"
#include "gpu/half_kernels.h"
#include "gpu/parallel.h"
#include "graph/checkpoint.h"
#include "graph/op_helpers.h"
#include "graph/op_registry.h"
#include "import/model_source.h"
#include "memory/simulator.h"

namespace dnncast::gpu {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

const std::vector<std::pair<GpuPrecision, std::vector<std::string>>>& precision_table() {
  static const std::vector<std::pair<GpuPrecision, std::vector<std::string>>> table = {
      {GpuPrecision::Fp32, {"fp32", "f32", "float32"}},
      {GpuPrecision::Tf32, {"tf32"}},
      {GpuPrecision::Fp16, {"fp16", "amp", "amp-fp16", "f16", "float16"}},
      {GpuPrecision::Bf16,
       {"bf16", "amp-bf16", "bfloat16", "bf16-pure", "pure-bf16"}},  // pure bf16: the same bf16 curves
  };
  return table;
}

const std::vector<std::pair<Framework, std::vector<std::string>>>& framework_table() {
  static const std::vector<std::pair<Framework, std::vector<std::string>>> table = {
      {Framework::PyTorch, {"pytorch", "torch"}},
      {Framework::TensorFlow, {"tensorflow", "tf"}},
      {Framework::Torch7, {"torch7"}},
  };
  return table;
}

const std::vector<std::pair<GpuPhase, std::vector<std::string>>>& phase_table() {
  static const std::vector<std::pair<GpuPhase, std::vector<std::string>>> table = {
      {GpuPhase::Train, {"train", "step", "training"}},
      {GpuPhase::ForwardBackward, {"forward-backward", "fwd-bwd", "forward_backward"}},
      {GpuPhase::Inference, {"inference", "forward", "inf"}},
  };
  return table;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

template <typename Enum>
Enum parse_named(const std::vector<std::pair<Enum, std::vector<std::string>>>& table, const std::string& text,
                 const std::string& what, const std::string& choices) {
  const std::string key = lower(text);
  for (const auto& [value, names] : table)
    if (std::find(names.begin(), names.end(), key) != names.end()) return value;
  throw InputError(what + " " + quote(text) + ": expected one of " + choices);
}

// A dense 3x3 stride-1 convolution: the shape cuDNN's Winograd kernels take at fp32.
bool winograd_shaped(const OpView& view) {
  if (view.node.op != "Conv2d"sv || view.node.attr_int("groups", 1) != 1) return false;
  const auto kernel = ops::pair_attr(view, "kernel", 1), stride = ops::pair_attr(view, "stride", 1),
             dilation = ops::pair_attr(view, "dilation", 1);
  return kernel[0] == 3 && kernel[1] == 3 && stride[0] == 1 && stride[1] == 1 && dilation[0] == 1 && dilation[1] == 1;
}

bool is_matrix_category(const std::string& category) {
  return category == "conv"sv || category == "linear"sv || category == "attention"sv;
}

}  // namespace

GpuPrecision parse_gpu_precision(const std::string& text, const std::string& what) {
  return parse_named(precision_table(), text, what, "fp32, tf32, amp (fp16), bf16");
}

Precision memory_precision_of(const std::string& text, const std::string& what) {
  switch (parse_gpu_precision(text, what)) {
    case GpuPrecision::Fp32:
    case GpuPrecision::Tf32:
      return Precision::Fp32;
    case GpuPrecision::Fp16:
      return Precision::Fp16;
    case GpuPrecision::Bf16:
      break;
  }
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "bf16-pure" || lower == "pure-bf16" ? Precision::Bf16Pure : Precision::Bf16;
}

const std::string& name(GpuPrecision precision) {
  for (const auto& [value, names] : precision_table())
    if (value == precision) return names.front();
  ::dnncast::internal_assert_fail("GPU precision named", __FILE__, __LINE__);
}

Framework parse_framework(const std::string& text, const std::string& what) {
  Framework framework = parse_named(framework_table(), text, what, "pytorch, tensorflow");
  if (framework == Framework::Torch7)
    throw InputError(what + " " + quote(text) + ": expected one of pytorch, tensorflow");
  return framework;
}

GpuPhase parse_gpu_phase(const std::string& text, const std::string& what) {
  return parse_named(phase_table(), text, what, "train, forward-backward, inference");
}

const std::string& name(GpuPhase phase) {
  for (const auto& [value, names] : phase_table())
    if (value == phase) return names.front();
  ::dnncast::internal_assert_fail("GPU phase named", __FILE__, __LINE__);
}

const std::string& name(Framework framework) {
  for (const auto& [value, names] : framework_table())
    if (value == framework) return names.front();
  ::dnncast::internal_assert_fail("framework named", __FILE__, __LINE__);
}

// ---------------------------------------------------------------------------------------------
// Kernels

GpuWork gpu_work(const Graph& graph, GpuPrecision precision, Optimizer optimizer, GpuPhase phase,
                 const GraphShare& share) {
  return gpu_work(graph, precision, optimizer, phase == GpuPhase::Train, phase != GpuPhase::Inference, share);
}

namespace {

// Kernels as gpu_work collects them: identical ones merged, by class for the curves and by shape for the per-kernel
// model. Merged in hash tables (a 7B step lists about 4,000 kernels, most of them again in every layer) and listed in
// the order of their keys, as ordered maps would list them, so that the sums over them add in the same order.
struct KernelCounts {
  using MergedKey = std::tuple<int, double, double>;
  using ShapeKey = std::array<double, 14>;
  // Hash of the values' bits; -0.0 is made +0.0 first (kernel_key), as the two compare equal.
  struct HashDoubles {
    template <size_t N>
    size_t operator()(const std::array<double, N>& key) const {
      uint64_t hash = 1469598103934665603ULL;
      for (double value : key) {
        uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof bits);
        hash = (hash ^ bits) * 1099511628211ULL;
        hash ^= hash >> 29;
      }
      return static_cast<size_t>(hash);
    }
    size_t operator()(const MergedKey& key) const {
      return (*this)(
          std::array<double, 3>{static_cast<double>(std::get<0>(key)), std::get<1>(key) + 0.0, std::get<2>(key) + 0.0});
    }
  };
  std::unordered_map<MergedKey, int64_t, HashDoubles> merged;
  std::unordered_map<ShapeKey, std::pair<KernelShape, int64_t>, HashDoubles> shaped;

  static ShapeKey kernel_key(const KernelShape& kernel) {
    return {static_cast<double>(kernel.family),
            static_cast<double>(kernel.pass),
            kernel.batch + 0.0,
            kernel.m + 0.0,
            kernel.n + 0.0,
            kernel.k + 0.0,
            kernel.channels + 0.0,
            kernel.out_channels + 0.0,
            kernel.kernel + 0.0,
            kernel.size + 0.0,
            kernel.stride + 0.0,
            kernel.padding + 0.0,
            kernel.flops + 0.0,
            kernel.bytes + 0.0};
  }
  void add(GpuKernel::Class kind, double flops, double bytes, int64_t count) {
    merged[{static_cast<int>(kind), flops + 0.0, bytes + 0.0}] += count;
  }
  void add_shaped(const KernelShape& kernel, int64_t count = 1) {
    shaped.try_emplace(kernel_key(kernel), kernel, 0).first->second.second += count;
  }
  // The maps' order (operator<), made total: a NaN after every number, so that a sort is defined whatever comes.
  static bool before(double a, double b) {
    return std::isnan(a) || std::isnan(b) ? !std::isnan(a) && std::isnan(b) : a < b;
  }
  template <typename Values>
  static bool key_less(const Values& a, const Values& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), before);
  }
  void add_all(const KernelCounts& other) {
    for (const auto& [key, count] : other.merged) merged[key] += count;
    for (const auto& [key, shape] : other.shaped) add_shaped(shape.first, shape.second);
  }
  GpuWork work() const {
    GpuWork out;
    std::vector<const std::pair<const ShapeKey, std::pair<KernelShape, int64_t>>*> shapes;
    shapes.reserve(shaped.size());
    for (const auto& entry : shaped) shapes.push_back(&entry);
    std::sort(shapes.begin(), shapes.end(), [](const auto* a, const auto* b) { return key_less(a->first, b->first); });
    out.shaped.reserve(shapes.size());
    for (const auto* entry : shapes) out.shaped.push_back(entry->second);
    std::vector<std::pair<MergedKey, int64_t>> kernels(merged.begin(), merged.end());
    std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
      const auto& [a_kind, a_flops, a_bytes] = a.first;
      const auto& [b_kind, b_flops, b_bytes] = b.first;
      return key_less(std::array<double, 3>{static_cast<double>(a_kind), a_flops, a_bytes},
                      std::array<double, 3>{static_cast<double>(b_kind), b_flops, b_bytes});
    });
    for (const auto& [key, count] : kernels) {
      out.kernels.push_back(
          {static_cast<GpuKernel::Class>(std::get<0>(key)), std::get<1>(key), std::get<2>(key), count});
      out.kernel_count += count;
    }
    return out;
  }
};

// One pass over the graph: the forward kernels, the backward ones (a checkpointed block's forward again included),
// the optimizer step's.
std::array<KernelCounts, 3> kernel_counts(const Graph& graph, GpuPrecision precision, Optimizer optimizer,
                                          const GraphShare& share, bool training = true) {
  // Autocast runs activations in 16 bits; fp32 master weights stay for the optimizer.
  const double activation_scale = precision == GpuPrecision::Fp16 || precision == GpuPrecision::Bf16 ? 0.5 : 1.0;
  std::array<KernelCounts, 3> counts;
  KernelCounts &forward = counts[0], &backward = counts[1], &step = counts[2];
  int64_t param_tensors = 0, params = 0;
  const OpRegistry& registry = OpRegistry::instance();
  // Which outputs require a gradient, and per node this GPU's share of it, for autograd's gradient sums (added
  // after the pass: where they fall depends on every consumer).
  std::vector<char> requires_grad(graph.nodes().size(), 0);
  std::vector<double> share_of(graph.nodes().size(), 0);
  for (size_t index = 0; index < graph.nodes().size(); ++index) {
    const Node& node = graph.nodes()[index];
    const OpDef& def = registry.get(node.op);
    if (def.category == "input"sv) continue;
    OpCost computed;
    const OpCost& node_work = node_cost(graph, static_cast<int>(index), computed);
    const bool gradient = requires_gradient(node, node_work, requires_grad);
    requires_grad[index] = gradient ? 1 : 0;
    const NodePart part = share.parts.empty() ? NodePart::Whole : share.parts[index];
    if (part == NodePart::Skip) continue;
    const double fraction = part == NodePart::Whole ? 1.0 : 1.0 / share.tp;  // this GPU's share of the node's work
    share_of[index] = fraction;
    // This GPU's part of the node's work (its fields alone: no copy of the saved tensors' list per node).
    struct {
      int64_t flops_fwd, flops_bwd, params, frozen_params, bytes_read, bytes_written;
    } cost{node_work.flops_fwd,     node_work.flops_bwd,  node_work.params,
           node_work.frozen_params, node_work.bytes_read, node_work.bytes_written};
    if (part != NodePart::Whole) {
      cost.flops_fwd = static_cast<int64_t>(static_cast<double>(cost.flops_fwd) * fraction);
      cost.flops_bwd = static_cast<int64_t>(static_cast<double>(cost.flops_bwd) * fraction);
      cost.params = static_cast<int64_t>(static_cast<double>(cost.params) * fraction);
      cost.frozen_params = static_cast<int64_t>(static_cast<double>(cost.frozen_params) * fraction);
    }
    const double bytes = activation_scale * fraction * static_cast<double>(cost.bytes_read + cost.bytes_written);
    if (cost.params > cost.frozen_params) {  // what the optimizer updates: frozen weights take no step
      params += cost.params - cost.frozen_params;
      param_tensors += node.has_attr("bias") && node.attr_int("bias", 1) == 0 ? 1 : 2;
    }
    if (!training && node.op == "Dropout"sv) continue;  // eval mode: the identity
    NodeKernels shaped = node_kernels(graph, static_cast<int>(index), node_work, part, share.tp, training);
    if (!gradient) shaped.backward.clear();  // autograd runs no backward for an output no gradient reaches
    if (activation_scale != 1.0) {
      // Under autocast the GEMMs, norms' inputs and elementwise kernels move 2-byte data; softmax runs in fp32.
      for (auto* kernels : {&shaped.forward, &shaped.backward})
        for (KernelShape& kernel : *kernels)
          if (kernel.family != KernelFamily::Softmax) kernel.bytes *= activation_scale;
      // ... and every weight a GEMM reads is cast to 16 bits once per forward (read 4 bytes, write 2); a quantized
      // one is dequantized to 16 bits by its own kernels instead (network_kernels.cpp).
      if (cost.params > 0 && is_matrix_category(def.category) && !node.has_attr("quantize")) {
        const double weights = static_cast<double>(cost.params);
        shaped.forward.push_back(elementwise_kernel(weights, 0, 6 * weights));
      }
    }
    // A checkpointed block (graph/checkpoint.h) runs its forward once more in the backward pass.
    const bool recompute = checkpoint_block(node) >= 0;
    for (const KernelShape& kernel : shaped.forward) {
      forward.add_shaped(kernel);
      if (recompute) backward.add_shaped(kernel);
    }
    for (const KernelShape& kernel : shaped.backward) backward.add_shaped(kernel);
    if (bytes == 0 && cost.flops_fwd == 0 && cost.flops_bwd == 0) continue;  // a view: no curve-timed work
    if (is_matrix_category(def.category)) {
      const GpuKernel::Class kind = def.category != "conv"sv ? GpuKernel::Class::Gemm
                                    : winograd_shaped(view_of(graph, static_cast<int>(index)))
                                        ? GpuKernel::Class::Conv3x3
                                        : GpuKernel::Class::Conv;
      forward.add(kind, static_cast<double>(cost.flops_fwd), bytes, 1);
      if (recompute) backward.add(kind, static_cast<double>(cost.flops_fwd), bytes, 1);
      if (cost.flops_bwd > 0 && gradient)
        backward.add(kind, static_cast<double>(cost.flops_bwd) / 2, bytes, 2);  // data, weight
    } else {
      forward.add(GpuKernel::Class::Memory, static_cast<double>(cost.flops_fwd), bytes, 1);
      if (recompute) backward.add(GpuKernel::Class::Memory, static_cast<double>(cost.flops_fwd), bytes, 1);
      // Backward reads the output gradient and what was saved, writes the input gradient.
      if (gradient) backward.add(GpuKernel::Class::Memory, static_cast<double>(cost.flops_bwd), 2 * bytes, 1);
    }
  }
  const std::vector<std::vector<double>> sums = gradient_sums(graph, requires_grad);
  for (size_t index = 0; index < sums.size(); ++index)
    for (double elements : sums[index])
      if (share_of[index] > 0) {
        KernelShape sum = gradient_sum_kernel(share_of[index] * elements);
        sum.bytes *= activation_scale;
        backward.add_shaped(sum);
      }
  if (param_tensors > 0) {
    // Reads parameter, gradient and each state tensor, writes parameter and states (fp32).
    const int states = optimizer_state_per_param(optimizer);
    const double bytes_per_param = 4.0 * (3 + 2 * states);
    const double per_tensor = bytes_per_param * static_cast<double>(params) / static_cast<double>(param_tensors);
    step.add(GpuKernel::Class::Memory, 0, per_tensor, param_tensors * (1 + states));
    const double elements = static_cast<double>(params) / static_cast<double>(param_tensors);
    step.add_shaped(elementwise_kernel(elements, 2 * elements, per_tensor / static_cast<double>(1 + states)),
                    param_tensors * (1 + states));
    if (precision == GpuPrecision::Fp16) {
      // fp16 autocast trains behind a loss scaler (torch.cuda.amp.GradScaler; TensorFlow's loss scale): before the
      // step every fp32 gradient is checked for inf / nan and unscaled in place (read and written once), by
      // multi-tensor kernels of at most 110 tensors and 320 blocks of 65,536 elements each (PyTorch's
      // multi_tensor_apply). bf16 needs no scaler.
      const double total = static_cast<double>(params);
      const int64_t launches =
          std::max<int64_t>({1, (param_tensors + 109) / 110, static_cast<int64_t>(std::ceil(total / (65536.0 * 320)))});
      const double per_launch = total / static_cast<double>(launches);
      step.add(GpuKernel::Class::Memory, 0, 8 * per_launch, launches);
      step.add_shaped(elementwise_kernel(per_launch, 2 * per_launch, 8 * per_launch), launches);
    }
  }
  return counts;
}

}  // namespace

GpuWork gpu_work(const Graph& graph, GpuPrecision precision, Optimizer optimizer, bool with_optimizer_step,
                 bool with_backward, const GraphShare& share) {
  // Inference runs the model in eval mode: its dropouts launch nothing.
  std::array<KernelCounts, 3> counts = kernel_counts(graph, precision, optimizer, share, with_backward);
  if (with_backward) counts[0].add_all(counts[1]);
  if (with_backward && with_optimizer_step) counts[0].add_all(counts[2]);
  return counts[0].work();
}

std::array<GpuWork, 3> gpu_work_parts(const Graph& graph, GpuPrecision precision, Optimizer optimizer,
                                      const GraphShare& share) {
  const std::array<KernelCounts, 3> counts = kernel_counts(graph, precision, optimizer, share);
  return {counts[0].work(), counts[1].work(), counts[2].work()};
}

// ---------------------------------------------------------------------------------------------
// Times

namespace {

struct Peaks {
  double matrix = 0, vector = 0, bandwidth = 0, sms = 1;
  bool tensor = false, tf32 = false;
};

Peaks peaks_of(const hardware::GpuSpec& gpu, GpuPrecision precision) {
  const std::vector<std::string> missing = missing_peaks(gpu, precision);
  if (!missing.empty())
    throw InputError("GPU " + quote(gpu.name) + " has no " + missing.front() + " in the catalogue (" + gpu.file +
                     "): add it with --catalogue to forecast " + name(precision) + " on it");
  Peaks peaks;
  peaks.vector = *gpu.fp32_tflops * 1e12;
  peaks.bandwidth = *gpu.bandwidth_gbs * 1e9;
  peaks.sms = static_cast<double>(*gpu.sm_count);
  peaks.matrix = peaks.vector;
  switch (precision) {
    case GpuPrecision::Fp32:
      break;
    case GpuPrecision::Tf32:  // GPUs before Ampere have no TF32: fp32 there, as PyTorch does
      if (gpu.tf32_tensor_tflops) peaks.matrix = *gpu.tf32_tensor_tflops * 1e12, peaks.tensor = peaks.tf32 = true;
      break;
    case GpuPrecision::Fp16:
      peaks.matrix = *gpu.fp16_tensor_tflops * 1e12, peaks.tensor = true;
      break;
    case GpuPrecision::Bf16:
      peaks.matrix = *gpu.bf16_tensor_tflops * 1e12, peaks.tensor = true;
      break;
  }
  return peaks;
}

double efficiency(const GpuCalibration::Curve& curve, double work_per_sm) {
  return curve.ceiling * work_per_sm / (work_per_sm + curve.half_work);
}

double framework_seconds(double seconds, Framework framework, const GpuCalibration& calibration) {
  seconds +=
      (framework == Framework::TensorFlow ? calibration.tensorflow_iteration_us : calibration.iteration_us) * 1e-6;
  if (framework == Framework::TensorFlow) seconds *= calibration.tensorflow_factor;
  if (framework == Framework::Torch7) seconds *= calibration.torch7_factor;
  return seconds;
}

}  // namespace

std::vector<std::string> missing_peaks(const hardware::GpuSpec& gpu, GpuPrecision precision) {
  std::vector<std::string> missing;
  auto need = [&](bool known, const char* column) {
    if (!known) missing.push_back(column);
  };
  need(gpu.fp32_tflops.value_or(0) > 0, "fp32_tflops");
  need(gpu.bandwidth_gbs.value_or(0) > 0, "bandwidth_gbs");
  need(gpu.sm_count.value_or(0) > 0, "sm_count");
  if (precision == GpuPrecision::Fp16) need(gpu.fp16_tensor_tflops.value_or(0) > 0, "fp16_tensor_tflops");
  if (precision == GpuPrecision::Bf16) need(gpu.bf16_tensor_tflops.value_or(0) > 0, "bf16_tensor_tflops");
  return missing;
}

KernelBusy kernel_busy(const GpuWork& work, const hardware::GpuSpec& gpu, const GpuKernelModel& model) {
  const KernelDevice device = kernel_device(gpu);
  KernelBusy busy;
  std::vector<const KernelShape*> shapes;
  for (const auto& shaped : work.shaped) shapes.push_back(&shaped.first);
  const std::vector<double> seconds = model.seconds_many(shapes, device);  // each family's trees walked once
  for (size_t index = 0; index < work.shaped.size(); ++index) {
    const auto& [shape, count] = work.shaped[index];
    busy.kernels.push_back({seconds[index], count});
    busy.roofline_s += static_cast<double>(count) * roofline_seconds(shape, device);
  }
  return busy;
}

// Kernels queue back to back: each takes its busy time, and at least the host's launch cost.
GpuTiming time_from_busy(const KernelBusy& busy, Framework framework, const GpuCalibration& calibration) {
  const double launch_s = calibration.kernel_launch_us * 1e-6;
  double seconds = 0;
  GpuTiming timing;
  for (const auto& [busy_s, count] : busy.kernels) {
    seconds += static_cast<double>(count) * std::max(busy_s, launch_s);
    timing.kernels += count;
  }
  timing.time_ms = 1e3 * framework_seconds(seconds, framework, calibration);
  timing.roofline_ms = 1e3 * busy.roofline_s;
  timing.per_kernel = true;
  return timing;
}

bool times_per_kernel(const hardware::GpuSpec& gpu, GpuPrecision precision) {
  return precision == GpuPrecision::Fp32 || (precision == GpuPrecision::Tf32 && !gpu.tf32_tensor_tflops);
}

KernelBusy half_kernel_busy(const GpuWork& work, const hardware::GpuSpec& gpu, GpuPrecision precision,
                            const GpuKernelModel& half, const GpuKernelModel& fp32) {
  // Three groups, each family's trees walked once per group: softmax and convolutions in fp32 (fp32's model), GEMMs
  // at the tensor peak slowed by the model's FP32 share, the rest at the tensor peak (half_kernel_device).
  const std::array<KernelDevice, 3> devices = {
      kernel_device(gpu), half_kernel_device(gpu, precision, KernelFamily::Gemm, half.gemm_vector_share()),
      half_kernel_device(gpu, precision)};
  auto group_of = [](const KernelShape& shape) {
    return shape.family == KernelFamily::Softmax || shape.family == KernelFamily::Conv ? 0
           : shape.family == KernelFamily::Gemm                                        ? 1
                                                                                       : 2;
  };
  std::array<std::vector<const KernelShape*>, 3> groups;
  for (const auto& [shape, count] : work.shaped) groups[static_cast<size_t>(group_of(shape))].push_back(&shape);
  std::array<std::vector<double>, 3> seconds;
  for (size_t group = 0; group < groups.size(); ++group)
    seconds[group] = (group == 0 ? fp32 : half).seconds_many(groups[group], devices[group]);
  KernelBusy busy;
  std::array<size_t, 3> next = {0, 0, 0};
  for (const auto& [shape, count] : work.shaped) {
    const size_t group = static_cast<size_t>(group_of(shape));
    busy.kernels.push_back({seconds[group][next[group]++], count});
    busy.roofline_s += static_cast<double>(count) * roofline_seconds(shape, devices[group == 0 ? 0 : 2]);
  }
  return busy;
}

bool times_half_per_kernel(const GpuWork& work, const hardware::GpuSpec& gpu, GpuPrecision precision) {
  if (precision == GpuPrecision::Fp32 || (precision == GpuPrecision::Tf32 && !gpu.tf32_tensor_tflops)) return false;
  for (const auto& [shape, count] : work.shaped)
    if (shape.family == KernelFamily::Conv) return false;  // convolutions keep the curves (half_kernels.h)
  return true;
}

double curve_compute_seconds(double flops, const GpuCalibration::Curve& curve, double matrix, double vector, double sms,
                             bool tensor, const GpuCalibration& calibration) {
  const double seconds = flops / matrix / std::max(1e-6, efficiency(curve, flops / sms));
  return tensor ? seconds + calibration.tensor_vector_share * flops / vector : seconds;
}

GpuTiming time_on_gpu(const GpuWork& work, const hardware::GpuSpec& gpu, GpuPrecision precision, Framework framework,
                      const GpuCalibration& calibration, const GpuKernelModel* kernels,
                      const GpuKernelModel* half_kernels) {
  const Peaks peaks = peaks_of(gpu, precision);
  if (kernels && times_per_kernel(gpu, precision))
    return time_from_busy(kernel_busy(work, gpu, *kernels), framework, calibration);
  if (kernels && half_kernels && times_half_per_kernel(work, gpu, precision))
    return time_from_busy(half_kernel_busy(work, gpu, precision, *half_kernels, *kernels), framework, calibration);
  const GpuCalibration::Curve& conv = peaks.tf32     ? calibration.conv_tf32
                                      : peaks.tensor ? calibration.conv_tensor
                                                     : calibration.conv_fp32;
  const GpuCalibration::Curve& gemm = peaks.tensor ? calibration.gemm_tensor : calibration.gemm_fp32;
  const double launch_s = calibration.kernel_launch_us * 1e-6;
  double seconds = 0, roofline = 0;
  for (const GpuKernel& kernel : work.kernels) {
    const double memory_s = kernel.bytes / (peaks.bandwidth * calibration.memory_efficiency);
    double compute_s = 0, peak_compute_s = 0;
    if (kernel.kind == GpuKernel::Class::Memory) {
      compute_s = peak_compute_s = kernel.flops / peaks.vector;
    } else {
      const GpuCalibration::Curve& curve = kernel.kind == GpuKernel::Class::Gemm ? gemm
                                           : kernel.kind == GpuKernel::Class::Conv3x3 && !peaks.tensor
                                               ? calibration.conv3x3_fp32
                                               : conv;
      peak_compute_s = kernel.flops / peaks.matrix;
      compute_s =
          curve_compute_seconds(kernel.flops, curve, peaks.matrix, peaks.vector, peaks.sms, peaks.tensor, calibration);
    }
    const double count = static_cast<double>(kernel.count);
    // A kernel's compute and memory traffic do not overlap (a fitted (c^p + m^p)^(1/p) gave p = 1.00).
    seconds += count * std::max(compute_s + memory_s, launch_s);
    roofline += count * std::max(peak_compute_s, kernel.bytes / peaks.bandwidth);
  }
  GpuTiming timing;
  timing.time_ms = 1e3 * framework_seconds(seconds, framework, calibration);
  timing.roofline_ms = 1e3 * roofline;
  timing.kernels = work.kernel_count;
  return timing;
}

// ---------------------------------------------------------------------------------------------
// The calibration file: key,value,detail rows

namespace {

// A key of the file and its field. `optional`: a file written before the key existed reads the field's default, the
// model it was fitted with (tensor_vector_share: 0, no FP32 share); any other missing key is refused.
struct CalibrationKey {
  std::string name;
  std::function<double&(GpuCalibration&)> field;
  bool optional = false;
};

const std::vector<CalibrationKey>& calibration_keys() {
  static const std::vector<CalibrationKey> keys = {
      {"conv3x3_fp32_ceiling", [](GpuCalibration& c) -> double& { return c.conv3x3_fp32.ceiling; }},
      {"conv3x3_fp32_half_work_flops", [](GpuCalibration& c) -> double& { return c.conv3x3_fp32.half_work; }},
      {"conv_fp32_ceiling", [](GpuCalibration& c) -> double& { return c.conv_fp32.ceiling; }},
      {"conv_fp32_half_work_flops", [](GpuCalibration& c) -> double& { return c.conv_fp32.half_work; }},
      {"conv_tf32_ceiling", [](GpuCalibration& c) -> double& { return c.conv_tf32.ceiling; }},
      {"conv_tf32_half_work_flops", [](GpuCalibration& c) -> double& { return c.conv_tf32.half_work; }},
      {"conv_tensor_ceiling", [](GpuCalibration& c) -> double& { return c.conv_tensor.ceiling; }},
      {"conv_tensor_half_work_flops", [](GpuCalibration& c) -> double& { return c.conv_tensor.half_work; }},
      {"gemm_fp32_ceiling", [](GpuCalibration& c) -> double& { return c.gemm_fp32.ceiling; }},
      {"gemm_fp32_half_work_flops", [](GpuCalibration& c) -> double& { return c.gemm_fp32.half_work; }},
      {"gemm_tensor_ceiling", [](GpuCalibration& c) -> double& { return c.gemm_tensor.ceiling; }},
      {"gemm_tensor_half_work_flops", [](GpuCalibration& c) -> double& { return c.gemm_tensor.half_work; }},
      {"memory_efficiency", [](GpuCalibration& c) -> double& { return c.memory_efficiency; }},
      {"tensor_vector_share", [](GpuCalibration& c) -> double& { return c.tensor_vector_share; }, true},
      {"kernel_launch_us", [](GpuCalibration& c) -> double& { return c.kernel_launch_us; }},
      {"iteration_us", [](GpuCalibration& c) -> double& { return c.iteration_us; }},
      {"tensorflow_iteration_us", [](GpuCalibration& c) -> double& { return c.tensorflow_iteration_us; }},
      {"tensorflow_factor", [](GpuCalibration& c) -> double& { return c.tensorflow_factor; }},
      {"torch7_factor", [](GpuCalibration& c) -> double& { return c.torch7_factor; }},
      {"interval_low", [](GpuCalibration& c) -> double& { return c.interval_low; }},
      {"interval_high", [](GpuCalibration& c) -> double& { return c.interval_high; }},
  };
  return keys;
}

}  // namespace

std::string default_gpu_calibration_path() {
  const std::string dir = hardware::default_catalogue_dir();
  return dir.empty() ? "" : (std::filesystem::path(dir) / "gpu_calibration.csv").string();
}

GpuCalibration load_gpu_calibration(const std::string& given) {
  const std::string path = given.empty() ? default_gpu_calibration_path() : given;
  if (path.empty())
    throw InputError("no GPU calibration: data/hardware/gpu_calibration.csv not found (set DNNCAST_HARDWARE)");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read GPU calibration " + quote(path));
  GpuCalibration calibration;
  calibration.source = path;
  std::vector<std::string> fields;
  int64_t line = 0;
  std::map<std::string, bool> seen;
  double value = 0;
  std::string where;
  while (read_key_value_record(in, path, fields, line, value, where)) {
    if (fields[0].rfind("gpu:", 0) == 0) {
      calibration.gpus.push_back(
          {fields[0].substr(4), {static_cast<int64_t>(value), fields.size() > 2 ? fields[2] : ""}});
      continue;
    }
    bool known = false;
    for (const CalibrationKey& key : calibration_keys())
      if (key.name == fields[0]) key.field(calibration) = value, known = true;
    if (!known) throw InputError(where + ": unknown key " + quote(fields[0]));
    seen[fields[0]] = true;
  }
  for (const CalibrationKey& key : calibration_keys())
    if (!seen.count(key.name) && !key.optional) throw InputError(path + ": key " + quote(key.name) + " is missing");
  return calibration;
}

void write_gpu_calibration(const GpuCalibration& calibration, const std::string& path, const std::string& header) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + quote(path));
  out << "# " << header << "\n";
  write_csv_record(out, {"key", "value", "detail"});
  GpuCalibration copy = calibration;
  for (const CalibrationKey& key : calibration_keys()) {
    std::ostringstream value;
    value.precision(6);
    value << key.field(copy);
    write_csv_record(out, {key.name, value.str(), ""});
  }
  for (const auto& [gpu, coverage] : calibration.gpus)
    write_csv_record(out, {"gpu:" + gpu, std::to_string(coverage.rows), coverage.tables});
  if (!out) throw InputError("cannot write " + quote(path));
}

}  // namespace dnncast::gpu

namespace dnncast::gpu {

// The shipped per-kernel model, read once per process; none when its folder is absent.
const GpuKernelModel* shipped_kernel_model() {
  static const std::unique_ptr<GpuKernelModel> model = []() -> std::unique_ptr<GpuKernelModel> {
    const std::string dir = GpuKernelModel::default_dir();
    std::error_code error;
    if (dir.empty() || !std::filesystem::exists(std::filesystem::path(dir) / "floors.csv", error)) return nullptr;
    return std::make_unique<GpuKernelModel>(GpuKernelModel::load(dir));
  }();
  return model.get();
}

std::optional<int64_t> gpu_memory_bytes(const hardware::GpuSpec& gpu) {
  if (!gpu.memory_gib) return std::nullopt;
  return static_cast<int64_t>(*gpu.memory_gib * double(int64_t{1} << 30));
}

}  // namespace dnncast::gpu

// ---------------------------------------------------------------------------------------------
// The forecast

namespace dnncast::gpu {

namespace {

constexpr int64_t kMaxBatchSearched = int64_t{1} << 16;  // --max-batch tries no larger batch

void forecast_memory_on(const GpuForecastRequest& request, const hardware::GpuSpec& gpu, const Graph& graph,
                        GpuForecast& result) {
  // What nvidia-smi would show (gpu_memory.h), as `dnncast memory --device GPU` forecasts it.
  memory::MemoryConfig config;
  if (request.memory_precision != Precision::Fp32)
    result.notes.push_back("memory is simulated in " + name(request.memory_precision) +
                           " as `dnncast memory --device GPU --precision` does (unverified on GPUs; the context and "
                           "reserve were fitted on fp32 runs)");
  double per_sample = 0;  // the step's activations and temporaries per sample: the max-batch search's first line
  try {
    config = gpu_forecast_memory_config(request);
    const memory::MemoryReport report = memory::simulate_memory(graph, config);
    result.memory_forecast_bytes = report.cuda.total_bytes();
    result.required_bytes = report.required_bytes;
    per_sample = memory::bytes_per_sample(report, request.model.spec.batch);
  } catch (const InputError& error) {
    result.notes.push_back(std::string("memory not forecast: ") + error.what());
    return;
  }
  if (gpu.name != kGpuMemoryFittedOn)
    result.notes.push_back(
        "memory: the contexts, workspaces, allocator reserve and margin were fitted on an A100 40GB (GPUMemNet) "
        "and are carried over to " +
        gpu.name);
  if (!gpu.memory_gib) {
    result.notes.push_back("the catalogue has no memory size for " + gpu.name + ": fits not decided");
    return;
  }
  result.device_memory_bytes = gpu_memory_bytes(gpu);
  result.fits = *result.required_bytes <= *result.device_memory_bytes;
  if (!request.max_batch) return;
  // The requested batch's bytes are known; each other batch resizes one copy of the graph (ModelSource::rebatch),
  // the first line drawn from the step's activations per sample (memory::largest_fitting).
  config.keep_timeline = config.keep_events = false;
  const int64_t batch = request.model.spec.batch;
  Graph resized = graph;
  result.max_batch = memory::largest_fitting(
                         [&](int64_t candidate) {
                           if (candidate == batch) return *result.required_bytes;
                           request.model.rebatch(resized, candidate);
                           return memory::simulate_memory(resized, config).required_bytes;
                         },
                         *result.device_memory_bytes, kMaxBatchSearched, per_sample)
                         .batch;
}

void set_basis(const GpuCalibration& calibration, const hardware::GpuSpec& gpu, GpuForecast& result) {
  for (const auto& [name, coverage] : calibration.gpus) {
    if (name != gpu.name) continue;
    result.basis = "calibrated";
    result.basis_detail = "the calibration was fitted to " + std::to_string(coverage.rows) +
                          " public measurements of this GPU (" + coverage.tables + ")";
    return;
  }
  result.basis = "specs";
  result.basis_detail =
      "no measurement of this GPU was in the calibration: its catalogue peaks and the calibrated "
      "efficiencies; the interval is the leave-one-GPU-out spread";
}

void set_epoch(const GpuForecastRequest& request, int64_t samples, GpuForecast& result) {
  if (request.epoch_samples <= 0) return;
  result.epoch_samples = request.epoch_samples;
  result.epoch_iterations = (request.epoch_samples + samples - 1) / samples;
  result.epoch_s = static_cast<double>(result.epoch_iterations) * result.time_ms / 1e3;
}

// The batch a forecast's graph is built at: the request's, or on several GPUs one micro-batch of one replica's.
int64_t micro_batch_of(const GpuForecastRequest& request) {
  const int64_t batch = request.model.spec.batch;
  if (request.parallel.gpus() == 1) return batch;
  if (batch % request.parallel.micro_batches != 0)
    throw InputError("--batch " + std::to_string(batch) + " is not a multiple of --micro-batches " +
                     std::to_string(request.parallel.micro_batches));
  return batch / request.parallel.micro_batches;
}

// Several GPUs (parallel.h): the batch is each replica's, cut into micro-batches (`micro` one of them); memory is not
// forecast yet.
void forecast_parallel(const GpuForecastRequest& request, const GpuCalibration& calibration, const Graph& micro,
                       GpuForecast& result) {
  const ParallelPlan& plan = request.parallel;
  const int64_t batch = request.model.spec.batch;
  if (request.framework != Framework::PyTorch)
    throw InputError("--gpus with --parallel: only PyTorch training is timed on several GPUs");
  if (request.phase != GpuPhase::Train)
    throw InputError("--gpus with --parallel: only the train phase (a full step) is timed on several GPUs");
  if (request.grad_accum > 1)
    throw InputError("--gpus with --parallel: give micro-batches with --micro-batches, not --grad-accum");
  const PlanLayout layout = plan_layout(micro, plan);  // for the timing and the memory
  ParallelTiming timing =
      time_parallel(micro, plan, layout, request.gpu, request.precision, request.optimizer, calibration);
  timing.micro_batch = micro_batch_of(request);
  timing.global_batch = batch * plan.dp;
  result.time_model = "per-kernel, several GPUs";
  result.time_ms = timing.time_ms;
  result.time_ms_low = result.time_ms * calibration.interval_low;
  result.time_ms_high = result.time_ms * calibration.interval_high;
  set_epoch(request, timing.global_batch, result);
  set_basis(calibration, request.gpu, result);
  for (const std::string& note : timing.notes) result.notes.push_back(note);
  result.notes.push_back(
      "several GPUs: " + describe(plan) + ", batch " + std::to_string(batch) + " per data-parallel replica (" +
      std::to_string(timing.global_batch) +
      " per iteration); collectives from the measured-collective model (data/hardware/collectives.csv); the "
      "interval is the one-GPU model's");
  try {
    memory::MemoryConfig config = gpu_forecast_memory_config(request);
    config.keep_timeline = config.keep_events = false;  // the phases' peaks are what the plan re-divides
    const memory::MemoryReport single = memory::simulate_memory(micro, config);
    timing.memory = parallel_memory(single, micro, plan, layout);
    result.required_bytes = timing.memory->required_bytes;
    if (request.gpu.memory_gib) {
      result.device_memory_bytes = gpu_memory_bytes(request.gpu);
      result.fits = *result.required_bytes <= *result.device_memory_bytes;
    }
    result.notes.push_back(
        "memory per GPU: one micro-batch's simulated step re-divided by the plan (parameters, gradients and optimizer "
        "states of the GPU's share; activations of its nodes times the micro-batches in flight); a model, not a "
        "measurement");
    if (request.max_batch && result.device_memory_bytes) {
      // Over the micro-batch: each replica's batch is that many micro-batches of it.
      const int64_t micro_size = micro_batch_of(request);
      Graph resized = micro;
      const memory::MaxBatchResult search = memory::largest_fitting(
          [&](int64_t candidate) {
            if (candidate == micro_size) return timing.memory->required_bytes;
            request.model.rebatch(resized, candidate);
            return parallel_memory(memory::simulate_memory(resized, config), resized, plan).required_bytes;
          },
          *result.device_memory_bytes, std::max<int64_t>(1, kMaxBatchSearched / plan.micro_batches));
      result.max_batch = search.batch * plan.micro_batches;
      result.notes.push_back("--max-batch: each data-parallel replica's batch, " + std::to_string(plan.micro_batches) +
                             " micro-batch(es), memory per GPU as above");
    }
  } catch (const InputError& error) {
    result.notes.push_back(std::string("memory not forecast: ") + error.what());
  }
  result.parallel = std::move(timing);
}

}  // namespace

memory::MemoryConfig gpu_forecast_memory_config(const GpuForecastRequest& request) {
  memory::MemoryConfig config = gpu_memory_config(load_gpu_memory_calibration(), request.optimizer);
  config.precision = request.memory_precision;
  return config;
}

GpuForecast forecast_gpu(const GpuForecastRequest& request) {
  if (request.model.spec.batch < 1)
    throw InputError("--batch must be a positive integer, got " + std::to_string(request.model.spec.batch));
  if (request.epoch_samples < 0) throw InputError("--epoch-samples must be positive");
  return forecast_gpu(request, load_gpu_calibration(request.calibration_file));
}

GpuForecast forecast_gpu(const GpuForecastRequest& request, const GpuCalibration& calibration) {
  if (request.model.spec.batch < 1)
    throw InputError("--batch must be a positive integer, got " + std::to_string(request.model.spec.batch));
  if (request.epoch_samples < 0) throw InputError("--epoch-samples must be positive");
  DNNCAST_ASSERT(!request.gpu.name.empty());  // resolved where the request was made
  const hardware::GpuSpec& gpu = request.gpu;
  // Several GPUs: the graph of one micro-batch of one data-parallel replica.
  const Graph graph = request.model.build_at_batch(micro_batch_of(request));
  GpuForecast result;
  result.notes = graph.notes;
  result.model = request.model.name;
  result.graph = graph.name;
  result.device = gpu.name;
  result.device_name = gpu.full_name;
  result.batch = request.model.spec.batch;
  const TensorShape& input = graph.nodes().front().shape;
  for (int dim = 1; dim < input.rank(); ++dim) result.input += (dim > 1 ? "x" : "") + std::to_string(input[dim]);
  result.optimizer = request.optimizer;
  result.precision = request.precision;
  result.framework = request.framework;
  if (request.precision == GpuPrecision::Tf32 && !gpu.tf32_tensor_tflops) {
    const bool has_tf32 =
        gpu.vendor == "nvidia" && (gpu.architecture == "Ampere" || gpu.architecture == "Ada Lovelace" ||
                                   gpu.architecture == "Hopper" || gpu.architecture == "Blackwell");
    result.notes.push_back(has_tf32 ? "the catalogue has no tf32_tensor_tflops for " + gpu.name + " (an " +
                                          gpu.architecture +
                                          " GPU has TF32 tensor cores): forecast at fp32, which overstates the time; "
                                          "give its peak with --catalogue"
                                    : gpu.name + " has no TF32 tensor cores: forecast at fp32");
  }
  result.phase = request.phase;
  const GpuKernelModel* kernels = shipped_kernel_model();
  if (!kernels && request.precision == GpuPrecision::Fp32)
    result.notes.push_back("no per-kernel model in data/hardware/gpu_kernels: timed by the calibrated curves");
  const GpuKernelModel* half_kernels = shipped_half_kernel_model();
  if (request.parallel.gpus() > 1) {
    forecast_parallel(request, calibration, graph, result);
    return result;
  }
  const GpuWork work = gpu_work(graph, request.precision, request.optimizer, request.phase);
  const GpuTiming timing =
      time_on_gpu(work, gpu, request.precision, request.framework, calibration, kernels, half_kernels);
  if (timing.per_kernel && !times_per_kernel(gpu, request.precision))
    result.notes.push_back(
        std::string("timed per kernel at ") + name(request.precision) +
        " by the half-precision model learned from Vidur's measured fp16 kernels of an A40 (docs/GPU.md)" +
        (request.precision == GpuPrecision::Tf32 ? "; TF32 GEMMs assumed to reach the same share of the TF32 peak "
                                                   "(no public TF32 kernel row)"
                                                 : ""));
  result.time_model = timing.per_kernel ? "per-kernel" : "calibrated curves";
  result.time_ms = timing.time_ms;
  result.roofline_ms = timing.roofline_ms;
  if (request.grad_accum > 1 && request.phase == GpuPhase::Train) {
    // Gradient accumulation: the micro-batches before the last are forward-backward passes without the step.
    const GpuTiming micro =
        time_on_gpu(gpu_work(graph, request.precision, request.optimizer, GpuPhase::ForwardBackward), gpu,
                    request.precision, request.framework, calibration, kernels, half_kernels);
    result.time_ms += static_cast<double>(request.grad_accum - 1) * micro.time_ms;
    result.roofline_ms += static_cast<double>(request.grad_accum - 1) * micro.roofline_ms;
    result.notes.push_back("gradient accumulation: " + std::to_string(request.grad_accum) +
                           " forward-backward passes of batch " + std::to_string(result.batch) +
                           " and one optimizer step per iteration");
  }
  result.time_ms_low = result.time_ms * calibration.interval_low;
  result.time_ms_high = result.time_ms * calibration.interval_high;
  set_epoch(request, result.batch * std::max<int64_t>(request.grad_accum, 1), result);  // samples per optimizer step
  set_basis(calibration, gpu, result);
  if (request.framework == Framework::TensorFlow)
    result.notes.push_back(
        "TensorFlow cannot be profiled here: its forecast rests on the public TensorFlow tables "
        "(one calibrated factor over the PyTorch model)");
  if (gpu.vendor != "nvidia")
    result.notes.push_back(gpu.name +
                           " is not an NVIDIA GPU: the calibration's public data is mostly NVIDIA (CUDA, "
                           "cuDNN); treat this forecast as specs-only");
  forecast_memory_on(request, gpu, graph, result);
  return result;
}

}  // namespace dnncast::gpu
