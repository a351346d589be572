#include "features/featurizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast::features {

namespace {

// Version 1 of the kind list. Order is part of the feature version. Every op of the registry
// counts under one: its OpDef's feature kind (OpDef::feature_kind_of: a finer kind, a declared
// kind such as "Permute" for Transpose, or its own name), checked by op_completeness_test. A new
// kind is a new feature version; a new op of an existing kind declares that kind and touches
// nothing here. Names no op registers (kinds from elsewhere) fall to a category or "Other".
const std::vector<const char*>& kind_specs() {
  static const std::vector<const char*> kinds{
      "Input",
      "Conv2d",
      "DepthwiseConv2d",
      "GroupedConv2d",
      "ConvTranspose2d",
      "Linear",
      "MatMul",
      "BatchNorm2d",
      "LayerNorm",
      "GroupNorm",
      "ReLU",
      "ReLU6",
      "GELU",
      "SiLU",
      "Sigmoid",
      "Tanh",
      "Hardswish",
      "Hardsigmoid",
      "MaxPool2d",
      "AvgPool2d",
      "AdaptiveAvgPool2d",
      "Add",
      "Mul",
      "Concat",
      "Flatten",
      "Reshape",
      "Permute",
      "Slice",
      "Dropout",
      "Softmax",
      "Embedding",
      "Attention",
      "ChannelShuffle",
      "Loss",
      "Other",
  };
  return kinds;
}

struct KindTables {
  std::vector<std::string> kinds;
  std::unordered_map<std::string, int> by_name;
};

const KindTables& kind_tables() {
  static const KindTables tables = [] {
    KindTables result;
    for (const char* kind : kind_specs()) {
      DNNCAST_ASSERT(result.by_name.emplace(kind, static_cast<int>(result.kinds.size())).second);
      result.kinds.push_back(kind);
    }
    return result;
  }();
  return tables;
}

// Per-kind block: these quantities, in this order.
enum KindField { kCount, kMacs, kFlops, kParams, kActBytes, kSavedBytes, kKindFields };
const char* const kKindFieldNames[kKindFields] = {"count", "macs", "flops", "params", "act_bytes", "saved_bytes"};

// Column positions of everything after the structural matrix.
struct Layout {
  std::vector<std::string> names;
  std::unordered_map<std::string, int> index;
  int kinds = 0;
  int kind_block = 0;  // first per-kind column
  int conn_block = 0;  // first connection column
  int add(const std::string& name) {
    int column = static_cast<int>(names.size());
    DNNCAST_ASSERT(index.emplace(name, column).second);
    names.push_back(name);
    return column;
  }
  int at(const std::string& name) const {
    auto found = index.find(name);
    DNNCAST_ASSERT(found != index.end());
    return found->second;
  }
};

// Optimizer columns config.opt.<name>, a layout that predictor bundles name: the optimizers of the table
// (core/training_setup.h) in its order, then two columns kept for optimizers dnncast does not parse
// (rmsprop, adagrad: always 0). A new optimizer appended to the table takes the reserved column of its name
// where there is one; any other changes the layout, which is a new feature version (kFeatureVersion).
const std::vector<std::string>& optimizer_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names;
    for (Optimizer optimizer : all_optimizers()) names.push_back(name(optimizer));
    for (const char* reserved : {"rmsprop", "adagrad"})
      if (std::find(names.begin(), names.end(), reserved) == names.end()) names.push_back(reserved);
    return names;
  }();
  return columns;
}

const std::vector<const char*> kTotals{
    "total.nodes", "total.edges", "total.macs", "total.flops_fwd", "total.flops_bwd", "total.flops_train",
    "total.params", "total.param_bytes", "total.buffers", "total.act_bytes", "total.saved_bytes", "total.bytes_read",
    "total.bytes_accessed", "graph.depth", "graph.max_channels", "graph.max_spatial", "graph.max_act_bytes",
    "graph.max_layer_params", "graph.max_fanout", "graph.branch_nodes", "graph.merge_nodes", "input.channels",
    "input.height", "input.width", "input.pixels", "input.seq_len",
    // Per configuration (ConvSite): training FLOPs per thread and calls (passes; per group on the
    // slow path) of convolutions by the implementation that runs them, and the weight bytes oneDNN
    // reorders. Per thread, as est.flops_per_thread: a linear reference on them assumes the
    // convolutions parallelize, and the learner corrects what does not.
    "conv.slow_flops_per_thread", "conv.gemm_flops_per_thread", "conv.jit_flops_per_thread", "conv.slow_calls",
    "conv.gemm_calls", "conv.jit_calls", "conv.mkldnn_weight_bytes"};
const std::vector<const char*> kConfig{"config.batch", "config.threads", "config.precision_bytes",
                                       "config.opt_state_bytes"};
const std::vector<const char*> kHardware{"hw.cores", "hw.gpu", "hw.peak_flops", "hw.mem_bandwidth", "hw.memory_bytes"};
const std::vector<const char*> kDerived{"est.flops_per_thread", "est.compute_s", "est.memory_s",
                                        "est.train_memory_bytes", "log.batch", "log.threads", "log.flops_train",
                                        "log.params", "log.saved_bytes", "log.act_bytes",
                                        // The layer-wise model's forecast of the iteration, ms
                                        // (forecast/layer_model.h); featurize() leaves it 0.
                                        "est.layers_ms"};

const Layout& layout() {
  static const Layout table = [] {
    Layout result;
    const std::vector<std::string>& kinds = kind_tables().kinds;
    result.kinds = static_cast<int>(kinds.size());
    result.kind_block = 0;
    for (const std::string& kind : kinds)
      for (const char* field : kKindFieldNames) result.add("kind." + kind + "." + field);
    result.conn_block = static_cast<int>(result.names.size());
    for (const std::string& from : kinds)
      for (const std::string& to : kinds) result.add("conn." + from + "->" + to);
    for (const char* name : kTotals) result.add(name);
    for (const char* name : kConfig) result.add(name);
    for (const std::string& optimizer : optimizer_columns()) result.add("config.opt." + optimizer);
    result.add("config.opt.other");
    for (const char* name : kHardware) result.add(name);
    for (const char* name : kDerived) result.add(name);
    return result;
  }();
  return table;
}

// Resolved columns, looked up once.
struct Columns {
  int batch, threads, precision_bytes, opt_state_bytes, opt_first, opt_other;
  int hw_cores, hw_gpu, hw_peak, hw_bandwidth, hw_memory;
  int est_flops_per_thread, est_compute_s, est_memory_s, est_train_memory, log_batch, log_threads, log_flops,
      log_params, log_saved, log_act;
  int total_bytes_accessed, total_act_bytes, total_param_bytes, total_flops_train, total_saved_bytes, total_params;
  int conv_slow_flops, conv_gemm_flops, conv_jit_flops, conv_slow_calls, conv_gemm_calls, conv_jit_calls,
      conv_weight_bytes;
};

const Columns& columns() {
  static const Columns c = [] {
    const Layout& l = layout();
    Columns result{};
    result.batch = l.at("config.batch");
    result.threads = l.at("config.threads");
    result.precision_bytes = l.at("config.precision_bytes");
    result.opt_state_bytes = l.at("config.opt_state_bytes");
    result.opt_first = l.at("config.opt.sgd");
    result.opt_other = l.at("config.opt.other");
    result.hw_cores = l.at("hw.cores");
    result.hw_gpu = l.at("hw.gpu");
    result.hw_peak = l.at("hw.peak_flops");
    result.hw_bandwidth = l.at("hw.mem_bandwidth");
    result.hw_memory = l.at("hw.memory_bytes");
    result.est_flops_per_thread = l.at("est.flops_per_thread");
    result.est_compute_s = l.at("est.compute_s");
    result.est_memory_s = l.at("est.memory_s");
    result.est_train_memory = l.at("est.train_memory_bytes");
    result.log_batch = l.at("log.batch");
    result.log_threads = l.at("log.threads");
    result.log_flops = l.at("log.flops_train");
    result.log_params = l.at("log.params");
    result.log_saved = l.at("log.saved_bytes");
    result.log_act = l.at("log.act_bytes");
    result.total_bytes_accessed = l.at("total.bytes_accessed");
    result.total_act_bytes = l.at("total.act_bytes");
    result.total_param_bytes = l.at("total.param_bytes");
    result.total_flops_train = l.at("total.flops_train");
    result.total_saved_bytes = l.at("total.saved_bytes");
    result.total_params = l.at("total.params");
    result.conv_slow_flops = l.at("conv.slow_flops_per_thread");
    result.conv_gemm_flops = l.at("conv.gemm_flops_per_thread");
    result.conv_jit_flops = l.at("conv.jit_flops_per_thread");
    result.conv_slow_calls = l.at("conv.slow_calls");
    result.conv_gemm_calls = l.at("conv.gemm_calls");
    result.conv_jit_calls = l.at("conv.jit_calls");
    result.conv_weight_bytes = l.at("conv.mkldnn_weight_bytes");
    return result;
  }();
  return c;
}

double log1p_safe(double value) { return std::log1p(std::max(0.0, value)); }

}  // namespace

const std::vector<std::string>& op_kinds() { return kind_tables().kinds; }

bool has_kind_entry(const std::string& op) {
  const OpRegistry& registry = OpRegistry::instance();
  std::string kind = op;
  if (registry.has(op) && !registry.get(op).feature_kind.empty()) kind = registry.get(op).feature_kind;
  return kind_tables().by_name.count(kind) != 0;
}

int kind_index(const std::string& kind, const std::string& category) {
  const KindTables& tables = kind_tables();
  auto found = tables.by_name.find(kind);
  if (found != tables.by_name.end()) return found->second;
  // A registered op is always in the table: a missing one is a bug, not "Other".
  DNNCAST_ASSERT(!OpRegistry::instance().has(kind));
  if (category == "loss") return tables.by_name.at("Loss");
  if (category == "attention") return tables.by_name.at("Attention");
  return tables.by_name.at("Other");
}

const std::vector<std::string>& feature_names() { return layout().names; }
size_t feature_count() { return layout().names.size(); }
int feature_index(const std::string& name) {
  auto found = layout().index.find(name);
  return found == layout().index.end() ? -1 : found->second;
}

namespace {

// oneDNN's kernels for a convolution when it runs one (the choice does not depend on the batch), for the AVX-512
// and the AVX2 dispatch, remembered per geometry: deciding builds the whole allocation recipe, and a network repeats
// its few geometries many times (resnet50: 53 convolutions, 20 geometries). One lookup for both ISAs.
struct MkldnnImpls {
  std::array<hardware::ConvImpl, 3> avx512, avx2;
};

MkldnnImpls mkldnn_impls(const hardware::ConvShape& shape) {
  using Key = std::array<int64_t, 14>;
  struct KeyHash {
    size_t operator()(const Key& key) const {
      uint64_t hash = 1469598103934665603ull;  // FNV-1a over the fields
      for (int64_t field : key) hash = (hash ^ static_cast<uint64_t>(field)) * 1099511628211ull;
      return static_cast<size_t>(hash);
    }
  };
  static std::mutex mutex;
  static std::unordered_map<Key, MkldnnImpls, KeyHash> known;
  const Key key{shape.in_channels, shape.in_h,       shape.in_w,     shape.out_channels, shape.kernel_h,
                shape.kernel_w,    shape.stride_h,   shape.stride_w, shape.pad_h,        shape.pad_w,
                shape.dilation_h,  shape.dilation_w, shape.groups,   shape.bias ? 1 : 0};
  std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(key);
  if (found != known.end()) return found->second;
  hardware::ConvShape at_sixteen = shape;
  at_sixteen.batch = 16;
  MkldnnImpls impls{hardware::cpu_conv_impls(at_sixteen, 1, hardware::CpuIsa::Avx512Core),
                    hardware::cpu_conv_impls(at_sixteen, 1, hardware::CpuIsa::Avx2)};
  return known.emplace(key, impls).first->second;
}

// The ConvSite of a Conv2d node (`cost` its op cost at the graph's batch).
ConvSite conv_site(const Graph& graph, const Node& node, const OpCost& cost, bool input_grad) {
  ConvSite site;
  site.shape = hardware::conv_shape(graph, node);
  const double batch = static_cast<double>(std::max<int64_t>(site.shape.batch, 1));
  site.flops_per_sample = static_cast<double>(cost.flops_fwd) / batch;
  site.weight_bytes = static_cast<double>(cost.params * dtype_bytes(node.dtype));
  site.input_grad = input_grad;
  const MkldnnImpls impls = mkldnn_impls(site.shape);
  site.mkldnn = impls.avx512;
  site.mkldnn_avx2 = impls.avx2;
  site.shape.batch = 1;
  return site;
}

// Every graph-dependent column at the graph's own batch (nothing divided yet); with `sites`, also
// the graph's convolutions.
std::vector<double> accumulate(const Graph& graph, const TensorShape& input_shape,
                               std::vector<ConvSite>* sites = nullptr) {
  const Layout& l = layout();
  const OpRegistry& registry = OpRegistry::instance();
  std::vector<double> values(l.names.size(), 0.0);

  int nodes = graph.size();
  std::vector<int> kind_of(static_cast<size_t>(nodes));
  std::vector<int> depth(static_cast<size_t>(nodes), 1);
  std::vector<int> fanout(static_cast<size_t>(nodes), 0);
  double max_channels = 0, max_spatial = 0, max_act_bytes = 0, max_layer_params = 0;
  double edges = 0, merge_nodes = 0;
  double macs = 0, flops_fwd = 0, flops_bwd = 0, params = 0, param_bytes = 0, buffers = 0, act_bytes = 0,
         saved_bytes = 0, act_read = 0;
  std::vector<char> needs_grad(sites ? static_cast<size_t>(nodes) : 0, 0);  // the output needs a gradient
  for (int node_index = 0; node_index < nodes; ++node_index) {
    const Node& node = graph.node(node_index);
    OpView view = view_of(graph, node_index);
    const OpDef& def = registry.get(node.op);
    OpCost cost = node_cost(def, view);  // frozen nodes: no weight-gradient FLOPs
    if (sites) {
      bool inputs_need_grad = false;
      for (int producer : node.inputs) inputs_need_grad = inputs_need_grad || needs_grad[static_cast<size_t>(producer)];
      needs_grad[static_cast<size_t>(node_index)] = inputs_need_grad || cost.params > cost.frozen_params;
      if (node.op == "Conv2d" && !node.inputs.empty() && node.shape.rank() == 4 &&
          graph.node(node.inputs[0]).shape.rank() == 4)
        sites->push_back(conv_site(graph, node, cost, inputs_need_grad));
    }
    int kind_column = kind_index(def.feature_kind_of(view), def.category);
    kind_of[static_cast<size_t>(node_index)] = kind_column;

    double out_bytes = static_cast<double>(node.shape.numel() * dtype_bytes(node.dtype));
    double saved = static_cast<double>(cost.saved_bytes());
    double* block = &values[static_cast<size_t>(l.kind_block + kind_column * kKindFields)];
    block[kCount] += 1;
    block[kMacs] += static_cast<double>(cost.macs);
    block[kFlops] += static_cast<double>(cost.flops_fwd + cost.flops_bwd);
    block[kParams] += static_cast<double>(cost.params);
    block[kActBytes] += out_bytes;
    block[kSavedBytes] += saved;

    macs += static_cast<double>(cost.macs);
    flops_fwd += static_cast<double>(cost.flops_fwd);
    flops_bwd += static_cast<double>(cost.flops_bwd);
    params += static_cast<double>(cost.params);
    param_bytes += static_cast<double>(cost.params * dtype_bytes(node.dtype));
    buffers += static_cast<double>(cost.buffers);
    act_bytes += out_bytes;
    saved_bytes += saved;
    for (const Node* producer : view.inputs)
      act_read += static_cast<double>(producer->shape.numel() * dtype_bytes(producer->dtype));

    for (int producer : node.inputs) {
      values[static_cast<size_t>(l.conn_block + kind_of[static_cast<size_t>(producer)] * l.kinds + kind_column)] += 1;
      depth[static_cast<size_t>(node_index)] =
          std::max(depth[static_cast<size_t>(node_index)], depth[static_cast<size_t>(producer)] + 1);
      ++fanout[static_cast<size_t>(producer)];
      edges += 1;
    }
    if (node.inputs.size() > 1) merge_nodes += 1;
    const TensorShape& shape = node.shape;
    if (shape.rank() == 4) {
      max_channels = std::max(max_channels, static_cast<double>(shape[1]));
      max_spatial = std::max(max_spatial, static_cast<double>(shape[2] * shape[3]));
    } else if (shape.rank() >= 2 && node.dtype != DType::I64) {
      max_channels = std::max(max_channels, static_cast<double>(shape.dims.back()));
    }
    max_act_bytes = std::max(max_act_bytes, out_bytes);
    max_layer_params = std::max(max_layer_params, static_cast<double>(cost.params));
  }

  auto set = [&](const char* name, double value) { values[static_cast<size_t>(l.at(name))] = value; };
  set("total.nodes", nodes);
  set("total.edges", edges);
  set("total.macs", macs);
  set("total.flops_fwd", flops_fwd);
  set("total.flops_bwd", flops_bwd);
  set("total.flops_train", flops_fwd + flops_bwd);
  set("total.params", params);
  set("total.param_bytes", param_bytes);
  set("total.buffers", buffers);
  set("total.act_bytes", act_bytes);
  set("total.saved_bytes", saved_bytes);
  set("total.bytes_read", act_read + param_bytes);
  set("total.bytes_accessed", act_read + act_bytes + param_bytes);
  set("graph.depth", nodes > 0 ? *std::max_element(depth.begin(), depth.end()) : 0);
  set("graph.max_channels", max_channels);
  set("graph.max_spatial", max_spatial);
  set("graph.max_act_bytes", max_act_bytes);
  set("graph.max_layer_params", max_layer_params);
  set("graph.max_fanout", nodes > 0 ? *std::max_element(fanout.begin(), fanout.end()) : 0);
  set("graph.branch_nodes",
      static_cast<double>(std::count_if(fanout.begin(), fanout.end(), [](int f) { return f > 1; })));
  set("graph.merge_nodes", merge_nodes);
  if (input_shape.rank() == 4) {
    set("input.channels", static_cast<double>(input_shape[1]));
    set("input.height", static_cast<double>(input_shape[2]));
    set("input.width", static_cast<double>(input_shape[3]));
    set("input.pixels", static_cast<double>(input_shape[2] * input_shape[3]));
  } else if (input_shape.rank() >= 2) {
    set("input.seq_len", static_cast<double>(input_shape[1]));
  }
  return values;
}

// The same graph with every Input's batch (first dimension) replaced; false when its shapes do
// not re-infer (a Reshape that spells the batch out, say).
bool rebatch(const Graph& graph, int64_t batch, Graph& out) {
  out = graph;
  for (Node& node : out.mutable_nodes()) {
    if (node.op != "Input") continue;
    std::vector<int64_t> shape = node.attr_ints("shape");
    if (shape.empty()) return false;
    shape[0] = batch;
    node.attrs["shape"] = shape;
  }
  try {
    out.infer_shapes();
  } catch (const InputError&) {
    return false;
  }
  return true;
}

}  // namespace

static const TensorShape& checked_input_shape(const Graph& graph) {
  std::vector<int> input_nodes = graph.inputs();
  if (input_nodes.empty()) throw InputError("graph " + quote(graph.name) + " has no Input node to featurize");
  const TensorShape& input_shape = graph.node(input_nodes.front()).shape;
  if (input_shape.rank() < 1 || input_shape[0] < 1)
    throw InputError("graph " + quote(graph.name) + ": input shape " + input_shape.to_string() +
                     " has no batch dimension");
  return input_shape;
}

std::array<hardware::ConvImpl, 3> conv_impls(const ConvSite& site, const TrainingConfig& config,
                                             const HardwareFeatures& hardware) {
  if (hardware.gpu) return {hardware::ConvImpl::Jit, hardware::ConvImpl::Jit, hardware::ConvImpl::Jit};
  hardware::ConvShape shape = site.shape;
  shape.batch = config.batch;
  if (hardware::cpu_conv_uses_mkldnn(shape, config.threads))
    return hardware::is_avx512(effective_isa(hardware.isa)) ? site.mkldnn : site.mkldnn_avx2;
  return {hardware::ConvImpl::Slow, hardware::ConvImpl::Slow, hardware::ConvImpl::Slow};
}

ConvSite conv_site_of(const Graph& graph, int node_index, bool input_grad) {
  const Node& node = graph.node(node_index);
  OpCost cost = OpRegistry::instance().get(node.op).cost(view_of(graph, node_index));
  return conv_site(graph, node, cost, input_grad);
}

ConvSite conv_site_of(const Graph& graph, int node_index, const OpCost& cost, bool input_grad) {
  return conv_site(graph, graph.node(node_index), cost, input_grad);
}

std::vector<ConvSite> conv_sites(const Graph& graph) {
  std::vector<ConvSite> sites;
  accumulate(graph, checked_input_shape(graph), &sites);
  return sites;
}

GraphFeatures graph_features(const Graph& graph) {
  const Layout& l = layout();
  const TensorShape& input_shape = checked_input_shape(graph);

  GraphFeatures result;
  result.graph_batch = input_shape[0];
  double batch = static_cast<double>(result.graph_batch);
  std::vector<double> at_batch = accumulate(graph, input_shape, &result.convs);
  // Most quantities are proportional to the batch, but not all (BatchNorm keeps per-channel
  // statistics; parameters do not grow): a second point at batch + 1 splits each column into
  // fixed + per-sample exactly for every quantity affine in the batch.
  Graph next;
  if (rebatch(graph, result.graph_batch + 1, next)) {
    std::vector<double> at_next = accumulate(next, input_shape);
    result.per_sample.resize(at_batch.size());
    result.fixed.resize(at_batch.size());
    for (size_t column = 0; column < at_batch.size(); ++column) {
      result.per_sample[column] = at_next[column] - at_batch[column];
      result.fixed[column] = at_batch[column] - batch * result.per_sample[column];
    }
  } else {
    // Counts, parameters and shape maxima stay; the rest is taken as proportional.
    result.fixed = at_batch;
    result.per_sample.assign(at_batch.size(), 0.0);
    for (size_t kind = 0; kind < static_cast<size_t>(l.kinds); ++kind)
      for (int field : {kMacs, kFlops, kActBytes, kSavedBytes}) {
        size_t column = static_cast<size_t>(l.kind_block) + kind * kKindFields + static_cast<size_t>(field);
        result.per_sample[column] = at_batch[column] / batch;
        result.fixed[column] = 0;
      }
    for (const char* name : {"total.macs", "total.flops_fwd", "total.flops_bwd", "total.flops_train", "total.act_bytes",
                             "total.saved_bytes", "graph.max_act_bytes"}) {
      size_t column = static_cast<size_t>(l.at(name));
      result.per_sample[column] = at_batch[column] / batch;
      result.fixed[column] = 0;
    }
    double param_bytes = at_batch[static_cast<size_t>(l.at("total.param_bytes"))];
    for (const char* name : {"total.bytes_read", "total.bytes_accessed"}) {
      size_t column = static_cast<size_t>(l.at(name));
      result.per_sample[column] = (at_batch[column] - param_bytes) / batch;
      result.fixed[column] = param_bytes;
    }
  }
  // Counts and structure never depend on the batch; clear rounding noise in them.
  for (size_t column = static_cast<size_t>(l.conn_block);
       column < static_cast<size_t>(l.conn_block + l.kinds * l.kinds); ++column)
    result.per_sample[column] = 0;

  auto fixed_of = [&](const char* name) { return result.fixed[static_cast<size_t>(l.at(name))]; };
  auto per_sample_of = [&](const char* name) { return result.per_sample[static_cast<size_t>(l.at(name))]; };
  result.flops_train_per_sample = per_sample_of("total.flops_train");
  result.bytes_per_sample = per_sample_of("total.bytes_accessed");
  result.saved_bytes_per_sample = per_sample_of("total.saved_bytes");
  result.saved_bytes_fixed = fixed_of("total.saved_bytes");
  result.param_bytes = fixed_of("total.param_bytes");
  result.params = static_cast<int64_t>(fixed_of("total.params"));
  return result;
}

namespace {

void check_config(const TrainingConfig& config) {
  if (config.batch < 1) throw InputError("batch must be at least 1, got " + std::to_string(config.batch));
  if (config.threads < 1) throw InputError("threads must be at least 1, got " + std::to_string(config.threads));
}

// The conv.* columns of one configuration. A GPU runs every pass on its library's kernels (jit).
void fill_conv(const std::vector<ConvSite>& sites, const TrainingConfig& config, const HardwareFeatures& hardware,
               double* row) {
  const Columns& c = columns();
  double flops[3] = {0, 0, 0}, calls[3] = {0, 0, 0}, weight_bytes = 0;
  const double batch = static_cast<double>(config.batch);
  for (const ConvSite& site : sites) {
    const std::array<hardware::ConvImpl, 3> impls = conv_impls(site, config, hardware);
    for (int pass = 0; pass < 3; ++pass) {
      if (pass == 1 && !site.input_grad) continue;
      const hardware::ConvImpl impl = impls[static_cast<size_t>(pass)];
      auto index = static_cast<size_t>(impl);
      flops[index] += site.flops_per_sample * batch;
      calls[index] += impl == hardware::ConvImpl::Slow ? static_cast<double>(site.shape.groups) : 1.0;
      if (impl != hardware::ConvImpl::Slow) weight_bytes += site.weight_bytes;
    }
  }
  const double threads = static_cast<double>(config.threads);
  row[c.conv_slow_flops] = flops[0] / threads;
  row[c.conv_gemm_flops] = flops[1] / threads;
  row[c.conv_jit_flops] = flops[2] / threads;
  row[c.conv_slow_calls] = calls[0];
  row[c.conv_gemm_calls] = calls[1];
  row[c.conv_jit_calls] = calls[2];
  row[c.conv_weight_bytes] = weight_bytes;
}

// Configuration, hardware and derived columns; the graph columns of `row` are already at the batch.
void fill_config(const TrainingConfig& config, const HardwareFeatures& hardware, double* row) {
  const Columns& c = columns();
  double batch = static_cast<double>(config.batch);
  double threads = static_cast<double>(config.threads);
  int state = optimizer_state_per_param(config.optimizer);
  double param_bytes = row[c.total_param_bytes];
  row[c.batch] = batch;
  row[c.threads] = threads;
  row[c.precision_bytes] = precision_bytes(config.precision);
  row[c.opt_state_bytes] = param_bytes * state;
  bool known_optimizer = false;
  for (size_t optimizer = 0; optimizer < optimizer_columns().size(); ++optimizer) {
    bool match = name(config.optimizer) == optimizer_columns()[optimizer];
    row[c.opt_first + static_cast<int>(optimizer)] = match ? 1.0 : 0.0;
    known_optimizer = known_optimizer || match;
  }
  row[c.opt_other] = known_optimizer ? 0.0 : 1.0;

  row[c.hw_cores] = static_cast<double>(hardware.cores);
  row[c.hw_gpu] = hardware.gpu ? 1.0 : 0.0;
  row[c.hw_peak] = hardware.peak_flops_f32;
  row[c.hw_bandwidth] = hardware.memory_bandwidth_bytes_s;
  row[c.hw_memory] = static_cast<double>(hardware.memory_bytes);

  double flops = row[c.total_flops_train];
  row[c.est_flops_per_thread] = flops / threads;
  double usable_peak = hardware.peak_flops_f32;
  if (!hardware.gpu && hardware.cores > 0)
    usable_peak *= std::min(threads, static_cast<double>(hardware.cores)) / static_cast<double>(hardware.cores);
  row[c.est_compute_s] = usable_peak > 0 ? flops / usable_peak : 0.0;
  row[c.est_memory_s] =
      hardware.memory_bandwidth_bytes_s > 0 ? row[c.total_bytes_accessed] / hardware.memory_bandwidth_bytes_s : 0.0;
  row[c.est_train_memory] = param_bytes * (2.0 + state) + row[c.total_saved_bytes];
  row[c.log_batch] = std::log(batch);
  row[c.log_threads] = std::log(threads);
  row[c.log_flops] = log1p_safe(flops);
  row[c.log_params] = log1p_safe(row[c.total_params]);
  row[c.log_saved] = log1p_safe(row[c.total_saved_bytes]);
  row[c.log_act] = log1p_safe(row[c.total_act_bytes]);
}

}  // namespace

void featurize(const GraphFeatures& graph, const TrainingConfig& config, const HardwareFeatures& hardware,
               double* row) {
  check_config(config);
  size_t count = graph.fixed.size();
  DNNCAST_ASSERT(count == feature_count() && graph.per_sample.size() == count);
  double batch = static_cast<double>(config.batch);
  const double* fixed = graph.fixed.data();
  const double* per_sample = graph.per_sample.data();
  for (size_t column = 0; column < count; ++column) row[column] = fixed[column] + batch * per_sample[column];
  fill_conv(graph.convs, config, hardware, row);
  fill_config(config, hardware, row);
}

std::vector<double> featurize_graph(const Graph& graph, const TrainingConfig& config,
                                    const HardwareFeatures& hardware) {
  check_config(config);
  const TensorShape& input_shape = checked_input_shape(graph);
  if (input_shape[0] != config.batch)
    throw InputError("graph " + quote(graph.name) + " is built at batch " + std::to_string(input_shape[0]) +
                     ", the configuration asks for batch " + std::to_string(config.batch));
  std::vector<ConvSite> sites;
  std::vector<double> row = accumulate(graph, input_shape, &sites);
  fill_conv(sites, config, hardware, row.data());
  fill_config(config, hardware, row.data());
  return row;
}

std::vector<double> featurize(const GraphFeatures& graph, const TrainingConfig& config,
                              const HardwareFeatures& hardware) {
  std::vector<double> row(feature_count());
  featurize(graph, config, hardware, row.data());
  return row;
}

}  // namespace dnncast::features
