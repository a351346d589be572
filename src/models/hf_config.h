// Models from a Hugging Face config.json (issue 34): `dnncast predict path/config.json --seq L --batch B`. The
// families whose layers the IR holds today: gpt2 (GPT2LMHeadModel; also the GPT-3-shaped configs NeuSight
// times), bert (BertForSequenceClassification, or the masked-LM head of BertLMHeadModel / BertForMaskedLM) and
// opt (OPTForCausalLM). A config of another family (llama, mistral, gpt_neox, ...) is refused naming it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast {

// True when `document` reads as a Hugging Face config (an object with "model_type"), not a dnncast graph.
bool is_hf_config(const nlohmann::json& document);

// The model `config` describes, for spec.batch (0: 1) and spec.seq_len (0: the smaller of 512 and the config's
// positions); named after "_name_or_path", else `source`. Throws InputError naming the file and the field: a
// missing or ill-typed field, a size that is not positive, heads that do not divide the width, an unknown
// activation, a family not built here.
Graph build_hf_config(const nlohmann::json& config, const ModelSpec& spec, const std::string& source);

}  // namespace dnncast
