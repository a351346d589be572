#include "graph/inplace.h"

#include <set>
#include <string>

namespace dnncast {

std::vector<bool> inplace_safe_nodes(const Graph& graph) {
  static const std::set<std::string> kInplaceOps{"ReLU", "ReLU6", "SiLU", "Hardswish"};
  static const std::set<std::string> kFreshOutput{"Conv2d", "ConvTranspose2d", "BatchNorm2d", "LayerNorm",
                                                  "GroupNorm", "Linear", "Add"};
  const std::vector<std::vector<int>> consumers = graph.consumers();
  std::vector<bool> safe(static_cast<size_t>(graph.size()), false);
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    if (!kInplaceOps.count(node.op) || node.inputs.size() != 1) continue;
    int producer = node.inputs[0];
    const Node& source = graph.node(producer);
    if (!kFreshOutput.count(source.op) || consumers[static_cast<size_t>(producer)].size() != 1) continue;
    if (source.op == "Add" && source.shape != node.shape) continue;
    safe[static_cast<size_t>(index)] = true;
  }
  return safe;
}

}  // namespace dnncast
