// Models from a Hugging Face config.json (issue 34): the graph's parameter count equals the model's that
// Hugging Face's modeling files build, counted by tests/models/hf_reference.py with torch.nn modules (and equal to
// the published figures: GPT-2 124,439,808; bert-base-uncased as BertForMaskedLM 109,514,298; OPT-125m
// 125,239,296; OPT-350m 331,196,416; Llama-2-7B 6,738,415,616; Mistral-7B-v0.1 7,241,732,096; Pythia-160m
// 162,322,944; TinyLlama-1.1B 1,100,048,384; issue 47's families: Qwen2.5-0.5B 494,032,768; Qwen3-0.6B 596,049,920;
// Gemma-2B 2,506,172,416; Gemma-2-2B 2,614,341,888 (the Gemma papers' non-embedding counts 1,981,884,416 and
// 2,024,517,888 plus 256,000 x width embeddings); Phi-3-mini 3,821,079,552; Phi-4-mini 3,836,021,760; Llama-3.2-1B
// 1,235,814,400; SmolLM2-135M 134,515,008); GPT-2's config gives the zoo's gpt2_small layer for layer; Llama-2-7B's
// forward FLOPs are 2 x parameters x tokens plus attention; a bad config is one line naming its file and field.
// Issue 47's mixtures of experts: Mixtral-8x7B 46,702,792,704; Qwen1.5-MoE-A2.7B, Qwen3-30B-A3B, DeepSeek-V2-Lite and
// DeepSeek-V2 at their model cards' 14.3B, 30.5B, 15.7B and 236B.
#include "models/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "graph/op_registry.h"
#include "models/moe.h"
#include "models/zoo.h"
#include "python_run.h"

namespace dnncast::models {
namespace {

const std::string kConfigs = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs";

int64_t total_params(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) total += node_cost(graph, index).params;
  return total;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

Graph build(const std::string& path, int64_t seq = 0) {
  ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = seq;
  return build_hf_config(read_json(path), spec, path);
}

TEST(HfConfig, ParametersEqualTheTorchReferenceAndThePublishedFigures) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  ASSERT_GE(paths.size(), 24u);
  std::string arguments = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_reference.py";
  for (const std::string& path : paths) arguments += " " + path;
  const std::string output = python_test::run_python_command(arguments);
  ASSERT_EQ(output.find("FAILED"), std::string::npos) << output;
  std::map<std::string, int64_t> reference;
  std::istringstream lines(output);
  std::string path;
  int64_t count = 0;
  while (lines >> path >> count) reference[path] = count;
  ASSERT_EQ(reference.size(), paths.size()) << output;
  for (const std::string& config : paths) EXPECT_EQ(total_params(build(config, 64)), reference[config]) << config;
  const std::map<std::string, int64_t> published = {
      {"gpt2.json", 124439808},           {"bert-base-uncased.json", 109514298}, {"opt-125m.json", 125239296},
      {"opt-350m.json", 331196416},       {"llama-2-7b-hf.json", 6738415616},    {"mistral-7b-v0.1.json", 7241732096},
      {"pythia-160m.json", 162322944},    {"tinyllama-1.1b.json", 1100048384},   {"qwen2.5-0.5b.json", 494032768},
      {"qwen3-0.6b.json", 596049920},     {"gemma-2b.json", 2506172416},         {"gemma-2-2b.json", 2614341888},
      {"phi-3-mini-4k.json", 3821079552}, {"phi-4-mini.json", 3836021760},       {"llama-3.2-1b.json", 1235814400},
      {"smollm2-135m.json", 134515008}};
  for (const auto& [name, figure] : published) EXPECT_EQ(reference[kConfigs + "/" + name], figure) << name;
  // The mixtures of experts: Mixtral-8x7B's count is published to the parameter (its safetensors index); the others
  // as their model cards round them (Qwen1.5-MoE-A2.7B 14.3B, Qwen3-30B-A3B 30.5B, DeepSeek-V2-Lite 15.7B,
  // DeepSeek-V2 236B): within half the last digit.
  EXPECT_EQ(reference[kConfigs + "/mixtral-8x7b.json"], 46702792704);
  const std::map<std::string, std::pair<double, double>> rounded = {{"qwen1.5-moe-a2.7b.json", {14.3e9, 0.05e9}},
                                                                    {"qwen3-30b-a3b.json", {30.5e9, 0.05e9}},
                                                                    {"deepseek-v2-lite.json", {15.7e9, 0.05e9}},
                                                                    {"deepseek-v2.json", {236e9, 0.5e9}}};
  for (const auto& [name, figure] : rounded)
    EXPECT_NEAR(static_cast<double>(reference[kConfigs + "/" + name]), figure.first, figure.second) << name;
}

TEST(HfConfig, Gpt2ConfigIsTheZoosGpt2SmallLayerForLayer) {
  Graph from_config = build(kConfigs + "/gpt2.json", 256);
  ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 256;
  Graph zoo = build_zoo_model("gpt2_small", spec);
  ASSERT_EQ(from_config.size(), zoo.size());
  for (int index = 0; index < zoo.size(); ++index) {
    EXPECT_EQ(from_config.node(index).name, zoo.node(index).name);
    EXPECT_EQ(from_config.node(index).op, zoo.node(index).op);
    EXPECT_EQ(from_config.node(index).shape, zoo.node(index).shape) << zoo.node(index).name;
  }
  EXPECT_EQ(from_config.name, "gpt2");
  EXPECT_EQ(from_config.family, "gpt2");
}

TEST(HfConfig, SequenceAndHeadsFollowTheConfig) {
  Graph opt = build(kConfigs + "/opt-350m.json", 100);
  EXPECT_EQ(opt.node(opt.inputs()[0]).shape, (TensorShape{2, 100}));
  EXPECT_EQ(opt.node(opt.outputs()[0]).shape, (TensorShape{2, 100, 50272}));
  EXPECT_GE(opt.find("model.decoder.project_in"), 0);        // 512-wide embeddings into the 1024 model
  EXPECT_LT(opt.find("model.decoder.final_layer_norm"), 0);  // post-LN: no final LayerNorm
  Graph bert = build(kConfigs + "/bert-classifier.json");
  EXPECT_EQ(bert.node(bert.inputs()[0]).shape, (TensorShape{2, 128}));  // default: min(512, positions)
  EXPECT_EQ(bert.node(bert.outputs()[0]).shape, (TensorShape{2, 3}));   // num_labels
  EXPECT_THROW(build(kConfigs + "/opt-125m.json", 4096), InputError);   // past max_position_embeddings
}

int count_op(const Graph& graph, const std::string& op) {
  int count = 0;
  for (int index = 0; index < graph.size(); ++index) count += graph.node(index).op == op ? 1 : 0;
  return count;
}

TEST(HfConfig, RotaryDecodersFollowTheConfig) {
  Graph mistral = build(kConfigs + "/mistral-7b-v0.1.json", 32);
  EXPECT_EQ(mistral.node(mistral.find("model.layers.0.self_attn.k_proj")).shape, (TensorShape{2, 32, 1024}));
  EXPECT_EQ(mistral.node(mistral.find("model.layers.0.self_attn.repeat_k")).shape, (TensorShape{2, 32, 32, 128}));
  EXPECT_EQ(count_op(mistral, "RepeatInterleave"), 2 * 32);  // k and v of every layer: 8 key/value heads for 32
  EXPECT_EQ(count_op(mistral, "RMSNorm"), 2 * 32 + 1);
  EXPECT_EQ(count_op(mistral, "PositionEmbedding"), 0);  // rotary: no position table
  EXPECT_EQ(mistral.node(mistral.outputs()[0]).shape, (TensorShape{2, 32, 32000}));
  EXPECT_EQ(mistral.node(mistral.find("model.layers.0.mlp.act_fn")).attr_int("inplace", 1), 0);
  Graph llama = build(kConfigs + "/llama-2-7b-hf.json", 16);
  EXPECT_EQ(count_op(llama, "RepeatInterleave"), 0);  // 32 key/value heads: plain multi-head attention
  EXPECT_EQ(llama.node(llama.find("lm_head")).attr_str("tied_to", ""), "");  // untied
  Graph tied = build(kConfigs + "/llama-small-tied.json", 16);
  EXPECT_EQ(tied.node(tied.find("lm_head")).attr_str("tied_to", ""), "model.embed_tokens");
  EXPECT_EQ(tied.node(tied.find("model.layers.0.self_attn.q_proj")).shape, (TensorShape{2, 16, 8 * 48}));  // head_dim
  Graph pythia = build(kConfigs + "/pythia-160m.json", 64);
  int rotary = pythia.find("gpt_neox.layers.0.attention.rotary_q");
  ASSERT_GE(rotary, 0);
  EXPECT_EQ(pythia.node(rotary).attr_int("rotary_dim", 0), 16);  // rotary_pct 0.25 of 64
  EXPECT_EQ(pythia.node(pythia.find("gpt_neox.layers.0.attention.query")).shape, (TensorShape{2, 12, 64, 64}));
  EXPECT_GE(pythia.find("gpt_neox.layers.0.add_mlp_attention"), 0);  // parallel residual
  Graph sequential = build(kConfigs + "/gpt-neox-sequential.json", 64);
  EXPECT_LT(sequential.find("gpt_neox.layers.0.add_mlp_attention"), 0);
  EXPECT_GE(sequential.find("gpt_neox.layers.0.add_attention"), 0);
  EXPECT_THROW(build(kConfigs + "/tinyllama-1.1b.json", 4096), InputError);  // past max_position_embeddings
}

// Issue 47's families, each with the parts its modeling file adds to llama's layer.
TEST(HfConfig, LlamaShapedFamiliesFollowTheirConfigs) {
  Graph qwen2 = build(kConfigs + "/qwen2.5-0.5b.json", 16);
  EXPECT_EQ(qwen2.node(qwen2.find("model.layers.0.self_attn.k_proj")).attr_int("bias", 0), 1);
  EXPECT_EQ(qwen2.node(qwen2.find("model.layers.0.self_attn.o_proj")).attr_int("bias", 1), 0);
  EXPECT_EQ(qwen2.node(qwen2.find("lm_head")).attr_str("tied_to", ""), "model.embed_tokens");
  EXPECT_FALSE(qwen2.node(qwen2.find("model.layers.0.self_attn.attention")).has_attr("window"));  // not used
  Graph qwen3 = build(kConfigs + "/qwen3-0.6b.json", 16);
  EXPECT_EQ(qwen3.node(qwen3.find("model.layers.0.self_attn.q_norm")).shape, (TensorShape{2, 16, 16, 128}));
  EXPECT_EQ(qwen3.node(qwen3.find("model.layers.0.self_attn.q_proj")).shape, (TensorShape{2, 16, 16 * 128}));
  EXPECT_EQ(count_op(qwen3, "RMSNorm"), 4 * 28 + 1);
  Graph gemma = build(kConfigs + "/gemma-2b.json", 16);
  EXPECT_DOUBLE_EQ(gemma.node(gemma.find("model.embed_scale")).attr_float("scalar", 0), std::sqrt(2048.0));
  EXPECT_EQ(gemma.node(gemma.find("model.norm")).attr_int("unit_offset", 0), 1);
  EXPECT_EQ(gemma.node(gemma.find("model.layers.0.mlp.act_fn")).op, "GELU");
  EXPECT_EQ(gemma.node(gemma.find("model.layers.0.mlp.act_fn")).attr_str("approximate", ""), "tanh");
  Graph gemma2 = build(kConfigs + "/gemma-2-2b.json", 16);
  EXPECT_EQ(count_op(gemma2, "RMSNorm"), 4 * 26 + 1);
  const Node& sliding = gemma2.node(gemma2.find("model.layers.0.self_attn.attention"));
  EXPECT_EQ(sliding.attr_int("window", 0), 4096);
  EXPECT_DOUBLE_EQ(sliding.attr_float("softcap", 0), 50.0);
  EXPECT_DOUBLE_EQ(sliding.attr_float("scale", 0), 1.0 / 16.0);  // query_pre_attn_scalar 256
  EXPECT_FALSE(gemma2.node(gemma2.find("model.layers.1.self_attn.attention")).has_attr("window"));  // global
  EXPECT_EQ(gemma2.node(gemma2.outputs()[0]).name, "logits_softcap_mul");
  nlohmann::json uncapped = read_json(kConfigs + "/gemma-2-2b.json");  // null turns soft-capping off
  uncapped["attn_logit_softcapping"] = nullptr;
  uncapped["final_logit_softcapping"] = nullptr;
  ModelSpec at;
  at.batch = 1;
  at.seq_len = 8;
  const Graph plain = build_hf_config(uncapped, at, "uncapped.json");
  EXPECT_FALSE(plain.node(plain.find("model.layers.0.self_attn.attention")).has_attr("softcap"));
  EXPECT_EQ(plain.node(plain.outputs()[0]).name, "lm_head");
  Graph phi3 = build(kConfigs + "/phi-3-mini-4k.json", 16);
  EXPECT_EQ(phi3.node(phi3.find("model.layers.0.self_attn.qkv_proj")).shape, (TensorShape{2, 16, 3 * 3072}));
  EXPECT_EQ(phi3.node(phi3.find("model.layers.0.mlp.gate_up_proj")).shape, (TensorShape{2, 16, 2 * 8192}));
  EXPECT_EQ(phi3.node(phi3.find("model.layers.0.self_attn.attention")).attr_int("window", 0), 2047);
  Graph phi4 = build(kConfigs + "/phi-4-mini.json", 16);
  EXPECT_EQ(phi4.node(phi4.find("model.layers.0.self_attn.rotary_q")).attr_int("rotary_dim", 0), 96);  // 0.75 x 128
  EXPECT_EQ(phi4.node(phi4.find("model.layers.0.self_attn.k_proj")).shape, (TensorShape{2, 16, 8 * 128}));
}

// Forward FLOPs of Llama-2-7B at 2048 tokens: every weight but the embedding table (a gather) does one multiply-add
// per token, and attention's q k^T and P v over the full 2048 x 2048 scores (libtorch 1.13's math path computes the
// masked half too) add 4 x L^2 x hidden per layer; norms, SiLU, rotary and softmax are the rest, under 2%.
TEST(HfConfig, Llama2ForwardFlopsAreTwiceParametersPerTokenPlusAttention) {
  ModelSpec spec;
  spec.batch = 1;
  spec.seq_len = 2048;
  const std::string path = kConfigs + "/llama-2-7b-hf.json";
  Graph llama = build_hf_config(read_json(path), spec, path);
  int64_t flops = 0, params = 0;
  for (int index = 0; index < llama.size(); ++index) {
    OpCost cost = node_cost(llama, index);
    flops += cost.flops_fwd;
    params += cost.params;
  }
  ASSERT_EQ(params, 6738415616);
  const double tokens = 2048, hidden = 4096, layers = 32, embedding = 32000 * hidden;
  const double attention = 4 * layers * tokens * tokens * hidden;
  const double matmuls = 2 * (static_cast<double>(params) - embedding) * tokens + attention;
  EXPECT_NEAR(static_cast<double>(flops) / matmuls, 1.0, 0.02) << flops;
  // The rule of thumb with every parameter counted: within a few percent.
  EXPECT_NEAR(static_cast<double>(flops) / (2 * static_cast<double>(params) * tokens + attention), 1.0, 0.03);
}

// A mixture of experts: every expert's parameters, the routed tokens' FLOPs. Mixtral-8x7B's forward multiplies
// 2 x the parameters a token meets (12.9B of 46.7B: attention, the router, two of eight experts; Mistral AI's
// "12.9B active") per token, plus attention's scores; each expert takes tokens x 2 / 8 rows at even balance.
TEST(HfConfig, MixturesOfExpertsRouteTheirTokensAndHoldEveryExpert) {
  ModelSpec spec;
  spec.batch = 1;
  spec.seq_len = 512;
  const std::string path = kConfigs + "/mixtral-8x7b.json";
  const Graph mixtral = build_hf_config(read_json(path), spec, path);
  int64_t linear_macs = 0, params = 0;
  for (int index = 0; index < mixtral.size(); ++index) {
    const OpCost cost = node_cost(mixtral, index);
    params += cost.params;
    if (mixtral.node(index).op == "Linear") linear_macs += cost.macs;
  }
  ASSERT_EQ(params, 46702792704);
  const int64_t tokens = 512, hidden = 4096, embedding = 32000 * hidden;
  const int64_t attention = 2 * hidden * hidden + 2 * hidden * 1024;  // q, o; k, v of 8 heads x 128
  const int64_t active = 32 * (attention + 8 * hidden + 2 * 3 * hidden * 14336) + embedding;  // + the LM head
  EXPECT_EQ(linear_macs, active * tokens);
  EXPECT_NEAR(static_cast<double>(active + embedding + 32 * 2 * hidden + hidden), 12.9e9, 0.05e9);
  const int expert = mixtral.find("model.layers.31.block_sparse_moe.experts.7.tokens");
  ASSERT_GE(expert, 0);
  EXPECT_EQ(mixtral.node(expert).shape, (TensorShape{tokens * 2 / 8, hidden}));
  EXPECT_GE(mixtral.find("model.layers.0.block_sparse_moe.experts.0.w3"), 0);

  // DeepSeek-V2-Lite: the first layer dense, then 64 routed experts and two shared ones as one 2 x 1408 MLP.
  const std::string lite_path = kConfigs + "/deepseek-v2-lite.json";
  const Graph lite = build_hf_config(read_json(lite_path), spec, lite_path);
  EXPECT_GE(lite.find("model.layers.0.mlp.gate_proj"), 0);
  EXPECT_LT(lite.find("model.layers.0.mlp.experts.0.tokens"), 0);
  EXPECT_EQ(lite.node(lite.find("model.layers.1.mlp.shared_experts.up_proj")).shape, (TensorShape{1, tokens, 2816}));
  EXPECT_EQ(lite.node(lite.find("model.layers.1.self_attn.key_states")).shape, (TensorShape{1, 16, tokens, 192}));
  EXPECT_EQ(lite.node(lite.find("model.layers.1.self_attn.attention")).shape, (TensorShape{1, 16, tokens, 128}));

  // A skewed router (--expert-balance 3): the busiest expert takes three times the mean, the rest share the others.
  ModelSpec skewed = spec;
  skewed.expert_balance = 3.0;
  const Graph hot = build_hf_config(read_json(path), skewed, path);
  EXPECT_EQ(hot.node(hot.find("model.layers.0.block_sparse_moe.experts.0.tokens")).shape[0], 3 * tokens * 2 / 8);
  // 1,024 slots - 384 = 640 = 7 x 91 + 3: the next three take 92.
  EXPECT_EQ(hot.node(hot.find("model.layers.0.block_sparse_moe.experts.1.tokens")).shape[0], 92);
  EXPECT_EQ(hot.node(hot.find("model.layers.0.block_sparse_moe.experts.7.tokens")).shape[0], 91);
}

// Which layers are sparse, as each modeling file decides: DeepseekV2 layer >= first_k_dense_replace and
// layer % moe_layer_freq == 0; Qwen2Moe (layer + 1) % decoder_sparse_step == 0 and not in mlp_only_layers.
TEST(HfConfig, SparseLayersFollowEachFamilysRule) {
  ModelSpec spec;
  spec.seq_len = 16;
  auto sparse = [&](const nlohmann::json& config) {
    const Graph graph = build_hf_config(config, spec, "moe.json");
    std::vector<int> layers;
    for (int layer = 0; layer < 5; ++layer)
      if (graph.find("model.layers." + std::to_string(layer) + ".mlp.experts.0.tokens") >= 0) layers.push_back(layer);
    return layers;
  };
  nlohmann::json deepseek = read_json(kConfigs + "/deepseek-v2-small.json");
  deepseek["num_hidden_layers"] = 5;
  deepseek["moe_layer_freq"] = 2;
  EXPECT_EQ(sparse(deepseek), (std::vector<int>{2, 4}));
  nlohmann::json qwen = read_json(kConfigs + "/qwen2-moe-small.json");
  qwen["num_hidden_layers"] = 5;
  qwen["decoder_sparse_step"] = 2;
  qwen["mlp_only_layers"] = {3};
  EXPECT_EQ(sparse(qwen), (std::vector<int>{1}));
  deepseek["rope_scaling"]["factor"] = "forty";
  EXPECT_THROW(build_hf_config(deepseek, spec, "moe.json"), InputError);
}

TEST(HfConfig, ExpertSharesCoverEverySlotOnce) {
  for (const double balance : {1.0, 1.5, 2.0, 4.0}) {
    const std::vector<ExpertShare> shares = expert_shares(37, 2, 8, balance, "test");
    int64_t next = 0;
    for (const ExpertShare& share : shares) {
      EXPECT_EQ(share.start, next);
      EXPECT_GE(share.count, 1);
      EXPECT_LE(share.count, 37);  // no expert twice for one token
      next += share.count;
    }
    EXPECT_EQ(next, 74) << balance;
  }
  EXPECT_EQ(expert_shares(37, 2, 8, 1.0, "test")[0].count, 10);  // 74 = 8 x 9 + 2: the first two take 10
  EXPECT_EQ(expert_shares(37, 2, 8, 1.0, "test")[7].count, 9);
  auto message = [](int64_t tokens, double balance) {
    try {
      expert_shares(tokens, 2, 8, balance, "m.json");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(3, 1.0).find("m.json: 3 tokens x top-2 = 6 routed slots are fewer than the 8 experts"),
            std::string::npos);
  EXPECT_NE(message(37, 0.5).find("m.json: expert balance 0.5"), std::string::npos);
  EXPECT_NE(message(37, 5.0).find("from 1 (balanced) to 4"), std::string::npos);
}

TEST(HfConfig, ABadConfigNamesItsField) {
  nlohmann::json gpt2 = read_json(kConfigs + "/gpt2.json");
  ModelSpec spec;
  spec.seq_len = 8;
  auto message = [&](nlohmann::json config) {
    try {
      build_hf_config(config, spec, "config.json");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  nlohmann::json missing = gpt2;
  missing.erase("n_embd");
  EXPECT_EQ(message(missing), "config.json: field 'n_embd': missing");
  nlohmann::json negative = gpt2;
  negative["n_layer"] = -3;
  EXPECT_EQ(message(negative), "config.json: field 'n_layer': expected a positive integer (at most 2^24), got -3");
  nlohmann::json heads = gpt2;
  heads["n_head"] = 7;
  EXPECT_EQ(message(heads), "config.json: field 'n_head': 7 heads do not divide the width 768");
  nlohmann::json activation = gpt2;
  activation["activation_function"] = "swish";
  EXPECT_NE(message(activation).find("field 'activation_function': 'swish' is not an activation"), std::string::npos);
  nlohmann::json falcon = gpt2;
  falcon["model_type"] = "falcon";
  EXPECT_EQ(message(falcon),
            "config.json: field 'model_type': 'falcon' is not a family dnncast builds from a config "
            "(gpt2, bert, opt, gpt_neox, llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, gemma, gemma2, "
            "phi3, deepseek_v2)");
  nlohmann::json mistral = read_json(kConfigs + "/mistral-7b-v0.1.json");
  nlohmann::json groups = mistral;
  groups["num_key_value_heads"] = 5;
  EXPECT_EQ(message(groups),
            "config.json: field 'num_key_value_heads': 5 key/value heads do not divide the 32 attention heads "
            "(num_attention_heads)");
  nlohmann::json llama_heads = mistral;
  llama_heads["num_attention_heads"] = 30;
  llama_heads["num_key_value_heads"] = 10;
  EXPECT_EQ(message(llama_heads), "config.json: field 'num_attention_heads': 30 heads do not divide the width 4096");
  nlohmann::json act = mistral;
  act["hidden_act"] = "tanh";
  EXPECT_EQ(message(act),
            "config.json: field 'hidden_act': 'tanh' is not an activation dnncast models (gelu, gelu_new, "
            "gelu_fast, gelu_pytorch_tanh, relu, silu, swish)");
  act["hidden_act"] = "geluXYZ";  // issue 51: was taken as GELU for starting with "gelu"
  EXPECT_NE(message(act).find("'geluXYZ' is not an activation"), std::string::npos) << message(act);
  act["hidden_act"] = "gelu_pytorch_tanh";
  EXPECT_EQ(message(act), "no error");
  nlohmann::json pythia = read_json(kConfigs + "/pythia-160m.json");
  nlohmann::json rotary = pythia;
  rotary["rotary_pct"] = 0.01;
  EXPECT_EQ(message(rotary),
            "config.json: field 'rotary_pct': rotates 0 of a head's 64 features; expected an even "
            "number, at least 2, at most all");
  nlohmann::json residual = pythia;
  residual["use_parallel_residual"] = "yes";
  EXPECT_EQ(message(residual), "config.json: field 'use_parallel_residual': expected true or false, got \"yes\"");
  EXPECT_FALSE(is_hf_config(nlohmann::json::parse(R"({"format": "dnncast-graph/1", "nodes": []})")));
}

}  // namespace
}  // namespace dnncast::models
