// Activation checkpointing (graph/checkpoint.h) in the CPU whole-network forecast: the predictors were trained
// without it, so the forecast adds the checkpointed blocks' forward once more as its share of the iteration's FLOPs
// (inspect's per-layer costs here) and says so in a note.
#include <gtest/gtest.h>

#include <string>

#include "forecast/forecast.h"
#include "import/model_source.h"

namespace dnncast::forecast {
namespace {

TEST(CheckpointForecast, CpuTimeAddsTheRecomputedForwardsShareOfFlops) {
  ForecastRequest request;
  request.model.name = "gpt2_small";
  request.model.spec.batch = 2;
  request.model.spec.seq_len = 256;  // long enough that the blocks' activations, not the LM head, hold the peak
  request.threads = 1;
  const Forecast plain = forecast(request);
  request.model.spec.checkpointing = true;
  const Forecast checkpointed = forecast(request);

  models::ModelSpec spec = request.model.spec;
  const Inspection layers = inspect(import::load_model("gpt2_small", spec));
  double recomputed = 0;
  for (const LayerRow& row : layers.layers)
    if (row.name.rfind("transformer.h.", 0) == 0) recomputed += static_cast<double>(row.flops_fwd);
  const double share = recomputed / static_cast<double>(layers.total.flops_fwd + layers.total.flops_bwd);
  EXPECT_GT(share, 0.1);
  EXPECT_NEAR(checkpointed.time_ms / plain.time_ms, 1 + share, 1e-9);
  EXPECT_NEAR(checkpointed.time_ms_high / plain.time_ms_high, 1 + share, 1e-9);
  bool noted = false;
  for (const std::string& note : checkpointed.notes) noted = noted || note.rfind("checkpointing: ", 0) == 0;
  EXPECT_TRUE(noted);
  // The memory is the simulator's, lower with checkpointing.
  ASSERT_TRUE(plain.peak_bytes && checkpointed.peak_bytes);
  EXPECT_LT(*checkpointed.peak_bytes, *plain.peak_bytes);
}

// Gradient accumulation on a CPU set: the forecast iteration counted K times (an upper bound: the predictor does not
// separate the optimizer step), an epoch in steps of K micro-batches.
TEST(GradAccumForecast, CpuTimeCountsTheIterationPerMicroBatch) {
  ForecastRequest request;
  request.model.name = "resnet18";
  request.model.spec.batch = 8;
  request.model.spec.input = {3, 64, 64};
  request.threads = 1;
  request.epoch_samples = 960;
  const Forecast one = forecast(request);
  request.grad_accum = 3;
  const Forecast three = forecast(request);
  EXPECT_NEAR(three.time_ms, 3 * one.time_ms, 1e-9 * three.time_ms);
  EXPECT_EQ(three.epoch_iterations, 960 / 24);
  EXPECT_EQ(one.epoch_iterations, 960 / 8);
  bool noted = false;
  for (const std::string& note : three.notes) noted = noted || note.rfind("gradient accumulation: 3 times", 0) == 0;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace dnncast::forecast
