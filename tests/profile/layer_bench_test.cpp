// Single-layer benchmarks (profile/measure.h LayerBench): the backward split where a layer has both
// parts, an out-of-memory case and a crashing case recorded while the others go on.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "graph/builder.h"
#include "profile/measure.h"

namespace dnncast::profile {
namespace {

Graph conv_case(const std::string& name, int64_t batch = 4) {
  GraphBuilder b(name, "layer");
  int x = b.input(TensorShape{batch, 32, 28, 28}, DType::F32, "input0");
  b.conv(name, x, 64, 3, 1, 1);
  return b.finish();
}

Graph relu_case(const std::string& name) {
  GraphBuilder b(name, "layer");
  b.act(name, "ReLU", b.input(TensorShape{4, 32, 28, 28}, DType::F32, "input0"));
  return b.finish();
}

Limits bench_limits() {
  Limits limits;
  limits.time_budget_s = 0.05;
  limits.timeout_s = 60;
  return limits;
}

TEST(LayerBench, AConvolutionTimesItsBackwardPartsApart) {
  // Each part does less work than the whole backward, which does both: their sum is of the whole's order. Timed on a
  // shared machine (2 cores, 15-30% between iterations, far more while the other core builds), so the bench is
  // taken again, up to three times, until one sample shows it; a real fault shows in all three.
  LayerBench bench;
  double parts = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    bench = bench_layer_in_process(conv_case("conv"), TrainConfig{}, bench_limits());
    ASSERT_EQ(bench.status, "ok") << bench.message;
    ASSERT_TRUE(bench.backward_data_ms && bench.backward_weight_ms);
    parts = *bench.backward_data_ms + *bench.backward_weight_ms;
    if (parts > 0.4 * bench.backward_ms && parts < 3.0 * bench.backward_ms) break;
  }
  EXPECT_GT(bench.forward_ms, 0);
  EXPECT_GT(bench.backward_ms, 0);
  EXPECT_GT(parts, 0.4 * bench.backward_ms);
  EXPECT_LT(parts, 3.0 * bench.backward_ms);
  EXPECT_GE(bench.reps, 3);
  EXPECT_GT(bench.cold_forward_ms, 0);
  // Activations of the pass: at least the output (4 x 64 x 28 x 28 floats).
  EXPECT_GE(bench.peak_bytes, 4 * 64 * 28 * 28 * 4);

  LayerBench relu = bench_layer_in_process(relu_case("relu"), TrainConfig{}, bench_limits());
  ASSERT_EQ(relu.status, "ok") << relu.message;
  EXPECT_FALSE(relu.backward_data_ms.has_value());  // no parameters: nothing to split
}

TEST(LayerBench, OutOfMemoryAndCrashesAreResultsAndTheRestGoesOn) {
  setenv("DNNCAST_PROFILE_FAULT", "abort:crashing", 1);
  std::vector<Graph> cases{conv_case("first"), conv_case("crashing"), relu_case("after"), conv_case("huge", 512)};
  Limits limits = bench_limits();
  limits.memory_bytes = 64 << 20;  // "huge" needs 4 x 100 MB of activations
  std::vector<LayerBench> results(cases.size());
  std::vector<size_t> order;
  bench_layers_isolated(cases, TrainConfig{}, limits, [&](size_t index, const LayerBench& bench) {
    order.push_back(index);
    results.at(index) = bench;
  });
  unsetenv("DNNCAST_PROFILE_FAULT");
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(results[0].status, "ok") << results[0].message;
  EXPECT_EQ(results[1].status, "error");
  EXPECT_NE(results[1].message.find("signal 6"), std::string::npos) << results[1].message;
  EXPECT_EQ(results[2].status, "ok") << results[2].message;
  EXPECT_EQ(results[3].status, "oom") << results[3].message;
}

TEST(LayerBench, ACaseIsOneNodeAfterItsInputs) {
  GraphBuilder b("two", "layer");
  int x = b.input(TensorShape{2, 3, 8, 8});
  x = b.conv("conv", x, 4, 3);
  b.act("relu", "ReLU", x);
  EXPECT_THROW(check_layer_case(b.finish()), InputError);
  std::vector<Graph> cases{conv_case("ok"), GraphBuilder("empty", "layer").graph()};
  cases[1].add(
      Node{"input", "Input", {{"shape", std::vector<int64_t>{1}}, {"dtype", std::string("f32")}}, {}, {}, DType::F32});
  EXPECT_THROW(bench_layers_isolated(cases, TrainConfig{}, bench_limits(), [](size_t, const LayerBench&) {}),
               InputError);
}

}  // namespace
}  // namespace dnncast::profile
