// Models from a Hugging Face config.json (issue 34): `dnncast predict path/config.json --seq L --batch B`. The
// families whose layers the IR holds: gpt2 (GPT2LMHeadModel; also the GPT-3-shaped configs NeuSight times), bert
// (BertForSequenceClassification, or the masked-LM head of BertLMHeadModel / BertForMaskedLM), opt
// (OPTForCausalLM), llama and mistral (LlamaForCausalLM / MistralForCausalLM: RMSNorm, SwiGLU MLP, rotary q and k,
// grouped-query attention through num_key_value_heads, head_dim, attention_bias, mlp_bias, tie_word_embeddings)
// and gpt_neox (GPTNeoXForCausalLM: fused query_key_value, rotary_pct, use_parallel_residual); builders in
// models/transformers.cpp and models/decoders.cpp. Approximated (docs/GPU.md): attention over the full L x L scores
// (libtorch 1.13's math path), GQA's k and v copied to every query head (repeat_kv), Mistral's sliding_window
// ignored. A config of another family (falcon, qwen2, ...) is refused naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast::models {

// True when `document` reads as a Hugging Face config (an object with "model_type"), not a dnncast graph.
bool is_hf_config(const nlohmann::json& document);

// The model `config` describes, for spec.batch (0: 1) and spec.seq_len (0: the smaller of 512 and the config's
// positions); named after "_name_or_path", else `source`. Throws InputError naming the file and the field: a
// missing or ill-typed field, a size that is not positive, heads that do not divide the width, key/value heads
// that do not divide the heads, a rotary_pct that rotates an odd number of features, an unknown activation, a
// family not built here.
Graph build_hf_config(const nlohmann::json& config, const ModelSpec& spec, const std::string& source);

}  // namespace dnncast::models
