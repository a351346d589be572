// Overflow-checked int64 arithmetic for shapes and costs, and the bounds every graph obeys.
// A product past int64 (or past a bound) comes from the input, so it is an InputError, never
// wrapped arithmetic: Graph::infer_node adds the node's name to the message.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace dnncast {

// No real network has a tensor (activation or parameter) near 2^40 elements: 4 TiB in fp32.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
// A graph's nodes, whatever built it (zoo, config.json, ONNX, graph JSON, LoRA added): the memory one request takes
// grows with them, about 3.8 KB a node for `inspect --json` and 2.6 KB for `memory` (10,000 decoder layers of
// tests/models/hf_configs/llama-small-tied.json: 260,004 nodes, 979 MB and 674 MB peak; docs/FUZZING.md), so this
// keeps one request near 1 GB.
inline constexpr int64_t kMaxGraphNodes = int64_t{1} << 18;
// Every integer attribute (and the CLI options that become one) stays within this magnitude.
inline constexpr int64_t kMaxIntegerAttr = (int64_t{1} << 31) - 1;

// Thrown by the helpers below; an InputError, so it reaches the user as exit 2 wherever it escapes.
class ArithmeticOverflow : public InputError {
 public:
  explicit ArithmeticOverflow(const std::string& message) : InputError(message) {}
};

inline int64_t checked_mul(int64_t left, int64_t right) {
  int64_t result = 0;
  if (__builtin_mul_overflow(left, right, &result))
    throw ArithmeticOverflow(std::to_string(left) + " x " + std::to_string(right) + " overflows int64");
  return result;
}

inline int64_t checked_add(int64_t left, int64_t right) {
  int64_t result = 0;
  if (__builtin_add_overflow(left, right, &result))
    throw ArithmeticOverflow(std::to_string(left) + " + " + std::to_string(right) + " overflows int64");
  return result;
}

inline int64_t checked_product(std::initializer_list<int64_t> factors) {
  int64_t result = 1;
  for (int64_t factor : factors) result = checked_mul(result, factor);
  return result;
}

inline int64_t checked_sum(std::initializer_list<int64_t> terms) {
  int64_t result = 0;
  for (int64_t term : terms) result = checked_add(result, term);
  return result;
}

}  // namespace dnncast
