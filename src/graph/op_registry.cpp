#include "graph/op_registry.h"

#include <string_view>

#include "core/checked.h"
#include "core/error.h"

namespace dnncast {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

void OpView::fail(const std::string& message) const {
  throw InputError("node " + quote(node.name) + " (" + escape_control(node.op) + "): " + message);
}

int64_t OpCost::saved_bytes() const {
  int64_t total = 0;
  for (const SavedTensor& tensor : saved) total = checked_add(total, tensor.bytes);
  return total;
}

OpRegistry::OpRegistry() {
  register_input_ops(*this);
  register_conv_ops(*this);
  register_linear_ops(*this);
  register_norm_ops(*this);
  register_activation_ops(*this);
  register_pool_ops(*this);
  register_elementwise_ops(*this);
  register_shape_ops(*this);
  register_attention_ops(*this);
  register_loss_ops(*this);
  register_moe_ops(*this);
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry;
  return registry;
}

void OpRegistry::add(OpDef def) {
  DNNCAST_ASSERT(!def.name.empty() && def.shape != nullptr && def.cost != nullptr);
  DNNCAST_ASSERT(defs_.count(def.name) == 0);
  std::string key = def.name;
  auto added = defs_.emplace(std::move(key), std::move(def)).first;
  index_.emplace(added->first, &added->second);  // map nodes never move
}

const OpDef& OpRegistry::get(const std::string& name) const {
  auto found = index_.find(name);
  if (found != index_.end()) return *found->second;
  std::string known;
  for (const auto& entry : defs_) known += (known.empty() ? "" : ", ") + entry.first;
  throw InputError("unknown op " + quote(name) + " (known ops: " + known + ")");
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& entry : defs_) result.push_back(entry.first);
  return result;
}

OpView view_of(const Graph& graph, int node_index) {
  const Node& node = graph.node(node_index);
  OpView view{node, {}};
  view.inputs.reserve(node.inputs.size());
  for (int input : node.inputs) view.inputs.push_back(&graph.node(input));
  return view;
}

OpCost node_cost(const Graph& graph, int node_index) {
  if (const OpCost* known = graph.inferred_cost(node_index)) return *known;
  const OpView view = view_of(graph, node_index);
  return node_cost(OpRegistry::instance().get(view.node.op), view);
}

const OpCost& node_cost(const Graph& graph, int node_index, OpCost& computed) {
  if (const OpCost* known = graph.inferred_cost(node_index)) return *known;
  const OpView view = view_of(graph, node_index);
  computed = node_cost(OpRegistry::instance().get(view.node.op), view);
  return computed;
}

void count_frozen(const OpDef& def, const Node& node, OpCost& cost) {
  if (cost.params <= 0 || !node.frozen()) return;
  cost.frozen_params = cost.params;
  if (def.category == "linear"sv) cost.flops_bwd = checked_mul(2, cost.macs);
  if (def.name == "Embedding"sv) cost.flops_bwd = 0;  // token ids take no gradient
}

OpCost node_cost(const OpDef& def, const OpView& view) {
  try {
    OpCost cost = def.cost(view);
    count_frozen(def, view.node, cost);
    return cost;
  } catch (const ArithmeticOverflow& error) {
    view.fail(std::string("cost arithmetic: ") + error.what());
  }
}

int64_t trainable_parameter_count(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) {
    const OpCost cost = node_cost(graph, index);
    total = checked_add(total, cost.params - cost.frozen_params);
  }
  return total;
}

std::string node_kind(const Graph& graph, int node_index) {
  OpView view = view_of(graph, node_index);
  const OpDef& def = OpRegistry::instance().get(view.node.op);
  return def.kind ? def.kind(view) : def.name;
}

}  // namespace dnncast
