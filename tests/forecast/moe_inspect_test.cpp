// A mixture of experts' active parameters (forecast/inspect.cpp, Inspection::active_params): the parameters one token
// meets, against the model cards' "activated" figures, which no code here produced: Mixtral-8x7B 12.9B (Mistral AI),
// Qwen1.5-MoE-A2.7B 2.7B, Qwen3-30B-A3B 3.3B, DeepSeek-V2 21B; DeepSeek-V2-Lite's 2.4B leaves its input
// embedding out. A dense model's are all of them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "forecast/forecast.h"
#include "import/model_source.h"

namespace dnncast::forecast {
namespace {

Inspection inspected(const std::string& config) {
  models::ModelSpec spec;
  spec.seq_len = 64;
  return inspect(
      import::load_model(std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config + ".json", spec));
}

TEST(MoeInspect, ActiveParametersAreTheModelCardsActivatedOnes) {
  const std::map<std::string, std::pair<double, double>> published = {{"mixtral-8x7b", {12.9e9, 0.05e9}},
                                                                      {"qwen1.5-moe-a2.7b", {2.7e9, 0.05e9}},
                                                                      {"qwen3-30b-a3b", {3.3e9, 0.06e9}},
                                                                      {"deepseek-v2", {21e9, 0.5e9}}};
  for (const auto& [config, figure] : published) {
    const Inspection inspection = inspected(config);
    EXPECT_NEAR(static_cast<double>(inspection.active_params), figure.first, figure.second) << config;
    EXPECT_LT(inspection.active_params, inspection.total.params) << config;
  }
  const Inspection lite = inspected("deepseek-v2-lite");
  EXPECT_NEAR(static_cast<double>(lite.active_params - 102400 * 2048), 2.4e9, 0.06e9);
  const Inspection dense = inspected("llama-2-7b-hf");
  EXPECT_EQ(dense.active_params, dense.total.params);
}

}  // namespace
}  // namespace dnncast::forecast
