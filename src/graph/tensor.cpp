#include "graph/tensor.h"

#include "core/checked.h"
#include "core/error.h"

namespace dnncast {

int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F16:
      return 2;
    case DType::BF16:
      return 2;
    case DType::I64:
      return 8;
  }
  return 4;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I64:
      return "i64";
  }
  return "f32";
}

DType parse_dtype(const std::string& name) {
  if (name == "f32" || name == "fp32" || name == "float32") return DType::F32;
  if (name == "f16" || name == "fp16" || name == "float16") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "i64" || name == "int64") return DType::I64;
  throw InputError("unknown dtype " + quote(name) + " (known: f32, f16, bf16, i64)");
}

int64_t TensorShape::numel() const {
  int64_t count = 1;
  for (int64_t d : dims) count = checked_mul(count, d);
  return count;
}

std::string TensorShape::to_string() const {
  std::string text;
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    if (axis) text += 'x';
    text += std::to_string(dims[axis]);
  }
  return text.empty() ? "scalar" : text;
}

TensorShape parse_shape(const std::string& text) {
  TensorShape shape;
  if (text.empty()) throw InputError("empty shape; expected e.g. 3x224x224");
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of("x,X", pos);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(pos, end - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9)
      throw InputError("bad shape " + quote(text) + ": expected positive integers joined by 'x', e.g. 3x224x224");
    int64_t value = std::stoll(part);
    if (value <= 0) throw InputError("bad shape " + quote(text) + ": every dimension must be positive");
    shape.dims.push_back(value);
    pos = end + 1;
  }
  return shape;
}

}  // namespace dnncast
