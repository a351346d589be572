// The rotary decoders of a Hugging Face config.json (models/hf_config.h), named after the module paths of
// Hugging Face's modeling files:
//   llama, mistral  LlamaForCausalLM / MistralForCausalLM: token embedding (no position table), pre-norm
//                   layers of RMSNorm, q/k/v projections (k and v kv_heads * head_dim wide: grouped-query
//                   attention), rotary q and k, k and v repeated to every query head (repeat_kv), causal
//                   attention, o_proj; RMSNorm, SwiGLU MLP down_proj(SiLU(gate_proj(x)) * up_proj(x)) with
//                   act_fn not in place; final RMSNorm; LM head tied or not (tie_word_embeddings).
//                   Llama-2-7B: 6,738,415,616 parameters; Mistral-7B-v0.1: 7,241,732,096.
//   gpt_neox        GPTNeoXForCausalLM: embed_in, pre-LN layers with one fused query_key_value projection
//                   (viewed as heads x 3 head_dim, q, k, v sliced), rotary on the first rotary_pct of each
//                   head, attention dense, GELU MLP; x + attention(ln1(x)) + mlp(ln2(x)) with
//                   use_parallel_residual, else the sequential residual; final LayerNorm; embed_out
//                   untied unless tie_word_embeddings. pythia-160m: 162,322,944 parameters.
// Attention is as libtorch 1.13's math path computes it (ScaledDotProductAttention: the full L x L scores with
// a causal mask). Dropout nodes only where a rate is not 0 (both families default to 0).
#include <map>

#include "graph/builder.h"
#include "models/moe.h"
#include "models/transformers.h"

namespace dnncast::models {

namespace {

using Attrs = std::map<std::string, AttrValue>;

int maybe_dropout(GraphBuilder& b, const std::string& name, int x, double p) {
  return p > 0.0 ? b.dropout(name, x, p) : x;
}

// N x L x heads*head_dim -> N x heads x L x head_dim, a view (the projections' .view(...).transpose(1, 2)).
int to_heads(GraphBuilder& b, const std::string& name, int x, int64_t heads, int64_t head_dim) {
  int y = b.op(name + "_view", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, heads, head_dim}}});
  return b.op(name + "_heads", "Permute", {y}, {{"dims", std::vector<int64_t>{0, 2, 1, 3}}});
}

// Rotary q and k, k and v repeated to every query head where there are fewer (grouped-query attention), causal
// attention, heads merged through a contiguous copy: N x L x heads*head_dim.
int rotary_attention(GraphBuilder& b, const std::string& prefix, int q, int k, int v, const TransformerSize& size) {
  Attrs rotary{{"theta", size.rope_theta}};
  if (size.rotary_dim > 0) rotary["rotary_dim"] = size.rotary_dim;
  q = b.op(prefix + "rotary_q", "RotaryEmbedding", {q}, rotary);
  k = b.op(prefix + "rotary_k", "RotaryEmbedding", {k}, rotary);
  const int64_t kv_heads = size.kv_heads > 0 ? size.kv_heads : size.heads;
  if (kv_heads != size.heads) {
    Attrs repeat{{"axis", int64_t{1}}, {"repeats", size.heads / kv_heads}};
    k = b.op(prefix + "repeat_k", "RepeatInterleave", {k}, repeat);
    v = b.op(prefix + "repeat_v", "RepeatInterleave", {v}, repeat);
  }
  Attrs attention{{"causal", int64_t{1}}, {"dropout_p", size.attention_dropout}};
  if (size.attention_scale > 0) attention["scale"] = size.attention_scale;
  if (size.attention_softcap > 0) attention["softcap"] = size.attention_softcap;
  if (size.sliding_window > 0) attention["window"] = size.sliding_window;
  int y = b.op(prefix + "attention", "ScaledDotProductAttention", {q, k, v}, attention);
  y = b.op(prefix + "merge_heads", "Permute", {y},
           {{"dims", std::vector<int64_t>{0, 2, 1, 3}}, {"contiguous", int64_t{1}}});
  return b.op(prefix + "merge_view", "Flatten", {y}, {{"start_dim", int64_t{2}}});
}

int lm_head(GraphBuilder& b, const std::string& name, int x, const TransformerSize& size,
            const std::string& embedding) {
  Attrs attrs{{"out_features", size.vocab}, {"bias", int64_t{0}}};
  if (size.tie_embeddings) attrs["tied_to"] = embedding;
  return b.op(name, "Linear", {x}, attrs);
}

int64_t head_width(const TransformerSize& size) { return size.head_dim > 0 ? size.head_dim : size.hidden / size.heads; }

// q, k and v of a llama-shaped layer, each N x heads x L x head_dim: three projections, or phi3's one qkv_proj
// sliced; qwen3 normalizes each head of q and k (q_norm, k_norm on N x L x heads x head_dim) before rotary.
struct Qkv {
  int q, k, v;
};

Qkv llama_qkv(GraphBuilder& b, const std::string& attn, int y, const TransformerSize& size) {
  const int64_t heads = size.heads, head_dim = head_width(size);
  const int64_t kv_heads = size.kv_heads > 0 ? size.kv_heads : heads;
  const int64_t widths[3] = {heads * head_dim, kv_heads * head_dim, kv_heads * head_dim};
  const int64_t counts[3] = {heads, kv_heads, kv_heads};
  const char* names[3] = {"q_proj", "k_proj", "v_proj"};
  const int qkv = size.fused_projections ? b.linear(attn + "qkv_proj", y, widths[0] + 2 * widths[1], size.bias) : -1;
  const Attrs norm{{"eps", size.eps}};
  int parts[3];
  int64_t start = 0;
  for (int part = 0; part < 3; ++part) {  // each projected (or sliced), viewed and permuted in turn, as HF does
    const std::string name = attn + names[part];
    int x = qkv >= 0
                ? b.op(name, "Slice", {qkv}, {{"axis", int64_t{-1}}, {"start", start}, {"end", start + widths[part]}})
                : b.linear(name, y, widths[part], size.bias);
    start += widths[part];
    x = b.op(name + "_view", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, counts[part], head_dim}}});
    if (size.qk_norm && part < 2) x = b.op(attn + (part == 0 ? "q_norm" : "k_norm"), "RMSNorm", {x}, norm);
    parts[part] = b.op(name + "_heads", "Permute", {x}, {{"dims", std::vector<int64_t>{0, 2, 1, 3}}});
  }
  return {parts[0], parts[1], parts[2]};
}

// The MLP: down_proj(act(gate_proj(x)) * up_proj(x)), or phi3's gate_up_proj chunked, up * act(gate).
int llama_mlp(GraphBuilder& b, const std::string& mlp, int y, const TransformerSize& size) {
  Attrs act{{"inplace", int64_t{0}}};
  if (!size.gelu_approximate.empty()) act["approximate"] = size.gelu_approximate;
  if (size.fused_projections) {
    const int gate_up = b.linear(mlp + "gate_up_proj", y, 2 * size.mlp, size.mlp_bias);
    int gate = b.op(mlp + "gate", "Slice", {gate_up},
                    {{"axis", int64_t{-1}}, {"start", int64_t{0}}, {"end", size.mlp}, kSplitPart});
    const int up = b.op(mlp + "up", "Slice", {gate_up},
                        {{"axis", int64_t{-1}}, {"start", size.mlp}, {"end", 2 * size.mlp}, kSplitPart});
    gate = b.op(mlp + "activation_fn", size.activation, {gate}, act);
    return b.linear(mlp + "down_proj", b.mul(mlp + "up_times_gate", up, gate), size.hidden, size.mlp_bias);
  }
  int gate = b.linear(mlp + "gate_proj", y, size.mlp, size.mlp_bias);
  gate = b.op(mlp + "act_fn", size.activation, {gate}, act);
  const int up = b.linear(mlp + "up_proj", y, size.mlp, size.mlp_bias);
  return b.linear(mlp + "down_proj", b.mul(mlp + "gate_times_up", gate, up), size.hidden, size.mlp_bias);
}

// deepseek_v2's multi-head latent attention (DeepseekV2Attention): q from q_proj, or through the low-rank q_a_proj,
// q_a_layernorm and q_b_proj; k and v from one compressed projection (kv_a_proj_with_mqa: kv_lora_rank + the rotary
// part shared by every head), normed and expanded by kv_b_proj; rotary on the qk_rope_head_dim part of q and on the
// shared k part, which is repeated to every head (HF expands it, a view; here a copy, RepeatInterleave) and
// concatenated after the non-rotary part; v is v_head_dim wide. Returns N x L x heads * v_head_dim.
int latent_attention(GraphBuilder& b, const std::string& attn, int y, const TransformerSize& size) {
  const int64_t heads = size.heads, nope = size.qk_nope_dim, rope = size.qk_rope_dim, value = size.v_head_dim;
  const int64_t q_width = nope + rope;
  const Attrs norm{{"eps", size.eps}};
  auto slice = [&](const std::string& name, int x, int64_t start, int64_t end) {
    return b.op(name, "Slice", {x}, {{"axis", int64_t{-1}}, {"start", start}, {"end", end}, kSplitPart});
  };
  int q = -1;
  if (size.q_lora_rank > 0) {
    q = b.linear(attn + "q_a_proj", y, size.q_lora_rank, size.bias);
    q = b.op(attn + "q_a_layernorm", "RMSNorm", {q}, norm);
    q = b.linear(attn + "q_b_proj", q, heads * q_width, false);
  } else {
    q = b.linear(attn + "q_proj", y, heads * q_width, false);
  }
  q = to_heads(b, attn + "q", q, heads, q_width);
  const int q_pass = slice(attn + "q_pass", q, 0, nope);
  int q_rot = slice(attn + "q_rot", q, nope, q_width);
  const int compressed = b.linear(attn + "kv_a_proj_with_mqa", y, size.kv_lora_rank + rope, size.bias);
  int kv = slice(attn + "k_pass", compressed, 0, size.kv_lora_rank);
  int k_rot = slice(attn + "k_rot", compressed, size.kv_lora_rank, size.kv_lora_rank + rope);
  kv = b.op(attn + "kv_a_layernorm", "RMSNorm", {kv}, norm);
  kv = to_heads(b, attn + "kv", b.linear(attn + "kv_b_proj", kv, heads * (nope + value), false), heads, nope + value);
  const int k_nope = slice(attn + "k_nope", kv, 0, nope);
  const int v = slice(attn + "value_states", kv, nope, nope + value);
  k_rot = to_heads(b, attn + "k_rot", k_rot, 1, rope);
  const Attrs rotary{{"theta", size.rope_theta}};
  q_rot = b.op(attn + "rotary_q", "RotaryEmbedding", {q_rot}, rotary);
  k_rot = b.op(attn + "rotary_k", "RotaryEmbedding", {k_rot}, rotary);
  k_rot = b.op(attn + "expand_k_rot", "RepeatInterleave", {k_rot}, {{"axis", int64_t{1}}, {"repeats", heads}});
  const int query = b.concat(attn + "query_states", {q_pass, q_rot}, -1);
  const int key = b.concat(attn + "key_states", {k_nope, k_rot}, -1);
  Attrs attention{{"causal", int64_t{1}}, {"dropout_p", size.attention_dropout}};
  if (size.attention_scale > 0) attention["scale"] = size.attention_scale;
  int out = b.op(attn + "attention", "ScaledDotProductAttention", {query, key, v}, attention);
  out = b.op(attn + "merge_heads", "Permute", {out},
             {{"dims", std::vector<int64_t>{0, 2, 1, 3}}, {"contiguous", int64_t{1}}});
  return b.op(attn + "merge_view", "Flatten", {out}, {{"start_dim", int64_t{2}}});
}

// A scalar times x (gemma's embedding scale, the soft-capping's division and product).
int scaled(GraphBuilder& b, const std::string& name, int x, double factor) {
  return b.op(name, "Mul", {x}, {{"scalar", factor}});
}

Graph llama_graph(const TransformerSize& size, const ModelSpec& spec) {
  check_tokens(size, spec);
  Attrs norm{{"eps", size.eps}};
  if (size.norm_unit_offset) norm["unit_offset"] = int64_t{1};
  auto rms = [&](GraphBuilder& b, const std::string& name, int x) { return b.op(name, "RMSNorm", {x}, norm); };
  GraphBuilder b(size.name, size.family);
  int ids = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "input_ids");
  int x =
      b.op("model.embed_tokens", "Embedding", {ids}, {{"num_embeddings", size.vocab}, {"embedding_dim", size.hidden}});
  if (size.embed_scale > 0) x = scaled(b, "model.embed_scale", x, size.embed_scale);
  x = maybe_dropout(b, "model.embed_dropout", x, size.embed_dropout);
  for (int64_t layer = 0; layer < size.layers; ++layer) {
    b.begin_block(layer);
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    const std::string attn = prefix + "self_attn.";
    int y = rms(b, prefix + "input_layernorm", x);
    if (size.kv_lora_rank > 0) {
      y = latent_attention(b, attn, y, size);
    } else {
      const Qkv qkv = llama_qkv(b, attn, y, size);
      TransformerSize at = size;
      if ((size.alternate_window && layer % 2 != 0) || layer < size.window_first_layer)
        at.sliding_window = 0;  // gemma2: the even layers slide; qwen: the layers from max_window_layers on
      y = rotary_attention(b, attn, qkv.q, qkv.k, qkv.v, at);
    }
    y = b.linear(attn + "o_proj", y, size.hidden, size.bias && size.o_proj_bias);
    if (size.sandwich_norm) y = rms(b, prefix + "post_attention_layernorm", y);
    x = b.add(prefix + "add_1", x, maybe_dropout(b, prefix + "resid_attn_dropout", y, size.dropout));
    y = rms(b, prefix + (size.sandwich_norm ? "pre_feedforward_layernorm" : "post_attention_layernorm"), x);
    y = sparse_layer(size, layer) ? moe_mlp(b, prefix, y, size) : llama_mlp(b, prefix + "mlp.", y, size);
    if (size.sandwich_norm) y = rms(b, prefix + "post_feedforward_layernorm", y);
    x = b.add(prefix + "add_2", x, maybe_dropout(b, prefix + "resid_mlp_dropout", y, size.dropout));
  }
  b.end_block();
  x = rms(b, "model.norm", x);
  x = lm_head(b, "lm_head", x, size, "model.embed_tokens");
  if (size.logit_softcap > 0) {
    x = scaled(b, "logits_softcap_div", x, 1.0 / size.logit_softcap);
    x = b.act("logits_softcap_tanh", "Tanh", x);
    scaled(b, "logits_softcap_mul", x, size.logit_softcap);
  }
  return b.finish();
}

Graph neox_graph(const TransformerSize& size, const ModelSpec& spec) {
  check_tokens(size, spec);
  const int64_t hidden = size.hidden, heads = size.heads, head_dim = hidden / heads;
  const Attrs norm{{"normalized_shape", std::vector<int64_t>{hidden}}, {"eps", size.eps}};
  GraphBuilder b(size.name, size.family);
  int ids = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "input_ids");
  int x = b.op("gpt_neox.embed_in", "Embedding", {ids}, {{"num_embeddings", size.vocab}, {"embedding_dim", hidden}});
  x = maybe_dropout(b, "gpt_neox.emb_dropout", x, size.dropout);
  for (int64_t layer = 0; layer < size.layers; ++layer) {
    b.begin_block(layer);
    const std::string prefix = "gpt_neox.layers." + std::to_string(layer) + ".";
    const std::string attn = prefix + "attention.";
    int y = b.op(prefix + "input_layernorm", "LayerNorm", {x}, norm);
    int qkv = to_heads(b, attn + "query_key_value", b.linear(attn + "query_key_value", y, 3 * hidden, size.bias), heads,
                       3 * head_dim);
    int parts[3];
    const char* names[3] = {"query", "key", "value"};
    for (int part = 0; part < 3; ++part)
      parts[part] =
          b.op(attn + names[part], "Slice", {qkv},
               {{"axis", int64_t{-1}}, {"start", part * head_dim}, {"end", (part + 1) * head_dim}, kSplitPart});
    y = rotary_attention(b, attn, parts[0], parts[1], parts[2], size);
    y = b.linear(attn + "dense", y, hidden, size.bias);
    y = maybe_dropout(b, prefix + "post_attention_dropout", y, size.dropout);
    // The MLP reads ln2 of the layer's input (parallel) or of input + attention (sequential).
    int mlp_input = size.parallel_residual ? x : b.add(prefix + "add_attention", y, x);
    int m = b.op(prefix + "post_attention_layernorm", "LayerNorm", {mlp_input}, norm);
    m = b.linear(prefix + "mlp.dense_h_to_4h", m, size.mlp);
    m = b.act(prefix + "mlp.act", size.activation, m);
    m = b.linear(prefix + "mlp.dense_4h_to_h", m, hidden);
    m = maybe_dropout(b, prefix + "post_mlp_dropout", m, size.dropout);
    x = size.parallel_residual ? b.add(prefix + "add_residual", b.add(prefix + "add_mlp_attention", m, y), x)
                               : b.add(prefix + "add_mlp", m, mlp_input);
  }
  b.end_block();
  x = b.op("gpt_neox.final_layer_norm", "LayerNorm", {x}, norm);
  lm_head(b, "embed_out", x, size, "gpt_neox.embed_in");
  return b.finish();
}

}  // namespace

Graph build_llama(const TransformerSize& size, const ModelSpec& spec) { return llama_graph(size, spec); }
Graph build_gpt_neox(const TransformerSize& size, const ModelSpec& spec) { return neox_graph(size, spec); }

}  // namespace dnncast::models
