#include "graph/graph.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <sstream>
#include <string_view>
#include <unordered_set>

#include "core/checked.h"
#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

std::string where(const Node& node) { return "node " + quote(node.name) + " (" + escape_control(node.op) + ")"; }

const AttrValue& require(const Node& node, const std::string& key) {
  auto found = node.attrs.find(key);
  if (found == node.attrs.end()) throw InputError(where(node) + ": missing attribute " + quote(key));
  return found->second;
}

}  // namespace

int64_t Node::attr_int(const std::string& key) const {
  const AttrValue& value = require(*this, key);
  if (auto integer = std::get_if<int64_t>(&value)) return *integer;
  throw InputError(where(*this) + ": attribute " + quote(key) + " must be an integer");
}

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  auto found = attrs.find(key);  // one lookup: read for every node of every forecast
  if (found == attrs.end()) return fallback;
  if (auto integer = std::get_if<int64_t>(&found->second)) return *integer;
  throw InputError(where(*this) + ": attribute " + quote(key) + " must be an integer");
}

double Node::attr_float(const std::string& key, double fallback) const {
  auto found = attrs.find(key);
  if (found == attrs.end()) return fallback;
  if (auto real = std::get_if<double>(&found->second)) return *real;
  if (auto integer = std::get_if<int64_t>(&found->second)) return static_cast<double>(*integer);
  throw InputError(where(*this) + ": attribute " + quote(key) + " must be a number");
}

std::string Node::attr_str(const std::string& key, const std::string& fallback) const {
  auto found = attrs.find(key);
  if (found == attrs.end()) return fallback;
  if (auto text = std::get_if<std::string>(&found->second)) return *text;
  throw InputError(where(*this) + ": attribute " + quote(key) + " must be a string");
}

std::vector<int64_t> Node::attr_ints(const std::string& key) const {
  const AttrValue& value = require(*this, key);
  if (auto list = std::get_if<std::vector<int64_t>>(&value)) return *list;
  if (auto integer = std::get_if<int64_t>(&value)) return {*integer};
  throw InputError(where(*this) + ": attribute " + quote(key) + " must be a list of integers");
}

std::vector<int64_t> Node::attr_ints(const std::string& key, const std::vector<int64_t>& fallback) const {
  return has_attr(key) ? attr_ints(key) : fallback;
}

int Graph::add(Node node) {
  if (node.name.empty()) throw InputError("a node of op " + quote(node.op) + " has no name");
  if (index_by_name_.count(node.name) != 0) throw InputError("duplicate node name " + quote(node.name));
  for (int input : node.inputs) {
    if (input < 0 || input >= size())
      throw InputError(where(node) + ": input index " + std::to_string(input) + " does not precede it");
  }
  if (size() >= kMaxGraphNodes)
    throw InputError(
        "more than " + std::to_string(kMaxGraphNodes) +
        " nodes in one graph, more than dnncast forecasts (about 1 GB of memory per request at that size)");
  int index = size();
  index_by_name_.emplace(node.name, index);
  nodes_.push_back(std::move(node));
  return index;
}

int Graph::find(const std::string& node_name) const {
  auto found = index_by_name_.find(node_name);
  return found == index_by_name_.end() ? -1 : found->second;
}

Consumers::Consumers(const std::vector<Node>& nodes) : offsets_(nodes.size() + 1, 0) {
  // Counted first, then each node's consumers placed in order of their index.
  for (const Node& node : nodes)
    for (int input : node.inputs) ++offsets_[static_cast<size_t>(input) + 1];
  for (size_t index = 0; index < nodes.size(); ++index) offsets_[index + 1] += offsets_[index];
  list_.resize(offsets_.back());
  std::vector<size_t> next(offsets_.begin(), offsets_.end() - 1);
  for (size_t index = 0; index < nodes.size(); ++index)
    for (int input : nodes[index].inputs) list_[next[static_cast<size_t>(input)]++] = static_cast<int>(index);
}

std::vector<int> Graph::outputs() const {
  std::vector<char> consumed(nodes_.size(), 0);
  for (const Node& node : nodes_)
    for (int input : node.inputs) consumed[static_cast<size_t>(input)] = 1;
  std::vector<int> result;
  for (int index = 0; index < size(); ++index)
    if (!consumed[static_cast<size_t>(index)]) result.push_back(index);
  return result;
}

std::vector<int> Graph::inputs() const {
  std::vector<int> result;
  for (int index = 0; index < size(); ++index)
    if (nodes_[static_cast<size_t>(index)].op == "Input"sv) result.push_back(index);
  return result;
}

void Graph::infer_shapes() {
  for (int index = 0; index < size(); ++index) infer_node(index);
  check_totals();
}

void Graph::check_totals() const {
  // Each node is bounded by infer_node; the sums over the graph must stay in int64 too, so that
  // every consumer (inspect's totals, features, the memory simulator) can add them freely.
  int64_t params = 0, flops = 0, bytes = 0;
  for (int index = 0; index < size(); ++index) {
    OpCost computed;
    const OpCost& cost = node_cost(*this, index, computed);
    try {
      params = checked_add(params, cost.params);
      flops = checked_sum({flops, cost.flops_fwd, cost.flops_bwd});
      bytes = checked_sum({bytes, cost.bytes_read, cost.bytes_written, cost.saved_bytes()});
    } catch (const ArithmeticOverflow&) {
      throw InputError("graph " + quote(name) + ": its total parameters, FLOPs or bytes overflow int64 at " +
                       where(nodes_[static_cast<size_t>(index)]));
    }
    if (params > kMaxTensorElements)
      throw InputError("graph " + quote(name) + ": more than " + std::to_string(kMaxTensorElements) +
                       " parameters in all at " + where(nodes_[static_cast<size_t>(index)]));
  }
}

void Graph::infer_node(int index) {
  const OpRegistry& registry = OpRegistry::instance();
  {
    Node& node = nodes_[static_cast<size_t>(index)];
    if (static_cast<size_t>(index) < cost_known_.size()) cost_known_[static_cast<size_t>(index)] = 0;
    const OpDef* def = nullptr;
    try {
      def = &registry.get(node.op);
    } catch (const InputError& error) {
      throw error.with_context("node " + quote(node.name));
    }
    int count = static_cast<int>(node.inputs.size());
    if (count < def->min_inputs || (def->max_inputs >= 0 && count > def->max_inputs)) {
      std::string expected = def->min_inputs == def->max_inputs
                                 ? std::to_string(def->min_inputs)
                                 : std::to_string(def->min_inputs) + ".." +
                                       (def->max_inputs < 0 ? std::string("any") : std::to_string(def->max_inputs));
      throw InputError(where(node) + ": expected " + expected + " inputs, got " + std::to_string(count));
    }
    for (const std::string& key : def->required_attrs)
      if (!node.has_attr(key)) throw InputError(where(node) + ": missing attribute " + quote(key));
    OpView view{node, {}};
    view.inputs.reserve(node.inputs.size());
    for (int input : node.inputs) {
      if (input < 0 || input >= index)
        throw InputError(where(node) + ": input " + std::to_string(input) + " does not precede it");
      view.inputs.push_back(&nodes_[static_cast<size_t>(input)]);
    }
    node.dtype = def->dtype ? def->dtype(view) : (view.inputs.empty() ? DType::F32 : view.inputs[0]->dtype);
    // Shape and cost rules multiply with checked_mul (core/checked.h); an overflow is this node's fault.
    try {
      node.shape = def->shape(view);
      for (int64_t dim : node.shape.dims)
        if (dim <= 0)
          throw InputError(where(node) + ": output shape " + node.shape.to_string() + " has an empty dimension");
      if (node.shape.numel() > kMaxTensorElements)
        throw InputError(where(node) + ": output shape " + node.shape.to_string() + " has more than " +
                         std::to_string(kMaxTensorElements) + " elements");
      // Every cost of the node is computed once here, so that no later consumer meets an overflow.
      OpCost cost = def->cost(view);
      if (cost.params > kMaxTensorElements)
        throw InputError(where(node) + ": " + std::to_string(cost.params) + " parameters, more than " +
                         std::to_string(kMaxTensorElements));
      cost.saved_bytes();
      count_frozen(*def, node, cost);
      const auto at = static_cast<size_t>(index);
      if (costs_.size() <= at) {
        costs_.resize(nodes_.size());
        cost_known_.resize(nodes_.size(), 0);
      }
      costs_[at] = std::move(cost);
      cost_known_[at] = 1;
    } catch (const ArithmeticOverflow& error) {
      throw InputError(where(node) + ": shape or cost arithmetic: " + error.what());
    }
  }
}

void Graph::validate() {
  check_nodes();
  infer_shapes();
  check_ties();
}

void Graph::validate_inferred() {
  check_nodes(false);  // every name went through add(), which refuses a duplicate, and none was changed since
  check_totals();
  check_ties();
}

void Graph::check_nodes(bool names) const {
  if (nodes_.empty()) throw InputError("graph " + quote(name) + " has no nodes");
  if (inputs().empty()) throw InputError("graph " + quote(name) + " has no Input node");
  if (!names) return;
  std::unordered_set<std::string_view> seen;  // hashed: a transformer's names share long prefixes
  seen.reserve(nodes_.size());
  for (const Node& node : nodes_)
    if (!seen.insert(node.name).second) throw InputError("duplicate node name " + quote(node.name));
}

void Graph::check_ties() const {
  // Weight tying (Linear attr tied_to): the named node must be an Embedding whose table has the
  // shape of this layer's weight, out_features x in_features.
  for (const Node& node : nodes_) {
    if (!node.has_attr("tied_to")) continue;
    if (node.op != "Linear"sv) throw InputError(where(node) + ": only Linear takes the attribute 'tied_to'");
    std::string target_name = node.attr_str("tied_to", "");
    int target = find(target_name);
    if (target < 0 || nodes_[static_cast<size_t>(target)].op != "Embedding"sv)
      throw InputError(where(node) + ": tied_to " + quote(target_name) + " is not an Embedding node of the graph");
    const Node& table = nodes_[static_cast<size_t>(target)];
    int64_t in_features = nodes_[static_cast<size_t>(node.inputs.at(0))].shape.dims.back();
    if (table.attr_int("num_embeddings") != node.shape.dims.back() || table.attr_int("embedding_dim") != in_features)
      throw InputError(where(node) + ": tied_to " + quote(target_name) + " has a " +
                       std::to_string(table.attr_int("num_embeddings")) + " x " +
                       std::to_string(table.attr_int("embedding_dim")) + " table, this layer's weight is " +
                       std::to_string(node.shape.dims.back()) + " x " + std::to_string(in_features));
  }
}

Graph Graph::from_named(std::string graph_name, std::string graph_family, std::vector<NamedNode> named) {
  std::map<std::string, size_t> position;
  for (size_t item = 0; item < named.size(); ++item) {
    const std::string& node_name = named[item].node.name;
    if (node_name.empty()) throw InputError("node #" + std::to_string(item) + " has no name");
    if (!position.emplace(node_name, item).second) throw InputError("duplicate node name " + quote(node_name));
  }
  // Kahn's algorithm; ties broken by the order given, so an ordered file stays as it is.
  std::vector<int> pending(named.size(), 0);
  std::vector<std::vector<size_t>> users(named.size());
  for (size_t item = 0; item < named.size(); ++item) {
    for (const std::string& input_name : named[item].input_names) {
      auto found = position.find(input_name);
      if (found == position.end())
        throw InputError(where(named[item].node) + ": input " + quote(input_name) + " is not a node of the graph");
      users[found->second].push_back(item);
      ++pending[item];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t item = 0; item < named.size(); ++item)
    if (pending[item] == 0) ready.push(item);
  Graph graph;
  graph.name = std::move(graph_name);
  graph.family = std::move(graph_family);
  while (!ready.empty()) {
    size_t item = ready.top();
    ready.pop();
    Node node = named[item].node;
    node.inputs.clear();
    for (const std::string& input_name : named[item].input_names) node.inputs.push_back(graph.find(input_name));
    graph.add(std::move(node));
    for (size_t user : users[item])
      if (--pending[user] == 0) ready.push(user);
  }
  if (graph.size() != static_cast<int>(named.size())) {
    for (size_t item = 0; item < named.size(); ++item)
      if (pending[item] > 0) throw InputError(where(named[item].node) + ": part of a cycle");
  }
  graph.validate();
  return graph;
}

std::string Graph::architecture_hash() const {
  // FNV-1a 64 over a canonical text: op, attributes (sorted by key), input positions, dtype.
  // Input shapes are configuration (batch, image size), not architecture, so only their rank enters.
  std::ostringstream text;
  for (const Node& node : nodes_) {
    text << node.op << '(';
    for (int input : node.inputs) text << input << ',';
    text << ")[";
    if (node.op == "Input"sv) {
      text << "rank=" << node.attr_ints("shape", {}).size() << ";";
    } else {
      for (const auto& [key, value] : node.attrs) {
        // Which transformer layer a node belongs to, and whether a slice came from a split or an index: labels of
        // how PyTorch runs it, not architecture (the forward computes the same; stored hashes stay valid).
        if (key == "block" || key == "split") continue;
        text << key << '=';
        std::visit(
            [&text](const auto& v) {
              using T = std::decay_t<decltype(v)>;
              if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
                for (int64_t item : v) text << item << ',';
              } else {
                text << v;
              }
            },
            value);
        text << ';';
      }
    }
    text << ']' << dtype_name(node.dtype) << '\n';
  }
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char byte : text.str()) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

}  // namespace dnncast
