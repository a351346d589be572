// Which nodes may run in place: the one in-place rule that the libtorch executor follows and the
// memory simulator replays (profile/executor.cpp, memory/training_trace.cpp).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace dnncast {

// One flag per node: true when the node's op runs in place (OpDef::runs_inplace: ReLU, ReLU6,
// SiLU, Hardswish, inplace=True in torchvision; a node's attr inplace=0 opts out) and its single input has no other
// consumer and comes from an op whose output is a fresh tensor it does not keep for backward (OpDef::fresh_output:
// Conv2d, ConvTranspose2d, BatchNorm2d, LayerNorm, GroupNorm, Linear, Add), both in the same checkpointed block or both
// outside any (graph/checkpoint.h). The graph's shapes must be inferred.
std::vector<bool> inplace_safe_nodes(const Graph& graph);

}  // namespace dnncast
