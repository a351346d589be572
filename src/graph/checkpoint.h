// Activation checkpointing per transformer block (issue 35), as torch.utils.checkpoint(use_reentrant=True) runs
// it. The decoder and encoder builders label each node of transformer layer i with the attribute block=i
// (GraphBuilder::begin_block); apply_checkpointing marks those nodes checkpoint=1. A checkpointed block's forward
// keeps only its inputs (and the RNG state); its backward recomputes the block with grad and back-propagates
// through the recomputation. The executor (profile/executor.cpp), the memory simulator
// (memory/training_trace.cpp) and the time models read the segments below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast {

// One checkpointed block: the nodes first..last (graph order, contiguous).
struct CheckpointSegment {
  int64_t block = -1;
  int first = -1, last = -1;
  std::vector<int> inputs;   // producers outside the segment that it reads, in the order of first use
  std::vector<int> outputs;  // its nodes read after it (or graph outputs), graph order
};

// The block a node recomputes in, -1 when it is not checkpointed.
inline int64_t checkpoint_block(const Node& node) {
  return node.attr_int("checkpoint", 0) != 0 ? node.attr_int("block", -1) : -1;
}

// Whether any node carries a block label.
bool has_blocks(const Graph& graph);

// The graph with every node of a block marked checkpoint=1. Throws InputError when the graph has no blocks
// ("--checkpointing: 'resnet50' has no transformer blocks to checkpoint ...") naming `what`. Taken by value, as
// apply_quantization.
Graph apply_checkpointing(Graph graph, const std::string& what = "checkpointing");

// The checkpointed blocks of a graph, in graph order (empty when none). Throws InputError when a block's nodes
// are not contiguous, or hold an Input or a loss.
std::vector<CheckpointSegment> checkpoint_segments(const Graph& graph);

}  // namespace dnncast
