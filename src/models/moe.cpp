#include "models/moe.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/checked.h"
#include "core/error.h"
#include "core/text.h"

namespace dnncast::models {

namespace {

using Attrs = std::map<std::string, AttrValue>;

// down(act(gate(x)) * up(x)), with the family's module names (mixtral: w1, w3, w2).
int expert_mlp(GraphBuilder& b, const std::string& prefix, int x, int64_t width, const TransformerSize& size) {
  const bool mixtral = size.moe_style == "mixtral";
  Attrs act{{"inplace", int64_t{0}}};
  int gate = b.linear(prefix + (mixtral ? "w1" : "gate_proj"), x, width, false);
  gate = b.op(prefix + "act_fn", size.activation, {gate}, act);
  const int up = b.linear(prefix + (mixtral ? "w3" : "up_proj"), x, width, false);
  const int product = b.mul(prefix + (mixtral ? "w1_times_w3" : "gate_times_up"), gate, up);
  return b.linear(prefix + (mixtral ? "w2" : "down_proj"), product, size.hidden, false);
}

}  // namespace

std::vector<ExpertShare> expert_shares(int64_t tokens, int64_t top_k, int64_t experts, double balance,
                                       const std::string& source) {
  const int64_t slots = checked_mul(tokens, top_k);
  if (slots < experts)
    throw InputError(source + ": " + std::to_string(tokens) + " tokens x top-" + std::to_string(top_k) + " = " +
                     std::to_string(slots) + " routed slots are fewer than the " + std::to_string(experts) +
                     " experts: at even balance an expert would get no token (ask for at least " +
                     std::to_string((experts + top_k - 1) / top_k) + " tokens a step)");
  const double most = static_cast<double>(experts) / static_cast<double>(top_k);
  if (!(balance >= 1.0 && balance <= most))
    throw InputError(source + ": expert balance " + shown_number(balance) + ": expected the busiest expert's tokens " +
                     "over the mean, from 1 (balanced) to " + shown_number(most) + " (every token to the same " +
                     std::to_string(top_k) + " experts)");
  std::vector<int64_t> counts(static_cast<size_t>(experts), slots / experts);
  for (int64_t e = 0; e < slots % experts; ++e) ++counts[static_cast<size_t>(e)];
  if (balance > 1.0) {
    const double mean = static_cast<double>(slots) / static_cast<double>(experts);
    const int64_t busiest =
        std::clamp<int64_t>(std::llround(balance * mean), counts[0], std::min(tokens, slots - (experts - 1)));
    const int64_t rest = slots - busiest;
    counts[0] = busiest;
    for (int64_t e = 1; e < experts; ++e)
      counts[static_cast<size_t>(e)] = rest / (experts - 1) + (e - 1 < rest % (experts - 1) ? 1 : 0);
  }
  std::vector<ExpertShare> shares;
  int64_t start = 0;
  for (int64_t count : counts) {
    shares.push_back({start, count});
    start += count;
  }
  return shares;
}

bool sparse_layer(const TransformerSize& size, int64_t layer) {
  if (size.experts <= 0 || layer < size.first_dense_layers) return false;
  if (std::find(size.dense_layers.begin(), size.dense_layers.end(), layer) != size.dense_layers.end()) return false;
  const int64_t step = std::max<int64_t>(size.sparse_step, 1);
  // DeepseekV2: layer_idx % moe_layer_freq == 0; Qwen2Moe / Qwen3Moe: (layer_idx + 1) % decoder_sparse_step == 0.
  return size.moe_style == "deepseek_v2" ? layer % step == 0 : (layer + 1) % step == 0;
}

int moe_mlp(GraphBuilder& b, const std::string& prefix, int y, const TransformerSize& size) {
  const std::string block = prefix + (size.moe_style == "mixtral" ? "block_sparse_moe." : "mlp.");
  const TensorShape shape = b.shape(y);
  const int64_t tokens = shape.numel() / shape.dims.back();
  const std::vector<ExpertShare> shares =
      expert_shares(tokens, size.experts_per_token, size.experts, size.expert_balance, size.name);
  const int logits = b.linear(block + "gate", y, size.experts, false);
  Attrs routing{{"top_k", size.experts_per_token}, {"normalize", int64_t{size.normalize_topk ? 1 : 0}}};
  if (size.routed_scale != 1.0) routing["scale"] = size.routed_scale;
  const int weights = b.op(block + "routing_weights", "TopKRouting", {logits, y}, routing);
  int sum = -1;
  for (size_t e = 0; e < shares.size(); ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    const Attrs positions{{"start", shares[e].start}, {"count", shares[e].count}};
    Attrs gather = positions;
    gather["top_k"] = size.experts_per_token;
    const int x = b.op(expert + "tokens", "ExpertGather", {y}, gather);
    const int out = expert_mlp(b, expert, x, size.expert_mlp, size);
    std::vector<int> inputs{out, weights};
    if (sum >= 0) inputs.push_back(sum);
    sum = b.op(expert + "index_add", "ExpertCombine", inputs, positions);
  }
  sum = b.op(block + "final_hidden_states", "Reshape", {sum}, {{"shape", shape.dims}});
  if (size.shared_expert_mlp <= 0) return sum;
  const bool qwen = size.moe_style == "qwen2_moe";
  int shared = expert_mlp(b, block + (qwen ? "shared_expert." : "shared_experts."), y, size.shared_expert_mlp, size);
  if (size.shared_expert_gate) {
    int gate = b.linear(block + "shared_expert_gate", y, 1, false);
    gate = b.act(block + "shared_expert_gate_sigmoid", "Sigmoid", gate);
    shared = b.mul(block + "shared_expert_gated", gate, shared);
  }
  return b.add(block + "add_shared", sum, shared);
}

}  // namespace dnncast::models
