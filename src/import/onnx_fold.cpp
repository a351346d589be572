// Folding of constant chains at import: the shape computations PyTorch exports around Reshape
// (Shape -> Gather -> Unsqueeze -> Concat), constants, casts, and views of parameter tables.
#include <algorithm>
#include <cmath>

#include "core/checked.h"
#include "core/error.h"
#include "import/onnx_internal.h"

namespace dnncast::import::detail {

namespace {

// Input `i` of `node`, a constant (fold_constant checked that every given input is one).
const Constant& const_input(const Context& context, const onnx::NodeProto& node, int i) {
  const Constant* constant = i < node.input_size() ? context.constant(node.input(i)) : nullptr;
  if (constant == nullptr) throw InputError(where(node) + ": missing input " + std::to_string(i));
  return *constant;
}

int64_t normalize(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw InputError(what + " axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + rank : axis;
}

Constant with_dims(std::vector<int64_t> dims, int32_t elem_type) {
  Constant out;
  out.dims = std::move(dims);
  out.elem_type = elem_type;
  int64_t count = 1;
  for (int64_t dim : out.dims) {
    if (dim < 0 || (dim > 0 && count > kMaxTensorElements / dim)) throw InputError("folded tensor is too large");
    count *= dim;
  }
  return out;
}

std::vector<int64_t> ints_of(const Constant& constant, const std::string& what) {
  if (!constant.has_values) throw InputError(what + " is not known at import");
  std::vector<int64_t> list;
  for (double value : constant.values) {
    if (!std::isfinite(value)) throw InputError(what + " holds a value that is not finite");
    list.push_back(value >= 9.2e18 ? INT64_MAX : value <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(value));
  }
  return list;
}

// NumPy broadcasting of two constants' elements with `op`.
Constant broadcast(const Constant& a, const Constant& b, double (*op)(double, double)) {
  size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> dims(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t left = axis < rank - a.dims.size() ? 1 : a.dims[axis - (rank - a.dims.size())];
    int64_t right = axis < rank - b.dims.size() ? 1 : b.dims[axis - (rank - b.dims.size())];
    if (left != right && left != 1 && right != 1) throw InputError("cannot broadcast constant shapes");
    dims[axis] = left == 1 ? right : left;
  }
  Constant out = with_dims(dims, a.elem_type);
  if (!a.has_values || !b.has_values || out.numel() > kMaxFoldedElements) return out;
  out.has_values = true;
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t rest = flat, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (size_t axis = rank; axis-- > 0;) {
      int64_t coord = rest % dims[axis];
      rest /= dims[axis];
      int64_t da = axis < rank - a.dims.size() ? 1 : a.dims[axis - (rank - a.dims.size())];
      int64_t db = axis < rank - b.dims.size() ? 1 : b.dims[axis - (rank - b.dims.size())];
      ia += (da == 1 ? 0 : coord) * stride_a;
      ib += (db == 1 ? 0 : coord) * stride_b;
      stride_a *= da;
      stride_b *= db;
    }
    out.values.push_back(op(a.values[static_cast<size_t>(ia)], b.values[static_cast<size_t>(ib)]));
  }
  bool integer = a.elem_type != onnx::TensorProto::FLOAT && a.elem_type != onnx::TensorProto::DOUBLE;
  if (integer)
    for (double& value : out.values) value = std::trunc(value);
  return out;
}

Constant constant_node(const onnx::NodeProto& node) {
  if (const onnx::AttributeProto* value = find_attr(node, "value"))
    return read_tensor(value->t(), kMaxOnnxFileBytes, where(node));
  Constant out;
  out.has_values = true;
  if (const onnx::AttributeProto* f = find_attr(node, "value_float")) {
    out.values = {f->f()};
  } else if (const onnx::AttributeProto* i = find_attr(node, "value_int")) {
    out.elem_type = onnx::TensorProto::INT64;
    out.values = {static_cast<double>(i->i())};
  } else if (const onnx::AttributeProto* ints = find_attr(node, "value_ints")) {
    out.elem_type = onnx::TensorProto::INT64;
    if (ints->ints_size() > kMaxFoldedElements) throw InputError(where(node) + ": too many values");
    for (int64_t v : ints->ints()) out.values.push_back(static_cast<double>(v));
    out.dims = {static_cast<int64_t>(out.values.size())};
  } else if (const onnx::AttributeProto* floats = find_attr(node, "value_floats")) {
    if (floats->floats_size() > kMaxFoldedElements) throw InputError(where(node) + ": too many values");
    for (float v : floats->floats()) out.values.push_back(v);
    out.dims = {static_cast<int64_t>(out.values.size())};
  } else {
    throw InputError(where(node) + ": a Constant without a value");
  }
  return out;
}

Constant gather(const Constant& data, const Constant& indices, int64_t axis_attr) {
  int64_t rank = static_cast<int64_t>(data.dims.size());
  int64_t axis = normalize(axis_attr, rank, "Gather");
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  Constant out = with_dims(dims, data.elem_type);
  out.parameter = data.parameter;
  if (!data.has_values || !indices.has_values || out.numel() > kMaxFoldedElements) return out;
  int64_t outer = 1, inner = 1, size = data.dims[static_cast<size_t>(axis)];
  for (int64_t a = 0; a < axis; ++a) outer *= data.dims[static_cast<size_t>(a)];
  for (int64_t a = axis + 1; a < rank; ++a) inner *= data.dims[static_cast<size_t>(a)];
  std::vector<int64_t> picks = ints_of(indices, "Gather indices");
  out.has_values = true;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t pick : picks) {
      if (pick < -size || pick >= size) throw InputError("Gather index " + std::to_string(pick) + " is out of range");
      int64_t row = pick < 0 ? pick + size : pick;
      for (int64_t i = 0; i < inner; ++i)
        out.values.push_back(data.values[static_cast<size_t>((o * size + row) * inner + i)]);
    }
  return out;
}

Constant concat(const std::vector<const Constant*>& parts, int64_t axis_attr) {
  const Constant& first = *parts.at(0);
  int64_t rank = static_cast<int64_t>(first.dims.size());
  int64_t axis = normalize(axis_attr, rank, "Concat");
  if (axis != 0 || rank != 1) throw InputError("Concat of constants is folded along axis 0 of 1-D tensors only");
  Constant out = with_dims({0}, first.elem_type);
  out.has_values = true;
  for (const Constant* part : parts) {
    if (part->dims.size() != 1 || !part->has_values) throw InputError("Concat of constants needs 1-D known tensors");
    out.values.insert(out.values.end(), part->values.begin(), part->values.end());
  }
  out.dims = {static_cast<int64_t>(out.values.size())};
  if (out.dims[0] > kMaxFoldedElements) throw InputError("folded tensor is too large");
  return out;
}

Constant slice(const Context& context, const onnx::NodeProto& node, const Constant& data) {
  std::vector<int64_t> starts = ints_of(const_input(context, node, 1), "Slice starts");
  std::vector<int64_t> ends = ints_of(const_input(context, node, 2), "Slice ends");
  if (data.dims.size() != 1 || starts.size() != 1 || ends.size() != 1 ||
      (node.input_size() > 4 && !node.input(4).empty()))
    throw InputError("Slice of constants is folded for 1-D tensors with step 1 only");
  int64_t size = data.dims[0];
  auto clamp = [size](int64_t at) { return std::min(std::max(at < 0 ? at + size : at, int64_t{0}), size); };
  int64_t begin = clamp(starts[0]), end = std::max(clamp(ends[0]), begin);
  Constant out = with_dims({end - begin}, data.elem_type);
  if (!data.has_values) return out;
  out.has_values = true;
  out.values.assign(data.values.begin() + begin, data.values.begin() + end);
  return out;
}

Constant unsqueeze(const Context& context, const onnx::NodeProto& node, const Constant& data) {
  std::vector<int64_t> axes =
      node.input_size() > 1 ? ints_of(const_input(context, node, 1), "Unsqueeze axes") : attr_ints(node, "axes", {});
  std::vector<int64_t> dims = data.dims;
  int64_t rank = static_cast<int64_t>(dims.size() + axes.size());
  std::vector<int64_t> sorted;
  for (int64_t axis : axes) sorted.push_back(normalize(axis, rank, "Unsqueeze"));
  std::sort(sorted.begin(), sorted.end());
  for (int64_t axis : sorted) dims.insert(dims.begin() + std::min<int64_t>(axis, static_cast<int64_t>(dims.size())), 1);
  Constant out = data;
  out.dims = dims;
  return out;
}

bool fold_values(Context& context, const onnx::NodeProto& node, Constant& out) {
  const std::string& op = node.op_type();
  auto in = [&](int i) -> const Constant& { return const_input(context, node, i); };
  if (op == "Constant")
    out = constant_node(node);
  else if (op == "Identity" || op == "Cast") {
    out = in(0);
    if (op == "Cast") out.elem_type = static_cast<int32_t>(attr_int(node, "to", 1));
  } else if (op == "Gather")
    out = gather(in(0), in(1), attr_int(node, "axis", 0));
  else if (op == "Unsqueeze")
    out = unsqueeze(context, node, in(0));
  else if (op == "Slice")
    out = slice(context, node, in(0));
  else if (op == "Concat") {
    std::vector<const Constant*> parts;
    for (int i = 0; i < node.input_size(); ++i) parts.push_back(&const_input(context, node, i));
    if (parts.empty()) throw InputError(where(node) + ": Concat without inputs");
    out = concat(parts, attr_int(node, "axis", 0));
  } else if (op == "Add")
    out = broadcast(in(0), in(1), [](double a, double b) { return a + b; });
  else if (op == "Sub")
    out = broadcast(in(0), in(1), [](double a, double b) { return a - b; });
  else if (op == "Mul")
    out = broadcast(in(0), in(1), [](double a, double b) { return a * b; });
  else if (op == "Div")
    out = broadcast(in(0), in(1), [](double a, double b) { return b == 0.0 ? 0.0 : a / b; });
  else if (op == "Equal")
    out = broadcast(in(0), in(1), [](double a, double b) { return a == b ? 1.0 : 0.0; });
  else if (op == "Sqrt") {
    out = in(0);
    for (double& v : out.values) v = std::sqrt(std::max(v, 0.0));
  } else if (op == "Neg") {
    out = in(0);
    for (double& v : out.values) v = -v;
  } else if (op == "ConstantOfShape") {
    std::vector<int64_t> dims = ints_of(in(0), "ConstantOfShape shape");
    const onnx::AttributeProto* value = find_attr(node, "value");
    Constant fill = value ? read_tensor(value->t(), kMaxOnnxFileBytes, where(node)) : Constant{};
    out = with_dims(dims, fill.elem_type);
    if (out.numel() <= kMaxFoldedElements) {
      out.has_values = true;
      out.values.assign(static_cast<size_t>(out.numel()),
                        fill.has_values && !fill.values.empty() ? fill.values[0] : 0.0);
    }
  } else if (op == "Where") {
    Constant picked = broadcast(in(0), in(1), [](double c, double x) { return c != 0.0 ? x : NAN; });
    out = broadcast(picked, in(2), [](double p, double y) { return std::isnan(p) ? y : p; });
    out.elem_type = in(1).elem_type;
  } else if (op == "Expand") {
    Constant shape = with_dims(ints_of(in(1), "Expand shape"), in(0).elem_type);
    shape.has_values = false;
    out = broadcast(in(0), shape, [](double a, double) { return a; });
    out.parameter = in(0).parameter;
  } else if (op == "Transpose") {  // a weight transposed for MatMul (Linear exported unfolded): its shape
    out = in(0);
    std::vector<int64_t> perm = attr_ints(node, "perm", {});
    if (perm.empty())
      for (size_t a = out.dims.size(); a-- > 0;) perm.push_back(static_cast<int64_t>(a));
    if (perm.size() != out.dims.size()) throw InputError("Transpose perm does not match the rank");
    for (size_t a = 0; a < perm.size(); ++a) {
      if (perm[a] < 0 || perm[a] >= static_cast<int64_t>(perm.size())) throw InputError("Transpose perm out of range");
      out.dims[a] = in(0).dims[static_cast<size_t>(perm[a])];
    }
    if (out.dims.size() > 1) out.has_values = false, out.values.clear();
  } else if (op == "Reshape") {  // a view of a constant (ViT's class token before Expand): its shape
    std::vector<int64_t> target = ints_of(in(1), "Reshape shape");
    int64_t known = 1, infer = -1;
    for (size_t a = 0; a < target.size(); ++a) {
      if (target[a] == 0 && a < in(0).dims.size()) target[a] = in(0).dims[a];
      if (target[a] == -1 && infer < 0) {
        infer = static_cast<int64_t>(a);
        continue;
      }
      if (target[a] <= 0 || target[a] > kMaxIntegerAttr)
        throw InputError("Reshape of a constant to " + TensorShape(target).to_string());
      known *= target[a];
      if (known > kMaxTensorElements) throw InputError("folded tensor is too large");
    }
    if (infer >= 0) target[static_cast<size_t>(infer)] = known > 0 ? in(0).numel() / known : 0;
    out = in(0);
    out.dims = target;
    if (out.numel() != in(0).numel()) throw InputError("Reshape of a constant changes its size");
  } else
    return false;
  return true;
}

}  // namespace

bool fold_constant(Context& context, int index) {
  const onnx::NodeProto& node = context.node(index);
  if (node.output_size() < 1) return false;
  Constant out;
  if (node.op_type() == "Shape") {
    auto found = context.values.find(node.input_size() > 0 ? node.input(0) : "");
    if (found == context.values.end()) return false;
    std::vector<int64_t> dims =
        found->second.is_runtime() ? context.shape(node.input(0)).dims : found->second.constant.dims;
    int64_t rank = static_cast<int64_t>(dims.size());
    int64_t start = attr_int(node, "start", 0), end = attr_int(node, "end", rank);
    start = std::min(std::max(start < 0 ? start + rank : start, int64_t{0}), rank);
    end = std::min(std::max(end < 0 ? end + rank : end, start), rank);
    out = with_dims({end - start}, onnx::TensorProto::INT64);
    out.has_values = true;
    for (int64_t axis = start; axis < end; ++axis)
      out.values.push_back(static_cast<double>(dims[static_cast<size_t>(axis)]));
  } else {
    for (const std::string& input : node.input())
      if (!input.empty() && !context.has_constant(input)) return false;
    if (!fold_values(context, node, out)) return false;
  }
  if (out.numel() > kMaxTensorElements) throw InputError(where(node) + ": folded tensor is too large");
  context.values[node.output(0)] = Value{-1, std::move(out)};
  return true;
}

}  // namespace dnncast::import::detail
