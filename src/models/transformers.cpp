// Transformers, named after their reference implementations' module paths:
//   vit_b_16    torchvision/models/vision_transformer.py (patch 16, 12 layers, d 768, 12 heads, MLP 3072,
//               LayerNorm eps 1e-6, dropout 0 so no Dropout nodes). Self-attention as torch 1.13's
//               nn.MultiheadAttention computes it in training: one packed in_proj GEMM (3D x D + bias),
//               a contiguous copy splitting q, k, v into heads, SDPA, a contiguous copy merging heads,
//               out_proj. Parameters equal torchvision's (86,567,656 at 224x224 and 1000 classes).
//   bert_base   Hugging Face BertForSequenceClassification: BertModel (token 30522 x 768, position
//               512 x 768, token type 2 x 768 embeddings, LayerNorm eps 1e-12, 12 post-LN layers with
//               separate query/key/value, GELU MLP 3072, pooler Linear + Tanh; 109,482,240 parameters)
//               plus dropout and classifier Linear(768, num_classes). Inputs: input_ids and
//               token_type_ids, both i64 N x L; no attention mask (all tokens valid). Dropout 0.1.
//   gpt2_small  Hugging Face GPT2LMHeadModel: token 50257 x 768 and position 1024 x 768 embeddings,
//               12 pre-LN layers (packed c_attn split into q, k, v, causal attention, GELU MLP 3072),
//               ln_f, LM head tied to the token embedding (124,439,808 parameters). Dropout 0.1.
// Reshapes use 0 / -1 and Flatten so that no attribute depends on the batch or the sequence length.
#include "models/transformers.h"

#include "core/error.h"
#include "graph/builder.h"
#include "models/attention.h"
#include "models/zoo.h"

namespace dnncast::models {

namespace {

constexpr int64_t kHidden = 768;
constexpr int64_t kHeads = 12;
constexpr int64_t kLayers = 12;
constexpr int64_t kMlp = 3072;

int layer_norm(GraphBuilder& b, const std::string& name, int x, double eps, int64_t width = kHidden) {
  return b.op(name, "LayerNorm", {x}, {{"normalized_shape", std::vector<int64_t>{width}}, {"eps", eps}});
}

// N x L x D -> N x heads x L x D/heads, a view (Hugging Face's transpose_for_scores / _split_heads).
int split_heads(GraphBuilder& b, const std::string& name, int x, int64_t heads = kHeads, int64_t hidden = kHidden) {
  int y = b.op(name + "_view", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, heads, hidden / heads}}});
  return b.op(name + "_heads", "Permute", {y}, {{"dims", std::vector<int64_t>{0, 2, 1, 3}}});
}

// N x heads x L x d -> N x L x D through a contiguous copy (context.permute(0, 2, 1, 3).contiguous().view).
int merge_heads(GraphBuilder& b, const std::string& prefix, int x) {
  int y = b.op(prefix + "merge_heads", "Permute", {x},
               {{"dims", std::vector<int64_t>{0, 2, 1, 3}}, {"contiguous", int64_t{1}}});
  return b.op(prefix + "merge_view", "Flatten", {y}, {{"start_dim", int64_t{2}}});
}

int attention(GraphBuilder& b, const std::string& name, int q, int k, int v, bool causal, double dropout_p) {
  return b.op(name, "ScaledDotProductAttention", {q, k, v},
              {{"causal", int64_t{causal ? 1 : 0}}, {"dropout_p", dropout_p}});
}

// ---- vit_b_16 ----------------------------------------------------------------------------------

Graph build_vit_b_16(const ModelSpec& spec) {
  constexpr int64_t kPatch = 16;
  int64_t channels = spec.input[0], height = spec.input[1], width = spec.input[2];
  if (height % kPatch != 0 || width % kPatch != 0)
    throw InputError("vit_b_16 needs an image size divisible by the patch size 16, got " + std::to_string(height) +
                     "x" + std::to_string(width));
  GraphBuilder b("vit_b_16", "vit");
  int x = b.input(TensorShape{spec.batch, channels, height, width});
  x = b.conv("conv_proj", x, kHidden, kPatch, kPatch, 0, 1, true);
  x = b.op("conv_proj_flatten", "Reshape", {x}, {{"shape", std::vector<int64_t>{0, 0, -1}}});  // N x D x P
  x = b.op("conv_proj_permute", "Permute", {x}, {{"dims", std::vector<int64_t>{0, 2, 1}}});    // N x P x D
  x = b.op("class_token", "ClassToken", {x});
  int64_t tokens = (height / kPatch) * (width / kPatch) + 1;
  x = b.op("encoder.pos_embedding", "PositionEmbedding", {x}, {{"length", tokens}});
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    b.begin_block(layer);
    std::string prefix = "encoder.layers.encoder_layer_" + std::to_string(layer) + ".";
    int y = layer_norm(b, prefix + "ln_1", x, 1e-6);
    y = packed_self_attention(b, prefix + "self_attention.", y, kHidden, kHeads, 0.0);
    x = b.add(prefix + "add_1", y, x);
    y = layer_norm(b, prefix + "ln_2", x, 1e-6);
    y = b.linear(prefix + "mlp.0", y, kMlp);
    y = b.act(prefix + "mlp.1", "GELU", y);
    y = b.linear(prefix + "mlp.3", y, kHidden);
    x = b.add(prefix + "add_2", x, y);
  }
  b.end_block();
  x = layer_norm(b, "encoder.ln", x, 1e-6);
  x = b.op("class_token_select", "Slice", {x}, {{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{1}}});
  x = b.flatten("class_token_flatten", x, 1);
  b.linear("heads.head", x, spec.num_classes);
  return b.finish();
}

// ---- bert ----------------------------------------------------------------------------------------

Graph bert_graph(const TransformerSize& size, const ModelSpec& spec) {
  check_tokens(size, spec);
  const int64_t hidden = size.hidden, heads = size.heads;
  const double eps = size.eps, dropout = size.dropout;
  GraphBuilder b(size.name, size.family);
  int ids = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "input_ids");
  int types = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "token_type_ids");
  int x = b.op("embeddings.word_embeddings", "Embedding", {ids},
               {{"num_embeddings", size.vocab}, {"embedding_dim", hidden}});
  int type_rows = b.op("embeddings.token_type_embeddings", "Embedding", {types},
                       {{"num_embeddings", size.type_vocab}, {"embedding_dim", hidden}});
  x = b.add("embeddings.add_token_type", x, type_rows);
  x = b.op("embeddings.position_embeddings", "PositionEmbedding", {x}, {{"length", size.positions}});
  x = layer_norm(b, "embeddings.LayerNorm", x, eps, hidden);
  x = b.dropout("embeddings.dropout", x, dropout);
  for (int64_t layer = 0; layer < size.layers; ++layer) {
    b.begin_block(layer);
    std::string prefix = "encoder.layer." + std::to_string(layer) + ".";
    std::string self = prefix + "attention.self.";
    int q = split_heads(b, self + "query", b.linear(self + "query", x, hidden), heads, hidden);
    int k = split_heads(b, self + "key", b.linear(self + "key", x, hidden), heads, hidden);
    int v = split_heads(b, self + "value", b.linear(self + "value", x, hidden), heads, hidden);
    int y = attention(b, self + "attention", q, k, v, false, size.attention_dropout);
    y = merge_heads(b, self, y);
    y = b.linear(prefix + "attention.output.dense", y, hidden);
    y = b.dropout(prefix + "attention.output.dropout", y, dropout);
    y = b.add(prefix + "attention.output.add", y, x);
    x = layer_norm(b, prefix + "attention.output.LayerNorm", y, eps, hidden);
    y = b.linear(prefix + "intermediate.dense", x, size.mlp);
    y = b.act(prefix + "intermediate.intermediate_act_fn", size.activation, y);
    y = b.linear(prefix + "output.dense", y, hidden);
    y = b.dropout(prefix + "output.dropout", y, dropout);
    y = b.add(prefix + "output.add", y, x);
    x = layer_norm(b, prefix + "output.LayerNorm", y, eps, hidden);
  }
  b.end_block();
  if (size.lm_head) {
    // BertLMHeadModel / BertForMaskedLM: no pooler; cls.predictions transforms each token and decodes it with the
    // word embedding's weight (tied) and a bias of its own.
    x = b.linear("cls.predictions.transform.dense", x, hidden);
    x = b.act("cls.predictions.transform.transform_act_fn", size.activation, x);
    x = layer_norm(b, "cls.predictions.transform.LayerNorm", x, eps, hidden);
    b.op("cls.predictions.decoder", "Linear", {x},
         {{"out_features", size.vocab}, {"bias", int64_t{1}}, {"tied_to", std::string("embeddings.word_embeddings")}});
    return b.finish();
  }
  // Pooler: the first token's hidden state.
  x = b.op("pooler.first_token", "Slice", {x}, {{"axis", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{1}}});
  x = b.flatten("pooler.first_token_flatten", x, 1);
  x = b.linear("pooler.dense", x, hidden);
  x = b.act("pooler.activation", "Tanh", x);
  x = b.dropout("dropout", x, dropout);
  b.linear("classifier", x, size.classes > 0 ? size.classes : spec.num_classes);
  return b.finish();
}

Graph build_bert_base(const ModelSpec& spec) {
  TransformerSize size;
  size.name = "bert_base";
  size.family = "bert";
  size.vocab = 30522;
  size.positions = 512;
  size.hidden = kHidden;
  size.heads = kHeads;
  size.layers = kLayers;
  size.mlp = kMlp;
  size.eps = 1e-12;
  return bert_graph(size, spec);
}

// ---- gpt2 ----------------------------------------------------------------------------------------

Graph gpt2_graph(const TransformerSize& size, const ModelSpec& spec) {
  check_tokens(size, spec);
  const int64_t hidden = size.hidden, heads = size.heads;
  const double eps = size.eps, dropout = size.dropout;
  GraphBuilder b(size.name, size.family);
  int ids = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "input_ids");
  int x = b.op("transformer.wte", "Embedding", {ids}, {{"num_embeddings", size.vocab}, {"embedding_dim", hidden}});
  x = b.op("transformer.wpe", "PositionEmbedding", {x}, {{"length", size.positions}});
  x = b.dropout("transformer.drop", x, dropout);
  for (int64_t layer = 0; layer < size.layers; ++layer) {
    b.begin_block(layer);
    std::string prefix = "transformer.h." + std::to_string(layer) + ".";
    std::string attn = prefix + "attn.";
    int y = layer_norm(b, prefix + "ln_1", x, eps, hidden);
    int qkv = b.linear(attn + "c_attn", y, 3 * hidden);
    int parts[3];
    const char* names[3] = {"query", "key", "value"};
    for (int part = 0; part < 3; ++part) {
      int slice = b.op(attn + names[part], "Slice", {qkv},
                       {{"axis", int64_t{-1}}, {"start", part * hidden}, {"end", (part + 1) * hidden}, kSplitPart});
      parts[part] = split_heads(b, attn + names[part], slice, heads, hidden);
    }
    y = attention(b, attn + "attention", parts[0], parts[1], parts[2], true, size.attention_dropout);
    y = merge_heads(b, attn, y);
    y = b.linear(attn + "c_proj", y, hidden);
    y = b.dropout(attn + "resid_dropout", y, dropout);
    x = b.add(prefix + "add_1", y, x);
    y = layer_norm(b, prefix + "ln_2", x, eps, hidden);
    y = b.linear(prefix + "mlp.c_fc", y, size.mlp);
    y = b.act(prefix + "mlp.act", size.activation, y);
    y = b.linear(prefix + "mlp.c_proj", y, hidden);
    y = b.dropout(prefix + "mlp.dropout", y, dropout);
    x = b.add(prefix + "add_2", y, x);
  }
  b.end_block();
  x = layer_norm(b, "transformer.ln_f", x, eps, hidden);
  b.op("lm_head", "Linear", {x},
       {{"out_features", size.vocab}, {"bias", int64_t{0}}, {"tied_to", std::string("transformer.wte")}});
  return b.finish();
}

Graph build_gpt2_small(const ModelSpec& spec) {
  TransformerSize size;
  size.name = "gpt2_small";
  size.family = "gpt2";
  size.vocab = 50257;
  size.positions = 1024;
  size.hidden = kHidden;
  size.heads = kHeads;
  size.layers = kLayers;
  size.mlp = kMlp;
  size.eps = 1e-5;
  return gpt2_graph(size, spec);
}

// ---- opt -----------------------------------------------------------------------------------------

// OPTForCausalLM (Hugging Face modeling_opt.py): learned positions with 2 extra rows, pre- or post-LN decoder
// layers (q, k, v, out projections, fc1/fc2 with ReLU), the final LayerNorm, the projections in and out where the
// token embedding is narrower than the model (opt-350m), the LM head tied to the token embedding.
Graph opt_graph(const TransformerSize& size, const ModelSpec& spec) {
  check_tokens(size, spec);
  const int64_t hidden = size.hidden, heads = size.heads;
  const int64_t embed = size.embed_dim > 0 ? size.embed_dim : hidden;
  const double eps = size.eps, dropout = size.dropout;
  GraphBuilder b(size.name, size.family);
  int ids = b.input(TensorShape{spec.batch, spec.seq_len}, DType::I64, "input_ids");
  int x = b.op("model.decoder.embed_tokens", "Embedding", {ids},
               {{"num_embeddings", size.vocab}, {"embedding_dim", embed}});
  if (embed != hidden) x = b.linear("model.decoder.project_in", x, hidden, false);
  x = b.op("model.decoder.embed_positions", "PositionEmbedding", {x},
           {{"length", size.positions + size.position_offset}});
  x = b.dropout("model.decoder.dropout", x, dropout);
  for (int64_t layer = 0; layer < size.layers; ++layer) {
    b.begin_block(layer);
    std::string prefix = "model.decoder.layers." + std::to_string(layer) + ".";
    std::string attn = prefix + "self_attn.";
    int y = size.pre_norm ? layer_norm(b, prefix + "self_attn_layer_norm", x, eps, hidden) : x;
    int q = split_heads(b, attn + "q_proj", b.linear(attn + "q_proj", y, hidden, size.bias), heads, hidden);
    int k = split_heads(b, attn + "k_proj", b.linear(attn + "k_proj", y, hidden, size.bias), heads, hidden);
    int v = split_heads(b, attn + "v_proj", b.linear(attn + "v_proj", y, hidden, size.bias), heads, hidden);
    y = attention(b, attn + "attention", q, k, v, true, size.attention_dropout);
    y = merge_heads(b, attn, y);
    y = b.linear(attn + "out_proj", y, hidden, size.bias);
    y = b.dropout(prefix + "dropout_1", y, dropout);
    x = b.add(prefix + "add_1", y, x);
    if (!size.pre_norm) x = layer_norm(b, prefix + "self_attn_layer_norm", x, eps, hidden);
    y = size.pre_norm ? layer_norm(b, prefix + "final_layer_norm", x, eps, hidden) : x;
    y = b.linear(prefix + "fc1", y, size.mlp, size.bias);
    y = b.act(prefix + "activation_fn", size.activation, y);
    y = b.linear(prefix + "fc2", y, hidden, size.bias);
    y = b.dropout(prefix + "dropout_2", y, dropout);
    x = b.add(prefix + "add_2", y, x);
    if (!size.pre_norm) x = layer_norm(b, prefix + "final_layer_norm", x, eps, hidden);
  }
  b.end_block();
  if (size.final_norm) x = layer_norm(b, "model.decoder.final_layer_norm", x, eps, hidden);
  if (embed != hidden) x = b.linear("model.decoder.project_out", x, embed, false);
  b.op("lm_head", "Linear", {x},
       {{"out_features", size.vocab}, {"bias", int64_t{0}}, {"tied_to", std::string("model.decoder.embed_tokens")}});
  return b.finish();
}

}  // namespace

// A transformer's input: at most the position table's tokens.
void check_tokens(const TransformerSize& size, const ModelSpec& spec) {
  if (spec.seq_len > size.positions)
    throw InputError(size.name + " takes at most " + std::to_string(size.positions) + " tokens, got " +
                     std::to_string(spec.seq_len));
}

// torch 1.13 F.multi_head_attention_forward with a packed in_proj: the projection is unflattened to
// 3 x D, moved to the front and made contiguous, then each of q, k, v is viewed as heads.
int packed_self_attention(GraphBuilder& b, const std::string& prefix, int x, int64_t embed, int64_t heads,
                          double dropout_p) {
  DNNCAST_ASSERT(heads > 0 && embed % heads == 0);
  const int64_t head_dim = embed / heads;
  int qkv = b.linear(prefix + "in_proj", x, 3 * embed);
  qkv = b.op(prefix + "in_proj_view", "Reshape", {qkv}, {{"shape", std::vector<int64_t>{0, 0, 3, heads, head_dim}}});
  qkv = b.op(prefix + "in_proj_heads", "Permute", {qkv},
             {{"dims", std::vector<int64_t>{2, 0, 3, 1, 4}}, {"contiguous", int64_t{1}}});  // 3 x N x h x L x d
  int parts[3];
  const char* names[3] = {"q", "k", "v"};
  for (int part = 0; part < 3; ++part) {
    int slice = b.op(prefix + names[part], "Slice", {qkv},
                     {{"axis", int64_t{0}}, {"start", int64_t{part}}, {"end", int64_t{part + 1}}});
    parts[part] = b.op(prefix + names[part] + "_heads", "Flatten", {slice},
                       {{"start_dim", int64_t{0}}, {"end_dim", int64_t{1}}});  // N x h x L x d
  }
  int context = attention(b, prefix + "attention", parts[0], parts[1], parts[2], false, dropout_p);
  context = merge_heads(b, prefix, context);
  return b.linear(prefix + "out_proj", context, embed);
}

Graph build_bert(const TransformerSize& size, const ModelSpec& spec) { return bert_graph(size, spec); }
Graph build_gpt2(const TransformerSize& size, const ModelSpec& spec) { return gpt2_graph(size, spec); }
Graph build_opt(const TransformerSize& size, const ModelSpec& spec) { return opt_graph(size, spec); }

void register_transformers(std::vector<ZooEntry>& entries) {
  entries.push_back({"vit_b_16", "vit", "cnn", {3, 224, 224}, build_vit_b_16});
  entries.push_back({"bert_base", "bert", "transformer", {128}, build_bert_base});
  entries.push_back({"gpt2_small", "gpt2", "transformer", {1024}, build_gpt2_small});
}

}  // namespace dnncast::models
