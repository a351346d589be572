#include "graph/inplace.h"

#include "graph/checkpoint.h"
#include "graph/op_registry.h"

namespace dnncast {

std::vector<bool> inplace_safe_nodes(const Graph& graph) {
  const OpRegistry& registry = OpRegistry::instance();
  const Consumers consumers = graph.consumers();
  std::vector<bool> safe(static_cast<size_t>(graph.size()), false);
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    if (!registry.get(node.op).runs_inplace || node.inputs.size() != 1) continue;
    if (node.attr_int("inplace", 1) == 0) continue;  // a module built with inplace=False (Hugging Face's act_fn)
    int producer = node.inputs[0];
    if (!registry.get(graph.node(producer).op).fresh_output) continue;
    if (consumers[static_cast<size_t>(producer)].size() != 1) continue;
    // Across the border of a checkpointed block (graph/checkpoint.h) never: the block's input is kept for its
    // recomputation, and its output is what the checkpoint function hands on.
    if (checkpoint_block(node) != checkpoint_block(graph.node(producer))) continue;
    safe[static_cast<size_t>(index)] = true;
  }
  return safe;
}

}  // namespace dnncast
