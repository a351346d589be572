// The transformer families as Hugging Face builds them, at any size: the zoo's bert_base and gpt2_small are two
// sizes of them, and a Hugging Face config.json names others (models/hf_config.h).
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "models/zoo.h"

namespace dnncast {

struct TransformerSize {
  std::string name, family;  // the graph's
  int64_t vocab = 0, positions = 0, hidden = 0, heads = 0, layers = 0, mlp = 0;
  double eps = 1e-5;                      // LayerNorm
  double dropout = 0.1, attention_dropout = 0.1;
  std::string activation = "GELU";        // of the MLP: GELU | ReLU
  int64_t type_vocab = 2;                 // bert: token types
  int64_t classes = 0;                    // bert: classifier outputs; 0 = ModelSpec::num_classes
  bool lm_head = false;                   // bert: the masked-LM head (tied decoder) instead of pooler + classifier
  int64_t position_offset = 0;            // opt: rows of the position table beyond `positions` (2)
  int64_t embed_dim = 0;                  // opt: the token embedding's width when not `hidden` (project in/out)
  bool pre_norm = true;                   // opt: do_layer_norm_before
  bool final_norm = true;                 // opt: the final LayerNorm
  bool bias = true;                       // opt: enable_bias
};

// Inputs: token ids N x spec.seq_len (bert also token_type_ids); InputError past `positions` tokens.
Graph build_bert(const TransformerSize& size, const ModelSpec& spec);  // ...ForSequenceClassification or LMHeadModel
Graph build_gpt2(const TransformerSize& size, const ModelSpec& spec);  // GPT2LMHeadModel, LM head tied
Graph build_opt(const TransformerSize& size, const ModelSpec& spec);   // OPTForCausalLM, LM head tied

}  // namespace dnncast
