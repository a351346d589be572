#include "models/hf_config.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "models/transformers.h"

namespace dnncast {

namespace {

// One config file's fields, read with the file and the field named in every error.
class Fields {
 public:
  Fields(const nlohmann::json& config, const std::string& source) : config_(config), source_(source) {}

  int64_t size(const char* key) const { return positive(key, required(key)); }
  int64_t size_or(const char* key, int64_t fallback) const {
    const nlohmann::json* value = optional(key);
    return value == nullptr ? fallback : positive(key, *value);
  }
  double number_or(const char* key, double fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_number()) fail(key, "expected a number, got " + value->dump());
    const double number = value->get<double>();
    if (!(number >= 0 && number < 1e3)) fail(key, "expected a non-negative number, got " + value->dump());
    return number;
  }
  bool flag_or(const char* key, bool fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) fail(key, "expected true or false, got " + value->dump());
    return value->get<bool>();
  }
  std::string text_or(const char* key, const std::string& fallback) const {
    const nlohmann::json* value = optional(key);
    if (value == nullptr) return fallback;
    if (!value->is_string()) fail(key, "expected a string, got " + value->dump());
    return value->get<std::string>();
  }
  // The MLP's activation as the IR names it: HF's gelu, gelu_new, gelu_fast, gelu_pytorch_tanh -> GELU; relu -> ReLU.
  std::string activation(const char* key, const std::string& fallback) const {
    const std::string name = text_or(key, fallback);
    if (name == "relu") return "ReLU";
    if (name.rfind("gelu", 0) == 0) return "GELU";
    fail(key, quote(name) + " is not an activation dnncast models (gelu, gelu_new, relu)");
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
  size.layers = fields.size("n_layer");
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
  size.layers = fields.size("num_hidden_layers");
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
  size.layers = fields.size("num_hidden_layers");
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
  } else {
    fields.fail("model_type", quote(type) + " is not a family dnncast builds from a config (gpt2, bert, opt)");
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
  return build_opt(size, at);
}

}  // namespace dnncast
