// LoRA as a graph transform (graph/lora.h) on the Hugging Face decoders: trainable parameters against PEFT's
// published figure (Llama-2-7B, r=8 on q_proj and v_proj: "trainable params: 4,194,304 || all params:
// 6,742,609,920") and against r (in + out) per adapted Linear (A: r x in, B: out x r); the frozen base keeps its
// parameters; bad settings are InputErrors naming what is wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "graph/lora.h"
#include "graph/op_registry.h"
#include "models/hf_config.h"
#include "models/zoo.h"

namespace dnncast::models {
namespace {

Graph hf_model(const std::string& config, int64_t seq = 16) {
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config + ".json";
  ModelSpec spec;
  spec.batch = 1;
  spec.seq_len = seq;
  return build_hf_config(nlohmann::json::parse(std::ifstream(path)), spec, path);
}

int64_t all_params(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) total += node_cost(graph, index).params;
  return total;
}

// r (in + out) summed over the Linear nodes that got an adapter (those followed by NAME.lora_A).
int64_t by_formula(const Graph& graph, int64_t rank) {
  int64_t total = 0;
  for (const Node& node : graph.nodes())
    if (node.op == "Linear" && graph.find(node.name + ".lora_A") >= 0)
      total += rank * (graph.node(node.inputs[0]).shape.dims.back() + node.shape.dims.back());
  return total;
}

std::string error_of(const Graph& graph, const LoraConfig& config) {
  try {
    apply_lora(graph, config);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(Lora, Llama2TrainableParametersArePeftsFigure) {
  const Graph base = hf_model("llama-2-7b-hf", 8);
  const Graph tuned = apply_lora(base, {8, 16, {"q", "v"}, false});
  EXPECT_EQ(trainable_parameter_count(tuned), 4194304);
  EXPECT_EQ(by_formula(tuned, 8), 4194304);
  EXPECT_EQ(all_params(tuned), 6742609920);  // PEFT's "all params": the base's 6,738,415,616 and the adapters
  EXPECT_EQ(trainable_parameter_count(base), 6738415616);
}

TEST(Lora, TrainableParametersFollowTheFormula) {
  for (const char* config : {"llama-small-tied", "mistral-7b-v0.1", "tinyllama-1.1b"}) {
    const Graph base = hf_model(config);
    for (int64_t rank : {1, 8, 16}) {
      const Graph tuned = apply_lora(base, {rank, 32, {"q", "k", "v", "o", "gate", "up", "down"}, false});
      EXPECT_EQ(trainable_parameter_count(tuned), by_formula(tuned, rank)) << config << " r=" << rank;
      EXPECT_EQ(all_params(tuned), all_params(base) + by_formula(tuned, rank)) << config;
    }
  }
  // Norms trained (norms=train): each RMSNorm's weight as well.
  const Graph small = hf_model("llama-small-tied");
  const Graph with_norms = apply_lora(small, {4, 8, {"q", "v"}, true});
  EXPECT_EQ(trainable_parameter_count(with_norms), by_formula(with_norms, 4) + (2 * 2 + 1) * 256);
}

TEST(Lora, FrozenLinearHasNoWeightGradientFlops) {
  const Graph tuned = apply_lora(hf_model("llama-small-tied"), {8, 16, {"q"}, false});
  const int base = tuned.find("model.layers.0.self_attn.q_proj");
  const int adapter = tuned.find("model.layers.0.self_attn.q_proj.lora_A");
  ASSERT_GE(base, 0);
  ASSERT_GE(adapter, 0);
  const OpCost frozen = node_cost(tuned, base);
  EXPECT_EQ(frozen.frozen_params, frozen.params);
  EXPECT_EQ(frozen.flops_bwd, 2 * frozen.macs);  // the input gradient only
  const OpCost trained = node_cost(tuned, adapter);
  EXPECT_EQ(trained.frozen_params, 0);
  EXPECT_EQ(trained.flops_bwd, 4 * trained.macs);
  // The adapter's output is read by the base's consumers through NAME.lora_add.
  const int add = tuned.find("model.layers.0.self_attn.q_proj.lora_add");
  ASSERT_GE(add, 0);
  EXPECT_EQ(tuned.node(add).shape.dims, tuned.node(base).shape.dims);
  EXPECT_DOUBLE_EQ(tuned.node(tuned.find("model.layers.0.self_attn.q_proj.lora_scale")).attr_float("scalar", 0), 2.0);
}

TEST(Lora, BadSettingsNameWhatIsWrong) {
  const Graph llama = hf_model("llama-small-tied");
  EXPECT_NE(error_of(llama, {8, 8, {"qkv"}, false}).find("LoRA target 'qkv' matches no Linear"), std::string::npos);
  EXPECT_NE(error_of(llama, {8, 8, {"q", "qkv"}, false}).find("q_proj"), std::string::npos);  // lists projections
  EXPECT_NE(error_of(llama, {0, 8, {"q"}, false}).find("rank r=0 must be at least 1"), std::string::npos);
  // k_proj maps 256 to 2 key/value heads x 48 = 96: r=128 is wider than that.
  EXPECT_NE(error_of(llama, {128, 8, {"k"}, false})
                .find("larger than the smaller width of 'model.layers.0.self_attn.k_proj' (256 -> 96)"),
            std::string::npos);
  // GPT-2's q, k and v are one fused c_attn: q matches nothing and the message lists c_attn.
  const std::string gpt2 = error_of(hf_model("gpt2"), {8, 8, {"q", "v"}, false});
  EXPECT_NE(gpt2.find("c_attn"), std::string::npos) << gpt2;
  EXPECT_EQ(error_of(hf_model("gpt2"), {8, 8, {"c_attn"}, false}), "");
  EXPECT_EQ(error_of(hf_model("pythia-160m"), {8, 8, {"query_key_value"}, false}), "");
}

TEST(Lora, ParsesTheFlagText) {
  const LoraConfig config = parse_lora("r=16,alpha=32,targets=q,k,v,norms=train", "--lora");
  EXPECT_EQ(config.rank, 16);
  EXPECT_DOUBLE_EQ(config.alpha, 32);
  EXPECT_EQ(config.targets, (std::vector<std::string>{"q", "k", "v"}));
  EXPECT_TRUE(config.train_norms);
  const LoraConfig defaults = parse_lora("r=4", "--lora");
  EXPECT_EQ(defaults.targets, (std::vector<std::string>{"q", "v"}));
  EXPECT_DOUBLE_EQ(defaults.alpha, 8);
  for (const char* bad : {"", "16", "r=x", "r=0", "alpha=8", "r=8,beta=1", "r=8,alpha=-1", "r=8,targets=", "r=8,q",
                          "r=8,norms=maybe", "r=8,,"}) {
    EXPECT_THROW(parse_lora(bad, "--lora"), InputError) << bad;
  }
}

}  // namespace
}  // namespace dnncast::models
