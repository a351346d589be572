// A Hugging Face config.json as MODEL (issue 34): predict, memory and inspect take it as they take a zoo name
// (GPT-2's config forecasts what gpt2_small forecasts; Llama-2-7B and Mistral-7B count their published parameters),
// and a broken one is one line naming file and field, exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace dnncast {
namespace {

const std::string kGpt2 = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/gpt2.json";

nlohmann::json answer(const std::string& command, const std::vector<std::string>& args) {
  cli_test::ScratchDir dir("hf_config_cli");
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  const cli_test::Result result = cli_test::run(command, with_json, dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return nlohmann::json::parse(result.out, nullptr, false);
}

TEST(HfConfigCli, Gpt2ConfigForecastsWhatTheZoosGpt2Forecasts) {
  for (const std::vector<std::string>& rest :
       {std::vector<std::string>{"--device", "t4"}, std::vector<std::string>{}}) {
    std::vector<std::string> config_args = {kGpt2, "--batch", "4", "--seq", "256"};
    std::vector<std::string> zoo_args = {"gpt2_small", "--batch", "4", "--seq", "256"};
    config_args.insert(config_args.end(), rest.begin(), rest.end());
    zoo_args.insert(zoo_args.end(), rest.begin(), rest.end());
    const nlohmann::json from_config = answer("predict", config_args), zoo = answer("predict", zoo_args);
    ASSERT_TRUE(from_config.is_object() && zoo.is_object());
    EXPECT_EQ(from_config["time_ms"], zoo["time_ms"]) << (rest.empty() ? "cpu" : "t4");
  }
  const nlohmann::json memory = answer("memory", {kGpt2, "--batch", "2", "--seq", "128"});
  const nlohmann::json zoo_memory = answer("memory", {"gpt2_small", "--batch", "2", "--seq", "128"});
  EXPECT_EQ(memory["peak_bytes"], zoo_memory["peak_bytes"]);
  const nlohmann::json inspected = answer("inspect", {kGpt2, "--seq", "64"});
  EXPECT_EQ(inspected["params"], 124439808) << inspected.dump().substr(0, 400);
}

TEST(HfConfigCli, RotaryDecodersForecastAndCountThePublishedParameters) {
  const std::string configs = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/";
  const nlohmann::json mistral = answer("inspect", {configs + "mistral-7b-v0.1.json", "--seq", "16"});
  EXPECT_EQ(mistral["params"], 7241732096) << mistral.dump().substr(0, 400);
  const nlohmann::json llama = answer("inspect", {configs + "llama-2-7b-hf.json", "--seq", "16"});
  EXPECT_EQ(llama["params"], 6738415616);
  const nlohmann::json tiny =
      answer("predict", {configs + "tinyllama-1.1b.json", "--batch", "2", "--seq", "256", "--device", "a100"});
  ASSERT_TRUE(tiny.is_object());
  EXPECT_GT(tiny["time_ms"].get<double>(), 0.0);
  EXPECT_EQ(tiny["graph"], "TinyLlama/TinyLlama-1.1B-Chat-v1.0");
  const nlohmann::json pythia = answer("memory", {configs + "pythia-160m.json", "--batch", "2", "--seq", "128"});
  EXPECT_GT(pythia["peak_bytes"].get<int64_t>(), 4 * 162322944);  // at least the fp32 weights
}

// Tied input and output embeddings through every command that takes a model (issue 51: calibrate refused every
// tied config). The tied weight is counted once: the untied copy of the same config has vocab x hidden more
// parameters, an independent count (the config's own sizes, not dnncast's).
TEST(HfConfigCli, TiedEmbeddingsThroughEveryCommand) {
  const std::string tied = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-small-tied.json";
  cli_test::ScratchDir dir("hf_config_cli_tied");
  nlohmann::json config = nlohmann::json::parse(cli_test::read_text(tied));
  ASSERT_TRUE(config.value("tie_word_embeddings", false));
  config["tie_word_embeddings"] = false;
  const std::string untied = dir.path() + "/llama-small-untied.json";
  std::ofstream(untied) << config.dump();
  const nlohmann::json tied_inspect = answer("inspect", {tied, "--seq", "8"});
  const nlohmann::json untied_inspect = answer("inspect", {untied, "--seq", "8"});
  EXPECT_EQ(untied_inspect["params"].get<int64_t>() - tied_inspect["params"].get<int64_t>(),
            config["vocab_size"].get<int64_t>() * config["hidden_size"].get<int64_t>());

  const nlohmann::json memory = answer("memory", {tied, "--batch", "2", "--seq", "8"});
  EXPECT_EQ(memory["parameters"], tied_inspect["params"]);
  EXPECT_GT(answer("predict", {tied, "--batch", "2", "--seq", "8"})["time_ms"].get<double>(), 0.0);
  EXPECT_GT(answer("predict", {tied, "--batch", "2", "--seq", "8", "--device", "t4"})["time_ms"].get<double>(), 0.0);
  EXPECT_FALSE(answer("compare", {tied, "--batch", "2", "--seq", "8", "--gpus", "t4"})["rows"].empty());
  const nlohmann::json profiled = answer("profile", {tied, "--batch", "2", "--seq", "8", "--budget", "0.5"});
  EXPECT_EQ(profiled["status"], "ok") << profiled.dump().substr(0, 400);
  EXPECT_EQ(profiled["params"], tied_inspect["params"]);  // libtorch's own count of the trained module
  const cli_test::Result calibrated = cli_test::run(
      "calibrate",
      {"gpt2_small", "--seq", "16", "--batch", "1", "--minutes", "0.1", "--out", dir.path() + "/calibration"},
      dir.path());
  EXPECT_EQ(calibrated.exit_code, 0) << calibrated.err;
}

TEST(HfConfigCli, BadGroupedQueryHeadsAreOneLineNamingTheField) {
  cli_test::ScratchDir dir("hf_config_cli_gqa");
  const std::string path = dir.path() + "/config.json";
  std::ofstream(path)
      << R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 6})";
  const cli_test::Result result = cli_test::run("predict", {path, "--batch", "1", "--seq", "16"}, dir.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "dnncast predict: error: " + path +
                            ": field 'num_key_value_heads': 6 key/value heads do not divide the 32 attention heads "
                            "(num_attention_heads)\n");
}

TEST(HfConfigCli, ABrokenConfigIsOneLineNamingTheField) {
  cli_test::ScratchDir dir("hf_config_cli_bad");
  const std::string path = dir.path() + "/config.json";
  std::ofstream(path) << R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257})";
  const cli_test::Result result = cli_test::run("predict", {path, "--batch", "2", "--seq", "16"}, dir.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "dnncast predict: error: " + path + ": field 'n_positions': missing\n");
}

}  // namespace
}  // namespace dnncast
