#include "models/hf_config.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/text.h"
#include "models/transformers.h"

namespace dnncast::models {

namespace {

// The model_type values build_hf_config builds.
const char* const kConfigFamilies =
    "gpt2, bert, opt, gpt_neox, llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, gemma, gemma2, phi3, "
    "deepseek_v2";

// The most transformer layers a config.json may ask for.
constexpr int64_t kMaxConfigLayers = 10000;
// The most experts of a mixture's layer, and of all its layers together (read_experts).
constexpr int64_t kMaxExperts = 4096;
constexpr int64_t kMaxExpertMlps = 32768;  // about 20 KB of graph and trace each: 0.7 GB

// One config file's fields, read with the file and the field named in every error.
class Fields {
 public:
  Fields(const nlohmann::json& config, const std::string& source) : config_(config), source_(source) {}

  int64_t size(const char* key) const { return positive(key, required(key)); }
  // A layer count: positive and at most kMaxConfigLayers, refused before any graph is built (2^24 layers ended in
  // std::bad_alloc after 21 s: the graph takes about 7 KB a layer, the simulation more).
  int64_t layers(const char* key) const {
    const int64_t count = size(key);
    if (count > kMaxConfigLayers)
      fail(key, std::to_string(count) + " layers, more than " + std::to_string(kMaxConfigLayers) +
                    " (the largest published configs have under 200)");
    return count;
  }
  int64_t size_or(const char* key, int64_t fallback) const {
    const nlohmann::json* value = optional(key);
    return value == nullptr ? fallback : positive(key, *value);
  }
  // A count that may be 0 (first_k_dense_replace, n_shared_experts), at most 2^24.
  int64_t count_or(const char* key, int64_t fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_number_integer() || value->get<int64_t>() < 0 || value->get<int64_t>() > (int64_t{1} << 24))
      fail(key, "expected a non-negative integer (at most 2^24), got " + value->dump());
    return value->get<int64_t>();
  }
  // A non-negative number below `limit` (rope_theta reaches 5e5 and more; rates and eps stay below 1e3).
  double number_or(const char* key, double fallback, double limit = 1e3) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_number()) fail(key, "expected a number, got " + cut_for_message(value->dump()));
    const double number = value->get<double>();
    if (!(number >= 0 && number < limit))
      fail(key, "expected a non-negative number, got " + cut_for_message(value->dump()));
    return number;
  }
  bool has(const char* key) const { return optional(key) != nullptr; }
  // Whether the field is there and null (Gemma 2's softcapping: null turns it off, absent takes the default).
  bool null(const char* key) const {
    auto found = config_.find(key);
    return found != config_.end() && found->is_null();
  }
  // Whether the field holds a JSON object or is absent or null.
  bool object_or_null(const char* key) const {
    const nlohmann::json* value = optional(key);
    return value == nullptr || value->is_object();
  }
  bool flag_or(const char* key, bool fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) fail(key, "expected true or false, got " + cut_for_message(value->dump()));
    return value->get<bool>();
  }
  std::string text_or(const char* key, const std::string& fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_string()) fail(key, "expected a string, got " + cut_for_message(value->dump()));
    return value->get<std::string>();
  }
  // The MLP's activation as the IR names it: HF's gelu, gelu_new, gelu_fast, gelu_pytorch_tanh -> GELU; relu -> ReLU;
  // where `silu` (the rotary decoders) also silu and swish -> SiLU.
  std::string activation(const char* key, const std::string& fallback, bool silu = false) const {
    const std::string name = text_or(key, fallback);
    if (name == "relu") return "ReLU";
    // transformers' ACT2FN names of the GELU family (exact or tanh-approximated: one GELU node either way).
    for (const char* gelu : {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate"})
      if (name == gelu) return "GELU";
    if (silu && (name == "silu" || name == "swish")) return "SiLU";
    fail(key, quote(name) + " is not an activation dnncast models (gelu, gelu_new, gelu_fast, gelu_pytorch_tanh, relu" +
                  (silu ? ", silu, swish)" : ")"));
  }
  [[noreturn]] void fail(const char* key, const std::string& why) const {
    throw InputError(source_ + ": field '" + key + "': " + why);
  }

 private:
  const nlohmann::json& required(const char* key) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) fail(key, "missing");
    return *value;
  }
  const nlohmann::json* optional(const char* key) const {
    auto found = config_.find(key);
    return found == config_.end() || found->is_null() ? nullptr : &*found;
  }
  int64_t positive(const char* key, const nlohmann::json& value) const {
    if (!value.is_number_integer() || value.get<int64_t>() <= 0 || value.get<int64_t>() > (int64_t{1} << 24))
      fail(key, "expected a positive integer (at most 2^24), got " + value.dump());
    return value.get<int64_t>();
  }
  const nlohmann::json& config_;
  std::string source_;
};

std::string architecture(const nlohmann::json& config) {
  auto found = config.find("architectures");
  if (found == config.end() || !found->is_array() || found->empty() || !(*found)[0].is_string()) return "";
  return (*found)[0].get<std::string>();
}

void check_heads(const Fields& fields, const char* key, const TransformerSize& size) {
  if (size.hidden % size.heads != 0)
    fields.fail(key, std::to_string(size.heads) + " heads do not divide the width " + std::to_string(size.hidden));
}

TransformerSize gpt2_size(const Fields& fields) {
  TransformerSize size;
  size.family = "gpt2";
  size.vocab = fields.size("vocab_size");
  size.positions = fields.size("n_positions");
  size.hidden = fields.size("n_embd");
  size.heads = fields.size("n_head");
  size.layers = fields.layers("n_layer");
  size.mlp = fields.size_or("n_inner", 4 * size.hidden);
  size.eps = fields.number_or("layer_norm_epsilon", 1e-5);
  size.dropout = fields.number_or("resid_pdrop", 0.1);
  size.attention_dropout = fields.number_or("attn_pdrop", 0.1);
  size.activation = fields.activation("activation_function", "gelu_new");
  check_heads(fields, "n_head", size);
  return size;
}

TransformerSize bert_size(const Fields& fields, const std::string& head) {
  TransformerSize size;
  size.family = "bert";
  size.vocab = fields.size("vocab_size");
  size.positions = fields.size_or("max_position_embeddings", 512);
  size.hidden = fields.size("hidden_size");
  size.heads = fields.size("num_attention_heads");
  size.layers = fields.layers("num_hidden_layers");
  size.mlp = fields.size("intermediate_size");
  size.type_vocab = fields.size_or("type_vocab_size", 2);
  size.eps = fields.number_or("layer_norm_eps", 1e-12);
  size.dropout = fields.number_or("hidden_dropout_prob", 0.1);
  size.attention_dropout = fields.number_or("attention_probs_dropout_prob", 0.1);
  size.activation = fields.activation("hidden_act", "gelu");
  size.lm_head = head == "BertLMHeadModel" || head == "BertForMaskedLM";
  size.classes = fields.size_or("num_labels", 2);
  check_heads(fields, "num_attention_heads", size);
  return size;
}

TransformerSize opt_size(const Fields& fields) {
  TransformerSize size;
  size.family = "opt";
  size.vocab = fields.size("vocab_size");
  size.positions = fields.size("max_position_embeddings");
  size.position_offset = 2;  // OPTLearnedPositionalEmbedding keeps two rows more
  size.hidden = fields.size("hidden_size");
  size.heads = fields.size("num_attention_heads");
  size.layers = fields.layers("num_hidden_layers");
  size.mlp = fields.size("ffn_dim");
  size.embed_dim = fields.size_or("word_embed_proj_dim", size.hidden);
  size.pre_norm = fields.flag_or("do_layer_norm_before", true);
  // OPT-350m (post-LN) has no final LayerNorm: HF drops it when do_layer_norm_before is false.
  size.final_norm = size.pre_norm && !fields.flag_or("_remove_final_layer_norm", false);
  size.bias = fields.flag_or("enable_bias", true);
  size.eps = 1e-5;
  size.dropout = fields.number_or("dropout", 0.1);
  size.attention_dropout = fields.number_or("attention_dropout", 0.0);
  size.activation = fields.activation("activation_function", "relu");
  check_heads(fields, "num_attention_heads", size);
  return size;
}

// LlamaConfig / MistralConfig and the llama-shaped families: defaults as their config classes set them.
TransformerSize llama_size(const Fields& fields, const std::string& type) {
  TransformerSize size;
  size.family = type;
  const bool gemma = type == "gemma" || type == "gemma2";
  size.vocab = fields.size("vocab_size");
  const int64_t positions = type == "mistral" || type == "mixtral" ? 4096 * 32
                            : type == "phi3"                       ? 4096
                            : gemma                                ? 8192
                            : type == "llama"                      ? 2048
                                                                   : 32768;
  size.positions = fields.size_or("max_position_embeddings", positions);
  size.hidden = fields.size("hidden_size");
  size.heads = fields.size("num_attention_heads");
  size.layers = fields.layers("num_hidden_layers");
  size.mlp = fields.size("intermediate_size");
  size.kv_heads = fields.size_or("num_key_value_heads", size.heads);
  if (fields.has("head_dim"))
    size.head_dim = fields.size("head_dim");  // q is heads * head_dim wide, not necessarily hidden_size
  else if (gemma || type == "qwen3" || type == "qwen3_moe")
    size.head_dim = gemma ? 256 : 128;  // GemmaConfig's, Qwen3Config's default
  else
    check_heads(fields, "num_attention_heads", size);
  if (size.heads % size.kv_heads != 0)
    fields.fail("num_key_value_heads", std::to_string(size.kv_heads) + " key/value heads do not divide the " +
                                           std::to_string(size.heads) + " attention heads (num_attention_heads)");
  size.eps = fields.number_or("rms_norm_eps", type == "phi3" || type == "mixtral" ? 1e-5 : 1e-6);
  size.rope_theta = fields.number_or("rope_theta", 10000.0, 1e12);
  if (fields.has("rope_scaling") && !fields.object_or_null("rope_scaling"))
    fields.fail("rope_scaling", "expected an object or null");  // it scales rotary's frequencies: no size changes
  size.tie_embeddings = fields.flag_or("tie_word_embeddings", gemma);
  size.bias = fields.flag_or("attention_bias", false);
  size.mlp_bias = fields.flag_or("mlp_bias", false);
  size.dropout = 0.0;
  size.attention_dropout = fields.number_or("attention_dropout", 0.0);
  if (gemma) {
    // Gemma's MLP reads hidden_activation; transformers takes the tanh GELU where it is null (not hidden_act).
    size.activation = fields.activation("hidden_activation", "gelu_pytorch_tanh", true);
    if (size.activation == "GELU" && fields.text_or("hidden_activation", "gelu_pytorch_tanh") != "gelu")
      size.gelu_approximate = "tanh";
  } else {
    size.activation = fields.activation("hidden_act", "silu", true);
  }
  if (type == "mistral" || type == "phi3" || type == "mixtral")
    size.sliding_window = fields.size_or("sliding_window", 0);
  return size;
}

// Qwen2Config / Qwen3Config: q, k and v biased (qwen2), q and k normalized per head (qwen3); sliding windows only
// where use_sliding_window is set, on the layers from max_window_layers on.
TransformerSize qwen_size(const Fields& fields, const std::string& type) {
  TransformerSize size = llama_size(fields, type);
  if (type == "qwen2" || type == "qwen2_moe") {
    size.bias = true;  // Qwen2Attention: q, k, v with biases, o_proj without
    size.o_proj_bias = false;
  } else {
    size.qk_norm = true;
  }
  if (fields.flag_or("use_sliding_window", false)) {
    size.sliding_window = fields.size_or("sliding_window", 4096);
    size.window_first_layer = fields.size_or("max_window_layers", 28);
  }
  return size;
}

// The routed experts' fields the MoE configs share: how many, how many a token takes, each one's width.
void read_experts(const Fields& fields, TransformerSize& size, const char* count_key, const char* width_key) {
  size.experts = fields.size(count_key);
  // Each expert is its own nodes (models/moe.h): a bound on the graph, far above the published configs (DeepSeek-V3
  // 256 experts x 58 sparse layers = 14,848; Qwen3-235B-A22B 128 x 94).
  if (size.experts > kMaxExperts)
    fields.fail(count_key, std::to_string(size.experts) + " experts, more than " + std::to_string(kMaxExperts) +
                               " (the largest published configs have 256)");
  if (size.experts * size.layers > kMaxExpertMlps)
    fields.fail(count_key, std::to_string(size.experts) + " experts x " + std::to_string(size.layers) +
                               " layers, more than " + std::to_string(kMaxExpertMlps) +
                               " expert MLPs in all (DeepSeek-V3 has 14,848)");
  size.experts_per_token = fields.size("num_experts_per_tok");
  if (size.experts_per_token > size.experts)
    fields.fail("num_experts_per_tok", std::to_string(size.experts_per_token) + " experts a token, of " +
                                           std::to_string(size.experts) + " (" + count_key + ")");
  size.expert_mlp = width_key == nullptr ? size.mlp : fields.size(width_key);
}

// MixtralConfig: Mistral's attention, every layer a block_sparse_moe of num_local_experts SwiGLU experts
// (w1, w3, w2) of intermediate_size, top num_experts_per_tok, the weights normalized to sum to one.
TransformerSize mixtral_size(const Fields& fields) {
  TransformerSize size = llama_size(fields, "mixtral");
  size.moe_style = "mixtral";
  size.rope_theta = fields.number_or("rope_theta", 1e6, 1e12);
  read_experts(fields, size, "num_local_experts", nullptr);
  size.normalize_topk = true;
  return size;
}

// Qwen2MoeConfig / Qwen3MoeConfig: Qwen2's (biased q, k, v) or Qwen3's (per-head q/k norms) attention; the layers
// with (layer + 1) % decoder_sparse_step == 0 and not in mlp_only_layers take num_experts experts of
// moe_intermediate_size (qwen2_moe also a shared expert of shared_expert_intermediate_size behind a sigmoid gate),
// the others a dense MLP of intermediate_size.
TransformerSize qwen_moe_size(const Fields& fields, const nlohmann::json& config, const std::string& type) {
  TransformerSize size = qwen_size(fields, type);
  size.moe_style = "qwen2_moe";
  read_experts(fields, size, "num_experts", "moe_intermediate_size");
  size.normalize_topk = fields.flag_or("norm_topk_prob", false);
  size.sparse_step = fields.size_or("decoder_sparse_step", 1);
  if (type == "qwen2_moe") {
    size.shared_expert_mlp = fields.count_or("shared_expert_intermediate_size", 0);
    size.shared_expert_gate = size.shared_expert_mlp > 0;
  }
  auto found = config.find("mlp_only_layers");
  if (found != config.end() && !found->is_null()) {
    if (!found->is_array()) fields.fail("mlp_only_layers", "expected a list of layer indices");
    for (const nlohmann::json& layer : *found) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 || layer.get<int64_t>() >= size.layers)
        fields.fail("mlp_only_layers", "expected layer indices below " + std::to_string(size.layers) + ", got " +
                                           cut_for_message(layer.dump()));
      size.dense_layers.push_back(layer.get<int64_t>());
    }
  }
  return size;
}

// DeepseekV2Config: multi-head latent attention (q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
// v_head_dim; models/decoders.cpp), the first first_k_dense_replace layers dense (intermediate_size), the others with
// layer % moe_layer_freq == 0 n_routed_experts experts of moe_intermediate_size, top num_experts_per_tok, and
// n_shared_experts of the same width as one shared MLP. The softmax scale: q_head_dim^-0.5, times yarn's mscale
// squared where rope_scaling has mscale_all_dim. topk_method group_limited_greedy routes within groups of experts:
// the balance assumption stands in for it as for greedy.
TransformerSize deepseek_size(const Fields& fields, const nlohmann::json& config) {
  TransformerSize size = llama_size(fields, "deepseek_v2");
  size.moe_style = "deepseek_v2";
  size.q_lora_rank = fields.count_or("q_lora_rank", 0);
  size.kv_lora_rank = fields.size("kv_lora_rank");
  size.qk_nope_dim = fields.size("qk_nope_head_dim");
  size.qk_rope_dim = fields.size("qk_rope_head_dim");
  size.v_head_dim = fields.size("v_head_dim");
  if (size.qk_rope_dim % 2 != 0) fields.fail("qk_rope_head_dim", "rotary needs an even width");
  size.kv_heads = size.heads;
  size.head_dim = 0;
  double scale = 1.0 / std::sqrt(static_cast<double>(size.qk_nope_dim + size.qk_rope_dim));
  auto rope = config.find("rope_scaling");
  if (rope != config.end() && rope->is_object()) {
    auto number = [&](const char* key, double fallback) {
      auto found = rope->find(key);
      if (found == rope->end() || found->is_null()) return fallback;
      if (!found->is_number() || !(found->get<double>() >= 0 && found->get<double>() < 1e6))
        fields.fail("rope_scaling", std::string("'") + key + "': expected a non-negative number, got " +
                                        cut_for_message(found->dump()));
      return found->get<double>();
    };
    const double all_dim = number("mscale_all_dim", 0.0), factor = number("factor", 1.0);
    if (all_dim > 0 && factor > 1) {
      const double mscale = 0.1 * all_dim * std::log(factor) + 1.0;
      scale *= mscale * mscale;
    }
  }
  size.attention_scale = scale;
  if (fields.has("n_routed_experts")) {
    read_experts(fields, size, "n_routed_experts", "moe_intermediate_size");
    size.normalize_topk = size.experts_per_token > 1 && fields.flag_or("norm_topk_prob", false);
    if (!size.normalize_topk) size.routed_scale = fields.number_or("routed_scaling_factor", 1.0, 1e6);
    size.first_dense_layers = fields.count_or("first_k_dense_replace", 0);
    size.sparse_step = fields.size_or("moe_layer_freq", 1);
    size.shared_expert_mlp = fields.count_or("n_shared_experts", 0) * size.expert_mlp;
  }
  return size;
}

// GemmaConfig / Gemma2Config: embeddings times sqrt(hidden_size), RMSNorm by 1 + weight, GeGLU; Gemma 2 also a
// norm after attention and after the MLP, soft-capped scores and logits, every other layer a sliding window.
TransformerSize gemma_size(const Fields& fields, const std::string& type) {
  TransformerSize size = llama_size(fields, type);
  size.embed_scale = std::sqrt(static_cast<double>(size.hidden));
  size.norm_unit_offset = true;
  if (type == "gemma2") {
    size.sandwich_norm = true;
    size.attention_scale = 1.0 / std::sqrt(fields.number_or("query_pre_attn_scalar", 256.0, 1e9));
    if (!(size.attention_scale > 0 && std::isfinite(size.attention_scale)))
      fields.fail("query_pre_attn_scalar", "expected a positive number");
    size.attention_softcap =
        fields.null("attn_logit_softcapping") ? 0.0 : fields.number_or("attn_logit_softcapping", 50.0, 1e9);
    size.logit_softcap =
        fields.null("final_logit_softcapping") ? 0.0 : fields.number_or("final_logit_softcapping", 30.0, 1e9);
    size.sliding_window = fields.size_or("sliding_window", 4096);
    size.alternate_window = true;
  }
  return size;
}

// Phi3Config: one qkv_proj and one gate_up_proj, no biases, rotary on partial_rotary_factor of each head,
// dropout after the embedding (embd_pdrop) and on the residual branches (resid_pdrop).
TransformerSize phi3_size(const Fields& fields) {
  TransformerSize size = llama_size(fields, "phi3");
  size.fused_projections = true;
  size.dropout = fields.number_or("resid_pdrop", 0.0);
  size.embed_dropout = fields.number_or("embd_pdrop", 0.0);
  const double factor = fields.number_or("partial_rotary_factor", 1.0);
  const int64_t head_dim = size.head_dim > 0 ? size.head_dim : size.hidden / size.heads;
  const auto rotated = static_cast<int64_t>(static_cast<double>(head_dim) * factor);
  if (factor > 1.0 || rotated < 2 || rotated % 2 != 0)
    fields.fail("partial_rotary_factor", "rotates " + std::to_string(rotated) + " of a head's " +
                                             std::to_string(head_dim) +
                                             " features; expected an even number, at least 2, at most all");
  if (rotated != head_dim) size.rotary_dim = rotated;
  return size;
}

// GPTNeoXConfig: defaults as its config class sets them.
TransformerSize gpt_neox_size(const Fields& fields) {
  TransformerSize size;
  size.family = "gpt_neox";
  size.vocab = fields.size("vocab_size");
  size.positions = fields.size_or("max_position_embeddings", 2048);
  size.hidden = fields.size("hidden_size");
  size.heads = fields.size("num_attention_heads");
  size.layers = fields.layers("num_hidden_layers");
  size.mlp = fields.size("intermediate_size");
  check_heads(fields, "num_attention_heads", size);
  const char* pct_key =
      fields.has("rotary_pct") || !fields.has("partial_rotary_factor") ? "rotary_pct" : "partial_rotary_factor";
  const double pct = fields.number_or(pct_key, 0.25);
  const int64_t head_dim = size.hidden / size.heads;
  size.rotary_dim = static_cast<int64_t>(static_cast<double>(head_dim) * pct);  // HF: int(head_size * rotary_pct)
  if (pct > 1.0 || size.rotary_dim < 2 || size.rotary_dim % 2 != 0)
    fields.fail(pct_key, "rotates " + std::to_string(size.rotary_dim) + " of a head's " + std::to_string(head_dim) +
                             " features; expected an even number, at least 2, at most all");
  size.rope_theta = fields.number_or("rotary_emb_base", fields.number_or("rope_theta", 10000.0, 1e12), 1e12);
  size.eps = fields.number_or("layer_norm_eps", 1e-5);
  size.tie_embeddings = fields.flag_or("tie_word_embeddings", false);
  size.parallel_residual = fields.flag_or("use_parallel_residual", true);
  size.bias = fields.flag_or("attention_bias", true);
  size.dropout = fields.number_or("hidden_dropout", 0.0);
  size.attention_dropout = fields.number_or("attention_dropout", 0.0);
  size.activation = fields.activation("hidden_act", "gelu", true);
  return size;
}

}  // namespace

bool is_hf_config(const nlohmann::json& document) {
  return document.is_object() && document.contains("model_type") && !document.contains("nodes");
}

Graph build_hf_config(const nlohmann::json& config, const ModelSpec& spec, const std::string& source) {
  const Fields fields(config, source);
  const std::string type = fields.text_or("model_type", "");
  TransformerSize size;
  if (type == "gpt2") {
    size = gpt2_size(fields);
  } else if (type == "bert") {
    size = bert_size(fields, architecture(config));
  } else if (type == "opt") {
    size = opt_size(fields);
  } else if (type == "llama" || type == "mistral") {
    size = llama_size(fields, type);
  } else if (type == "qwen2" || type == "qwen3") {
    size = qwen_size(fields, type);
  } else if (type == "mixtral") {
    size = mixtral_size(fields);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    size = qwen_moe_size(fields, config, type);
  } else if (type == "deepseek_v2") {
    size = deepseek_size(fields, config);
  } else if (type == "gemma" || type == "gemma2") {
    size = gemma_size(fields, type);
  } else if (type == "phi3") {
    size = phi3_size(fields);
  } else if (type == "gpt_neox") {
    size = gpt_neox_size(fields);
  } else {
    fields.fail("model_type", quote(type) + " is not a family dnncast builds from a config (" + kConfigFamilies + ")");
  }
  std::string name = fields.text_or("_name_or_path", "");
  if (name.empty()) {
    name = source.substr(source.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  }
  size.name = name;
  if (spec.expert_balance != 1.0 && size.experts == 0)
    throw InputError(source + ": --expert-balance applies to a mixture of experts; this " + type + " config has none");
  size.expert_balance = spec.expert_balance;
  ModelSpec at = spec;
  if (at.batch == 0) at.batch = 1;
  if (!at.input.empty())
    throw InputError(source + ": a " + type + " config takes a sequence length (--seq), not an image input");
  if (at.seq_len == 0) at.seq_len = std::min<int64_t>(512, size.positions);
  if (type == "gpt2") return build_gpt2(size, at);
  if (type == "bert") return build_bert(size, at);
  if (type == "opt") return build_opt(size, at);
  if (type == "gpt_neox") return build_gpt_neox(size, at);
  Graph graph = build_llama(size, at);
  if (size.experts > 0) {
    graph.notes.push_back(
        "mixture of experts, " + std::to_string(size.experts) + " experts, top " +
        std::to_string(size.experts_per_token) + ": the tokens each expert takes follow the balance assumption (" +
        (size.expert_balance == 1.0 ? std::string("an even share")
                                    : "the busiest " + shown_number(size.expert_balance) + "x the mean") +
        " of the tokens x top-k, not a trained router's choices; --expert-balance asks about a skewed one); every "
        "expert's weights, gradients and optimizer states count, the activations and time follow the routed tokens");
  }
  return graph;
}

}  // namespace dnncast::models
