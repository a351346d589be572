// One declaration per op: shape rule, cost (MACs, FLOPs fwd/bwd, params, bytes) and the
// tensors it keeps for backward, together (onnx OpSchema / ggml op_flops style).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/op_cost.h"

namespace dnncast {

// What a rule sees: the node and its producers (whose shapes are already inferred).
struct OpView {
  const Node& node;
  std::vector<const Node*> inputs;

  const TensorShape& in(int index) const { return inputs.at(static_cast<size_t>(index))->shape; }
  DType in_dtype(int index) const { return inputs.at(static_cast<size_t>(index))->dtype; }
  // InputError("node 'name' (Op): message")
  [[noreturn]] void fail(const std::string& message) const;
  // A fixed message; a message built of parts is built only on failure: `if (!condition) view.fail(parts)` (every
  // shape rule runs for every node of every forecast).
  void check(bool condition, const char* message) const {
    if (!condition) fail(message);
  }
};

struct OpDef {
  std::string name;      // "Conv2d"
  std::string category;  // "conv", "linear", "norm", "activation", "pool", "elementwise",
                         // "shape", "attention", "embedding", "loss", "input", "regularization"
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  std::vector<std::string> required_attrs;
  std::function<TensorShape(const OpView& view)> shape;
  std::function<OpCost(const OpView& view)> cost;  // node.shape already inferred
  // Finer kind for features ("DepthwiseConv2d" for a Conv2d with groups == in_channels);
  // nullptr means the kind is the op name.
  std::function<std::string(const OpView& view)> kind;
  // Output element type; nullptr means the first input's (F32 when there is none).
  std::function<DType(const OpView& view)> dtype;

  // What the modules above need of the op, declared with it (one home per op; OpCompleteness.*
  // names a registered op that lacks one):
  // - the allocation pattern memory/training_trace.cpp replays for it: a key of Trace::recipes()
  //   ("activation", "conv", ...; "generic" is the approximate one, docs/MEMORY.md);
  std::string memory_recipe;
  // - its feature kind when `kind` is unset: a kind of features/featurizer.cpp's table, whose
  //   column block counts it ("Permute" for Transpose, "Other" for a token); empty: the op name;
  std::string feature_kind;
  // - the executor runs it in place on its input when that input is a fresh output nobody else
  //   reads (graph/inplace.h), and whether its own output is such a fresh tensor.
  bool runs_inplace = false;
  bool fresh_output = false;
  // - its attributes were sized by the batch the graph was built at (a mixture of experts' token shares,
  //   models/moe.h): another batch builds such a graph anew rather than inferring its shapes again
  //   (import::ModelSource::rebatch).
  bool sized_by_batch = false;

  // The feature kind of a node of this op: kind(view), else feature_kind, else the op name.
  std::string feature_kind_of(const OpView& view) const {
    if (kind) return kind(view);
    return feature_kind.empty() ? name : feature_kind;
  }
};

class OpRegistry {
 public:
  static const OpRegistry& instance();

  // Throws InputError listing every known op name when `name` is unknown.
  const OpDef& get(const std::string& name) const;
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  std::vector<std::string> names() const;

  void add(OpDef def);  // duplicate names are a bug (assert)

 private:
  OpRegistry();
  std::map<std::string, OpDef> defs_;                    // in name order (names(), the error's list)
  std::unordered_map<std::string, const OpDef*> index_;  // the lookup every node of every forecast makes, hashed
};

// Convenience: cost and kind of one node of a shape-inferred graph.
OpView view_of(const Graph& graph, int node_index);
// A frozen node (Node::frozen) has frozen_params = params and no weight-gradient FLOPs in flops_bwd
// (Linear: the input gradient's 2 MACs stay; Embedding: none).
OpCost node_cost(const Graph& graph, int node_index);
// The same without a copy where the graph kept the cost (Graph::inferred_cost); otherwise computed into `computed`.
const OpCost& node_cost(const Graph& graph, int node_index, OpCost& computed);
// The same for a caller that holds the node's op definition and view already (one registry lookup and one view
// per node of a forecast, not two).
OpCost node_cost(const OpDef& def, const OpView& view);
// What node_cost adds to a rule's cost for a frozen node (above): its parameters counted frozen, no weight gradient.
void count_frozen(const OpDef& def, const Node& node, OpCost& cost);
// Parameters that require grad: what the optimizer updates (tied weights once).
int64_t trainable_parameter_count(const Graph& graph);
std::string node_kind(const Graph& graph, int node_index);

// Every op group registers itself here (one function per source file of ops).
void register_input_ops(OpRegistry& registry);
void register_conv_ops(OpRegistry& registry);
void register_linear_ops(OpRegistry& registry);
void register_norm_ops(OpRegistry& registry);
void register_activation_ops(OpRegistry& registry);
void register_pool_ops(OpRegistry& registry);
void register_elementwise_ops(OpRegistry& registry);
void register_shape_ops(OpRegistry& registry);
void register_attention_ops(OpRegistry& registry);
void register_loss_ops(OpRegistry& registry);
void register_moe_ops(OpRegistry& registry);

}  // namespace dnncast
