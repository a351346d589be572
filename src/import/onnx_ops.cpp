// Translation of single ONNX nodes (those no fusion took) into IR ops. Weights come from
// initializers: their shapes give the op's attributes and must agree with the input's shape.
#include <cmath>
#include <functional>

#include "core/checked.h"
#include "core/error.h"
#include "import/onnx_internal.h"

namespace dnncast::import::detail {

namespace {

using Attrs = std::map<std::string, AttrValue>;

struct Translator {
  Context& context;
  int index;
  const onnx::NodeProto& node;

  [[noreturn]] void fail(const std::string& message) const { throw InputError(where(node) + ": " + message); }
  const std::string& input(int i) const {
    if (i >= node.input_size() || node.input(i).empty()) fail("missing input " + std::to_string(i));
    return node.input(i);
  }
  bool has_input(int i) const { return i < node.input_size() && !node.input(i).empty(); }
  int runtime(int i) const { return context.runtime(input(i), where(node)); }
  const TensorShape& shape_of(int ir) const { return context.builder.shape(ir); }
  const Constant& weight(int i, size_t rank) const {
    const Constant* c = context.constant(input(i));
    if (c == nullptr || c->parameter.empty()) fail("input " + std::to_string(i) + " must be an initializer (a weight)");
    if (c->dims.size() != rank)
      fail("weight " + quote(input(i)) + " has shape " + TensorShape(c->dims).to_string() + ", expected rank " +
           std::to_string(rank));
    context.used_parameters.insert(c->parameter);
    return *c;
  }
  std::vector<int64_t> ints(int i) const {
    const Constant* c = context.constant(input(i));
    if (c == nullptr || !c->has_values) fail("input " + std::to_string(i) + " must be a constant known at import");
    std::vector<int64_t> list;
    for (double v : c->values) {
      if (!std::isfinite(v)) fail("input " + std::to_string(i) + " holds a value that is not finite");
      list.push_back(v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v));
    }
    return list;
  }
  // A one-element constant input (Clip's min and max, Dropout's ratio): anything else is refused.
  double scalar(int i) const {
    const Constant* c = context.constant(input(i));
    if (c == nullptr || !c->has_values) fail("input " + std::to_string(i) + " must be a constant known at import");
    if (c->values.size() != 1)
      fail("input " + std::to_string(i) + " must hold one value, not " + std::to_string(c->values.size()));
    if (std::isnan(c->values[0])) fail("input " + std::to_string(i) + " is NaN");
    return c->values[0];
  }
  int emit(const std::string& op, std::vector<int> inputs, Attrs attrs = {}, const std::string& suffix = "") {
    std::string name = context.unique_name(node, index) + suffix;
    return context.builder.op(name, op, std::move(inputs), std::move(attrs));
  }
  void bind(int ir, int output = 0) {
    if (output < node.output_size() && !node.output(output).empty())
      context.values[node.output(output)] = Value{ir, {}};
  }
  void check_no_extra_outputs(int used) const {
    for (int out = used; out < node.output_size(); ++out)
      if (!node.output(out).empty() && context.consumers.count(node.output(out)))
        fail("its output " + std::to_string(out) + " is used, which dnncast does not model");
  }
  std::vector<int64_t> symmetric_pads(size_t spatial) const {
    std::string pad_mode = find_attr(node, "auto_pad") ? find_attr(node, "auto_pad")->s() : "NOTSET";
    if (pad_mode != "NOTSET" && pad_mode != "VALID")
      fail("auto_pad " + quote(pad_mode) + " is not supported (export with explicit pads)");
    std::vector<int64_t> pads = attr_ints(node, "pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) fail("attribute 'pads' needs " + std::to_string(2 * spatial) + " values");
    for (size_t axis = 0; axis < spatial; ++axis)
      if (pads[axis] != pads[axis + spatial]) fail("asymmetric padding is not supported");
    return std::vector<int64_t>(pads.begin(), pads.begin() + static_cast<long>(spatial));
  }

  void conv(bool transposed) {
    int x = runtime(0);
    const Constant& w = weight(1, 4);
    if (shape_of(x).rank() != 4)
      fail("dnncast imports 2-D convolutions (input N x C x H x W), got " + shape_of(x).to_string());
    int64_t groups = attr_int(node, "group", 1);
    if (groups < 1) fail("group must be positive");
    int64_t in_channels = transposed ? w.dims[0] : w.dims[1] * groups;
    if (in_channels != shape_of(x)[1])
      fail("weight " + TensorShape(w.dims).to_string() + " with group " + std::to_string(groups) + " takes " +
           std::to_string(in_channels) + " channels, the input has " + std::to_string(shape_of(x)[1]));
    int64_t out_channels = transposed ? w.dims[1] * groups : w.dims[0];
    bool bias = has_input(2);
    if (bias) {
      const Constant& b = weight(2, 1);
      if (b.dims[0] != out_channels)
        fail("bias of " + std::to_string(b.dims[0]) + " for " + std::to_string(out_channels) + " channels");
    }
    std::vector<int64_t> kernel = attr_ints(node, "kernel_shape", {w.dims[2], w.dims[3]});
    if (kernel != std::vector<int64_t>{w.dims[2], w.dims[3]}) fail("kernel_shape disagrees with the weight's shape");
    Attrs attrs{{"out_channels", out_channels}, {"kernel", kernel}, {"stride", attr_ints(node, "strides", {1, 1})},
                {"padding", symmetric_pads(2)}, {"groups", groups}, {"bias", int64_t{bias ? 1 : 0}}};
    std::vector<int64_t> dilation = attr_ints(node, "dilations", {1, 1});
    if (dilation != std::vector<int64_t>{1, 1}) attrs["dilation"] = dilation;
    if (transposed) {
      std::vector<int64_t> extra = attr_ints(node, "output_padding", {0, 0});
      if (extra != std::vector<int64_t>{0, 0}) attrs["output_padding"] = extra;
      if (find_attr(node, "output_shape")) fail("attribute 'output_shape' is not supported (export with pads)");
    }
    bind(emit(transposed ? "ConvTranspose2d" : "Conv2d", {x}, attrs));
  }

  void gemm() {
    int x = runtime(0);
    if (attr_int(node, "transA", 0) != 0) fail("transA = 1 is not supported");
    const Constant& w = weight(1, 2);
    bool trans_b = attr_int(node, "transB", 0) != 0;
    int64_t in = trans_b ? w.dims[1] : w.dims[0], out = trans_b ? w.dims[0] : w.dims[1];
    if (shape_of(x).rank() != 2 || shape_of(x)[1] != in)
      fail("weight " + TensorShape(w.dims).to_string() + " does not fit input " + shape_of(x).to_string());
    bool bias = has_input(2);
    if (bias && weight(2, 1).dims[0] != out) fail("bias size differs from the output features");
    bind(emit("Linear", {x}, {{"out_features", out}, {"bias", int64_t{bias ? 1 : 0}}}));
  }

  void matmul() {
    int x = runtime(0);
    const Constant* w = context.constant(input(1));
    if (w == nullptr) {
      bind(emit("MatMul", {x, runtime(1)}));
      return;
    }
    const Constant& table = weight(1, 2);
    if (shape_of(x).dims.back() != table.dims[0])
      fail("weight " + TensorShape(table.dims).to_string() + " does not fit input " + shape_of(x).to_string());
    std::map<std::string, AttrValue> attrs{{"out_features", table.dims[1]}, {"bias", int64_t{0}}};
    auto tied = context.embedding_of.find(table.parameter);  // GPT-2's LM head: the token table transposed
    const Constant* whole = context.constant(table.parameter);
    if (tied != context.embedding_of.end() && whole != nullptr &&
        whole->dims == std::vector<int64_t>{table.dims[1], table.dims[0]})
      attrs["tied_to"] = tied->second;
    bind(emit("Linear", {x}, attrs));
  }

  void batch_norm() {
    int x = runtime(0);
    int64_t channels = shape_of(x).rank() >= 2 ? shape_of(x)[1] : -1;
    for (int i = 1; i <= 4; ++i)
      if (context.constant(input(i)) == nullptr || context.constant(input(i))->numel() != channels)
        fail("input " + std::to_string(i) + " must be a constant of " + std::to_string(channels) +
             " values (one per channel)");
    double momentum = float_as_written(static_cast<float>(1.0 - attr_float(node, "momentum", 0.9)));
    Attrs attrs{{"eps", attr_float(node, "epsilon", 1e-5)}};
    if (momentum != 0.1) attrs["momentum"] = momentum;
    check_no_extra_outputs(node.output_size() > 1 && attr_int(node, "training_mode", 0) ? 3 : 1);
    bind(emit("BatchNorm2d", {x}, attrs));
  }

  void norm() {
    int x = runtime(0);
    const std::string& op = node.op_type();
    int rank = shape_of(x).rank();
    if (op == "LayerNormalization") {
      int64_t axis = attr_int(node, "axis", -1);
      if (axis < -rank || axis >= rank) fail("axis out of range");
      if (axis < 0) axis += rank;
      std::vector<int64_t> normalized(shape_of(x).dims.begin() + axis, shape_of(x).dims.end());
      bool affine = has_input(1);
      bind(emit("LayerNorm", {x},
                {{"normalized_shape", normalized},
                 {"eps", attr_float(node, "epsilon", 1e-5)},
                 {"elementwise_affine", int64_t{affine ? 1 : 0}}}));
      check_no_extra_outputs(1);
      return;
    }
    int64_t groups = op == "InstanceNormalization" ? (rank >= 2 ? shape_of(x)[1] : 1) : attr_int(node, "num_groups", 1);
    bind(emit("GroupNorm", {x}, {{"groups", groups}, {"eps", attr_float(node, "epsilon", 1e-5)}}));
  }

  void clip() {
    int x = runtime(0);
    double low = -INFINITY, high = INFINITY;
    if (has_input(1)) low = scalar(1);
    if (has_input(2)) high = scalar(2);
    if (find_attr(node, "min")) low = attr_float(node, "min", low);
    if (find_attr(node, "max")) high = attr_float(node, "max", high);
    bind(emit(low == 0.0 && std::isinf(high) ? "ReLU" : "ReLU6", {x}));
  }

  void pool(bool max) {
    int x = runtime(0);
    if (shape_of(x).rank() != 4) fail("dnncast imports 2-D pooling (input N x C x H x W)");
    std::vector<int64_t> kernel = attr_ints(node, "kernel_shape", {});
    if (kernel.size() != 2) fail("attribute 'kernel_shape' needs 2 values");
    Attrs attrs{{"kernel", kernel},
                {"stride", attr_ints(node, "strides", {1, 1})},
                {"padding", symmetric_pads(2)},
                {"ceil_mode", attr_int(node, "ceil_mode", 0)}};
    if (max) {
      std::vector<int64_t> dilation = attr_ints(node, "dilations", {1, 1});
      if (dilation != std::vector<int64_t>{1, 1}) attrs["dilation"] = dilation;
      check_no_extra_outputs(1);
    } else {
      attrs["count_include_pad"] = attr_int(node, "count_include_pad", 0);
    }
    bind(emit(max ? "MaxPool2d" : "AvgPool2d", {x}, attrs));
  }

  // Add, Sub, Mul, Div with a runtime tensor and a constant, or two runtime tensors.
  void binary() {
    const std::string& op = node.op_type();
    const Constant* left = context.constant(input(0));
    const Constant* right = context.constant(input(1));
    if (left == nullptr && right == nullptr) {
      bind(emit(op == "Add" || op == "Sub" ? "Add" : "Mul", {runtime(0), runtime(1)}));
      return;
    }
    int x = left == nullptr ? runtime(0) : runtime(1);
    const Constant& c = left == nullptr ? *right : *left;
    const TensorShape& shape = shape_of(x);
    if (!c.parameter.empty() && (op == "Add") && shape.rank() == 3 && c.dims.size() >= 2 && c.dims.back() == shape[2]) {
      context.used_parameters.insert(c.parameter);
      // A learned table added; its parameters are the whole table, also when a slice or gather of it is
      // added (Hugging Face's position_ids).
      const Constant* table = context.constant(c.parameter);
      int64_t elements = table != nullptr && table->numel() % shape[2] == 0 ? table->numel() : c.numel();
      bind(emit("PositionEmbedding", {x}, {{"length", elements / shape[2]}}));
      return;
    }
    if (!c.parameter.empty() && op == "Mul" && shape.rank() >= 2 && c.numel() == shape[1]) {
      context.used_parameters.insert(c.parameter);
      bind(emit("LayerScale", {x}, {{"axis", int64_t{1}}}));
      return;
    }
    if (c.dims.size() > shape.dims.size() || c.numel() > shape.numel())
      fail("a constant operand of shape " + TensorShape(c.dims).to_string() + " that widens " + shape.to_string());
    bind(x);  // a constant offset or factor: no op of the IR (docs/ONNX.md)
  }

  void split() {
    int x = runtime(0);
    int rank = shape_of(x).rank();
    int64_t axis = attr_int(node, "axis", 0);
    if (axis < -rank || axis >= rank) fail("axis out of range");
    if (axis < 0) axis += rank;
    int64_t size = shape_of(x)[static_cast<int>(axis)];
    std::vector<int64_t> parts = has_input(1) ? ints(1) : attr_ints(node, "split", {});
    if (parts.empty())
      parts.assign(static_cast<size_t>(node.output_size()), node.output_size() > 0 ? size / node.output_size() : 0);
    if (static_cast<int>(parts.size()) != node.output_size()) fail("split sizes do not match the outputs");
    int64_t start = 0;
    for (size_t part = 0; part < parts.size(); ++part) {
      if (parts[part] <= 0 || start + parts[part] > size) fail("split sizes do not add up to " + std::to_string(size));
      bind(emit("Slice", {x}, {{"axis", axis}, {"start", start}, {"end", start + parts[part]}, kSplitPart},
                "#" + std::to_string(part)),
           static_cast<int>(part));
      start += parts[part];
    }
  }

  void slice() {
    int x = runtime(0);
    std::vector<int64_t> starts = ints(1), ends = ints(2);
    std::vector<int64_t> axes = has_input(3) ? ints(3) : std::vector<int64_t>();
    if (axes.empty())
      for (size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<int64_t>(a));
    if (has_input(4))
      for (int64_t step : ints(4))
        if (step != 1) fail("steps other than 1 are not supported");
    if (starts.size() != ends.size() || starts.size() != axes.size()) fail("starts, ends and axes differ in length");
    for (size_t a = 0; a < axes.size(); ++a) {
      int rank = shape_of(x).rank();
      if (axes[a] < -rank || axes[a] >= rank) fail("axis out of range");
      int axis = static_cast<int>(axes[a] < 0 ? axes[a] + rank : axes[a]);
      int64_t size = shape_of(x)[axis];
      auto clamp = [size](int64_t at) { return std::min(std::max(at < 0 ? at + size : at, int64_t{0}), size); };
      int64_t begin = clamp(starts[a]), end = clamp(ends[a]);
      if (begin == 0 && end == size) continue;
      x = emit("Slice", {x}, {{"axis", int64_t{axis}}, {"start", begin}, {"end", end}},
               a == 0 ? "" : "#" + std::to_string(a));
    }
    bind(x);
  }

  void reshape_to(int x, std::vector<int64_t> dims) { bind(emit("Reshape", {x}, {{"shape", std::move(dims)}})); }

  void squeeze(bool un) {
    int x = runtime(0);
    std::vector<int64_t> axes = has_input(1) ? ints(1) : attr_ints(node, "axes", {});
    std::vector<int64_t> dims = shape_of(x).dims;
    int64_t rank = static_cast<int64_t>(dims.size()) + (un ? static_cast<int64_t>(axes.size()) : 0);
    std::vector<bool> chosen(static_cast<size_t>(rank), false);
    for (int64_t axis : axes) {
      if (axis < -rank || axis >= rank) fail("axis out of range");
      chosen[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
    }
    std::vector<int64_t> out;
    for (int64_t axis = 0, from = 0; axis < rank; ++axis) {
      if (un) {
        out.push_back(chosen[static_cast<size_t>(axis)] ? 1 : dims[static_cast<size_t>(from++)]);
      } else if (!(chosen[static_cast<size_t>(axis)] || (axes.empty() && dims[static_cast<size_t>(axis)] == 1))) {
        out.push_back(dims[static_cast<size_t>(axis)]);
      } else if (dims[static_cast<size_t>(axis)] != 1) {
        fail("cannot squeeze axis " + std::to_string(axis) + " of size " +
             std::to_string(dims[static_cast<size_t>(axis)]));
      }
    }
    if (out.empty()) out.push_back(1);
    reshape_to(x, out);
  }

  void gather() {
    const Constant* table = context.constant(input(0));
    if (table != nullptr) {
      const Constant& w = weight(0, 2);
      if (attr_int(node, "axis", 0) != 0) fail("a table is gathered along axis 0 only");
      int ir = emit("Embedding", {runtime(1)}, {{"num_embeddings", w.dims[0]}, {"embedding_dim", w.dims[1]}});
      context.embedding_of.emplace(w.parameter, context.builder.graph().node(ir).name);
      bind(ir);
      return;
    }
    int x = runtime(0);
    std::vector<int64_t> picks = ints(1);
    const Constant* indices = context.constant(input(1));
    int rank = shape_of(x).rank();
    int64_t axis = attr_int(node, "axis", 0);
    if (axis < -rank || axis >= rank) fail("axis out of range");
    if (axis < 0) axis += rank;
    if (picks.size() != 1) fail("gathering several indices of a computed tensor is not supported");
    int64_t size = shape_of(x)[static_cast<int>(axis)];
    int64_t at = picks[0] < 0 ? picks[0] + size : picks[0];
    if (at < 0 || at >= size) fail("index " + std::to_string(picks[0]) + " is out of range");
    int y = emit("Slice", {x}, {{"axis", axis}, {"start", at}, {"end", at + 1}});
    if (!indices->dims.empty()) return bind(y);
    if (axis == 1 && rank == 3) return bind(emit("Flatten", {y}, {{"start_dim", int64_t{1}}}, "#flatten"));
    std::vector<int64_t> dims = shape_of(x).dims;
    dims.erase(dims.begin() + axis);
    bind(emit("Reshape", {y}, {{"shape", dims}}, "#squeeze"));
  }

  void concat() {
    std::vector<int> xs;
    const Constant* token = nullptr;
    for (int i = 0; i < node.input_size(); ++i) {
      const Constant* c = context.constant(input(i));
      if (c == nullptr)
        xs.push_back(runtime(i));
      else if (!c->parameter.empty() && i == 0)
        token = c;
      else
        fail("input " + std::to_string(i) + " is a constant, which dnncast cannot concatenate");
    }
    if (token != nullptr) {
      if (xs.size() != 1 || shape_of(xs[0]).rank() != 3 || attr_int(node, "axis", 0) != 1)
        fail("a learned token is prepended to one N x L x D tensor along axis 1 only");
      context.used_parameters.insert(token->parameter);
      return bind(emit("ClassToken", {xs[0]}));
    }
    bind(emit("Concat", xs, {{"axis", attr_int(node, "axis", 1)}}));
  }

  void unknown() {
    std::vector<int> xs;
    for (int i = 0; i < node.input_size(); ++i)
      if (has_input(i) && context.constant(input(i)) == nullptr) xs.push_back(runtime(i));
    if (xs.empty()) fail("an unsupported op without computed inputs");
    Attrs attrs{{"onnx_op", node.op_type()}};
    int y = xs.size() == 1 ? emit("Sigmoid", xs, attrs) : emit("Add", {xs[0], xs[1]}, attrs);
    for (size_t i = 2; i < xs.size(); ++i) y = emit("Add", {y, xs[i]}, attrs, "#" + std::to_string(i));
    bind(y);
  }

  void run();
};

void Translator::run() {
  const std::string& op = node.op_type();
  static const std::map<std::string, std::string> kUnary{
      {"Relu", "ReLU"}, {"LeakyRelu", "ReLU"},          {"Sigmoid", "Sigmoid"},
      {"Tanh", "Tanh"}, {"HardSigmoid", "Hardsigmoid"}, {"HardSwish", "Hardswish"},
      {"Gelu", "GELU"}};
  auto unary = kUnary.find(op);
  if (unary != kUnary.end()) return bind(emit(unary->second, {runtime(0)}));
  if (op == "Conv" || op == "ConvTranspose") return conv(op == "ConvTranspose");
  if (op == "Gemm") return gemm();
  if (op == "MatMul") return matmul();
  if (op == "BatchNormalization") return batch_norm();
  if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "GroupNormalization") return norm();
  if (op == "Clip") return clip();
  if (op == "MaxPool" || op == "AveragePool") return pool(op == "MaxPool");
  if (op == "GlobalAveragePool")
    return bind(emit("AdaptiveAvgPool2d", {runtime(0)}, {{"output_size", std::vector<int64_t>{1, 1}}}));
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return binary();
  if (op == "Pow" || op == "Sqrt" || op == "Erf" || op == "Neg" || op == "Identity" || op == "Cast") {
    // outside the patterns, an element-wise op the IR has no node for (docs/ONNX.md)
    return bind(runtime(0));
  }
  if (op == "ReduceMean") {  // x.mean([2, 3]) of N x C x H x W: a global average pool
    int x = runtime(0);
    std::vector<int64_t> axes = has_input(1) ? ints(1) : attr_ints(node, "axes", {});
    int rank = shape_of(x).rank();
    for (int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
    if (rank != 4 || (axes != std::vector<int64_t>{2, 3} && axes != std::vector<int64_t>{3, 2}))
      fail("ReduceMean outside a LayerNorm pattern is supported over the spatial axes of N x C x H x W only");
    int y = emit("AdaptiveAvgPool2d", {x}, {{"output_size", std::vector<int64_t>{1, 1}}});
    if (attr_int(node, "keepdims", 1) != 0) return bind(y);
    return bind(emit("Flatten", {y}, {{"start_dim", int64_t{1}}}, "#flatten"));
  }
  if (op == "Pad") {  // PyTorch exports avg_pool2d without padding as a Pad of zeros first
    int x = runtime(0);
    std::vector<int64_t> pads = has_input(1) ? ints(1) : attr_ints(node, "pads", {});
    for (int64_t pad : pads)
      if (pad != 0) fail("Pad with non-zero pads is not supported (give the padding to the convolution or pool)");
    return bind(x);
  }
  if (op == "Concat") return concat();
  if (op == "Split") return split();
  if (op == "Slice") return slice();
  if (op == "Flatten") {
    int x = runtime(0);
    int64_t axis = attr_int(node, "axis", 1);
    if (axis == 1) return bind(emit("Flatten", {x}, {{"start_dim", int64_t{1}}}));
    const std::vector<int64_t>& dims = shape_of(x).dims;
    if (axis < 0) axis += static_cast<int64_t>(dims.size());
    if (axis < 0 || axis > static_cast<int64_t>(dims.size())) fail("axis out of range");
    int64_t outer = 1;
    for (int64_t a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
    return reshape_to(x, {outer, -1});
  }
  if (op == "Reshape") {
    if (attr_int(node, "allowzero", 0) != 0) fail("allowzero = 1 is not supported");
    int x = runtime(0);
    return reshape_to(x, ints(1));
  }
  if (op == "Transpose") {
    int x = runtime(0);
    std::vector<int64_t> perm = attr_ints(node, "perm", {});
    if (perm.empty())
      for (int a = shape_of(x).rank(); a-- > 0;) perm.push_back(a);
    return bind(emit("Permute", {x}, {{"dims", perm}}));
  }
  if (op == "Squeeze" || op == "Unsqueeze") return squeeze(op == "Unsqueeze");
  if (op == "Softmax") return bind(emit("Softmax", {runtime(0)}, {{"axis", attr_int(node, "axis", -1)}}));
  if (op == "Gather") return gather();
  if (op == "Dropout") {
    double p = has_input(1) ? context.constant(input(1)) && context.constant(input(1))->has_values ? scalar(1) : 0.5
                            : attr_float(node, "ratio", 0.5);
    check_no_extra_outputs(1);
    if (p == 0.0) {  // F.dropout(p=0) returns its input (ViT's dropout 0.0): no node, as the zoo builds it
      runtime(0);    // checked: a computed tensor
      context.values[node.output(0)] = context.values.at(input(0));
      return;
    }
    return bind(emit("Dropout", {runtime(0)}, {{"p", float_as_written(static_cast<float>(p))}}));
  }
  if (context.unknown_count.count(node.domain().empty() || node.domain() == "ai.onnx" ? op : node.domain() + "." + op))
    return unknown();  // check_unknown_ops let it through: --allow-unknown
  fail("this op is supported only on constants known at import, not on a computed tensor");
}

}  // namespace

void translate_node(Context& context, int index) {
  Translator translator{context, index, context.node(index)};
  translator.run();
}

}  // namespace dnncast::import::detail
