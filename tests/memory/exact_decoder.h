// The decoder the LoRA, precision and checkpointing memory tests measure: Llama's layer (pre-norm, q/k/v/o
// projections without bias, causal attention, SwiGLU MLP gate/up/down, an untied LM head) built from LayerNorm for
// RMSNorm and without rotary (ops allocator-exact since before issue 35, and the ones bf16 autocast runs on the
// CPU), the hidden states as the input. Each layer is a block (graph/checkpoint.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace dnncast::memory {

struct DecoderSize {
  int64_t batch = 2, seq = 16, hidden = 64, heads = 4, kv_width = 64, mlp = 172, vocab = 96, layers = 2;
};

inline Graph exact_llama(const DecoderSize& s) {
  GraphBuilder b("llama_exact_ops", "llama");
  const int64_t head_dim = s.hidden / s.heads;
  const std::map<std::string, AttrValue> norm{{"normalized_shape", std::vector<int64_t>{s.hidden}}, {"eps", 1e-6}};
  auto heads = [&](const std::string& name, int x) {
    const int64_t count = b.graph().node(x).shape.dims.back() / head_dim;  // k and v: fewer heads (GQA)
    int y = b.op(name + "_view", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, count, head_dim}}});
    return b.op(name + "_heads", "Permute", {y}, {{"dims", std::vector<int64_t>{0, 2, 1, 3}}});
  };
  int x = b.input(TensorShape{s.batch, s.seq, s.hidden}, DType::F32, "hidden_states");
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    b.begin_block(layer);  // what --checkpointing recomputes (graph/checkpoint.h)
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    const std::string attn = prefix + "self_attn.";
    int y = b.op(prefix + "input_layernorm", "LayerNorm", {x}, norm);
    int q = heads(attn + "q_proj", b.linear(attn + "q_proj", y, s.hidden, false));
    int k = heads(attn + "k_proj", b.linear(attn + "k_proj", y, s.kv_width, false));
    int v = heads(attn + "v_proj", b.linear(attn + "v_proj", y, s.kv_width, false));
    y = b.op(attn + "attention", "ScaledDotProductAttention", {q, k, v}, {{"causal", int64_t{1}}});
    y = b.op(attn + "merge_heads", "Permute", {y},
             {{"dims", std::vector<int64_t>{0, 2, 1, 3}}, {"contiguous", int64_t{1}}});
    y = b.op(attn + "merge_view", "Flatten", {y}, {{"start_dim", int64_t{2}}});
    y = b.linear(attn + "o_proj", y, s.hidden, false);
    x = b.add(prefix + "add_1", x, y);
    y = b.op(prefix + "post_attention_layernorm", "LayerNorm", {x}, norm);
    int gate = b.linear(prefix + "mlp.gate_proj", y, s.mlp, false);
    gate = b.op(prefix + "mlp.act_fn", "SiLU", {gate}, {{"inplace", int64_t{0}}});
    int up = b.linear(prefix + "mlp.up_proj", y, s.mlp, false);
    y = b.mul(prefix + "mlp.gate_times_up", gate, up);
    y = b.linear(prefix + "mlp.down_proj", y, s.hidden, false);
    x = b.add(prefix + "add_2", x, y);
    b.end_block();
  }
  x = b.op("model.norm", "LayerNorm", {x}, norm);
  x = b.linear("lm_head", x, s.vocab, false);
  b.op("logits_rows", "Flatten", {x}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}});  // cross-entropy rows
  return b.finish();
}

}  // namespace dnncast::memory
