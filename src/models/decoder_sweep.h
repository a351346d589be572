// A deterministic sweep of small Hugging Face decoders (issue 35; issue 47's families in family_sweep): configs of
// one to three layers, each with a batch, a sequence length, a training setup and LoRA or not, written as the
// config.json a user would pass (`dnncast memory CONFIG.json --seq L --batch N`). The memory simulator is checked on it
// against the profiler (tests/memory/slow/decoder_memory_sweep_test.cpp; docs/MEMORY.md, "Decoders from config.json").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "graph/graph.h"

namespace dnncast::models {

// One configuration of the sweep. The training setup (optimizer, precision, device) is TrainingSetup's;
// decoder_sweep() draws fp32 without checkpointing or accumulation, decoder_mode_sweep() every mode.
struct DecoderCase : TrainingSetup {
  std::string id;                // "d017": the config's _name_or_path and the graph's name
  std::string family = "llama";  // its model_type: llama | mistral | gpt_neox | qwen2 | qwen3 | gemma | gemma2 | phi3
                                 // | mixtral | qwen2_moe | qwen3_moe | deepseek_v2
  int64_t layers = 1;
  int64_t hidden = 32;            // hidden_size
  int64_t heads = 4;              // num_attention_heads
  int64_t kv_heads = 4;           // num_key_value_heads (llama, mistral; gpt_neox: heads)
  int64_t head_dim = 0;           // llama, mistral: an explicit head_dim (0: hidden / heads)
  int64_t mlp = 64;               // intermediate_size
  int64_t vocab = 100;            // vocab_size
  bool tied = false;              // tie_word_embeddings
  bool attention_bias = false;    // llama: attention_bias (mistral: none; gpt_neox: always)
  bool mlp_bias = false;          // llama: mlp_bias
  double rotary_pct = 1.0;        // gpt_neox
  bool parallel_residual = true;  // gpt_neox: use_parallel_residual
  std::string activation;         // hidden_act ("" = the family's default: silu, gelu)
  double dropout = 0.0;           // attention_dropout (llama, mistral) or hidden_dropout (gpt_neox)
  double softcap = 0;             // gemma2: attn_logit_softcapping (final_logit_softcapping 0.6 of it); 0 = none
  int64_t window = 0;             // gemma2, phi3, qwen2 (layers from 1): sliding_window; 0 = none
  // issue 47's mixtures of experts (mixtral, qwen2_moe, qwen3_moe, deepseek_v2; moe_sweep):
  int64_t experts = 0;     // routed experts (mixtral: num_local_experts; qwen: num_experts; n_routed_experts)
  int64_t top_k = 0;       // num_experts_per_tok
  int64_t expert_mlp = 0;  // moe_intermediate_size (mixtral: intermediate_size, `mlp`)
  int64_t shared_mlp = 0;  // qwen2_moe: shared_expert_intermediate_size; deepseek_v2: n_shared_experts x expert_mlp
  bool normalize_topk = false;  // norm_topk_prob
  double routed_scale = 1.0;    // deepseek_v2: routed_scaling_factor
  int64_t dense_first = 0;      // deepseek_v2: first_k_dense_replace
  int64_t sparse_step = 1;      // qwen: decoder_sparse_step
  double expert_balance = 1.0;  // ModelSpec::expert_balance
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0, v_head_dim = 0;  // deepseek_v2's attention
  int64_t seq = 8;                                                                      // tokens per sequence
  int64_t batch = 1;
  std::string lora;                       // "" (full fine-tune) or graph/lora.h's text: "r=8,alpha=16,targets=q,v"
  bool activation_checkpointing = false;  // every transformer block checkpointed (graph/checkpoint.h)
  int64_t grad_accum = 1;                 // micro-batches per optimizer step

  nlohmann::json config() const;  // the config.json
  Graph graph() const;            // built from config() at batch x seq, LoRA applied
  std::string describe() const;   // one line: family, sizes, setup

 private:
  nlohmann::json family_config(nlohmann::json config) const;
};

// `count` configurations drawn from `seed` (SplitMix64: the same on every platform), the families in turn.
std::vector<DecoderCase> decoder_sweep(uint64_t seed = 35, size_t count = 200);
// The same decoders as decoder_sweep()'s (seed 35), each in a training mode drawn from `seed`: precision fp32,
// bf16 (autocast) or bf16-pure in turn; activation checkpointing on half of them; 2 micro-batches on a quarter.
std::vector<DecoderCase> decoder_mode_sweep(uint64_t seed = 36, size_t count = 200);
// Issue 47's families (qwen2, qwen3, gemma, gemma2, phi3 in turn), each with its own parts drawn (biases, per-head
// norms, soft-capping, sliding windows shorter than the sequence, partial rotary, dropout), LoRA on half, and a
// training mode drawn as decoder_mode_sweep's.
std::vector<DecoderCase> family_sweep(uint64_t seed = 47, size_t count = 200);
// Issue 47's mixtures of experts (mixtral, qwen2_moe, qwen3_moe, deepseek_v2 drawn): 2-8 experts, top 1-3, shared
// experts, normalized or scaled routing weights, dense first layers and sparse steps, a skewed router now and then,
// deepseek_v2's latent attention with and without q_lora_rank; LoRA and every training mode as family_sweep's.
std::vector<DecoderCase> moe_sweep(uint64_t seed = 48, size_t count = 200);

}  // namespace dnncast::models
