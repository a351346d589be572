#include "graph/checkpoint.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

bool has_blocks(const Graph& graph) {
  for (const Node& node : graph.nodes())
    if (node.has_attr("block")) return true;
  return false;
}

Graph apply_checkpointing(Graph graph, const std::string& what) {
  if (!has_blocks(graph))
    throw InputError(what + ": " + quote(graph.name) +
                     " has no transformer blocks to checkpoint (the decoders and encoders of the zoo and of "
                     "config.json files have them)");
  for (Node& node : graph.mutable_nodes())
    if (node.has_attr("block")) node.attrs["checkpoint"] = int64_t{1};
  checkpoint_segments(graph);  // a graph JSON's labels may be out of order
  return graph;
}

std::vector<CheckpointSegment> checkpoint_segments(const Graph& graph) {
  std::vector<CheckpointSegment> segments;
  bool any = false;  // most graphs: none, and no consumer lists to build
  for (const Node& node : graph.nodes()) any = any || checkpoint_block(node) >= 0;
  if (!any) return segments;
  std::map<int64_t, int> seen;  // block -> segment
  const Consumers consumers = graph.consumers();
  std::vector<bool> is_output(static_cast<size_t>(graph.size()), false);
  for (int output : graph.outputs()) is_output[static_cast<size_t>(output)] = true;
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    const int64_t block = checkpoint_block(node);
    if (block < 0) continue;
    const std::string where =
        "node " + quote(node.name) + " (" + node.op + ") of checkpointed block " + std::to_string(block);
    if (node.op == "Input"sv || OpRegistry::instance().get(node.op).category == "loss"sv)
      throw InputError(where + ": an input or a loss cannot be recomputed");
    if (segments.empty() || segments.back().block != block || segments.back().last != index - 1) {
      if (seen.count(block)) throw InputError(where + ": the block's nodes are not contiguous in graph order");
      seen[block] = static_cast<int>(segments.size());
      CheckpointSegment segment;
      segment.block = block;
      segment.first = index;
      segments.push_back(segment);
    }
    CheckpointSegment& segment = segments.back();
    segment.last = index;
    for (int producer : node.inputs)
      if (producer < segment.first &&
          std::find(segment.inputs.begin(), segment.inputs.end(), producer) == segment.inputs.end())
        segment.inputs.push_back(producer);
  }
  for (CheckpointSegment& segment : segments)
    for (int index = segment.first; index <= segment.last; ++index) {
      bool read_after = is_output[static_cast<size_t>(index)];
      for (int consumer : consumers[static_cast<size_t>(index)]) read_after = read_after || consumer > segment.last;
      if (read_after) segment.outputs.push_back(index);
    }
  return segments;
}

}  // namespace dnncast
