// The ONNX reader: bounded protobuf parsing, opset check, inputs and initializers, then one pass
// over the nodes (fold constants, emit fusions, translate the rest). onnx_tensor.cpp reads tensors
// and attributes, onnx_fold.cpp folds constants, onnx_patterns.cpp finds fusions, onnx_ops.cpp
// translates single nodes.
#include "import/onnx.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/checked.h"
#include "core/error.h"
#include "core/text.h"
#include "import/onnx_internal.h"

namespace dnncast::import {

namespace detail {

bool Context::has_constant(const std::string& name) const {
  auto found = values.find(name);
  return found != values.end() && !found->second.is_runtime();
}

const Constant* Context::constant(const std::string& name) const {
  auto found = values.find(name);
  return found != values.end() && !found->second.is_runtime() ? &found->second.constant : nullptr;
}

int Context::runtime(const std::string& name, const std::string& where_text) const {
  auto found = values.find(name);
  if (found == values.end())
    throw InputError(where_text + ": input " + quote(name) +
                     " is produced by no earlier node, initializer or graph input");
  if (!found->second.is_runtime())
    throw InputError(where_text + ": input " + quote(name) + " is a constant where a computed tensor is expected");
  return found->second.node;
}

const TensorShape& Context::shape(const std::string& name) const { return builder.shape(values.at(name).node); }

int Context::sole_consumer(const std::string& name) const {
  auto found = consumers.find(name);
  if (found == consumers.end() || found->second.size() != 1 || graph_outputs.count(name)) return -1;
  return found->second[0];
}

std::string Context::unique_name(const onnx::NodeProto& node, int index) const {
  std::string base = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  std::string name = base;
  for (int suffix = 1; builder.graph().find(name) >= 0; ++suffix) name = base + "#" + std::to_string(suffix);
  return name;
}

std::string where(const onnx::NodeProto& node) {
  return "node " +
         quote(node.name().empty() ? node.output_size() > 0 ? node.output(0) : std::string("?") : node.name()) + " (" +
         escape_control(node.op_type()) + ")";
}

namespace {

// Ops translate_node or fold_constant handle; any other type is unknown.
const std::set<std::string>& supported_ops() {
  static const std::set<std::string> ops{"Conv",
                                         "ConvTranspose",
                                         "Gemm",
                                         "MatMul",
                                         "BatchNormalization",
                                         "LayerNormalization",
                                         "InstanceNormalization",
                                         "GroupNormalization",
                                         "Relu",
                                         "LeakyRelu",
                                         "Clip",
                                         "Sigmoid",
                                         "Tanh",
                                         "HardSigmoid",
                                         "HardSwish",
                                         "Gelu",
                                         "Erf",
                                         "Add",
                                         "Sub",
                                         "Mul",
                                         "Div",
                                         "Pow",
                                         "Sqrt",
                                         "ReduceMean",
                                         "Concat",
                                         "Split",
                                         "Slice",
                                         "MaxPool",
                                         "AveragePool",
                                         "GlobalAveragePool",
                                         "Flatten",
                                         "Reshape",
                                         "Transpose",
                                         "Squeeze",
                                         "Unsqueeze",
                                         "Softmax",
                                         "Gather",
                                         "Dropout",
                                         "Identity",
                                         "Pad",
                                         "Shape",
                                         "Constant",
                                         "ConstantOfShape",
                                         "Cast",
                                         "Expand",
                                         "Range",
                                         "Equal",
                                         "Where",
                                         "Neg"};
  return ops;
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Names are the file's text that reaches every message and JSON writer: made valid UTF-8 once, here (the same
// bytes become the same name, so references between nodes still match).
void make_names_utf8(onnx::GraphProto& graph) {
  auto fix = [](std::string* text) {
    if (!is_valid_utf8(*text)) *text = valid_utf8(*text);
  };
  fix(graph.mutable_name());
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    fix(node.mutable_name());
    fix(node.mutable_op_type());
    for (std::string& input : *node.mutable_input()) fix(&input);
    for (std::string& output : *node.mutable_output()) fix(&output);
  }
  for (onnx::TensorProto& tensor : *graph.mutable_initializer()) fix(tensor.mutable_name());
  for (onnx::ValueInfoProto& info : *graph.mutable_input()) fix(info.mutable_name());
  for (onnx::ValueInfoProto& info : *graph.mutable_output()) fix(info.mutable_name());
  for (onnx::ValueInfoProto& info : *graph.mutable_value_info()) fix(info.mutable_name());
}

onnx::ModelProto parse_model(const std::string& bytes) {
  if (static_cast<int64_t>(bytes.size()) > kMaxOnnxFileBytes)
    throw InputError("file of " + std::to_string(bytes.size()) + " bytes is larger than the " +
                     std::to_string(kMaxOnnxFileBytes) + " bytes an ONNX model may have");
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetRecursionLimit(kMaxOnnxNesting);
  coded.SetTotalBytesLimit(static_cast<int>(bytes.size()));
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw InputError("not an ONNX model: the protobuf does not parse (truncated, garbage, or nested deeper than " +
                     std::to_string(kMaxOnnxNesting) + ")");
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw InputError("not an ONNX model: it has no graph nodes");
  // Constants and shape arithmetic fold away, so a file may hold more nodes than its graph: up to 4x the limit
  // are converted (the graph's own limit, core/checked.h, then applies), more are refused unread.
  if (model.graph().node_size() > 4 * kMaxGraphNodes)
    throw InputError("ONNX graph of " + std::to_string(model.graph().node_size()) + " nodes, more than the " +
                     std::to_string(4 * kMaxGraphNodes) + " dnncast reads");
  make_names_utf8(*model.mutable_graph());
  return model;
}

void check_opset(const onnx::ModelProto& model) {
  int64_t version = -1;
  for (const auto& opset : model.opset_import())
    if (is_default_domain(opset.domain())) version = opset.version();
  if (version < 0) throw InputError("the model imports no opset of the default ONNX domain");
  if (version < 11 || version > 17)
    throw InputError("opset " + std::to_string(version) + " is not supported (this dnncast reads opsets 11 to 17)");
}

void check_unknown_ops(Context& context) {
  for (int index = 0; index < context.graph.node_size(); ++index) {
    const onnx::NodeProto& node = context.node(index);
    if (is_default_domain(node.domain()) && supported_ops().count(node.op_type())) continue;
    std::string type = is_default_domain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
    if (context.unknown_count[type]++ == 0)
      context.unknown_first[type] = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  }
  if (context.unknown_count.empty()) return;
  std::string list;
  for (const auto& [type, count] : context.unknown_count)
    list += (list.empty() ? "" : ", ") + escape_control(type) + " x" + std::to_string(count) + " (first " +
            quote(context.unknown_first[type]) + ")";
  if (!context.options.allow_unknown)
    throw InputError("unsupported ONNX ops: " + list + "; --allow-unknown treats them as elementwise");
  for (const auto& [type, count] : context.unknown_count)
    std::cerr << "warning: " << context.source << ": unsupported ONNX op " << escape_control(type) << " (" << count
              << (count == 1 ? " node" : " nodes") << ", first " << quote(context.unknown_first[type])
              << ") treated as elementwise\n";
}

DType input_dtype(int32_t elem_type, const std::string& name) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::F32;
    case onnx::TensorProto::FLOAT16:
      return DType::F16;
    case onnx::TensorProto::BFLOAT16:
      return DType::BF16;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32:
      return DType::I64;
    default:
      throw InputError("graph input " + quote(name) + " has element type " + std::to_string(elem_type) +
                       " (dnncast takes float, float16, bfloat16 and integer inputs)");
  }
}

// The input's dims with --batch, --input and --seq applied; a dynamic dimension they do not set is refused.
std::vector<int64_t> input_dims(const onnx::ValueInfoProto& info, const OnnxOptions& options) {
  const std::string& name = info.name();
  if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
    throw InputError("graph input " + quote(name) + " declares no tensor shape");
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  for (const auto& dim : info.type().tensor_type().shape().dim()) {
    bool known = dim.has_dim_value();
    if (known && (dim.dim_value() <= 0 || dim.dim_value() > kMaxIntegerAttr))
      throw InputError("graph input " + quote(name) + " has dimension " + std::to_string(dim.dim_value()) +
                       " (at most " + std::to_string(kMaxIntegerAttr) + ", and positive)");
    dims.push_back(known ? dim.dim_value() : 0);
    dynamic.push_back(!known);
  }
  if (dims.empty()) throw InputError("graph input " + quote(name) + " is a scalar (dnncast needs a batch dimension)");
  if (options.batch > 0 || dynamic[0]) dims[0] = options.batch > 0 ? options.batch : 1;
  if (!options.input.empty() && dims.size() == 4)
    for (size_t axis = 1; axis < 4; ++axis) dims[axis] = options.input[axis - 1], dynamic[axis] = false;
  if (options.seq_len > 0 && dims.size() == 2) dims[1] = options.seq_len, dynamic[1] = false;
  for (size_t axis = 1; axis < dims.size(); ++axis)
    if (dynamic[axis])
      throw InputError("graph input " + quote(name) + " has a dynamic dimension " + std::to_string(axis) + " (" +
                       escape_control(info.type().tensor_type().shape().dim(static_cast<int>(axis)).dim_param()) +
                       "): give " + (dims.size() == 2 ? "--seq" : "--input CxHxW"));
  return dims;
}

void add_inputs_and_initializers(Context& context, int64_t file_bytes) {
  for (const onnx::TensorProto& tensor : context.graph.initializer()) {
    std::string where_text = "initializer " + quote(tensor.name());
    Constant constant = read_tensor(tensor, file_bytes, where_text);
    constant.parameter = tensor.name();
    if (!context.values.emplace(tensor.name(), Value{-1, std::move(constant)}).second)
      throw InputError(where_text + " is defined twice");
  }
  for (const onnx::ValueInfoProto& info : context.graph.input()) {
    if (context.values.count(info.name())) continue;  // an initializer listed as an input (IR version < 4)
    int32_t elem_type = info.type().tensor_type().elem_type();
    DType dtype = input_dtype(elem_type, info.name());
    std::vector<int64_t> dims = input_dims(info, context.options);
    int64_t elements = 1;
    for (int64_t dim : dims) {
      if (elements > kMaxTensorElements / dim)
        throw InputError("graph input " + quote(info.name()) + " of shape " + TensorShape(dims).to_string() +
                         " has more than " + std::to_string(kMaxTensorElements) + " elements");
      elements *= dim;
    }
    int node = context.builder.input(TensorShape(dims), dtype, info.name());
    context.values[info.name()] = Value{node, {}};
  }
  if (context.builder.graph().inputs().empty()) throw InputError("the graph has no inputs besides initializers");
}

void index_nodes(Context& context) {
  for (const onnx::ValueInfoProto& output : context.graph.output()) context.graph_outputs.insert(output.name());
  for (int index = 0; index < context.graph.node_size(); ++index) {
    const onnx::NodeProto& node = context.node(index);
    for (const std::string& input : node.input())
      if (!input.empty()) context.consumers[input].push_back(index);
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;
      if (context.values.count(output) || !context.producer.emplace(output, index).second)
        throw InputError(where(node) + ": output " + quote(output) + " is defined twice");
    }
    // Constants first: fusions look at their values (and weights' shapes) wherever they stand.
    bool constant_inputs = node.input_size() > 0;
    for (const std::string& input : node.input())
      constant_inputs = constant_inputs && (input.empty() || context.has_constant(input));
    if ((node.op_type() == "Constant" || constant_inputs) && is_default_domain(node.domain())) {
      try {
        fold_constant(context, index);
      } catch (const InputError& error) {
        std::string text = error.what();
        throw text.rfind("node ", 0) == 0 ? error : error.with_context(where(node));
      }
    }
  }
}

void emit_fusion(Context& context, const Fusion& fusion, int anchor) {
  if (fusion.op == "MultiheadAttention") return emit_multihead_attention(context, fusion, anchor);
  const onnx::NodeProto& node = context.node(anchor);
  std::vector<int> inputs;
  for (size_t i = 0; i < fusion.inputs.size(); ++i) {
    inputs.push_back(context.runtime(fusion.inputs[i], where(node)));
    auto perm = fusion.permute_inputs.find(i);
    if (perm != fusion.permute_inputs.end())
      inputs.back() = context.builder.op(context.unique_name(node, anchor) + "#input" + std::to_string(i), "Permute",
                                         {inputs.back()}, {{"dims", perm->second}});
  }
  std::map<std::string, AttrValue> attrs = fusion.attrs;
  if (fusion.op == "LayerNorm") {  // over the last axis, whose size the input's shape tells
    const TensorShape& shape = context.builder.shape(inputs.at(0));
    attrs["normalized_shape"] = std::vector<int64_t>{shape.dims.empty() ? 1 : shape.dims.back()};
  }
  if (!fusion.groups_from.empty()) {
    const import::detail::Constant* target = context.constant(fusion.groups_from);
    if (target == nullptr || !target->has_values || target->values.size() != 5 || !(target->values[1] >= 1.0) ||
        target->values[1] > static_cast<double>(kMaxIntegerAttr))
      throw InputError(where(node) + ": the channel shuffle's 5-D shape is not known at import");
    attrs["groups"] = static_cast<int64_t>(target->values[1]);
  }
  int ir = context.builder.op(context.unique_name(node, anchor), fusion.op, inputs, attrs);
  context.values[fusion.output] = Value{ir, {}};
}

void translate_all(Context& context) {
  std::map<int, Fusion> fusions = find_fusions(context);
  std::vector<bool> skip(static_cast<size_t>(context.graph.node_size()), false);
  for (const auto& [anchor, fusion] : fusions)
    for (int member : fusion.members) skip[static_cast<size_t>(member)] = member != anchor;
  for (int index = 0; index < context.graph.node_size(); ++index) {
    const onnx::NodeProto& node = context.node(index);
    try {
      if (skip[static_cast<size_t>(index)]) continue;
      auto fusion = fusions.find(index);
      if (fusion != fusions.end()) {
        emit_fusion(context, fusion->second, index);
        continue;
      }
      if (node.output_size() > 0 && context.has_constant(node.output(0))) continue;  // folded by index_nodes
      bool all_constant = true;
      for (const std::string& input : node.input()) {
        if (input.empty()) continue;
        if (!context.values.count(input))
          throw InputError("input " + quote(input) + " is produced by no earlier node, initializer or graph input");
        all_constant = all_constant && !context.values.at(input).is_runtime();
      }
      if ((all_constant || node.op_type() == "Shape") && fold_constant(context, index)) continue;
      translate_node(context, index);
    } catch (const InputError& error) {
      std::string text = error.what();
      if (text.rfind("node ", 0) == 0) throw;
      throw error.with_context(where(node));
    }
  }
}

}  // namespace

}  // namespace detail

// How the file was exported, from the signs PyTorch's exporter leaves (docs/ONNX.md "Exported for inference"):
// a training export keeps BatchNormalization with training_mode 1 and Dropout with its training_mode input; an
// export of model.eval() (torch.onnx.export's default, and how model zoos ship ONNX) folds each BatchNorm that
// follows a convolution into the convolution's weights and bias and drops Dropout. "" when nothing says
// inference; else the note.
static std::string inference_export_note(const onnx::GraphProto& graph, const std::string& source) {
  int64_t batch_norms = 0, batch_norms_eval = 0, dropouts = 0, dropouts_eval = 0, convs = 0, convs_with_bias = 0;
  auto constant_true = [&](const std::string& name) {
    for (const onnx::TensorProto& tensor : graph.initializer())
      if (tensor.name() == name)
        return tensor.int32_data_size() > 0 ? tensor.int32_data(0) != 0
                                            : tensor.raw_data().find_first_not_of('\0') != std::string::npos;
    for (const onnx::NodeProto& node : graph.node())
      if (node.op_type() == "Constant" && node.output_size() > 0 && node.output(0) == name)
        for (const onnx::AttributeProto& attr : node.attribute())
          if (attr.name() == "value" && attr.has_t())
            return attr.t().int32_data_size() > 0 ? attr.t().int32_data(0) != 0
                                                  : attr.t().raw_data().find_first_not_of('\0') != std::string::npos;
    return false;
  };
  for (const onnx::NodeProto& node : graph.node()) {
    const std::string& op = node.op_type();
    if (op == "BatchNormalization") {
      ++batch_norms;
      int64_t training = 0;
      for (const onnx::AttributeProto& attr : node.attribute())
        if (attr.name() == "training_mode") training = attr.i();
      batch_norms_eval += training == 0 && node.output_size() <= 1;
    } else if (op == "Dropout") {
      ++dropouts;
      dropouts_eval += node.input_size() < 3 || node.input(2).empty() || !constant_true(node.input(2));
    } else if (op == "Conv") {
      ++convs;
      convs_with_bias += node.input_size() >= 3 && !node.input(2).empty();
    }
  }
  std::string why;
  if (batch_norms_eval > 0)
    why = std::to_string(batch_norms_eval) + " of its " + std::to_string(batch_norms) +
          " BatchNormalization nodes run in inference mode (training_mode 0)";
  else if (dropouts_eval > 0)
    why =
        std::to_string(dropouts_eval) + " of its " + std::to_string(dropouts) + " Dropout nodes run in inference mode";
  else if (batch_norms == 0 && dropouts == 0 && convs >= 2 && convs_with_bias == convs)
    why = "it has no BatchNormalization and no Dropout, and every one of its " + std::to_string(convs) +
          " convolutions has a bias: the signs of BatchNorm folded into them";
  if (why.empty()) return "";
  return source + " looks exported for inference (" + why +
         "): a training forecast of it lacks the BatchNorm and "
         "Dropout layers such an export removes; export the training graph with torch.onnx.export(model.train(), x, "
         "path, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False) (docs/ONNX.md)";
}

Graph read_onnx(const std::string& bytes, const std::string& source, const OnnxOptions& options) {
  using namespace detail;
  try {
    onnx::ModelProto model = parse_model(bytes);
    check_opset(model);
    Context context(model.graph(), source, options);
    check_unknown_ops(context);
    add_inputs_and_initializers(context, static_cast<int64_t>(bytes.size()));
    index_nodes(context);
    translate_all(context);
    for (const onnx::ValueInfoProto& output : context.graph.output()) {
      auto found = context.values.find(output.name());
      if (found == context.values.end())
        throw InputError("graph output " + quote(output.name()) + " is produced by no node");
    }
    Graph graph = context.builder.finish();
    std::string stem = source.substr(source.find_last_of('/') + 1);
    if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".onnx") == 0) stem.resize(stem.size() - 5);
    graph.name = stem;
    graph.family = "onnx";
    if (std::string note = inference_export_note(model.graph(), source); !note.empty()) graph.notes.push_back(note);
    return graph;
  } catch (const InputError& error) {
    throw error.with_context(source);
  }
}

Graph load_onnx_file(const std::string& path, const OnnxOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError("cannot open ONNX file " + quote(path));
  file.seekg(0, std::ios::end);
  std::streamoff size = file.tellg();
  if (size < 0) throw InputError("cannot read ONNX file " + quote(path));
  if (size > kMaxOnnxFileBytes)
    throw InputError(path + ": file of " + std::to_string(size) + " bytes is larger than the " +
                     std::to_string(kMaxOnnxFileBytes) + " bytes an ONNX model may have");
  file.seekg(0);
  std::string bytes(static_cast<size_t>(size), '\0');
  file.read(bytes.data(), size);
  if (!file) throw InputError("cannot read ONNX file " + quote(path));
  return read_onnx(bytes, path, options);
}

}  // namespace dnncast::import
