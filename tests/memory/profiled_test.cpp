// The simulator against the profiler: real training iterations with libtorch (each in its own
// process, src/profile), peak bytes measured by the tracking allocator. A sample of 14 runs (about
// a minute on one core); the whole sweep (every zoo CNN at two batches, 100 synthetic networks) is
// tests/memory/slow/sweep_test.cpp (scripts/memory-check.sh), its results in docs/MEMORY.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graph/builder.h"
#include "memory/simulator.h"
#include "memory/training_trace.h"
#include "models/synthetic.h"
#include "models/zoo.h"

#ifdef DNNCAST_HAVE_TORCH
#include "memory/profiled_limits.h"
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

#ifdef DNNCAST_HAVE_TORCH

using memory_test::quick_limits;

struct Case {
  std::string model;  // zoo name or synthetic:SEED
  int64_t batch;
  std::vector<int64_t> input;
  std::string optimizer = "sgd";
};

Graph build(const Case& c) {
  models::ModelSpec spec;
  spec.batch = c.batch;
  spec.input = c.input;
  if (c.model.rfind("synthetic:", 0) == 0) return models::make_synthetic(std::stoull(c.model.substr(10)), spec);
  return models::build_zoo_model(c.model, spec);
}

// Profiles `graph` and checks the simulated peak against the measured one; returns the measured peak.
int64_t expect_matches(const Graph& graph, const std::string& label, const std::string& optimizer = "sgd") {
  profile::TrainConfig train;
  train.optimizer = parse_optimizer(optimizer);
  profile::Measurement measured = profile::measure_isolated(graph, train, quick_limits());
  EXPECT_EQ(measured.status, "ok") << label << ": " << measured.message;
  if (measured.status != "ok") return 0;
  MemoryConfig config;
  config.optimizer = parse_optimizer(optimizer);
  MemoryReport simulated = simulate_memory(graph, config);
  const double error =
      static_cast<double>(simulated.peak_bytes - measured.peak_bytes) / static_cast<double>(measured.peak_bytes);
  std::printf("%-28s measured %12lld  simulated %12lld  error %+.4f%%\n", label.c_str(),
              static_cast<long long>(measured.peak_bytes), static_cast<long long>(simulated.peak_bytes), 100 * error);
  EXPECT_EQ(simulated.baseline_bytes, measured.baseline_bytes) << label;
  EXPECT_LE(std::fabs(error), 0.01) << label;
  // The goal is exact: every network of this sample reproduces the measured peak to the byte.
  EXPECT_EQ(simulated.peak_bytes, measured.peak_bytes) << label;
  return measured.peak_bytes;
}

void expect_matches(const Case& c) {
  expect_matches(build(c),
                 c.model + " batch " + std::to_string(c.batch) + (c.optimizer == "sgd" ? "" : " " + c.optimizer),
                 c.optimizer);
}

TEST(SimulatorVsProfiler, ZooSample) {
  // im2col and oneDNN convolutions, depthwise and grouped ones, Concat, channel shuffle,
  // squeeze-excite with Hardswish and classifier Dropout, and Adam's moments.
  for (const Case& c : std::vector<Case>{{"resnet18", 1, {3, 32, 32}},
                                         {"resnet18", 4, {3, 32, 32}},
                                         {"mobilenet_v2", 3, {3, 32, 32}},
                                         {"densenet121", 2, {3, 32, 32}},
                                         {"shufflenet_v2_x0_5", 6, {3, 32, 32}},
                                         {"mobilenet_v3_small", 4, {3, 32, 32}},
                                         {"resnet18", 2, {3, 32, 32}, "adam"}})
    expect_matches(c);
}

TEST(SimulatorVsProfiler, SyntheticSample) {
  for (uint64_t seed : {0, 13, 42, 99}) {
    Case c{"synthetic:" + std::to_string(seed), 1 + static_cast<int64_t>(seed % 5), {3, 32, 32}};
    expect_matches(c);
  }
}

// libtorch 1.13 has no fused dropout kernel on CPU: it keeps a noise tensor of the input's dtype
// (4 bytes per fp32 element) for backward, where CUDA's native_dropout keeps a 1-byte bool mask.
// Here the noise is alive at the peak and large enough that a 1-byte mask would be >1% off.
TEST(SimulatorVsProfiler, DropoutKeepsAnFp32NoiseTensorOnCpu) {
  GraphBuilder b("dropout_probe", "probe");
  int x = b.input(TensorShape({4, 3, 64, 64}));
  x = b.conv("conv1", x, 32, 3, 1, 1);
  x = b.dropout("drop", x, 0.5);
  x = b.conv("conv2", x, 32, 3, 1, 1);
  x = b.adaptive_avgpool("pool", x, 1, 1);
  x = b.flatten("flatten", x);
  b.linear("fc", x, 10);
  Graph graph = b.finish();
  const int64_t measured = expect_matches(graph, "dropout probe");
  ASSERT_GT(measured, 0);

  // The same program with a 1-byte mask instead (what CUDA keeps) misses the measured peak by >1%.
  Program program = trace_training(graph, TraceOptions{});
  std::vector<bool> is_noise(program.buffer_count(), false);
  int64_t live = 0, baseline = -1, peak = 0;
  for (const Event& event : program.events()) {
    if (event.iteration > 0 && baseline < 0) baseline = peak = live;
    const auto buffer = static_cast<size_t>(event.buffer);
    if (event.kind == Event::Alloc) is_noise[buffer] = std::string(event.what) == "dropout noise";
    const int64_t bytes = is_noise[buffer] ? event.bytes / 4 : event.bytes;
    if (event.kind == Event::Alloc) live += bytes;
    if (event.kind == Event::Free) live -= bytes;
    peak = std::max(peak, live);
  }
  ASSERT_GE(baseline, 0);
  const double one_byte_error = static_cast<double>(peak - baseline - measured) / static_cast<double>(measured);
  std::printf("dropout probe with a 1-byte mask: %+.2f%%\n", 100 * one_byte_error);
  EXPECT_GT(std::fabs(one_byte_error), 0.01);

  // The CUDA program keeps a quarter of it (a bool per element).
  MemoryConfig cuda;
  cuda.device = Device::Cuda;
  MemoryReport on_cpu = simulate_memory(graph, MemoryConfig{});
  MemoryReport on_cuda = simulate_memory(graph, cuda);
  EXPECT_LT(on_cuda.peak_bytes, on_cpu.peak_bytes);
}

// --max-batch verified by profiling: under a memory limit of L bytes, the batch the simulator
// picks trains (status ok) and one more does not (status oom).
TEST(SimulatorVsProfiler, MaxBatchFitsAndTheNextDoesNot) {
  models::ModelSpec spec;
  spec.input = {3, 32, 32};
  auto build_batch = [&](int64_t batch) {
    models::ModelSpec at = spec;
    at.batch = batch;
    return models::build_zoo_model("mobilenet_v2", at);
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
              static_cast<long long>(limit), static_cast<long long>(best.batch), static_cast<long long>(best.batch + 1),
              too_big.status.c_str());
}

#else

TEST(SimulatorVsProfiler, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
}  // namespace dnncast::memory
