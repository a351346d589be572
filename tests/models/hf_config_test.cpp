// Models from a Hugging Face config.json (issue 34): the graph's parameter count equals the model's that
// Hugging Face's modeling files build, counted by tests/models/hf_reference.py with torch.nn modules (and equal to
// the published figures: GPT-2 124,439,808; bert-base-uncased as BertForMaskedLM 109,514,298; OPT-125m
// 125,239,296; OPT-350m 331,196,416); GPT-2's config gives the zoo's gpt2_small layer for layer; a bad config is
// one line naming its file and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "graph/op_registry.h"
#include "models/hf_config.h"
#include "models/zoo.h"
#include "python_run.h"

namespace dnncast {
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
  ASSERT_GE(paths.size(), 5u);
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
  const std::map<std::string, int64_t> published = {{"gpt2.json", 124439808},
                                                     {"bert-base-uncased.json", 109514298},
                                                     {"opt-125m.json", 125239296},
                                                     {"opt-350m.json", 331196416}};
  for (const auto& [name, figure] : published) EXPECT_EQ(reference[kConfigs + "/" + name], figure) << name;
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
  EXPECT_GE(opt.find("model.decoder.project_in"), 0);                // 512-wide embeddings into the 1024 model
  EXPECT_LT(opt.find("model.decoder.final_layer_norm"), 0);          // post-LN: no final LayerNorm
  Graph bert = build(kConfigs + "/bert-classifier.json");
  EXPECT_EQ(bert.node(bert.inputs()[0]).shape, (TensorShape{2, 128}));  // default: min(512, positions)
  EXPECT_EQ(bert.node(bert.outputs()[0]).shape, (TensorShape{2, 3}));   // num_labels
  EXPECT_THROW(build(kConfigs + "/opt-125m.json", 4096), InputError);   // past max_position_embeddings
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
  nlohmann::json llama = gpt2;
  llama["model_type"] = "llama";
  EXPECT_EQ(message(llama),
            "config.json: field 'model_type': 'llama' is not a family dnncast builds from a config (gpt2, bert, opt)");
  EXPECT_FALSE(is_hf_config(nlohmann::json::parse(R"({"format": "dnncast-graph/1", "nodes": []})")));
}

}  // namespace
}  // namespace dnncast
