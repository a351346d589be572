// Attention and embedding ops.
//
// MatMul (2 inputs a: B_a x m x k, b: B_b x k x n, rank >= 2 each; batch dims B broadcast as in
//   torch.matmul): output B x m x n. MACs = numel(B) * m * k * n; FLOPs fwd = 2 MACs, bwd = 4 MACs
//   (both operand gradients). Saves both operands as torch.matmul does: as given when either is a
//   plain matrix (the other's batch folds into rows) or when an operand already has the full batch;
//   otherwise the copy expanded to the broadcast batch (numel(B) x rows x cols).
// Softmax (axis, default -1): FLOPs fwd = 5 per element (max, subtract, exp, sum, divide),
//   bwd = 4 per element (y*g, row sum, subtract, multiply). Saves its output.
// Embedding (num_embeddings, embedding_dim): i64 indices of any shape -> f32 indices.shape x dim.
//   params = num_embeddings * embedding_dim. FLOPs fwd 0 (a gather), bwd = 1 per output element
//   (gradient rows accumulated into the table). bytes read = indices + gathered rows. Saves the indices.
//   Executors draw index values below num_embeddings.
// ScaledDotProductAttention (3 inputs q: N x h x L x d, k: N x h x S x d, v: N x h x S x dv;
//   attrs causal 0/1 (default 0), dropout_p (default 0), fused 0/1 (default 0: PyTorch 2's fused kernels on
//   CUDA, `--attention sdpa`; below for the math path)): output N x h x L x dv, as libtorch 1.13's
//   math implementation computes it: q' = q / sqrt(d); P = softmax(q' k^T [+ causal mask]);
//   [P = dropout(P)]; out = P v. scores = N*h*L*S. Attr scale: q's factor in place of 1 / sqrt(d) (Gemma 2's
//   query_pre_attn_scalar^-0.5); softcap c > 0: the scores become c * tanh(scores / c) before the mask (Gemma 2:
//   3 FLOPs per score each way, tanh's result saved); window w > 0 with causal: a query sees its last w keys
//   (sliding-window attention: the same L x S scores in the math path).
//   MACs = N*h*L*S*(d + dv)  (= 2*N*h*L*L*d for self-attention with dv = d).
//   FLOPs fwd = 2 MACs + N*h*L*d (scale) + 5 per score (softmax) + 1 per score when causal (mask)
//     + 2 per score with dropout; bwd = 4 MACs + N*h*L*d + 4 per score + 1 per score with dropout.
//   Saved (autograd of the math path): the scaled q (a new tensor, q's size), k, v, the attention
//   probabilities (scores elements); with dropout also its 1-byte mask and the dropped probabilities.
//   bytes: read q, k, v and the materialised score matrices once; written: output and those matrices.
// PositionEmbedding (length): x + table[:L] for x: N x L x D and a learnable table length x D
//   (length >= L: BERT's 512, ViT's 197). params = length * D. FLOPs fwd = 1 per element, bwd = 1 per
//   element (the table gradient sums over the batch). Nothing saved.
// ClassToken: prepends a learnable 1 x 1 x D token: N x L x D -> N x (L+1) x D. params = D. FLOPs
//   fwd 0 (a copy), bwd N*D (the token gradient sums over the batch). Nothing saved.
// RotaryEmbedding (rotary_dim, default the head size; theta, default 10000): rotary position embedding
//   of q or k, N x h x L x d -> the same, as Hugging Face's apply_rotary_pos_emb computes it: the first
//   rotary_dim (even, <= d) of each head become x * cos + rotate_half(x) * sin for position l and
//   frequency theta^(-2i/rotary_dim), the rest pass through (GPT-NeoX's rotary_pct < 1: a slice and a
//   concatenation). No parameters; rotated = numel * rotary_dim / d. FLOPs fwd = 3 per rotated element
//   (two products, one sum), bwd = 3 per rotated element. bytes: read x and the cos and sin tables
//   (L x rotary_dim each), written: the output. Saved: cos and sin (autograd keeps the products'
//   other operands), not x. Memory recipe "generic" (the eager temporaries are not replayed).
#include "graph/op_helpers.h"

namespace dnncast {

namespace {

struct AttentionGeometry {
  int64_t batch_heads, query_len, key_len, head_dim, value_dim;
  bool causal;
  double dropout_p;

  int64_t scores() const { return checked_product({batch_heads, query_len, key_len}); }
  int64_t macs() const { return checked_mul(scores(), checked_add(head_dim, value_dim)); }
};

AttentionGeometry attention_geometry(const OpView& view) {
  for (int input = 0; input < 3; ++input) ops::require_rank(view, input, 4);
  const TensorShape& q = view.in(0);
  const TensorShape& k = view.in(1);
  const TensorShape& v = view.in(2);
  if (!(q[0] == k[0] && q[0] == v[0] && q[1] == k[1] && q[1] == v[1]))
    view.fail("q " + q.to_string() + ", k " + k.to_string() + ", v " + v.to_string() +
              " must agree in batch and heads (N x heads x L x d)");
  if (q[3] != k[3]) view.fail("q " + q.to_string() + " and k " + k.to_string() + " differ in head size");
  if (k[2] != v[2]) view.fail("k " + k.to_string() + " and v " + v.to_string() + " differ in length");
  AttentionGeometry g;
  g.batch_heads = checked_mul(q[0], q[1]);
  g.query_len = q[2];
  g.key_len = k[2];
  g.head_dim = q[3];
  g.value_dim = v[3];
  g.causal = view.node.attr_int("causal", 0) != 0;
  g.dropout_p = view.node.attr_float("dropout_p", 0.0);
  view.check(g.dropout_p >= 0.0 && g.dropout_p < 1.0, "dropout_p must be in [0, 1)");
  view.check(view.node.attr_float("softcap", 0.0) >= 0.0, "softcap must be non-negative");
  view.check(!view.node.has_attr("scale") || view.node.attr_float("scale", 1.0) > 0.0, "scale must be positive");
  view.check(view.node.attr_int("window", 0) >= 0, "window must be non-negative");
  return g;
}

OpDef matmul_op() {
  OpDef matmul;
  matmul.name = "MatMul";
  matmul.memory_recipe = "generic";
  matmul.category = "linear";
  matmul.min_inputs = 2;
  matmul.max_inputs = 2;
  matmul.shape = [](const OpView& view) {
    const TensorShape& a = view.in(0);
    const TensorShape& b = view.in(1);
    if (!(a.rank() >= 2 && b.rank() >= 2))
      view.fail("expected inputs of rank 2 or more, got " + a.to_string() + " and " + b.to_string());
    if (a.dims.back() != b[b.rank() - 2])
      view.fail("inner dimensions differ: " + a.to_string() + " @ " + b.to_string());
    std::vector<int64_t> batch = ops::broadcast_dims(view, std::vector<int64_t>(a.dims.begin(), a.dims.end() - 2),
                                                     std::vector<int64_t>(b.dims.begin(), b.dims.end() - 2));
    batch.push_back(a[a.rank() - 2]);
    batch.push_back(b.dims.back());
    return TensorShape(batch);
  };
  matmul.cost = [](const OpView& view) {
    OpCost cost;
    int64_t inner = view.in(0).dims.back();
    cost.macs = checked_mul(view.node.shape.numel(), inner);  // batch * m * n * k
    cost.flops_fwd = checked_mul(2, cost.macs);
    cost.flops_bwd = checked_mul(4, cost.macs);
    cost.bytes_read = ops::all_in_bytes(view);
    cost.bytes_written = ops::out_bytes(view);
    int64_t batch =
        view.node.shape.numel() / (view.node.shape.dims.back() * view.node.shape[view.node.shape.rank() - 2]);
    bool folds = view.in(0).rank() == 2 || view.in(1).rank() == 2;
    for (int input = 0; input < 2; ++input) {
      const TensorShape& operand = view.in(input);
      int64_t matrix = operand.dims.back() * operand[operand.rank() - 2];
      if (folds || operand.numel() / matrix == batch) {
        cost.saved.push_back(ops::saved_input(view, input));
      } else {
        cost.saved.push_back(
            ops::saved_extra(checked_product({batch, matrix, dtype_bytes(view.in_dtype(input))}), "broadcast operand"));
      }
    }
    return cost;
  };
  return matmul;
}

OpDef softmax_op() {
  OpDef softmax;
  softmax.name = "Softmax";
  softmax.memory_recipe = "softmax";
  softmax.category = "activation";
  softmax.shape = [](const OpView& view) {
    ops::normalize_axis(view, view.node.attr_int("axis", -1), view.in(0).rank());
    return view.in(0);
  };
  softmax.cost = [](const OpView& view) {
    OpCost cost;
    int64_t elements = view.node.shape.numel();
    cost.flops_fwd = checked_mul(5, elements);
    cost.flops_bwd = checked_mul(4, elements);
    cost.bytes_read = ops::in_bytes(view, 0);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_output(view)};
    return cost;
  };
  return softmax;
}

OpDef embedding_op() {
  OpDef embedding;
  embedding.name = "Embedding";
  embedding.memory_recipe = "embedding";
  embedding.category = "embedding";
  embedding.required_attrs = {"num_embeddings", "embedding_dim"};
  embedding.shape = [](const OpView& view) {
    if (view.in_dtype(0) != DType::I64)
      view.fail(std::string("expected i64 indices, got ") + dtype_name(view.in_dtype(0)) + " input");
    int64_t rows = view.node.attr_int("num_embeddings");
    int64_t dim = view.node.attr_int("embedding_dim");
    view.check(rows > 0 && dim > 0, "num_embeddings and embedding_dim must be positive");
    TensorShape out = view.in(0);
    out.dims.push_back(dim);
    return out;
  };
  embedding.dtype = [](const OpView&) { return DType::F32; };
  embedding.cost = [](const OpView& view) {
    OpCost cost;
    int64_t outputs = view.node.shape.numel();
    cost.params = checked_mul(view.node.attr_int("num_embeddings"), view.node.attr_int("embedding_dim"));
    cost.flops_bwd = outputs;
    cost.bytes_read = ops::in_bytes(view, 0) + ops::out_bytes(view);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_input(view, 0, "indices")};
    return cost;
  };
  return embedding;
}

OpDef attention_op() {
  OpDef attention;
  attention.name = "ScaledDotProductAttention";
  attention.memory_recipe = "attention";
  attention.feature_kind = "Attention";
  attention.category = "attention";
  attention.min_inputs = 3;
  attention.max_inputs = 3;
  attention.shape = [](const OpView& view) {
    AttentionGeometry g = attention_geometry(view);
    const TensorShape& q = view.in(0);
    return TensorShape{q[0], q[1], g.query_len, g.value_dim};
  };
  attention.cost = [](const OpView& view) {
    AttentionGeometry g = attention_geometry(view);
    OpCost cost;
    int64_t scores = g.scores();
    int64_t element = dtype_bytes(view.node.dtype);
    bool dropout = g.dropout_p > 0.0;
    int64_t scaled_q = checked_product({g.batch_heads, g.query_len, g.head_dim});
    cost.macs = g.macs();
    const bool softcap = view.node.attr_float("softcap", 0.0) > 0;
    cost.flops_fwd = checked_sum({checked_mul(2, cost.macs), scaled_q, checked_mul(5, scores), g.causal ? scores : 0,
                                  dropout ? checked_mul(2, scores) : 0, softcap ? checked_mul(3, scores) : 0});
    cost.flops_bwd = checked_sum({checked_mul(4, cost.macs), scaled_q, checked_mul(4, scores), dropout ? scores : 0,
                                  softcap ? checked_mul(3, scores) : 0});
    if (view.node.attr_int("fused", 0) != 0) {
      // PyTorch 2's fused kernels (flash, memory-efficient): the scores never leave the chip; backward computes
      // them again (q k^T once more). Kept: q, k, v, the output and each row's log-sum-exp (fp32).
      const int64_t rows = checked_product({g.batch_heads, g.query_len});
      cost.flops_bwd = checked_add(cost.flops_bwd, cost.macs);
      cost.bytes_read = ops::all_in_bytes(view);
      cost.bytes_written = ops::out_bytes(view);
      cost.saved = {ops::saved_input(view, 0, "q"), ops::saved_input(view, 1, "k"), ops::saved_input(view, 2, "v"),
                    ops::saved_extra(ops::out_bytes(view), "output"),
                    ops::saved_extra(checked_mul(rows, 4), "logsumexp")};
      return cost;
    }
    // scores, probabilities[, dropped][, the quotient, tanh and capped scores]
    int64_t matrices = checked_product({(dropout ? 3 : 2) + (softcap ? 3 : 0), scores, element});
    cost.bytes_read = checked_add(ops::all_in_bytes(view), matrices);
    cost.bytes_written = checked_sum({ops::out_bytes(view), matrices, dropout ? scores : 0});
    cost.saved = {ops::saved_extra(checked_mul(scaled_q, element), "scaled q"), ops::saved_input(view, 1, "k"),
                  ops::saved_input(view, 2, "v"),
                  ops::saved_extra(checked_mul(scores, element), "attention probabilities")};
    if (softcap) cost.saved.push_back(ops::saved_extra(checked_mul(scores, element), "tanh of the scores"));
    if (dropout) {
      cost.saved.push_back(ops::saved_extra(scores, "dropout mask"));
      cost.saved.push_back(ops::saved_extra(checked_mul(scores, element), "dropped probabilities"));
    }
    return cost;
  };
  return attention;
}

OpDef position_op() {
  OpDef position;
  position.name = "PositionEmbedding";
  position.memory_recipe = "position_embedding";
  position.feature_kind = "Other";
  position.category = "embedding";
  position.required_attrs = {"length"};
  position.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 3);
    int64_t length = view.node.attr_int("length");
    view.check(length > 0, "length must be positive");
    if (view.in(0)[1] > length)
      view.fail("sequence of " + std::to_string(view.in(0)[1]) + " positions exceeds the table's " +
                std::to_string(length));
    return view.in(0);
  };
  position.cost = [](const OpView& view) {
    OpCost cost;
    int64_t elements = view.node.shape.numel();
    int64_t dim = view.in(0)[2];
    cost.params = checked_mul(view.node.attr_int("length"), dim);
    cost.flops_fwd = elements;
    cost.flops_bwd = elements;
    cost.bytes_read =
        checked_add(ops::in_bytes(view, 0), checked_product({view.in(0)[1], dim, dtype_bytes(view.node.dtype)}));
    cost.bytes_written = ops::out_bytes(view);
    return cost;
  };
  return position;
}

OpDef class_token_op() {
  OpDef class_token;
  class_token.name = "ClassToken";
  class_token.memory_recipe = "class_token";
  class_token.feature_kind = "Other";
  class_token.category = "embedding";
  class_token.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 3);
    TensorShape out = view.in(0);
    out.dims[1] += 1;
    return out;
  };
  class_token.cost = [](const OpView& view) {
    OpCost cost;
    int64_t dim = view.in(0)[2];
    cost.params = dim;
    cost.flops_bwd = checked_mul(view.in(0)[0], dim);
    cost.bytes_read = ops::in_bytes(view, 0) + dim * dtype_bytes(view.node.dtype);
    cost.bytes_written = ops::out_bytes(view);
    return cost;
  };
  return class_token;
}

OpDef rotary_op() {
  OpDef rotary;
  rotary.name = "RotaryEmbedding";
  rotary.memory_recipe = "rotary";
  rotary.feature_kind = "Mul";
  rotary.category = "attention";
  rotary.shape = [](const OpView& view) {
    ops::require_rank(view, 0, 4);
    int64_t head_dim = view.in(0)[3];
    int64_t rotary_dim = view.node.attr_int("rotary_dim", head_dim);
    if (!(rotary_dim > 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0))
      view.fail("rotary_dim " + std::to_string(rotary_dim) + " must be even and in [2, " + std::to_string(head_dim) +
                "] (the head size)");
    view.check(view.node.attr_float("theta", 10000.0) > 0.0, "theta must be positive");
    return view.in(0);
  };
  rotary.cost = [](const OpView& view) {
    OpCost cost;
    const TensorShape& in = view.in(0);
    int64_t rotary_dim = view.node.attr_int("rotary_dim", in[3]);
    int64_t rotated = checked_mul(in.numel() / in[3], rotary_dim);
    int64_t tables = checked_product({2, in[2], rotary_dim, dtype_bytes(view.node.dtype)});  // cos, sin
    cost.flops_fwd = checked_mul(3, rotated);
    cost.flops_bwd = checked_mul(3, rotated);
    cost.bytes_read = checked_add(ops::in_bytes(view, 0), tables);
    cost.bytes_written = ops::out_bytes(view);
    cost.saved = {ops::saved_extra(tables, "cos+sin")};
    return cost;
  };
  return rotary;
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  registry.add(matmul_op());
  registry.add(softmax_op());
  registry.add(embedding_op());
  registry.add(attention_op());
  registry.add(position_op());
  registry.add(class_token_op());
  registry.add(rotary_op());
}

}  // namespace dnncast
