// Per-layer costs of a graph (forecast.h): output shapes, parameters, MACs, FLOPs, activation
// bytes and bytes kept for backward, with totals.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/text.h"
#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"
#include "gpu/kernel_model.h"
#include "graph/checkpoint.h"
#include "graph/op_registry.h"

namespace dnncast::forecast {

namespace {

LayerRow layer_row(const Graph& graph, int index, const OpCost& cost) {
  const Node& node = graph.node(index);
  LayerRow row;
  row.name = node.name;
  row.op = node.op;
  row.kind = node_kind(graph, index);
  if (node.has_attr("onnx_op"))  // an unsupported ONNX op imported as elementwise (--allow-unknown)
    row.kind = "unknown:" + node.attr_str("onnx_op", "");
  row.shape = node.shape;
  row.params = cost.params;
  row.param_bytes = cost.params * dtype_bytes(node.dtype);
  row.buffers = cost.buffers;
  row.macs = cost.macs;
  row.flops_fwd = cost.flops_fwd;
  row.flops_bwd = cost.flops_bwd;
  row.activation_bytes = node.shape.numel() * dtype_bytes(node.dtype);
  row.saved_bytes = cost.saved_bytes();
  return row;
}

void add_to_total(const LayerRow& row, LayerRow& total) {
  total.params += row.params;
  total.param_bytes += row.param_bytes;
  total.buffers += row.buffers;
  total.macs += row.macs;
  total.flops_fwd += row.flops_fwd;
  total.flops_bwd += row.flops_bwd;
  total.activation_bytes += row.activation_bytes;
  total.saved_bytes += row.saved_bytes;
}

// The parameters a token meets (Inspection::active_params): each mixture-of-experts block's experts (the nodes under
// BLOCK.experts., adapters included) count top_k / experts of their parameters, as the block's router
// (BLOCK.routing_weights, models/moe.h) picks top_k of them; everything else counts whole.
int64_t active_parameters(const Graph& graph, const std::vector<LayerRow>& rows, int64_t total) {
  std::map<std::string, std::pair<int64_t, int64_t>> routers;  // block -> top_k, experts
  for (const Node& node : graph.nodes())
    if (node.op == "TopKRouting") {
      const std::string block = node.name.substr(0, node.name.size() - std::string("routing_weights").size());
      routers[block] = {node.attr_int("top_k"), graph.node(node.inputs[0]).shape.dims.back()};
    }
  if (routers.empty()) return total;
  std::map<std::string, int64_t> expert_params;  // block -> its experts' parameters
  for (const LayerRow& row : rows) {
    const size_t at = row.name.find(".experts.");
    if (at != std::string::npos && row.params > 0) expert_params[row.name.substr(0, at + 1)] += row.params;
  }
  int64_t active = total;
  for (const auto& [block, params] : expert_params) {
    auto router = routers.find(block);
    if (router == routers.end()) continue;
    const auto [top_k, experts] = router->second;
    active -= params - params / experts * top_k;
  }
  return active;
}

}  // namespace

Inspection inspect(const Graph& graph) {
  Inspection inspection;
  inspection.model = graph.name;
  inspection.family = graph.family;
  inspection.hash = graph.architecture_hash();
  inspection.layer_count = graph.size();
  inspection.import_notes = graph.notes;
  std::vector<int> inputs = graph.inputs();
  if (!inputs.empty()) {  // the first Input node's shape without its batch: the "input" of a configuration
    const std::vector<int64_t>& dims = graph.node(inputs[0]).shape.dims;
    inspection.batch = dims.empty() ? 0 : dims[0];
    inspection.input.assign(dims.begin() + (dims.empty() ? 0 : 1), dims.end());
  }
  std::set<int> saved_outputs;  // nodes whose output some op keeps for backward
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    OpCost cost = node_cost(graph, index);
    for (const SavedTensor& saved : cost.saved) {
      if (saved.kind == SavedTensor::Kind::Extra) {
        inspection.saved_bytes_distinct += saved.bytes;
      } else {
        int owner = saved.kind == SavedTensor::Kind::Output ? index : node.inputs.at(static_cast<size_t>(saved.index));
        if (saved_outputs.insert(owner).second) inspection.saved_bytes_distinct += saved.bytes;
      }
    }
    LayerRow row = layer_row(graph, index, cost);
    add_to_total(row, inspection.total);
    inspection.layers.push_back(std::move(row));
  }
  inspection.active_params = active_parameters(graph, inspection.layers, inspection.total.params);
  return inspection;
}

Inspection inspect(const Graph& graph, const ForecastDevice& on, bool training) {
  Inspection inspection = inspect(graph);
  if (!on.gpu) return inspection;
  const hardware::GpuSpec& gpu = *on.gpu;
  const gpu::GpuKernelModel* model = gpu::shipped_kernel_model();
  if (!model) throw InputError("no per-kernel GPU model (data/hardware/gpu_kernels): layer times on a GPU need it");
  const gpu::KernelDevice device = gpu::kernel_device(gpu);
  const double launch_s = gpu::load_gpu_calibration().kernel_launch_us * 1e-6;
  auto kernel_ms = [&](const gpu::KernelShape& kernel) {
    return 1e3 * std::max(model->seconds(kernel, device), launch_s);
  };
  auto milliseconds = [&](const std::vector<gpu::KernelShape>& kernels) {
    double ms = 0;
    for (const gpu::KernelShape& kernel : kernels) ms += kernel_ms(kernel);
    return ms;
  };
  inspection.gpu = gpu.name;
  // As predict lists them (gpu_work): no backward kernel where no gradient reaches, autograd's gradient sums.
  std::vector<char> requires_grad(static_cast<size_t>(graph.size()), 0);
  std::vector<std::optional<OpCost>> costs(static_cast<size_t>(graph.size()));  // none for an input
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    if (OpRegistry::instance().get(node.op).category == "input") continue;
    const OpCost& cost = costs[static_cast<size_t>(index)].emplace(node_cost(graph, index));
    requires_grad[static_cast<size_t>(index)] = gpu::requires_gradient(node, cost, requires_grad) ? 1 : 0;
  }
  const std::vector<std::vector<double>> sums = gpu::gradient_sums(graph, requires_grad);
  for (int index = 0; index < graph.size(); ++index) {
    gpu::NodeKernels kernels;
    if (const std::optional<OpCost>& cost = costs[static_cast<size_t>(index)])
      kernels = gpu::node_kernels(graph, index, *cost, gpu::NodePart::Whole, 1, training);
    if (!training || requires_grad[static_cast<size_t>(index)] == 0) kernels.backward.clear();
    if (training)
      for (double elements : sums[static_cast<size_t>(index)])
        kernels.backward.push_back(gpu::gradient_sum_kernel(elements));
    LayerRow& row = inspection.layers[static_cast<size_t>(index)];
    row.gpu_forward_ms = milliseconds(kernels.forward);
    // A checkpointed block's layer runs its forward once more in the backward pass, as predict times it (gpu_work).
    if (training && checkpoint_block(graph.node(index)) >= 0) row.gpu_recompute_ms = row.gpu_forward_ms;
    row.gpu_backward_ms = milliseconds(kernels.backward) + row.gpu_recompute_ms;
    row.gpu_kind = gpu::node_time_kind(graph, index);
    for (const auto& [shapes, list] : {std::pair{&kernels.forward, &row.gpu_forward_kernels},
                                       std::pair{&kernels.backward, &row.gpu_backward_kernels}})
      for (const gpu::KernelShape& kernel : *shapes)
        list->push_back({gpu::name(kernel.family), kernel.flops, kernel.bytes, kernel_ms(kernel)});
    if (!row.gpu_kind.empty()) {
      std::array<double, 2>& by_kind = inspection.gpu_by_kind[row.gpu_kind];
      by_kind[0] += row.gpu_forward_ms;
      by_kind[1] += row.gpu_backward_ms;
    }
    inspection.total.gpu_forward_ms += row.gpu_forward_ms;
    inspection.total.gpu_backward_ms += row.gpu_backward_ms;
    inspection.total.gpu_recompute_ms += row.gpu_recompute_ms;
  }
  return inspection;
}

}  // namespace dnncast::forecast
