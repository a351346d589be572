// Which nodes may run in place: the one in-place rule that the libtorch executor follows and the
// memory simulator replays (profile/executor.cpp, memory/training_trace.cpp).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace dnncast {

// One flag per node: true when the node is a ReLU/ReLU6/SiLU/Hardswish (inplace=True in
// torchvision) whose single input has no other consumer and comes from an op that does not keep
// its output for backward (Conv2d, ConvTranspose2d, BatchNorm2d, LayerNorm, GroupNorm, Linear, and
// Add when no broadcast changed the shape). The graph's shapes must be inferred.
std::vector<bool> inplace_safe_nodes(const Graph& graph);

}  // namespace dnncast
