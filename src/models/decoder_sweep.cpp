#include "models/decoder_sweep.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/rng.h"
#include "core/text.h"
#include "graph/checkpoint.h"
#include "graph/lora.h"
#include "models/hf_config.h"
#include "models/zoo.h"

namespace dnncast::models {

namespace {

template <typename T>
T pick(SplitMix64& rng, const std::vector<T>& choices) {
  return choices[static_cast<size_t>(rng.below(choices.size()))];
}

bool chance(SplitMix64& rng, double probability) { return rng.unit() < probability; }

// "d007": the sweep's letter and the index.
std::string case_id(char sweep, size_t index) {
  char id[24];
  std::snprintf(id, sizeof(id), "%c%03zu", sweep, index);
  return id;
}

// The divisors of `heads` below it: the key/value head counts of grouped-query attention.
std::vector<int64_t> grouped_kv_heads(int64_t heads) {
  std::vector<int64_t> divisors;
  for (int64_t kv = 1; kv < heads; ++kv)
    if (heads % kv == 0) divisors.push_back(kv);
  return divisors;
}

// PEFT's target module names for the family (graph/lora.h).
std::string lora_targets(SplitMix64& rng, const std::string& family) {
  static const std::vector<std::string> llama = {"q,v",          "q,k,v,o", "q,k,v,o,gate,up,down",
                                                 "gate,up,down", "v",       "o,down"};
  static const std::vector<std::string> neox = {"query_key_value", "query_key_value,dense",
                                                "dense_h_to_4h,dense_4h_to_h",
                                                "query_key_value,dense,dense_h_to_4h,dense_4h_to_h"};
  static const std::vector<std::string> phi3 = {"qkv_proj", "qkv_proj,o_proj", "gate_up_proj,down_proj",
                                                "qkv_proj,o_proj,gate_up_proj,down_proj"};
  return pick(rng, family == "gpt_neox" ? neox : family == "phi3" ? phi3 : llama);
}

void draw_llama(SplitMix64& rng, DecoderCase& c) {
  c.heads = c.family == "mistral" ? pick<int64_t>(rng, {2, 4, 6, 8}) : rng.int_between(2, 8);
  // llama: multi-head half of the time, else grouped; mistral: grouped (one kv head included).
  c.kv_heads = c.family == "llama" && chance(rng, 0.5) ? c.heads : pick(rng, grouped_kv_heads(c.heads));
  const int64_t head_dim = pick<int64_t>(rng, {8, 12, 16, 24, 32});
  if (c.family == "llama" && chance(rng, 0.2)) {
    c.head_dim = head_dim;  // q is heads * head_dim wide, not hidden_size
    c.hidden = 8 * rng.int_between(2, 12);
  } else {
    c.hidden = c.heads * head_dim;
  }
  c.mlp = rng.int_between(c.hidden, 4 * c.hidden);
  if (c.family == "llama") {
    c.attention_bias = chance(rng, 0.3);
    c.mlp_bias = chance(rng, 0.3);
  }
  if (chance(rng, 0.15)) c.dropout = 0.1;
}

void draw_neox(SplitMix64& rng, DecoderCase& c) {
  c.heads = rng.int_between(1, 8);
  c.kv_heads = c.heads;
  const int64_t head_dim = pick<int64_t>(rng, {8, 12, 16, 20, 24});
  c.hidden = c.heads * head_dim;
  c.mlp = chance(rng, 0.5) ? 4 * c.hidden : rng.int_between(c.hidden, 4 * c.hidden);
  std::vector<double> rotary;
  for (double pct : {0.25, 0.5, 1.0}) {
    const auto rotated = static_cast<int64_t>(static_cast<double>(head_dim) * pct);  // HF: int(head_size * rotary_pct)
    if (rotated >= 2 && rotated % 2 == 0) rotary.push_back(pct);
  }
  c.rotary_pct = pick(rng, rotary);
  c.parallel_residual = chance(rng, 0.5);
  c.activation = chance(rng, 0.2) ? "relu" : "gelu";
  if (chance(rng, 0.15)) c.dropout = 0.1;
}

// A llama-shaped family of issue 47: grouped or multi-head attention, an explicit head_dim now and then (always
// for gemma: its config carries one), and the family's own parts.
void draw_family(SplitMix64& rng, DecoderCase& c) {
  c.heads = rng.int_between(2, 8);
  c.kv_heads = chance(rng, 0.4) ? c.heads : pick(rng, grouped_kv_heads(c.heads));
  const int64_t head_dim = pick<int64_t>(rng, {8, 12, 16, 24, 32});
  const bool gemma = c.family == "gemma" || c.family == "gemma2";
  if (gemma || c.family == "qwen3" || chance(rng, 0.2)) {
    c.head_dim = head_dim;
    c.hidden = 8 * rng.int_between(2, 12);
  } else {
    c.hidden = c.heads * head_dim;
  }
  c.mlp = rng.int_between(c.hidden, 4 * c.hidden);
  if (c.family == "qwen3") c.attention_bias = chance(rng, 0.3);
  if (c.family == "gemma2" && chance(rng, 0.8)) c.softcap = pick<double>(rng, {20.0, 50.0});
  if (c.family == "gemma2" || c.family == "phi3" || (c.family == "qwen2" && chance(rng, 0.5)))
    c.window = rng.int_between(2, 24);
  if (c.family == "phi3") c.rotary_pct = pick<double>(rng, {1.0, 0.5});
  if (c.family == "gemma") c.activation = pick<std::string>(rng, {"gelu_pytorch_tanh", "gelu"});
  if (chance(rng, 0.15)) c.dropout = 0.1;
}

// A mixture of experts of issue 47: attention as its family's (mixtral: grouped; qwen3_moe: an explicit head_dim;
// deepseek_v2: latent attention of small ranks), then the experts, sized so that every expert gets a token.
void draw_moe(SplitMix64& rng, DecoderCase& c) {
  c.heads = rng.int_between(2, 6);
  c.kv_heads = c.family == "deepseek_v2" || chance(rng, 0.4) ? c.heads : pick(rng, grouped_kv_heads(c.heads));
  const int64_t head_dim = pick<int64_t>(rng, {8, 12, 16, 24});
  if (c.family == "qwen3_moe") {
    c.head_dim = head_dim;
    c.hidden = 8 * rng.int_between(2, 8);
  } else {
    c.hidden = c.heads * head_dim;
  }
  c.mlp = rng.int_between(c.hidden / 2, 3 * c.hidden);
  c.experts = rng.int_between(2, 8);
  c.top_k = rng.int_between(1, std::min<int64_t>(3, c.experts));
  c.expert_mlp = rng.int_between(std::max<int64_t>(c.hidden / 4, 4), 2 * c.hidden);
  c.normalize_topk = c.family == "mixtral" || chance(rng, 0.5);
  if (c.family == "qwen2_moe" && chance(rng, 0.7)) c.shared_mlp = rng.int_between(c.hidden / 2, 2 * c.hidden);
  if ((c.family == "qwen2_moe" || c.family == "qwen3_moe") && chance(rng, 0.3)) c.sparse_step = 2;
  if (c.family == "deepseek_v2") {
    c.layers = rng.int_between(2, 3);
    c.dense_first = rng.int_between(0, 1);
    c.shared_mlp = rng.int_between(0, 2) * c.expert_mlp;
    c.kv_lora_rank = pick<int64_t>(rng, {8, 16, 24});
    c.q_lora_rank = chance(rng, 0.5) ? pick<int64_t>(rng, {8, 16}) : 0;
    c.qk_nope = pick<int64_t>(rng, {4, 8, 12});
    c.qk_rope = pick<int64_t>(rng, {2, 4, 8});
    c.v_head_dim = pick<int64_t>(rng, {4, 8, 12});
    if (!c.normalize_topk && chance(rng, 0.5)) c.routed_scale = 2.5;
  }
  if (c.family == "mixtral" && chance(rng, 0.3)) c.window = rng.int_between(2, 24);
  if (chance(rng, 0.15)) c.dropout = 0.1;
}

// PEFT targets of a mixture: attention, the experts' projections, the router (mixtral's and qwen's "gate" Linear).
std::string moe_lora_targets(SplitMix64& rng, const DecoderCase& c) {
  if (c.family == "deepseek_v2") {
    const std::string q = c.q_lora_rank > 0 ? "q_a_proj,q_b_proj" : "q_proj";
    return pick<std::string>(rng, {q, "kv_b_proj,o_proj", q + ",kv_a_proj_with_mqa,kv_b_proj,o_proj",
                                   "gate_proj,up_proj,down_proj", q + ",down_proj"});
  }
  if (c.family == "mixtral") return pick<std::string>(rng, {"q,v", "q,k,v,o", "w1,w2,w3", "q,v,w1,w3", "q,gate"});
  return pick<std::string>(rng, {"q,v", "q,k,v,o", "gate_proj,up_proj,down_proj", "q,v,gate_proj", "o,gate"});
}

}  // namespace

nlohmann::json DecoderCase::config() const {
  nlohmann::json config{{"_name_or_path", id},          {"model_type", family},
                        {"hidden_size", hidden},        {"intermediate_size", mlp},
                        {"num_attention_heads", heads}, {"num_hidden_layers", layers},
                        {"vocab_size", vocab},          {"max_position_embeddings", 2048},
                        {"tie_word_embeddings", tied}};
  if (family == "gpt_neox") {
    config["architectures"] = {"GPTNeoXForCausalLM"};
    config["rotary_pct"] = rotary_pct;
    config["use_parallel_residual"] = parallel_residual;
    config["hidden_act"] = activation.empty() ? "gelu" : activation;
    config["hidden_dropout"] = dropout;
    return config;
  }
  if (family != "llama" && family != "mistral") return family_config(config);
  config["architectures"] = {family == "mistral" ? "MistralForCausalLM" : "LlamaForCausalLM"};
  config["num_key_value_heads"] = kv_heads;
  if (head_dim > 0) config["head_dim"] = head_dim;
  config["hidden_act"] = activation.empty() ? "silu" : activation;
  config["rms_norm_eps"] = family == "mistral" ? 1e-5 : 1e-6;
  config["attention_dropout"] = dropout;
  if (family == "llama") {
    config["attention_bias"] = attention_bias;
    config["mlp_bias"] = mlp_bias;
  }
  return config;
}

// issue 47's families: the fields their config classes read.
nlohmann::json DecoderCase::family_config(nlohmann::json config) const {
  static const std::map<std::string, std::string> kArchitectures = {{"qwen2", "Qwen2ForCausalLM"},
                                                                    {"qwen3", "Qwen3ForCausalLM"},
                                                                    {"gemma", "GemmaForCausalLM"},
                                                                    {"gemma2", "Gemma2ForCausalLM"},
                                                                    {"phi3", "Phi3ForCausalLM"},
                                                                    {"mixtral", "MixtralForCausalLM"},
                                                                    {"qwen2_moe", "Qwen2MoeForCausalLM"},
                                                                    {"qwen3_moe", "Qwen3MoeForCausalLM"},
                                                                    {"deepseek_v2", "DeepseekV2ForCausalLM"}};
  config["architectures"] = {kArchitectures.at(family)};
  config["num_key_value_heads"] = kv_heads;
  if (head_dim > 0) config["head_dim"] = head_dim;
  config["rms_norm_eps"] = 1e-6;
  config["attention_dropout"] = dropout;
  if (family == "qwen3") config["attention_bias"] = attention_bias;
  if (family == "gemma" || family == "gemma2")
    config["hidden_activation"] = activation.empty() ? "gelu_pytorch_tanh" : activation;
  if (family == "gemma2") {
    config["attn_logit_softcapping"] = softcap > 0 ? nlohmann::json(softcap) : nlohmann::json();
    config["final_logit_softcapping"] = softcap > 0 ? nlohmann::json(0.6 * softcap) : nlohmann::json();
    config["query_pre_attn_scalar"] = head_dim;
  }
  if (window > 0) config["sliding_window"] = window;
  if (family == "qwen2" && window > 0) {
    config["use_sliding_window"] = true;
    config["max_window_layers"] = 1;
  }
  if (family == "mixtral") {
    config["num_local_experts"] = experts;
    config["num_experts_per_tok"] = top_k;
  } else if (family == "qwen2_moe" || family == "qwen3_moe") {
    config["num_experts"] = experts;
    config["num_experts_per_tok"] = top_k;
    config["moe_intermediate_size"] = expert_mlp;
    config["norm_topk_prob"] = normalize_topk;
    config["decoder_sparse_step"] = sparse_step;
    if (family == "qwen2_moe") config["shared_expert_intermediate_size"] = shared_mlp;
  } else if (family == "deepseek_v2") {
    config["n_routed_experts"] = experts;
    config["num_experts_per_tok"] = top_k;
    config["moe_intermediate_size"] = expert_mlp;
    config["n_shared_experts"] = expert_mlp > 0 ? shared_mlp / expert_mlp : 0;
    config["norm_topk_prob"] = normalize_topk;
    config["routed_scaling_factor"] = routed_scale;
    config["first_k_dense_replace"] = dense_first;
    config["q_lora_rank"] = q_lora_rank > 0 ? nlohmann::json(q_lora_rank) : nlohmann::json();
    config["kv_lora_rank"] = kv_lora_rank;
    config["qk_nope_head_dim"] = qk_nope;
    config["qk_rope_head_dim"] = qk_rope;
    config["v_head_dim"] = v_head_dim;
  }
  if (family == "phi3") {
    config["partial_rotary_factor"] = rotary_pct;
    config["resid_pdrop"] = dropout;
    config["embd_pdrop"] = dropout;
  }
  return config;
}

Graph DecoderCase::graph() const {
  ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  spec.expert_balance = expert_balance;
  Graph built = build_hf_config(config(), spec, id);
  if (!lora.empty()) built = apply_lora(built, parse_lora(lora, id + " lora"));
  return activation_checkpointing ? apply_checkpointing(built, id + " checkpointing") : built;
}

std::string DecoderCase::describe() const {
  char sizes[160];
  std::snprintf(sizes, sizeof(sizes), "%s L%lld h%lld heads %lld/%lld mlp %lld V%lld%s batch %lld seq %lld",
                family.c_str(), static_cast<long long>(layers), static_cast<long long>(hidden),
                static_cast<long long>(heads), static_cast<long long>(kv_heads), static_cast<long long>(mlp),
                static_cast<long long>(vocab), tied ? " tied" : "", static_cast<long long>(batch),
                static_cast<long long>(seq));
  std::string text = sizes;
  if (family == "gpt_neox")
    text += " rotary " + std::to_string(rotary_pct).substr(0, 4) + (parallel_residual ? " parallel" : " sequential");
  if (head_dim > 0) text += " head_dim " + std::to_string(head_dim);
  if (attention_bias || mlp_bias)
    text += std::string(" bias") + (attention_bias ? " attn" : "") + (mlp_bias ? " mlp" : "");
  if (!activation.empty() && activation != "gelu") text += " " + activation;
  if (softcap > 0) text += " softcap " + std::to_string(static_cast<int>(softcap));
  if (window > 0) text += " window " + std::to_string(window);
  if (family == "phi3" && rotary_pct < 1) text += " rotary 0.5";
  if (experts > 0) {
    text += " experts " + std::to_string(experts) + " top " + std::to_string(top_k) + " w " +
            std::to_string(family == "mixtral" ? mlp : expert_mlp);
    if (shared_mlp > 0) text += " shared " + std::to_string(shared_mlp);
    if (normalize_topk) text += " normalized";
    if (routed_scale != 1.0) text += " scaled";
    if (sparse_step > 1) text += " step 2";
    if (dense_first > 0) text += " dense first";
    if (expert_balance != 1.0) text += " balance " + std::to_string(expert_balance).substr(0, 3);
  }
  if (kv_lora_rank > 0)
    text += " mla kv " + std::to_string(kv_lora_rank) + " q " + std::to_string(q_lora_rank) + " " +
            std::to_string(qk_nope) + "+" + std::to_string(qk_rope) + "/" + std::to_string(v_head_dim);
  if (dropout > 0) text += " dropout";
  text += " " + name(optimizer);
  if (!lora.empty()) text += " lora " + lora;
  if (precision != Precision::Fp32) text += " " + name(precision);
  if (activation_checkpointing) text += " checkpointing";
  if (grad_accum > 1) text += " accum " + std::to_string(grad_accum);
  return text;
}

std::vector<DecoderCase> decoder_sweep(uint64_t seed, size_t count) {
  static const char* const kFamilies[] = {"llama", "mistral", "gpt_neox"};
  SplitMix64 rng(seed);
  std::vector<DecoderCase> cases;
  for (size_t index = 0; index < count; ++index) {
    DecoderCase c;
    c.id = case_id('d', index);
    c.family = kFamilies[index % 3];
    c.layers = rng.int_between(1, 3);
    if (c.family == "gpt_neox")
      draw_neox(rng, c);
    else
      draw_llama(rng, c);
    c.vocab = rng.int_between(32, 1500);
    c.tied = chance(rng, 0.3);
    c.batch = rng.int_between(1, 4);
    c.seq = rng.int_between(2, 48);
    c.optimizer = pick(rng, all_optimizers());  // every optimizer of the table (sgd, adam, adamw: the sweep's draws)
    if (chance(rng, 0.5)) {
      const int64_t rank = pick<int64_t>(rng, {1, 2, 4, 8, 16});
      const int64_t alpha = pick<int64_t>(rng, {rank, 2 * rank, 16});
      c.lora =
          "r=" + std::to_string(rank) + ",alpha=" + std::to_string(alpha) + ",targets=" + lora_targets(rng, c.family);
      if (chance(rng, 0.2)) c.lora += ",norms=train";
    }
    cases.push_back(c);
  }
  return cases;
}

std::vector<DecoderCase> decoder_mode_sweep(uint64_t seed, size_t count) {
  std::vector<DecoderCase> cases = decoder_sweep(35, count);
  SplitMix64 rng(seed);
  static const Precision kPrecisions[] = {Precision::Fp32, Precision::Bf16, Precision::Bf16Pure};
  for (size_t index = 0; index < cases.size(); ++index) {
    DecoderCase& c = cases[index];
    c.id = "m" + c.id.substr(1);
    c.precision = kPrecisions[(index / 3) % 3];  // the families go in threes: each meets each precision
    c.activation_checkpointing = chance(rng, 0.5);
    c.grad_accum = chance(rng, 0.25) ? 2 : 1;
  }
  return cases;
}

std::vector<DecoderCase> family_sweep(uint64_t seed, size_t count) {
  static const std::vector<std::string> kFamilies = {"qwen2", "qwen3", "gemma", "gemma2", "phi3"};
  static const std::vector<Precision> kPrecisions = {Precision::Fp32, Precision::Bf16, Precision::Bf16Pure};
  SplitMix64 rng(seed);
  std::vector<DecoderCase> cases;
  for (size_t index = 0; index < count; ++index) {
    DecoderCase c;
    c.id = case_id('f', index);
    c.family = pick(rng, kFamilies);  // drawn, not in turn: a rotation slice (every tenth) meets every family
    c.layers = rng.int_between(1, 3);
    draw_family(rng, c);
    c.vocab = rng.int_between(32, 1500);
    c.tied = c.family == "gemma" || c.family == "gemma2" ? !chance(rng, 0.2) : chance(rng, 0.3);
    c.batch = rng.int_between(1, 4);
    c.seq = rng.int_between(2, 48);
    c.optimizer = pick(rng, all_optimizers());
    if (chance(rng, 0.5)) {
      const int64_t rank = pick<int64_t>(rng, {1, 2, 4, 8});
      c.lora = "r=" + std::to_string(rank) + ",alpha=16,targets=" + lora_targets(rng, c.family);
      if (chance(rng, 0.2)) c.lora += ",norms=train";
    }
    c.precision = pick(rng, kPrecisions);
    c.activation_checkpointing = chance(rng, 0.4);
    c.grad_accum = chance(rng, 0.2) ? 2 : 1;
    cases.push_back(c);
  }
  return cases;
}

std::vector<DecoderCase> moe_sweep(uint64_t seed, size_t count) {
  static const std::vector<std::string> kFamilies = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2"};
  static const std::vector<Precision> kPrecisions = {Precision::Fp32, Precision::Bf16, Precision::Bf16Pure};
  SplitMix64 rng(seed);
  std::vector<DecoderCase> cases;
  for (size_t index = 0; index < count; ++index) {
    DecoderCase c;
    c.id = case_id('e', index);
    c.family = pick(rng, kFamilies);
    c.layers = rng.int_between(1, 3);
    draw_moe(rng, c);
    c.vocab = rng.int_between(32, 1000);
    c.tied = chance(rng, 0.2);
    c.batch = rng.int_between(1, 4);
    c.seq = rng.int_between(2, 40);
    while (c.batch * c.seq * c.top_k < c.experts) ++c.seq;  // every expert a token at even balance
    if (chance(rng, 0.15)) c.expert_balance = std::min(2.0, static_cast<double>(c.experts) / c.top_k);
    c.optimizer = pick(rng, all_optimizers());
    if (chance(rng, 0.5)) {
      int64_t rank = pick<int64_t>(rng, {1, 2, 4, 8});
      const std::string targets = moe_lora_targets(rng, c);
      if (ends_with(targets, "gate")) rank = std::min(rank, c.experts);  // the router is experts wide
      c.lora = "r=" + std::to_string(rank) + ",alpha=16,targets=" + targets;
    }
    c.precision = pick(rng, kPrecisions);
    c.activation_checkpointing = chance(rng, 0.4);
    c.grad_accum = chance(rng, 0.2) ? 2 : 1;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace dnncast::models
