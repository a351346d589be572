// LoRA fine-tuning as a graph transform (issue 35): every parameter frozen (Node::frozen) except the adapters,
// and each targeted Linear y = x W^T (+b) becomes PEFT's LoRA layer with dropout 0:
//   name              the Linear, frozen (its input gradient still flows where something upstream trains)
//   name.lora_A       Linear in -> r, no bias (A: r x in)
//   name.lora_B       Linear r -> out, no bias (B: out x r)
//   name.lora_scale   Mul by the scalar alpha / r
//   name.lora_add     Add: base + scaled adapter, what the Linear's consumers now read
// in PEFT's order (result = base_layer(x); result = result + lora_B(lora_A(x)) * scaling), so that autograd
// creates and runs the same nodes as peft.LoraLayer does. Built of existing ops: the memory simulator replays
// them with the recipes it already has, the executor runs them with the kernels PyTorch runs.
// Trainable parameters: r * (in + out) per adapted Linear (Llama-2-7B, r=8 on q, v: 32 layers x 2 x 8 x 8192 =
// 4,194,304, PEFT's figure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dnncast {

struct LoraConfig {
  int64_t rank = 8;                            // r
  double alpha = 8;                            // lora_alpha (PEFT's default 8); scaling = alpha / r
  std::vector<std::string> targets{"q", "v"};  // PEFT's default for Llama: q_proj, v_proj
  bool train_norms = false;                    // PEFT freezes the norms too
};

// "r=16[,alpha=32][,targets=q,v,o][,norms=train]": a target is a short projection name (q, k, v, o, gate, up, down:
// the Hugging Face module q_proj, ...) or a module name as the graph spells its last part(s) (c_attn,
// query_key_value, dense_h_to_4h, self_attn.q_proj). Throws InputError naming `what` (the flag or keyword).
LoraConfig parse_lora(const std::string& text, const std::string& what);

// The graph fine-tuned with LoRA (see above). A target matches a Linear whose name is it or ends in "." + it
// ("q" also "q_proj"). Throws InputError naming it: a target matching no Linear (with the graph's projection
// names: GPT-2's q, k and v are one fused c_attn, give targets=c_attn), a rank < 1 or above the smaller width
// of a targeted Linear. `graph` must be shape-inferred; so is the result.
Graph apply_lora(const Graph& graph, const LoraConfig& config);

}  // namespace dnncast
