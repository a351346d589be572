// The graph IR: nodes in topological order, one output tensor per node.
// A node's inputs are the indices of the nodes producing them; parameters (weights,
// biases, norm affine terms) are implied by the op and its attributes, not nodes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "graph/op_cost.h"
#include "graph/tensor.h"

namespace dnncast {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

struct Node {
  std::string name;  // unique in the graph, torchvision-style path ("layer1.0.conv1")
  std::string op;    // op registry name ("Conv2d")
  std::map<std::string, AttrValue> attrs;
  std::vector<int> inputs;   // producer node indices, all smaller than this node's index
  TensorShape shape;         // output shape, filled by Graph::infer_shapes()
  DType dtype = DType::F32;  // output element type

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  // Typed getters throw InputError naming the node and attribute when missing or mistyped.
  int64_t attr_int(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_str(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& fallback) const;
  // Attr frozen=1 on an op with parameters: its weights do not require grad (no weight gradient, no optimizer
  // state; the input gradient still flows). A tied weight is frozen or not with the node that owns it.
  bool frozen() const { return attr_int("frozen", 0) != 0; }
  // Attr split=1 on a Slice (kSplitPart): one part of a torch.split or chunk of its input, whose parts' gradients
  // autograd joins in one cat (SplitBackward0). A Slice without it indexes its input on its own (SliceBackward0,
  // SelectBackward0: zeros of the input's size, the part's gradient copied in).
  bool split_part() const { return op == "Slice" && attr_int("split", 0) != 0; }
};
inline const std::pair<const std::string, AttrValue> kSplitPart{"split", int64_t{1}};

// Who consumes each node (Graph::consumers): every node's consumer indices, rising, in one flat list. Two
// allocations for the whole graph where a list per node took one each (a simulation asks several times). A Range
// reads the Consumers it came from: name that first (`const Consumers consumers = graph.consumers();`), never loop
// over `graph.consumers()[i]`, whose list is gone before the loop starts.
class Consumers {
 public:
  class Range {
   public:
    Range(const int* first, const int* last) : first_(first), last_(last) {}
    const int* begin() const { return first_; }
    const int* end() const { return last_; }
    size_t size() const { return static_cast<size_t>(last_ - first_); }
    bool empty() const { return first_ == last_; }

   private:
    const int* first_;
    const int* last_;
  };
  Consumers() = default;
  explicit Consumers(const std::vector<Node>& nodes);
  Range operator[](size_t index) const { return {list_.data() + offsets_[index], list_.data() + offsets_[index + 1]}; }
  size_t size() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }

 private:
  std::vector<size_t> offsets_;  // node i's consumers: list_[offsets_[i], offsets_[i + 1])
  std::vector<int> list_;
};

class Graph {
 public:
  std::string name;    // model name ("resnet50", "synthetic:42")
  std::string family;  // architecture family ("resnet", "synthetic")
  // What an importer could not carry into the IR, one line each (an ONNX file exported for inference: its
  // BatchNorm folded away); the commands print them on stderr and in --json ("import_notes"). Not hashed.
  std::vector<std::string> notes;

  // Appends a node; its inputs must already be in the graph. Returns its index.
  // Throws InputError on a duplicate name or an input index out of range.
  int add(Node node);

  const std::vector<Node>& nodes() const { return nodes_; }
  // Hands the nodes out to change: the costs infer_node kept are dropped (a changed attribute changes a cost).
  std::vector<Node>& mutable_nodes() {
    costs_.clear();
    cost_known_.clear();
    return nodes_;
  }
  const Node& node(int index) const { return nodes_.at(static_cast<size_t>(index)); }
  int size() const { return static_cast<int>(nodes_.size()); }
  int find(const std::string& node_name) const;  // -1 when absent

  // Indices of nodes nobody consumes (normally one: the network's output).
  std::vector<int> outputs() const;
  // Indices of "Input" nodes.
  std::vector<int> inputs() const;
  // Consumers of each node, by index.
  Consumers consumers() const { return Consumers(nodes_); }

  // Node `index`'s cost as infer_node computed it (node_cost's: frozen parameters counted), kept so that a forecast
  // does not compute it again for every module that asks (the memory trace, the kernel list, the totals); nullptr
  // where the node was not inferred since the graph last handed out mutable_nodes().
  const OpCost* inferred_cost(int index) const {
    const auto at = static_cast<size_t>(index);
    return at < cost_known_.size() && cost_known_[at] != 0 ? &costs_[at] : nullptr;
  }

  // Runs every op's shape rule in order, filling Node::shape and Node::dtype.
  // Throws InputError("node 'x' (Conv2d): ...") on the first inconsistency.
  void infer_shapes();
  // Same for one node whose producers are already inferred (builders call it as they go).
  void infer_node(int index);

  // Checks structure (inputs precede their consumers, names unique, input counts and
  // attributes as the op declares) and shapes. Throws InputError naming the node.
  void validate();
  // The same for a graph whose every node went through infer_node in order as it was added and was not
  // changed since (GraphBuilder's, private until finish()): the checks without inferring each node again.
  void validate_inferred();

  // Builds a graph from nodes given in any order with inputs by name: resolves names,
  // rejects dangling inputs and cycles, orders topologically (stable), infers shapes.
  struct NamedNode {
    Node node;
    std::vector<std::string> input_names;
  };
  static Graph from_named(std::string name, std::string family, std::vector<NamedNode> nodes);

  // Stable hash of the architecture (ops, attributes, connectivity, shapes); node names
  // and the graph name do not enter it. 16 hex digits.
  std::string architecture_hash() const;

 private:
  void check_nodes(bool names = true) const;  // some nodes, an Input, unique names (unless `names` is false)
  void check_totals() const;  // the graph's parameters, FLOPs and bytes within int64 (its nodes inferred)
  void check_ties() const;    // Linear tied_to an Embedding of its weight's shape
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> index_by_name_;  // hashed: a transformer's names share long prefixes
  std::vector<OpCost> costs_;                           // by node, what infer_node computed (inferred_cost)
  std::vector<char> cost_known_;                        // 1 where costs_ holds it
};

}  // namespace dnncast
