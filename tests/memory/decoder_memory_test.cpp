// Hugging Face decoders built from config.json (models/hf_config.h) in the memory simulator (issue 35): RMSNorm,
// rotary q and k, repeat_kv and the token embedding are replayed allocation by allocation as the executor runs
// them (memory/training_trace.cpp: run_rms_norm, run_rotary, run_repeat_kv, run_embedding), with the LM head's
// token cross-entropy, a tied head's two gradients summed before AccumulateGrad and matmul's reshape copies in
// attention. Profiled with libtorch, each of these small llama, mistral (grouped-query and multi-query attention)
// and gpt_neox (partial rotary, parallel and sequential residual) configs trains to the simulated peak byte for
// byte, with SGD and Adam, with and without LoRA.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/lora.h"
#include "memory/simulator.h"
#include "memory/training_trace.h"
#include "models/hf_config.h"

#ifdef DNNCAST_HAVE_TORCH
#include "memory/profiled_limits.h"
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

struct DecoderConfig {
  std::string label;
  nlohmann::json config;
  int64_t batch, seq;
  std::string lora;  // graph/lora.h's text for the LoRA runs
};

std::vector<DecoderConfig> decoder_configs() {
  using nlohmann::json;
  return {
      {"llama, 1 layer, untied",
       json{{"model_type", "llama"},
            {"hidden_size", 40},
            {"intermediate_size", 72},
            {"num_attention_heads", 4},
            {"num_hidden_layers", 1},
            {"vocab_size", 111},
            {"tie_word_embeddings", false}},
       3, 7, "r=8,targets=q,v"},
      {"llama, 2 layers, GQA 8/2, head_dim 24, bias, tied",  // like tests/models/hf_configs/llama-small-tied.json
       json{{"model_type", "llama"},
            {"hidden_size", 64},
            {"head_dim", 24},
            {"intermediate_size", 100},
            {"num_attention_heads", 8},
            {"num_key_value_heads", 2},
            {"num_hidden_layers", 2},
            {"vocab_size", 150},
            {"attention_bias", true},
            {"mlp_bias", true},
            {"tie_word_embeddings", true}},
       2, 9, "r=4,targets=q,k,v,o,gate,up,down"},
      {"mistral, 2 layers, GQA 6/2",
       json{{"model_type", "mistral"},
            {"architectures", {"MistralForCausalLM"}},
            {"hidden_size", 48},
            {"intermediate_size", 100},
            {"num_attention_heads", 6},
            {"num_key_value_heads", 2},
            {"num_hidden_layers", 2},
            {"vocab_size", 97},
            {"rms_norm_eps", 1e-5}},
       2, 9, "r=8,targets=q,k,v,o,norms=train"},
      {"mistral, 1 layer, MQA 4/1, batch 1",
       json{{"model_type", "mistral"},
            {"hidden_size", 32},
            {"intermediate_size", 64},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 1},
            {"num_hidden_layers", 1},
            {"vocab_size", 71}},
       1, 6, "r=2,targets=v"},
      {"gpt_neox, 2 layers, rotary_pct 0.5, parallel residual",
       json{{"model_type", "gpt_neox"},
            {"hidden_size", 48},
            {"intermediate_size", 192},
            {"num_attention_heads", 4},
            {"num_hidden_layers", 2},
            {"rotary_pct", 0.5},
            {"vocab_size", 89}},
       2, 11, "r=8,targets=query_key_value"},
      {"gpt_neox, 3 layers, full rotary, sequential residual, tied",
       json{{"model_type", "gpt_neox"},
            {"hidden_size", 40},
            {"intermediate_size", 160},
            {"num_attention_heads", 2},
            {"num_hidden_layers", 3},
            {"rotary_pct", 1.0},
            {"vocab_size", 83},
            {"use_parallel_residual", false},
            {"tie_word_embeddings", true}},
       3, 6, "r=4,targets=query_key_value,dense"},
  };
}

Graph build(const DecoderConfig& decoder) {
  models::ModelSpec spec;
  spec.batch = decoder.batch;
  spec.seq_len = decoder.seq;
  return models::build_hf_config(decoder.config, spec, "decoder_memory_test");
}

TEST(DecoderMemory, EveryLlamaOpHasAnExactRecipe) {
  // The ops the decoders are built from: none is left to the generic recipe.
  for (const DecoderConfig& decoder : decoder_configs()) {
    const Graph graph = build(decoder);
    for (const Node& node : graph.nodes())
      EXPECT_EQ(recipe_kind(node.op), RecipeKind::Exact)
          << decoder.label << ": " << node.name << " (" << node.op << ")";
  }
}

#ifdef DNNCAST_HAVE_TORCH

using memory_test::quick_limits;

void expect_exact(const Graph& graph, const std::string& label, Optimizer optimizer) {
  profile::TrainConfig train;
  train.optimizer = optimizer;
  const profile::Measurement measured = profile::measure_isolated(graph, train, quick_limits());
  ASSERT_EQ(measured.status, "ok") << label << ": " << measured.message;
  MemoryConfig config;
  config.optimizer = optimizer;
  const MemoryReport simulated = simulate_memory(graph, config);
  std::printf("%-62s %-5s measured %9lld  simulated %9lld\n", label.c_str(), name(optimizer).c_str(),
              static_cast<long long>(measured.peak_bytes), static_cast<long long>(simulated.peak_bytes));
  EXPECT_EQ(simulated.baseline_bytes, measured.baseline_bytes) << label;
  EXPECT_EQ(simulated.peak_bytes, measured.peak_bytes) << label << " " << name(optimizer);
}

TEST(DecoderMemoryVsProfiler, HuggingFaceDecodersAreByteExact) {
  for (const DecoderConfig& decoder : decoder_configs()) {
    const Graph graph = build(decoder);
    const Graph adapted = apply_lora(graph, parse_lora(decoder.lora, "--lora"));
    for (Optimizer optimizer : {Optimizer::Sgd, Optimizer::Adam}) {
      expect_exact(graph, decoder.label, optimizer);
      expect_exact(adapted, decoder.label + ", lora " + decoder.lora, optimizer);
    }
  }
}

#else

TEST(DecoderMemoryVsProfiler, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
}  // namespace dnncast::memory
