#include "features/layer_features.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "graph/op_registry.h"
#include "hardware/cpu_conv.h"

namespace dnncast::features {

namespace {

// Column order of a layer row. Append-only within one kFeatureVersion.
enum LayerColumn {
  kKind,  // kind_index(); op_kinds().size() for the optimizer row
  kBatch,
  kThreads,
  kFlopsFwd,  // at the batch
  kFlopsBwd,
  kBytesIn,
  kBytesOut,
  kParams,
  kWeightTraffic,  // weight bytes x batch: what a per-sample GEMM loop reads
  kImplFwd,        // convolution implementation per pass: 0 none, 1 slow, 2 gemm, 3 jit
  kImplBwdData,
  kImplBwdWeight,
  kInChannels,
  kOutChannels,
  kKernel,
  kStride,
  kGroups,
  kOutPositions,  // per sample
  kInPositions,
  kGemmRows,  // batch x output positions: the M of the forward GEMM
  kInputs,
  kOptimizerState,  // values of optimizer state per parameter (sgd 1, adam 2)
  kColumns
};

const char* const kColumnNames[kColumns] = {
    "kind",         "batch",        "threads",        "flops_fwd",      "flops_bwd",     "bytes_in",
    "bytes_out",    "params",       "weight_traffic", "impl_fwd",       "impl_bwd_data", "impl_bwd_weight",
    "in_channels",  "out_channels", "kernel",         "stride",         "groups",        "out_positions",
    "in_positions", "gemm_rows",    "inputs",         "optimizer_state"};

double per_sample(int64_t value, double batch) { return static_cast<double>(value) / batch; }

}  // namespace

const std::vector<std::string>& layer_feature_names() {
  static const std::vector<std::string> names(std::begin(kColumnNames), std::end(kColumnNames));
  return names;
}

size_t layer_feature_count() { return kColumns; }

LayerSites layer_sites(const Graph& graph) {
  std::vector<int> input_nodes = graph.inputs();
  if (input_nodes.empty()) throw InputError("graph " + quote(graph.name) + " has no Input node to featurize");
  const TensorShape& input_shape = graph.node(input_nodes.front()).shape;
  if (input_shape.rank() < 1 || input_shape[0] < 1)
    throw InputError("graph " + quote(graph.name) + ": input shape " + input_shape.to_string() +
                     " has no batch dimension");
  const double batch = static_cast<double>(input_shape[0]);
  const OpRegistry& registry = OpRegistry::instance();

  LayerSites sites;
  sites.nodes.reserve(static_cast<size_t>(graph.size()));
  std::vector<char> needs_grad(static_cast<size_t>(graph.size()), 0);
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    OpView view = view_of(graph, index);
    const OpDef& def = registry.get(node.op);
    OpCost cost = node_cost(def, view);  // frozen nodes: no weight-gradient FLOPs
    bool inputs_need_grad = false;
    for (int producer : node.inputs) inputs_need_grad = inputs_need_grad || needs_grad[static_cast<size_t>(producer)];
    needs_grad[static_cast<size_t>(index)] = inputs_need_grad || cost.params > cost.frozen_params;
    sites.params += static_cast<double>(cost.params);
    if (node.op == "Input") continue;

    LayerSite site;
    site.node = node.name;
    site.op = node.op;
    site.kind = kind_index(def.feature_kind_of(view), def.category);
    site.flops_fwd = per_sample(cost.flops_fwd, batch);
    site.flops_bwd = per_sample(cost.flops_bwd, batch);
    site.bytes_out = per_sample(node.shape.numel() * dtype_bytes(node.dtype), batch);
    for (const Node* producer : view.inputs)
      site.bytes_in += per_sample(producer->shape.numel() * dtype_bytes(producer->dtype), batch);
    site.params = static_cast<double>(cost.params);
    site.weight_bytes = static_cast<double>(cost.params * dtype_bytes(node.dtype));
    site.inputs = static_cast<int>(node.inputs.size());
    if (node.op == "Conv2d" && !node.inputs.empty() && node.shape.rank() == 4 &&
        graph.node(node.inputs[0]).shape.rank() == 4) {
      site.conv = true;
      site.conv_site = conv_site_of(graph, index, cost, inputs_need_grad);  // costed once
      const hardware::ConvShape& shape = site.conv_site.shape;
      site.in_channels = static_cast<double>(shape.in_channels);
      site.out_channels = static_cast<double>(shape.out_channels);
      site.kernel = static_cast<double>(shape.kernel_h * shape.kernel_w);
      site.stride = static_cast<double>(std::max(shape.stride_h, shape.stride_w));
      site.groups = static_cast<double>(shape.groups);
      site.out_positions = static_cast<double>(shape.out_h * shape.out_w);
      site.in_positions = static_cast<double>(shape.in_h * shape.in_w);
    } else if (cost.params > 0 && node.shape.rank() >= 2 && !view.inputs.empty() && view.inputs[0]->shape.rank() >= 2) {
      // Linear-like: features in and out along the last dimension, positions along the rest.
      const TensorShape& in = view.inputs[0]->shape;
      site.in_channels = static_cast<double>(in.dims.back());
      site.out_channels = static_cast<double>(node.shape.dims.back());
      site.kernel = 1;
      site.stride = 1;
      site.groups = 1;
      site.out_positions = per_sample(node.shape.numel(), batch) / std::max(1.0, site.out_channels);
      site.in_positions = per_sample(in.numel(), batch) / std::max(1.0, site.in_channels);
    } else if (node.shape.rank() == 4) {
      site.in_channels = static_cast<double>(view.inputs.empty()                 ? 0
                                             : view.inputs[0]->shape.rank() == 4 ? view.inputs[0]->shape[1]
                                                                                 : 0);
      site.out_channels = static_cast<double>(node.shape[1]);
      site.out_positions = static_cast<double>(node.shape[2] * node.shape[3]);
      if (!view.inputs.empty() && view.inputs[0]->shape.rank() == 4)
        site.in_positions = static_cast<double>(view.inputs[0]->shape[2] * view.inputs[0]->shape[3]);
    }
    sites.nodes.push_back(std::move(site));
  }
  return sites;
}

void layer_rows(const LayerSites& sites, const TrainingConfig& config, bool gpu, std::vector<float>& rows,
                hardware::CpuIsa isa) {
  HardwareFeatures hardware;
  hardware.gpu = gpu;
  hardware.isa = isa;
  if (config.batch < 1) throw InputError("batch must be at least 1, got " + std::to_string(config.batch));
  if (config.threads < 1) throw InputError("threads must be at least 1, got " + std::to_string(config.threads));
  const double batch = static_cast<double>(config.batch);
  const double threads = static_cast<double>(config.threads);
  const double state = optimizer_state_per_param(config.optimizer);
  rows.assign((sites.nodes.size() + 1) * kColumns, 0.0f);
  float* row = rows.data();
  for (const LayerSite& site : sites.nodes) {
    row[kKind] = static_cast<float>(site.kind);
    row[kBatch] = static_cast<float>(batch);
    row[kThreads] = static_cast<float>(threads);
    row[kFlopsFwd] = static_cast<float>(site.flops_fwd * batch);
    row[kFlopsBwd] = static_cast<float>(site.flops_bwd * batch);
    row[kBytesIn] = static_cast<float>(site.bytes_in * batch);
    row[kBytesOut] = static_cast<float>(site.bytes_out * batch);
    row[kParams] = static_cast<float>(site.params);
    row[kWeightTraffic] = static_cast<float>(site.weight_bytes * batch);
    if (site.conv) {
      std::array<hardware::ConvImpl, 3> impls = conv_impls(site.conv_site, config, hardware);
      row[kImplFwd] = 1.0f + static_cast<float>(impls[0]);
      row[kImplBwdData] = 1.0f + static_cast<float>(impls[1]);
      row[kImplBwdWeight] = 1.0f + static_cast<float>(impls[2]);
    }
    row[kInChannels] = static_cast<float>(site.in_channels);
    row[kOutChannels] = static_cast<float>(site.out_channels);
    row[kKernel] = static_cast<float>(site.kernel);
    row[kStride] = static_cast<float>(site.stride);
    row[kGroups] = static_cast<float>(site.groups);
    row[kOutPositions] = static_cast<float>(site.out_positions);
    row[kInPositions] = static_cast<float>(site.in_positions);
    row[kGemmRows] = static_cast<float>(site.out_positions * batch);
    row[kInputs] = static_cast<float>(site.inputs);
    row[kOptimizerState] = static_cast<float>(state);
    row += kColumns;
  }
  // The optimizer row: its work is the parameters (and their state), whatever the batch.
  row[kKind] = static_cast<float>(op_kinds().size());
  row[kBatch] = static_cast<float>(batch);
  row[kThreads] = static_cast<float>(threads);
  row[kParams] = static_cast<float>(sites.params);
  row[kWeightTraffic] = static_cast<float>(sites.params * 4.0 * (2.0 + state));
  row[kOptimizerState] = static_cast<float>(state);
}

}  // namespace dnncast::features
