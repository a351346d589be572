// Mixtures of experts as Hugging Face's sparse MoE blocks build them (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock,
// DeepSeek-V2's MoE), on the ops of graph/ops_moe.cpp: the router (a Linear), TopKRouting, and for each expert an
// ExpertGather of its tokens, its MLP of Linear nodes and an ExpertCombine into the layer's sum; then the shared
// expert where the family has one.
//
// Which tokens go to which expert is decided by the balance assumption, not by the router's random weights (a
// forecast cannot know them, and a measurement must route the same way to be compared byte for byte): of the
// T x top_k routed slots, each expert takes an equal share (the first T x top_k mod E one more), or with
// ModelSpec::expert_balance R > 1 the busiest expert R times the mean and the others equal shares of the rest.
// Every expert's parameters exist whatever it is routed; time and the activations follow the routed tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "models/transformers.h"

namespace dnncast::models {

// The positions [start, start + count) of the routed slots one expert takes.
struct ExpertShare {
  int64_t start = 0, count = 0;
};

// Each expert's share of `tokens` x `top_k` routed slots. InputError (naming `source`) where the slots are fewer
// than the experts (an expert would get no token) or the balance is outside 1 .. experts / top_k.
std::vector<ExpertShare> expert_shares(int64_t tokens, int64_t top_k, int64_t experts, double balance,
                                       const std::string& source);

// Whether layer `layer` of the config is a sparse one (experts) rather than a dense MLP.
bool sparse_layer(const TransformerSize& size, int64_t layer);

// The MoE MLP of one layer on y (N x L x hidden, the normed hidden states): N x L x hidden. `prefix` is the
// layer's ("model.layers.3.").
int moe_mlp(GraphBuilder& b, const std::string& prefix, int y, const TransformerSize& size);

}  // namespace dnncast::models
