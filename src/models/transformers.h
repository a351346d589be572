// The transformer families as Hugging Face builds them, at any size: the zoo's bert_base and gpt2_small are two
// sizes of them, and a Hugging Face config.json names others (models/hf_config.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast::models {

struct TransformerSize {
  std::string name, family;  // the graph's
  int64_t vocab = 0, positions = 0, hidden = 0, heads = 0, layers = 0, mlp = 0;
  double eps = 1e-5;  // LayerNorm
  double dropout = 0.1, attention_dropout = 0.1;
  std::string activation = "GELU";  // of the MLP: GELU | ReLU
  int64_t type_vocab = 2;           // bert: token types
  int64_t classes = 0;              // bert: classifier outputs; 0 = ModelSpec::num_classes
  bool lm_head = false;             // bert: the masked-LM head (tied decoder) instead of pooler + classifier
  int64_t position_offset = 0;      // opt: rows of the position table beyond `positions` (2)
  int64_t embed_dim = 0;            // opt: the token embedding's width when not `hidden` (project in/out)
  bool pre_norm = true;             // opt: do_layer_norm_before
  bool final_norm = true;           // opt: the final LayerNorm
  bool bias = true;                 // opt: enable_bias; llama: attention_bias; gpt_neox: attention_bias
  // llama, mistral, gpt_neox (models/decoders.cpp):
  int64_t kv_heads = 0;            // grouped-query attention's key/value heads; 0 = heads
  int64_t head_dim = 0;            // width of a head; 0 = hidden / heads
  int64_t rotary_dim = 0;          // features of a head that rotary rotates; 0 = all (gpt_neox: rotary_pct)
  double rope_theta = 10000.0;     // rotary's base
  bool tie_embeddings = false;     // LM head tied to the token embedding (tie_word_embeddings)
  bool parallel_residual = false;  // gpt_neox: x + attention(ln1(x)) + mlp(ln2(x))
  bool mlp_bias = false;           // llama: biases of gate, up and down projections
  // The llama-shaped families beyond Llama (models/decoders.cpp):
  bool o_proj_bias = true;         // with `bias`: o_proj's too (qwen2: q, k and v only)
  bool qk_norm = false;            // qwen3: RMSNorm of each head of q and k (q_norm, k_norm) before rotary
  double embed_scale = 0;          // gemma, gemma2: token embeddings times sqrt(hidden); 0 = none
  bool norm_unit_offset = false;   // gemma, gemma2: RMSNorm scales by 1 + weight
  bool sandwich_norm = false;      // gemma2: RMSNorm after attention and after the MLP too (4 per layer)
  double attention_scale = 0;      // the scores' scale; 0 = 1 / sqrt(head_dim) (gemma2: query_pre_attn_scalar^-0.5)
  double attention_softcap = 0;    // gemma2: scores -> softcap * tanh(scores / softcap); 0 = none
  double logit_softcap = 0;        // gemma2: the LM head's logits likewise
  int64_t sliding_window = 0;      // keys a query sees at most (mistral, gemma2's sliding layers); 0 = all
  bool alternate_window = false;   // gemma2: the window on even layers only
  bool fused_projections = false;  // phi3: one qkv_proj and one gate_up_proj
  double embed_dropout = 0;        // phi3: embd_pdrop
  int64_t window_first_layer = 0;  // qwen2, qwen3: the first layer of sliding_window (max_window_layers)
  std::string gelu_approximate;    // gemma, gemma2: "tanh" (gelu_pytorch_tanh); "" = exact
  // Mixtures of experts (models/moe.h): mixtral, qwen2_moe, qwen3_moe, deepseek_v2.
  std::string moe_style;              // "mixtral" (block_sparse_moe, w1/w2/w3), "qwen2_moe", "deepseek_v2"; "" = dense
  int64_t experts = 0;                // routed experts of a sparse layer
  int64_t experts_per_token = 0;      // top-k
  int64_t expert_mlp = 0;             // each routed expert's intermediate width (moe_intermediate_size)
  int64_t shared_expert_mlp = 0;      // the shared expert's width (qwen2_moe; deepseek: n_shared_experts x expert_mlp)
  bool shared_expert_gate = false;    // qwen2_moe: sigmoid(shared_expert_gate(x)) * shared_expert(x)
  bool normalize_topk = false;        // the top-k weights divided by their sum (mixtral always; norm_topk_prob)
  double routed_scale = 1.0;          // deepseek_v2: routed_scaling_factor
  int64_t first_dense_layers = 0;     // deepseek_v2: first_k_dense_replace (dense MLP of `mlp` width)
  int64_t sparse_step = 1;            // qwen2_moe, qwen3_moe: decoder_sparse_step
  std::vector<int64_t> dense_layers;  // qwen2_moe, qwen3_moe: mlp_only_layers
  double expert_balance = 1.0;        // ModelSpec::expert_balance
  // deepseek_v2's multi-head latent attention (kv_lora_rank > 0):
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
};

// InputError when spec.seq_len is past the model's `positions`.
void check_tokens(const TransformerSize& size, const ModelSpec& spec);

// Inputs: token ids N x spec.seq_len (bert also token_type_ids); InputError past `positions` tokens.
Graph build_bert(const TransformerSize& size, const ModelSpec& spec);  // ...ForSequenceClassification or LMHeadModel
Graph build_gpt2(const TransformerSize& size, const ModelSpec& spec);  // GPT2LMHeadModel, LM head tied
Graph build_opt(const TransformerSize& size, const ModelSpec& spec);   // OPTForCausalLM, LM head tied
// LlamaForCausalLM / MistralForCausalLM: RMSNorm, rotary q and k, grouped-query attention, SwiGLU MLP.
Graph build_llama(const TransformerSize& size, const ModelSpec& spec);
// GPTNeoXForCausalLM: fused query_key_value, partial rotary, LayerNorm, GELU MLP, parallel residual or not.
Graph build_gpt_neox(const TransformerSize& size, const ModelSpec& spec);

}  // namespace dnncast::models
