#include "models/hf_config.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/text.h"
#include "models/transformers.h"

namespace dnncast::models {

namespace {

// The most transformer layers a config.json may ask for.
constexpr int64_t kMaxConfigLayers = 10000;

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

// LlamaConfig / MistralConfig: defaults as their config classes set them.
TransformerSize llama_size(const Fields& fields, const std::string& type) {
  TransformerSize size;
  size.family = type;
  size.vocab = fields.size("vocab_size");
  size.positions = fields.size_or("max_position_embeddings", type == "mistral" ? 4096 * 32 : 2048);
  size.hidden = fields.size("hidden_size");
  size.heads = fields.size("num_attention_heads");
  size.layers = fields.layers("num_hidden_layers");
  size.mlp = fields.size("intermediate_size");
  size.kv_heads = fields.size_or("num_key_value_heads", size.heads);
  if (fields.has("head_dim"))
    size.head_dim = fields.size("head_dim");  // q is heads * head_dim wide, not necessarily hidden_size
  else
    check_heads(fields, "num_attention_heads", size);
  if (size.heads % size.kv_heads != 0)
    fields.fail("num_key_value_heads", std::to_string(size.kv_heads) + " key/value heads do not divide the " +
                                           std::to_string(size.heads) + " attention heads (num_attention_heads)");
  size.eps = fields.number_or("rms_norm_eps", 1e-6);
  size.rope_theta = fields.number_or("rope_theta", 10000.0, 1e12);
  size.tie_embeddings = fields.flag_or("tie_word_embeddings", false);
  size.bias = fields.flag_or("attention_bias", false);
  size.mlp_bias = fields.flag_or("mlp_bias", false);
  size.dropout = 0.0;
  size.attention_dropout = fields.number_or("attention_dropout", 0.0);
  size.activation = fields.activation("hidden_act", "silu", true);
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
  } else if (type == "gpt_neox") {
    size = gpt_neox_size(fields);
  } else {
    fields.fail(
        "model_type",
        quote(type) + " is not a family dnncast builds from a config (gpt2, bert, opt, llama, mistral, gpt_neox)");
  }
  std::string name = fields.text_or("_name_or_path", "");
  if (name.empty()) {
    name = source.substr(source.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  }
  size.name = name;
  ModelSpec at = spec;
  if (at.batch == 0) at.batch = 1;
  if (!at.input.empty())
    throw InputError(source + ": a " + type + " config takes a sequence length (--seq), not an image input");
  if (at.seq_len == 0) at.seq_len = std::min<int64_t>(512, size.positions);
  if (type == "gpt2") return build_gpt2(size, at);
  if (type == "bert") return build_bert(size, at);
  if (type == "opt") return build_opt(size, at);
  if (type == "gpt_neox") return build_gpt_neox(size, at);
  return build_llama(size, at);
}

}  // namespace dnncast::models
