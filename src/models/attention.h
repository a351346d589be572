// Transformer blocks that the zoo and the ONNX importer build alike, so that an exported model and
// the zoo's own build of it are the same graph.
#pragma once

#include <cstdint>
#include <string>

#include "graph/builder.h"

namespace dnncast::models {

// Self-attention as torch 1.13's F.multi_head_attention_forward computes it in training with a packed
// in_proj (nn.MultiheadAttention, torchvision's ViT): x N x L x embed -> Linear in_proj (3 embed) ->
// a contiguous copy into 3 x N x heads x L x embed/heads -> q, k, v slices -> ScaledDotProductAttention
// (dropout_p, not causal) -> a contiguous copy merging the heads -> Linear out_proj (embed). Nodes are
// named prefix + "in_proj", ..., "out_proj"; returns the out_proj node. embed must divide by heads.
int packed_self_attention(GraphBuilder& b, const std::string& prefix, int x, int64_t embed, int64_t heads,
                          double dropout_p);

}  // namespace dnncast::models
