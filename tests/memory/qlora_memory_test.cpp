// QLoRA's quantized base weights (graph/quantize.h, issue 47) in the memory simulator. Nothing here can be measured
// (bitsandbytes is not in Debian and runs on CUDA only), so the checks are against what does not come from this
// code: the QLoRA paper's bits per parameter, the parameter bytes of the same graph unquantized, and bitsandbytes'
// MatMul4Bit (a dequantized weight in forward and again in backward, nothing else kept).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "graph/lora.h"
#include "graph/op_registry.h"
#include "graph/quantize.h"
#include "memory/simulator.h"
#include "models/hf_config.h"

namespace dnncast::memory {
namespace {

constexpr int64_t kF32Bytes = 4;
const std::string kConfigs = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs";

Graph tinyllama(const std::string& lora, const std::string& quantize) {
  nlohmann::json config = nlohmann::json::parse(R"({"model_type": "llama", "vocab_size": 320, "hidden_size": 64,
      "intermediate_size": 172, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
      "max_position_embeddings": 128})");
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 16;
  Graph graph = models::build_hf_config(config, spec, "qlora-test.json");
  if (!lora.empty()) graph = apply_lora(graph, parse_lora(lora, "lora"));
  return quantize.empty() ? graph : apply_quantization(graph, quantize);
}

// QLoRA (Dettmers et al. 2023, section 3): NF4 with blocks of 64 costs 4 bits per weight plus, after double
// quantization, 8/64 + 32/(64 * 256) = 0.127 bits of constants.
TEST(QloraMemory, Nf4CostsThePapersBitsPerWeight) {
  const int64_t numel = int64_t{4096} * 11008;  // a Llama-2-7B MLP projection
  const double bits =
      8.0 * static_cast<double>(quantized_weight_bytes(numel, 11008, "nf4")) / static_cast<double>(numel);
  EXPECT_NEAR(bits, 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 1e-4);
  // LLM.int8(): a byte per weight and an fp32 scale per output row.
  EXPECT_EQ(quantized_weight_bytes(numel, 11008, "int8"), numel + 11008 * 4);
}

TEST(QloraMemory, TheBaseLinearsAreQuantizedAndNothingElse) {
  const Graph graph = tinyllama("r=4,targets=q,v", "nf4");
  int quantized = 0;
  for (const Node& node : graph.nodes()) {
    if (!node.has_attr("quantize")) continue;
    ++quantized;
    EXPECT_EQ(node.op, "Linear") << node.name;
    EXPECT_TRUE(node.frozen()) << node.name;
    EXPECT_EQ(node.name.find("lora_"), std::string::npos) << node.name;
  }
  EXPECT_EQ(quantized, 2 * 7);  // q, k, v, o, gate, up, down of both layers; not the LM head
  EXPECT_FALSE(graph.node(graph.find("lm_head")).has_attr("quantize"));
  EXPECT_FALSE(graph.notes.empty());  // says that nothing measured it
  try {
    apply_quantization(tinyllama("", ""), "nf4");
    ADD_FAILURE() << "a full fine-tune was quantized";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot be trained"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parse_quantize("nf3", "--quantize"), InputError);
}

// The parameters drop by what the layout saves, exactly, and each quantized Linear dequantizes its weight once in
// forward and once in backward (bf16 compute under autocast: 2 bytes a weight), keeping nothing else.
TEST(QloraMemory, ParametersShrinkByTheLayoutAndEachLinearDequantizesTwice) {
  MemoryConfig config;
  config.device = Device::Cuda;
  config.precision = Precision::Bf16;
  config.keep_events = true;
  const Graph lora = tinyllama("r=4,targets=q,k,v,o,gate,up,down", "");
  const Graph qlora = tinyllama("r=4,targets=q,k,v,o,gate,up,down", "nf4");
  int64_t saved = 0, dequantized = 0, linears = 0;
  for (int index = 0; index < qlora.size(); ++index) {
    const Node& node = qlora.node(index);
    if (!node.has_attr("quantize")) continue;
    const int64_t numel = node_cost(qlora, index).params;
    saved += numel * 4 - quantized_weight_bytes(numel, node.shape.dims.back(), "nf4");
    dequantized += 2 * numel * 2;  // forward and backward, 2 bytes a weight
    ++linears;
  }
  const MemoryReport full = simulate_memory(lora, config);
  const MemoryReport report = simulate_memory(qlora, config);
  EXPECT_EQ(full.baseline_bytes - report.baseline_bytes, saved);
  int64_t forward = 0, backward = 0, booked = 0;
  for (const LoggedEvent& event : report.event_log) {
    if (!event.alloc || event.iteration != 1 || std::string(event.what) != "dequantized weight") continue;
    booked += event.bytes;
    (event.phase == Phase::Forward ? forward : backward) += 1;
  }
  // Backward dequantizes where the input needs a gradient: not layer 0's q, k and v, which read the normalized
  // embeddings (frozen table, frozen norm); every other projection reads something the adapters changed.
  EXPECT_EQ(forward, linears);
  EXPECT_EQ(backward, linears - 3);
  EXPECT_EQ(booked, dequantized - (64 * 64 + 2 * 64 * 32) * 2);  // layer 0: q 64 -> 64, k and v 64 -> 32
  EXPECT_LT(report.peak_total_bytes, full.peak_total_bytes);
}

// Paged optimizer states (bitsandbytes' paged AdamW): the Adam moments of every trainable parameter leave the caching
// allocator for unified memory. The paged bytes are the two fp32 moments of the trainable parameters, counted from the
// graph, and the allocator's peak (in the second iteration, when the states exist) drops by them up to its 512-byte
// block rounding; on the CPU the option is refused.
TEST(QloraMemory, PagedOptimizerStatesLeaveTheCachingAllocator) {
  const Graph graph = tinyllama("r=8,targets=q,k,v,o,gate,up,down", "nf4");
  MemoryConfig config;
  config.device = Device::Cuda;
  config.optimizer = Optimizer::AdamW;
  config.precision = Precision::Bf16;
  const MemoryReport resident = simulate_memory(graph, config);
  config.paged_optimizer = true;
  const MemoryReport paged = simulate_memory(graph, config);
  const int64_t moments = 2 * kF32Bytes * trainable_parameter_count(graph);
  EXPECT_EQ(resident.cuda.paged_bytes, 0);
  EXPECT_EQ(paged.cuda.paged_bytes, moments);
  int64_t tensors = 0;
  for (int index = 0; index < graph.size(); ++index) tensors += graph.node(index).op == "Linear" ? 2 : 0;
  const int64_t dropped = resident.peak_allocated_bytes - paged.peak_allocated_bytes;
  EXPECT_GE(dropped, moments);
  EXPECT_LE(dropped, moments + 512 * tensors);
  EXPECT_LE(paged.required_bytes, resident.required_bytes);  // reserved in 2 MiB segments: may not move here
  EXPECT_EQ(paged.peak_bytes, resident.peak_bytes);          // the CPU tracker's count: every byte, wherever it lives
}

}  // namespace
}  // namespace dnncast::memory
