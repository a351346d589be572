// Internals of the ONNX importer shared by its files: values (a node's output in the IR, or a
// constant known at import), the fusions found before translation, and the translation context.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "import/onnx.h"

namespace dnncast::import::detail {

// A tensor known at import: an initializer, a Constant, or a folded shape computation. `values`
// holds its elements when known (integers exactly up to 2^53; only small tensors carry values).
struct Constant {
  int32_t elem_type = 1;  // onnx::TensorProto::DataType
  std::vector<int64_t> dims;
  bool has_values = false;
  std::vector<double> values;
  std::string parameter;  // the initializer it is (or is a view of) when it holds trainable weights
  int64_t numel() const;
  bool is_scalar() const { return numel() == 1; }
};

inline constexpr int64_t kMaxFoldedElements = 1 << 16;  // constants larger than this carry no values

// A value of the ONNX graph by name: either produced by an IR node, or constant.
struct Value {
  int node = -1;      // IR node index when a runtime tensor
  Constant constant;  // when node < 0
  bool is_runtime() const { return node >= 0; }
};

// Several ONNX nodes that become one IR op: emitted at `anchor` (the last of them), the others skipped.
struct Fusion {
  std::string op;
  std::vector<std::string> inputs;  // runtime inputs by ONNX value name
  std::map<std::string, AttrValue> attrs;
  std::string output;                                     // the ONNX value it defines
  std::vector<int> members;                               // ONNX node indices, the anchor included
  std::map<size_t, std::vector<int64_t>> permute_inputs;  // input position -> a Permute emitted before the op
  std::string groups_from;  // ChannelShuffle: the 5-D Reshape target (N, groups, C/groups, H, W), folded by then
  // MultiheadAttention: emitted at the first member (the shape chains between the members read their
  // outputs' shapes), each inner ONNX value bound to a shape-only constant of the layout its code names.
  bool at_first = false;
  std::vector<std::pair<std::string, std::string>> shape_only;  // ONNX value -> layout (onnx_mha.cpp)
};

struct Context {
  const onnx::GraphProto& graph;
  std::string source;
  OnnxOptions options;
  GraphBuilder builder;
  std::map<std::string, Value> values;
  std::map<std::string, int> producer;                // value name -> ONNX node index
  std::map<std::string, std::vector<int>> consumers;  // value name -> ONNX node indices
  std::set<std::string> graph_outputs;
  std::map<std::string, int> unknown_count;          // op type -> nodes
  std::map<std::string, std::string> unknown_first;  // op type -> first node's name
  std::set<std::string> used_parameters;
  std::map<std::string, std::string> embedding_of;  // initializer -> the IR Embedding node gathering it

  Context(const onnx::GraphProto& g, std::string src, OnnxOptions opts)
      : graph(g), source(std::move(src)), options(std::move(opts)), builder("onnx", "onnx") {}

  const onnx::NodeProto& node(int index) const { return graph.node(index); }
  bool has_constant(const std::string& name) const;
  const Constant* constant(const std::string& name) const;               // nullptr when not constant
  int runtime(const std::string& name, const std::string& where) const;  // IR node, or InputError
  const TensorShape& shape(const std::string& name) const;               // of a runtime value
  // The only consumer of `name` (none when it has several or is a graph output).
  int sole_consumer(const std::string& name) const;
  std::string unique_name(const onnx::NodeProto& node, int index) const;
};

// "node 'name' (Op)" for messages.
std::string where(const onnx::NodeProto& node);

// Attributes.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name);
int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback);
std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name, std::vector<int64_t> fallback);

// A TensorProto as a Constant, sizes checked against `file_bytes` before anything is allocated.
Constant read_tensor(const onnx::TensorProto& tensor, int64_t file_bytes, const std::string& where);
// A float attribute's value as the decimal the exporter wrote (1e-05, not 9.99999974e-06).
double float_as_written(float value);

// Folds a node whose inputs are all constant; false when the op is not one we fold.
bool fold_constant(Context& context, int index);
// Finds the fusions of the whole graph, keyed by anchor node.
std::map<int, Fusion> find_fusions(Context& context);
// torch's nn.MultiheadAttention export (onnx_mha.cpp): the match at its first node, and its emission.
bool match_multihead_attention(Context& context, int index, Fusion& fusion);
void emit_multihead_attention(Context& context, const Fusion& fusion, int anchor);
// Translates one node with runtime inputs into IR nodes (binds its outputs in context.values).
void translate_node(Context& context, int index);

}  // namespace dnncast::import::detail
