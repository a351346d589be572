// Tensor shapes and element types of the IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dnncast {

enum class DType : uint8_t { F32, F16, BF16, I64 };

int64_t dtype_bytes(DType dtype);
const char* dtype_name(DType dtype);         // "f32", "f16", "bf16", "i64"
DType parse_dtype(const std::string& name);  // throws InputError

// Static shape, outermost dimension first (NCHW for images, N x L x D for sequences).
struct TensorShape {
  std::vector<int64_t> dims;

  TensorShape() = default;
  TensorShape(std::initializer_list<int64_t> list) : dims(list) {}
  explicit TensorShape(std::vector<int64_t> list) : dims(std::move(list)) {}

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t numel() const;
  int64_t operator[](int axis) const { return dims.at(static_cast<size_t>(axis)); }
  std::string to_string() const;  // "1x3x224x224"
  bool operator==(const TensorShape& other) const { return dims == other.dims; }
  bool operator!=(const TensorShape& other) const { return dims != other.dims; }
};

// Parses "3x224x224" (or "3,224,224"); throws InputError naming the text.
TensorShape parse_shape(const std::string& text);

}  // namespace dnncast
