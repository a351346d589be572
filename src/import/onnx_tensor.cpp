// Tensors and attributes of ONNX nodes, read with every size checked before anything is allocated.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/checked.h"
#include "core/error.h"
#include "import/onnx_internal.h"

namespace dnncast::import::detail {

int64_t Constant::numel() const {
  int64_t count = 1;
  for (int64_t dim : dims) count *= dim;  // bounded by read_tensor / the folds
  return count;
}

namespace {

int64_t element_bytes(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      return 8;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

double raw_element(const std::string& raw, int32_t elem_type, int64_t index) {
  const char* at = raw.data() + index * element_bytes(elem_type);
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case onnx::TensorProto::DOUBLE: {
      double v;
      std::memcpy(&v, at, 8);
      return v;
    }
    case onnx::TensorProto::INT64: {
      int64_t v;
      std::memcpy(&v, at, 8);
      return static_cast<double>(v);
    }
    case onnx::TensorProto::UINT64: {
      uint64_t v;
      std::memcpy(&v, at, 8);
      return static_cast<double>(v);
    }
    case onnx::TensorProto::INT32: {
      int32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case onnx::TensorProto::UINT32: {
      uint32_t v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case onnx::TensorProto::INT16: {
      int16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case onnx::TensorProto::UINT16: {
      uint16_t v;
      std::memcpy(&v, at, 2);
      return v;
    }
    case onnx::TensorProto::INT8:
      return static_cast<int8_t>(*at);
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return static_cast<uint8_t>(*at);
    default:
      return 0.0;  // float16 values are not needed to fold shapes
  }
}

// The values of the typed repeated field that holds this element type, or -1 when it is not one we read.
int64_t typed_count(const onnx::TensorProto& tensor) {
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      return tensor.float_data_size();
    case onnx::TensorProto::DOUBLE:
      return tensor.double_data_size();
    case onnx::TensorProto::INT64:
      return tensor.int64_data_size();
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      return tensor.uint64_data_size();
    default:
      return tensor.int32_data_size();
  }
}

double typed_element(const onnx::TensorProto& tensor, int64_t index) {
  int i = static_cast<int>(index);
  switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      return tensor.float_data(i);
    case onnx::TensorProto::DOUBLE:
      return tensor.double_data(i);
    case onnx::TensorProto::INT64:
      return static_cast<double>(tensor.int64_data(i));
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      return static_cast<double>(tensor.uint64_data(i));
    default:
      return tensor.int32_data(i);
  }
}

}  // namespace

Constant read_tensor(const onnx::TensorProto& tensor, int64_t file_bytes, const std::string& where_text) {
  Constant constant;
  constant.elem_type = tensor.data_type();
  int64_t bytes_each = element_bytes(constant.elem_type);
  if (bytes_each == 0)
    throw InputError(where_text + ": element type " + std::to_string(constant.elem_type) +
                     " is not a numeric type dnncast reads");
  int64_t elements = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0 || dim > kMaxIntegerAttr)
      throw InputError(where_text + ": dimension " + std::to_string(dim) + " is out of range (0 to " +
                       std::to_string(kMaxIntegerAttr) + ")");
    if (dim > 0 && elements > kMaxTensorElements / dim)
      throw InputError(where_text + ": more than " + std::to_string(kMaxTensorElements) + " elements");
    elements *= dim;
    constant.dims.push_back(dim);
  }
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;
  if (!external && elements > file_bytes / bytes_each)
    throw InputError(where_text + ": declares " + TensorShape(constant.dims).to_string() + " elements of " +
                     std::to_string(bytes_each) + " bytes, more than the file's " + std::to_string(file_bytes) +
                     " bytes");
  if (external) return constant;  // weights in another file: their shape is all an importer needs
  if (tensor.has_raw_data()) {
    if (static_cast<int64_t>(tensor.raw_data().size()) != elements * bytes_each)
      throw InputError(where_text + ": raw data of " + std::to_string(tensor.raw_data().size()) + " bytes, but " +
                       TensorShape(constant.dims).to_string() + " elements need " +
                       std::to_string(elements * bytes_each));
  } else {
    int64_t count = typed_count(tensor);
    if (count != elements && !(count == 0 && elements == 0))
      throw InputError(where_text + ": holds " + std::to_string(count) + " values for " + std::to_string(elements) +
                       " elements");
  }
  if (elements > kMaxFoldedElements) return constant;
  constant.has_values = true;
  constant.values.reserve(static_cast<size_t>(elements));
  for (int64_t index = 0; index < elements; ++index)
    constant.values.push_back(tensor.has_raw_data() ? raw_element(tensor.raw_data(), constant.elem_type, index)
                                                    : typed_element(tensor, index));
  return constant;
}

double float_as_written(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", static_cast<double>(value));
  return std::strtod(text, nullptr);
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& attr : node.attribute())
    if (attr.name() == name) return &attr;
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* attr = find_attr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != onnx::AttributeProto::INT)
    throw InputError(where(node) + ": attribute " + quote(name) + " must be an integer");
  if (attr->i() < -kMaxIntegerAttr || attr->i() > kMaxIntegerAttr)
    throw InputError(where(node) + ": attribute " + quote(name) + " = " + std::to_string(attr->i()) +
                     " is out of range");
  return attr->i();
}

double attr_float(const onnx::NodeProto& node, const std::string& name, double fallback) {
  const onnx::AttributeProto* attr = find_attr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != onnx::AttributeProto::FLOAT)
    throw InputError(where(node) + ": attribute " + quote(name) + " must be a float");
  if (!std::isfinite(attr->f())) throw InputError(where(node) + ": attribute " + quote(name) + " is not finite");
  return float_as_written(attr->f());
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& node, const std::string& name, std::vector<int64_t> fallback) {
  const onnx::AttributeProto* attr = find_attr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != onnx::AttributeProto::INTS)
    throw InputError(where(node) + ": attribute " + quote(name) + " must be a list of integers");
  std::vector<int64_t> list;
  for (int64_t value : attr->ints()) {
    if (value < -kMaxIntegerAttr || value > kMaxIntegerAttr)
      throw InputError(where(node) + ": attribute " + quote(name) + " holds " + std::to_string(value) +
                       ", out of range");
    list.push_back(value);
  }
  return list;
}

}  // namespace dnncast::import::detail
