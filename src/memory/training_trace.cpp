#include "memory/training_trace.h"

#include <map>
#include <string>
#include <string_view>

#include "core/error.h"
#include "graph/op_registry.h"
#include "memory/trace_internal.h"

namespace dnncast::memory {

using namespace std::string_view_literals;  // op == "Linear"sv: a length check first, inline (no strlen, no call)
namespace detail {

// The recipes, by the name an op declares (OpDef::memory_recipe): one per op or family of ops,
// each the allocations of its kernels. "generic" is not replayed kernel by kernel: an op that
// declares it is approximate (docs/MEMORY.md).
const std::map<std::string, Trace::OpRecipe>& Trace::recipes() {
  static const char* const kGeneric = "approximate: generic elementwise recipe (the OpDef's saved tensors)";
  static const std::map<std::string, OpRecipe> table{
      {"input", {&Trace::run_input}},
      {"conv", {&Trace::run_conv}},
      {"generic", {&Trace::run_generic, kGeneric}},
      {"linear", {&Trace::run_linear}},
      {"batchnorm", {&Trace::run_batchnorm}},
      {"norm", {&Trace::run_norm}},
      {"activation", {&Trace::run_activation}},
      {"max_pool", {&Trace::run_max_pool}},
      {"avg_pool", {&Trace::run_avg_pool}},
      {"add", {&Trace::run_add}},
      {"mul", {&Trace::run_mul}},
      {"dropout", {&Trace::run_dropout}},
      {"reshape", {&Trace::run_reshape}},
      {"concat", {&Trace::run_concat}},
      {"slice", {&Trace::run_slice}},
      {"channel_shuffle", {&Trace::run_channel_shuffle}},
      {"permute", {&Trace::run_permute}},
      {"softmax", {&Trace::run_softmax}},
      {"class_token", {&Trace::run_class_token}},
      {"position_embedding", {&Trace::run_position_embedding}},
      {"attention", {&Trace::run_attention}},
      {"cross_entropy", {&Trace::run_cross_entropy}},
      {"mse", {&Trace::run_mse}},
      {"rms_norm", {&Trace::run_rms_norm}},
      {"rotary", {&Trace::run_rotary}},
      {"repeat_kv", {&Trace::run_repeat_kv}},
      {"embedding", {&Trace::run_embedding}},
      {"topk_routing", {&Trace::run_topk_routing}},
      {"expert_gather", {&Trace::run_expert_gather}},
      {"expert_combine", {&Trace::run_expert_combine}},
  };
  return table;
}

Tensor Trace::run_node(int index, const Node& node, const std::vector<Tensor>& in) {
  const OpRecipe& recipe = *recipes_[static_cast<size_t>(index)];
  if (!amp_) return (this->*recipe.run)(index, node, in);
  const bool low_op = node.op == "MatMul"sv;  // Linear casts its own arguments (run_linear_amp)
  const bool fp32_op =
      recipe.run == &Trace::run_cross_entropy || recipe.run == &Trace::run_mse || (!cpu_ && cuda_fp32_op(node));
  if (!low_op && !fp32_op) return (this->*recipe.run)(index, node, in);
  // autocast's casts of the tensor arguments, right to left; each goes when the op returns unless saved.
  std::vector<Tensor> args = in;
  std::vector<int> held;
  for (size_t position = in.size(); position-- > 0;) {
    const int producer = node.inputs[position];
    const int64_t to = low_op ? 2 : kF32;
    if (graph_.node(producer).dtype == DType::I64 || elem(producer) == to) continue;
    args[position] = cast(index, in[position], graph_.node(producer).shape.numel(), elem(producer), to);
    held.push_back(args[position].buffer);
  }
  Tensor out = (this->*recipe.run)(index, node, args);
  for (int buffer : held) program_.release(buffer);
  return out;
}

}  // namespace detail

using detail::Trace;

RecipeKind recipe_kind(const std::string& op) {
  if (!OpRegistry::instance().has(op)) return RecipeKind::None;
  auto found = Trace::recipes().find(OpRegistry::instance().get(op).memory_recipe);
  if (found == Trace::recipes().end()) return RecipeKind::None;
  return found->second.approximate ? RecipeKind::Approximate : RecipeKind::Exact;
}

Program trace_training(const Graph& graph, const TraceOptions& options) {
  if (options.precision == Precision::Fp16 && options.device == Device::Cpu)
    throw InputError("precision 'fp16': autocast to fp16 runs on cuda only (the executor's); on cpu use bf16");
  if (options.threads < 1) throw InputError("threads must be at least 1, got " + std::to_string(options.threads));
  if (options.iterations < 1) throw InputError("iterations must be at least 1");
  for (const Node& node : graph.nodes())
    if (node.dtype != DType::F32 && node.dtype != DType::I64)
      throw InputError("node " + quote(node.name) + " has dtype " + dtype_name(node.dtype) +
                       ": the memory simulator models fp32 training only");
  if (options.device == Device::Cpu)
    for (const Node& node : graph.nodes())
      if (node.op == "ScaledDotProductAttention"sv && node.attr_int("fused", 0) != 0)
        throw InputError("attention sdpa (node " + quote(node.name) +
                         "): fused attention is modelled on cuda only (libtorch 1.13 on cpu runs the math path: "
                         "--attention eager)");
  static const char* const kFreezable[] = {"Linear",    "Embedding", "PositionEmbedding",
                                           "LayerNorm", "GroupNorm", "RMSNorm"};
  for (const Node& node : graph.nodes()) {
    if (!node.frozen()) continue;
    bool freezable = false;
    for (const char* op : kFreezable) freezable = freezable || node.op == op;
    if (!freezable)
      throw InputError("node " + quote(node.name) + " (" + node.op +
                       ") is frozen: the memory simulator models frozen Linear, embedding and norm layers only");
  }
  Trace trace(graph, options);
  return trace.run();
}

}  // namespace dnncast::memory
