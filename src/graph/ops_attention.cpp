// Attention and embedding ops (MatMul, scaled dot-product attention, Embedding, Softmax, LayerNorm...).
#include "graph/op_helpers.h"

namespace dnncast {

void register_attention_ops(OpRegistry& /*registry*/) {}

}  // namespace dnncast
