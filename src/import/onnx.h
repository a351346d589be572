// ONNX import (Debian's libonnx 1.12 / protobuf 3.21): a ModelProto of opset 11..17 into the IR.
// Initializers become the parameters of the ops that use them; chains that only compute shapes
// (Shape, Gather, Unsqueeze, Concat, Constant, ConstantOfShape, Cast, ...) are folded at import;
// the patterns PyTorch exports (Erf GELU, x * sigmoid(x), LayerNorm chains, Clip 0..6, Gather of a
// table, scaled-dot-product attention, MatMul + bias) become the IR's ops. docs/ONNX.md lists them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast::import {

struct OnnxOptions {
  int64_t batch = 0;           // replaces the first dimension of every input; 0: the file's (1 if dynamic)
  std::vector<int64_t> input;  // C x H x W for rank-4 inputs; empty: the file's
  int64_t seq_len = 0;         // L for rank-2 (N x L) inputs; 0: the file's
  bool allow_unknown = false;  // unsupported ops become elementwise nodes (attribute "onnx_op") with a warning
};

// Largest ONNX file read (protobuf's own limit is 2 GiB); nesting deeper than this is refused.
inline constexpr int64_t kMaxOnnxFileBytes = int64_t{2} << 30;
inline constexpr int kMaxOnnxNesting = 64;

// Parses `bytes` (a serialized ModelProto) named `source` in messages. Throws InputError with one
// line naming the source and, where one is to blame, the node: "model.onnx: node 'Conv_3' (Conv): ...".
// Warnings (unknown ops allowed) go to stderr, one per op type.
Graph read_onnx(const std::string& bytes, const std::string& source, const OnnxOptions& options);
Graph load_onnx_file(const std::string& path, const OnnxOptions& options);

}  // namespace dnncast::import
