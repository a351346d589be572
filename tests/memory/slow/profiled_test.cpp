// The simulator against the profiler: real training iterations with libtorch (each in its own
// process, src/profile), peak bytes measured by the tracking allocator. A sample of 17 runs (about
// 40 s of CPU); the whole sweep (every zoo CNN at two batches, 100 synthetic networks)
// is tests/memory/slow/sweep_test.cpp, its results in docs/MEMORY.md.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "memory/simulator.h"
#include "models/synthetic.h"
#include "models/zoo.h"

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

#ifdef DNNCAST_HAVE_TORCH

profile::Limits quick_limits() {
  profile::Limits limits;
  limits.time_budget_s = 0.01;   // warm-up 2 iterations, 1 timed: the peak is reached by iteration 2
  limits.warmup_budget_s = 0.01;
  limits.min_iterations = 1;
  limits.timeout_s = 120;
  return limits;
}

struct Case {
  std::string model;  // zoo name or synthetic:SEED
  int64_t batch;
  std::vector<int64_t> input;
  std::string optimizer = "sgd";
};

Graph build(const Case& c) {
  ModelSpec spec;
  spec.batch = c.batch;
  spec.input = c.input;
  if (c.model.rfind("synthetic:", 0) == 0) return make_synthetic(std::stoull(c.model.substr(10)), spec);
  return build_zoo_model(c.model, spec);
}

void expect_matches(const Case& c) {
  Graph graph = build(c);
  profile::TrainConfig train;
  train.optimizer = c.optimizer;
  profile::Measurement measured = profile::measure_isolated(graph, train, quick_limits());
  ASSERT_EQ(measured.status, "ok") << c.model << ": " << measured.message;
  MemoryConfig config;
  config.optimizer = c.optimizer;
  MemoryReport simulated = simulate_memory(graph, config);
  const double error = static_cast<double>(simulated.peak_bytes - measured.peak_bytes) / static_cast<double>(measured.peak_bytes);
  std::printf("%-22s batch %lld  measured %12lld  simulated %12lld  error %+.4f%%\n", c.model.c_str(),
              static_cast<long long>(c.batch), static_cast<long long>(measured.peak_bytes),
              static_cast<long long>(simulated.peak_bytes), 100 * error);
  EXPECT_EQ(simulated.baseline_bytes, measured.baseline_bytes) << c.model;
  EXPECT_LE(std::fabs(error), 0.01) << c.model << " batch " << c.batch;
  // The goal is exact: every network of this sample reproduces the measured peak to the byte.
  EXPECT_EQ(simulated.peak_bytes, measured.peak_bytes) << c.model << " batch " << c.batch;
}

TEST(SimulatorVsProfiler, ZooSample) {
  for (const Case& c : std::vector<Case>{{"resnet18", 1, {3, 32, 32}},
                                         {"resnet18", 4, {3, 32, 32}},
                                         {"mobilenet_v2", 1, {3, 32, 32}},
                                         {"mobilenet_v2", 3, {3, 32, 32}},
                                         {"densenet121", 2, {3, 32, 32}},
                                         {"shufflenet_v2_x0_5", 2, {3, 32, 32}},
                                         {"shufflenet_v2_x0_5", 6, {3, 32, 32}},
                                         {"mobilenet_v3_small", 4, {3, 32, 32}},
                                         {"resnet18", 2, {3, 32, 32}, "adam"}})
    expect_matches(c);
}

TEST(SimulatorVsProfiler, SyntheticSample) {
  for (uint64_t seed : {0, 13, 21, 42, 68, 99}) {
    Case c{"synthetic:" + std::to_string(seed), 1 + static_cast<int64_t>(seed % 5), {3, 32, 32}};
    expect_matches(c);
  }
}

// --max-batch verified by profiling: under a memory limit of L bytes, the batch the simulator
// picks trains (status ok) and one more does not (status oom).
TEST(SimulatorVsProfiler, MaxBatchFitsAndTheNextDoesNot) {
  ModelSpec spec;
  spec.input = {3, 32, 32};
  auto build_batch = [&](int64_t batch) {
    ModelSpec at = spec;
    at.batch = batch;
    return build_zoo_model("mobilenet_v2", at);
  };
  const int64_t limit = int64_t{80} << 20;  // 80 MiB of tensors
  MaxBatchResult best = max_batch(build_batch, MemoryConfig{}, limit);
  ASSERT_GT(best.batch, 1);
  profile::TrainConfig train;
  profile::Limits limits = quick_limits();
  limits.memory_bytes = limit;
  profile::Measurement fits = profile::measure_isolated(build_batch(best.batch), train, limits);
  EXPECT_EQ(fits.status, "ok") << "batch " << best.batch << ": " << fits.message;
  profile::Measurement too_big = profile::measure_isolated(build_batch(best.batch + 1), train, limits);
  EXPECT_EQ(too_big.status, "oom") << "batch " << best.batch + 1 << ": " << too_big.message;
  std::printf("mobilenet_v2 3x32x32 under %lld bytes: largest batch %lld (ok), %lld: %s\n",
              static_cast<long long>(limit), static_cast<long long>(best.batch),
              static_cast<long long>(best.batch + 1), too_big.status.c_str());
}

#else

TEST(SimulatorVsProfiler, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
}  // namespace dnncast::memory
