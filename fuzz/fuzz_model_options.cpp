// What a user writes about a model besides its name (issue 51): a Hugging Face config.json (read as `predict
// CONFIG.json` reads it: nesting checked, parsed, built at a small batch and sequence) and the --lora text applied
// to a small tied llama. The first byte picks which; the rest is the text. Only InputError is an answer.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/json_limits.h"
#include "forecast/forecast.h"
#include "fuzz_common.h"
#include "graph/lora.h"
#include "models/hf_config.h"

namespace {

// A small llama with tied embeddings: two layers, hidden 32 (the LoRA target of every input).
const dnncast::Graph& small_llama() {
  static const dnncast::Graph graph = [] {
    const nlohmann::json config = {{"model_type", "llama"},       {"hidden_size", 32},       {"intermediate_size", 64},
                                   {"num_attention_heads", 4},    {"num_hidden_layers", 2},  {"vocab_size", 100},
                                   {"tie_word_embeddings", true}, {"num_key_value_heads", 2}};
    dnncast::models::ModelSpec spec;
    spec.batch = 1;
    spec.seq_len = 8;
    return dnncast::models::build_hf_config(config, spec, "fuzz llama");
  }();
  return graph;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = dnncast::fuzz::text_of(data + 1, size - 1);
  return dnncast::fuzz::run_one([&] {
    if (data[0] % 2 == 0) {
      dnncast::check_json_nesting(text, "config.json");
      const nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
      if (config.is_discarded() || !dnncast::models::is_hf_config(config)) return;
      dnncast::models::ModelSpec spec;
      spec.batch = 1;
      spec.seq_len = 4;
      const dnncast::Graph graph = dnncast::models::build_hf_config(config, spec, "config.json");
      dnncast::forecast::inspect(graph);
    } else {
      const dnncast::LoraConfig lora = dnncast::parse_lora(text, "--lora");
      dnncast::apply_lora(small_llama(), lora);
    }
  });
}
