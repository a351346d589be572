#include "graph/quantize.h"

#include <algorithm>
#include <string_view>

#include "core/error.h"
#include "core/text.h"

namespace dnncast {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)

namespace {

constexpr int64_t kNf4Block = 64;      // weights per absmax (bnb_4bit blocksize)
constexpr int64_t kNestedBlock = 256;  // absmax values per fp32 second-level absmax (double quantization)

bool is_adapter(const std::string& name) { return ends_with(name, ".lora_A") || ends_with(name, ".lora_B"); }

}  // namespace

std::string parse_quantize(const std::string& text, const std::string& what) {
  if (text == "nf4" || text == "int8") return text;
  throw InputError(what + " " + quote(text) + ": expected nf4 (QLoRA's 4-bit NormalFloat) or int8 (LLM.int8())");
}

int64_t quantized_weight_bytes(int64_t numel, int64_t out_features, const std::string& kind) {
  if (kind == "int8") return numel + out_features * 4;  // CB (int8) and SCB (one fp32 per row)
  const int64_t blocks = (numel + kNf4Block - 1) / kNf4Block;
  const int64_t nested = (blocks + kNestedBlock - 1) / kNestedBlock;
  return (numel + 1) / 2 + blocks + nested * 4 + 4;  // packed codes, 8-bit absmax, fp32 absmax, fp32 offset
}

Graph apply_quantization(Graph graph, const std::string& kind) {
  std::vector<bool> output(static_cast<size_t>(graph.size()), false);
  for (int index : graph.outputs()) output[static_cast<size_t>(index)] = true;
  bool any_frozen = false;
  int quantized = 0;
  for (int index = 0; index < graph.size(); ++index) {
    Node& node = graph.mutable_nodes()[static_cast<size_t>(index)];
    any_frozen = any_frozen || node.frozen();
    if (node.op != "Linear"sv || !node.frozen() || is_adapter(node.name) || output[static_cast<size_t>(index)] ||
        node.has_attr("tied_to"))
      continue;
    node.attrs["quantize"] = kind;
    ++quantized;
  }
  if (!any_frozen)
    throw InputError("quantize " + quote(kind) + ": " + quote(graph.name) +
                     " has no frozen weights; quantized weights cannot be trained (QLoRA quantizes the base of a "
                     "LoRA fine-tune: give --lora too)");
  if (quantized == 0)
    throw InputError("quantize " + quote(kind) + ": " + quote(graph.name) + " has no frozen Linear to quantize");
  graph.notes.push_back("base weights quantized " + kind +
                        " as bitsandbytes stores them (no measurement: bitsandbytes is not in Debian and runs on "
                        "CUDA only; layout and dequantization from its code, graph/quantize.h)");
  return graph;
}

}  // namespace dnncast
