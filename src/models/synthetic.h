// Seeded generator of random, always-valid CNN architectures, so that thousands of networks
// nobody designed can be profiled (DNNAbacus profiled 5,500). The seed fixes the architecture:
// same seed and spec -> the same graph and architecture_hash(), on every platform.
//
// A network is a stem, 3 to 40 blocks in 1 to 5 stages, and a classifier head. Blocks are drawn
// from a per-network palette: plain conv chains, residual blocks (basic or bottleneck, grouped
// or not, with a 1x1 projection when the shape changes), inception-style branches joined by
// Concat, depthwise-separable / inverted-residual blocks, each optionally followed by
// squeeze-excite. Widths 8..512 channels, kernels 1/3/5/7, activation ReLU, ReLU6, SiLU, GELU
// or Hardswish, BatchNorm on or off. Parameters stay under kSyntheticMaxParams and MACs at
// 3x224x224 under 10 G (widths shrink until both fit), so every network can be profiled on a
// small CPU.
//
// The input size only clips downsampling: a stride-2 step is made stride 1 (or a pooling step
// left out) where the feature map is smaller than 4x4, so any input from 1x1 up is valid.
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast::models {

inline constexpr int64_t kSyntheticMaxParams = 25'000'000;

// spec.input: C x H x W (empty = 3x224x224); spec.batch > 0; spec.num_classes > 0.
// Graph name "synthetic:SEED", family "synthetic". Throws InputError on a bad spec
// (a sequence length without an image input, a non-positive dimension, ...).
Graph make_synthetic(uint64_t seed, const ModelSpec& spec);

}  // namespace dnncast::models
