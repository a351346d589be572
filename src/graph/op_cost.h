// What one node of the graph costs (op_registry.h's rules compute it; Graph keeps what infer_node computed):
// MACs, FLOPs forward and backward, parameters, bytes, and the tensors it keeps for backward.
#pragma once

#include <cstdint>
#include <vector>

namespace dnncast {

// A tensor kept alive from forward to backward.
struct SavedTensor {
  enum class Kind { Input, Output, Extra };
  Kind kind;
  int index;         // input position for Kind::Input; 0 otherwise
  int64_t bytes;     // size of the saved tensor
  const char* what;  // a literal: "input", "output", "mask", "indices", "mean+invstd", ... (every node's cost holds a
                     // few: a pointer keeps them trivially copied, 24 bytes each)
};

struct OpCost {
  int64_t macs = 0;                // multiply-accumulates of conv/linear/matmul, forward
  int64_t flops_fwd = 0;           // floating point operations, forward (a MAC counts 2)
  int64_t flops_bwd = 0;           // floating point operations, backward (input + weight grads)
  int64_t params = 0;              // parameters the op owns (frozen ones included)
  int64_t frozen_params = 0;       // of those, the ones that do not require grad (Node::frozen)
  int64_t buffers = 0;             // non-trainable state (BatchNorm running stats), elements
  int64_t bytes_read = 0;          // forward: inputs + parameters read
  int64_t bytes_written = 0;       // forward: output written
  std::vector<SavedTensor> saved;  // kept for backward

  int64_t saved_bytes() const;
};

}  // namespace dnncast
