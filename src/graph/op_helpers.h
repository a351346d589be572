// Small helpers shared by the op declarations (internal to src/graph).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <variant>
#include <vector>

#include "core/checked.h"
#include "graph/op_registry.h"

namespace dnncast::ops {

inline int64_t bytes_of(const TensorShape& shape, DType dtype) {
  return checked_mul(shape.numel(), dtype_bytes(dtype));
}
inline int64_t out_bytes(const OpView& view) { return bytes_of(view.node.shape, view.node.dtype); }
inline int64_t in_bytes(const OpView& view, int index) { return bytes_of(view.in(index), view.in_dtype(index)); }
inline int64_t all_in_bytes(const OpView& view) {
  int64_t total = 0;
  for (size_t index = 0; index < view.inputs.size(); ++index)
    total = checked_add(total, in_bytes(view, static_cast<int>(index)));
  return total;
}

// A 2-D attribute given as one value or two ([h, w]).
inline std::array<int64_t, 2> pair_attr(const OpView& view, const std::string& key, int64_t fallback) {
  // One map lookup and no copy when the attribute is a list of two (every node of every forecast runs this).
  auto found = view.node.attrs.find(key);
  if (found == view.node.attrs.end()) return {fallback, fallback};
  if (const auto* list = std::get_if<std::vector<int64_t>>(&found->second); list != nullptr && list->size() == 2)
    return {(*list)[0], (*list)[1]};
  std::vector<int64_t> values = view.node.attr_ints(key);
  if (values.size() == 1) values.push_back(values[0]);
  if (values.size() != 2) view.fail("attribute '" + key + "' needs 1 or 2 values");  // the message only on failure
  return {values[0], values[1]};
}

// Output length of a sliding window (conv/pool), PyTorch's formula (pooling_output_shape): the
// division rounds toward minus infinity, so a window wider than the padded input has no position
// (0: the caller refuses it, as PyTorch does) unless ceil_mode keeps one partial window.
inline int64_t window_out(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                          bool ceil_mode) {
  int64_t numerator = size + 2 * padding - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t quotient = numerator / stride;
  if (numerator % stride != 0 && numerator < 0) --quotient;  // floor, not C++'s truncation
  int64_t out = quotient + 1;
  // PyTorch: with ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * stride >= size + padding) --out;
  return out;
}

inline SavedTensor saved_input(const OpView& view, int index, const char* what = "input") {
  return {SavedTensor::Kind::Input, index, in_bytes(view, index), what};
}
inline SavedTensor saved_output(const OpView& view, const char* what = "output") {
  return {SavedTensor::Kind::Output, 0, out_bytes(view), what};
}
inline SavedTensor saved_extra(int64_t bytes, const char* what) { return {SavedTensor::Kind::Extra, 0, bytes, what}; }

// Axis in [-rank, rank) -> [0, rank); InputError naming the node otherwise.
inline int normalize_axis(const OpView& view, int64_t axis, int rank) {
  int64_t normal = axis < 0 ? axis + rank : axis;
  if (!(normal >= 0 && normal < rank))
    view.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int>(normal);
}

// NumPy broadcasting of two shapes (trailing dimensions aligned).
inline std::vector<int64_t> broadcast_dims(const OpView& view, const std::vector<int64_t>& left_dims,
                                           const std::vector<int64_t>& right_dims) {
  size_t rank = std::max(left_dims.size(), right_dims.size());
  std::vector<int64_t> dims(rank);
  for (size_t axis = 0; axis < rank; ++axis) {
    int64_t left = axis < rank - left_dims.size() ? 1 : left_dims[axis - (rank - left_dims.size())];
    int64_t right = axis < rank - right_dims.size() ? 1 : right_dims[axis - (rank - right_dims.size())];
    if (!(left == right || left == 1 || right == 1))
      view.fail("cannot broadcast " + TensorShape(left_dims).to_string() + " with " +
                TensorShape(right_dims).to_string());
    dims[axis] = std::max(left, right);
  }
  return dims;
}

inline int64_t product(const std::vector<int64_t>& dims) {
  int64_t result = 1;
  for (int64_t dim : dims) result = checked_mul(result, dim);
  return result;
}

inline void require_rank(const OpView& view, int input, int rank) {
  // The message built only on failure: shape inference runs this for every node of every forecast (issue 37).
  if (view.in(input).rank() != rank)
    view.fail("expected rank " + std::to_string(rank) + " input, got " + std::to_string(view.in(input).rank()) + " (" +
              view.in(input).to_string() + ")");
}

}  // namespace dnncast::ops
