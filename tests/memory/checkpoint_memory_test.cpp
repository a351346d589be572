// Activation checkpointing per transformer block (graph/checkpoint.h, issue 35) in the memory simulator: a
// checkpointed block keeps its input and the RNG state instead of its activations, and its backward recomputes it
// with grad. Profiled with libtorch (profile/executor.cpp's BlockCheckpoint), the simulated peak equals the measured
// one to the byte for Llama-style decoders (memory/exact_llama.h) of a few sizes and depths, sgd and adam, with and
// without LoRA. Gradient accumulation (grad_accum micro-batches per step) likewise.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/checkpoint.h"
#include "graph/lora.h"
#include "memory/exact_decoder.h"
#include "memory/simulator.h"

#ifdef DNNCAST_HAVE_TORCH
#include "memory/profiled_limits.h"
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

MemoryReport simulate(const Graph& graph, Optimizer optimizer, int64_t grad_accum = 1) {
  MemoryConfig config;
  config.optimizer = optimizer;
  config.grad_accum = grad_accum;
  return simulate_memory(graph, config);
}

// Accumulating gradients over micro-batches holds the gradients already summed while the next micro-batch's
// activations are alive: the peak of K >= 2 micro-batches is at least that of one and the same for every K >= 2
// (each later micro-batch repeats the second), and far below one batch of K times the samples.
TEST(GradAccumMemory, PeakIsOneMicroBatchsNotTheWholeBatchs) {
  DecoderSize micro;
  const Graph graph = exact_llama(micro);
  const int64_t one = simulate(graph, Optimizer::Adam).peak_bytes;
  const int64_t two = simulate(graph, Optimizer::Adam, 2).peak_bytes;
  EXPECT_GE(two, one);
  EXPECT_EQ(simulate(graph, Optimizer::Adam, 5).peak_bytes, two);
  DecoderSize whole = micro;
  whole.batch = micro.batch * 4;
  EXPECT_LT(simulate(graph, Optimizer::Adam, 4).peak_bytes, simulate(exact_llama(whole), Optimizer::Adam).peak_bytes);
  MemoryConfig bad;
  bad.grad_accum = 0;
  EXPECT_THROW(simulate_memory(graph, bad), InputError);
}

// What checkpointing saves: a deeper decoder keeps one residual stream per layer instead of all of the layer's
// activations, so its peak falls, and the saving grows with the depth.
TEST(CheckpointMemory, PeakFallsAndTheSavingGrowsWithDepth) {
  int64_t previous_saving = 0;
  for (int64_t layers : {2, 4, 8}) {
    DecoderSize size;
    size.layers = layers;
    const Graph full = exact_llama(size);
    const int64_t plain = simulate(full, Optimizer::Sgd).peak_bytes;
    const int64_t checkpointed = simulate(apply_checkpointing(full), Optimizer::Sgd).peak_bytes;
    EXPECT_LT(checkpointed, plain) << layers << " layers";
    EXPECT_GT(plain - checkpointed, previous_saving) << layers << " layers";
    previous_saving = plain - checkpointed;
  }
}

#ifdef DNNCAST_HAVE_TORCH

using memory_test::quick_limits;

void expect_exact(const Graph& graph, const std::string& label, Optimizer optimizer, int64_t grad_accum = 1) {
  profile::TrainConfig train;
  train.optimizer = optimizer;
  train.grad_accum = grad_accum;
  const profile::Measurement measured = profile::measure_isolated(graph, train, quick_limits());
  ASSERT_EQ(measured.status, "ok") << label << ": " << measured.message;
  const MemoryReport simulated = simulate(graph, optimizer, grad_accum);
  std::printf("%-44s %-5s measured %10lld  simulated %10lld  difference %+lld\n", label.c_str(),
              name(optimizer).c_str(), static_cast<long long>(measured.peak_bytes),
              static_cast<long long>(simulated.peak_bytes),
              static_cast<long long>(simulated.peak_bytes - measured.peak_bytes));
  EXPECT_EQ(simulated.baseline_bytes, measured.baseline_bytes) << label;
  EXPECT_EQ(simulated.peak_bytes, measured.peak_bytes) << label << " " << name(optimizer);
}

TEST(CheckpointMemoryVsProfiler, LlamaLayersAreByteExact) {
  DecoderSize wide;  // batch 1, another width and head count, a longer sequence, 3 layers
  wide.batch = 1;
  wide.seq = 24;
  wide.hidden = 96;
  wide.kv_width = 96;
  wide.heads = 6;
  wide.mlp = 256;
  wide.layers = 3;
  DecoderSize deep;
  deep.layers = 4;
  struct Setting {
    std::string label;
    DecoderSize size;
    bool lora;
  };
  const std::vector<Setting> settings = {
      {"checkpointed 2 layers", DecoderSize{}, false},
      {"checkpointed 4 layers", deep, false},
      {"checkpointed 3 layers, wide", wide, false},
      {"checkpointed 2 layers, lora r=8 q,v", DecoderSize{}, true},
      {"checkpointed 3 layers, wide, lora r=4 all", wide, true},
  };
  for (const Setting& setting : settings) {
    Graph graph = exact_llama(setting.size);
    if (setting.lora)
      graph = apply_lora(graph, setting.size.layers == 2
                                    ? LoraConfig{8, 16, {"q", "v"}, false}
                                    : LoraConfig{4, 8, {"q", "k", "v", "o", "gate", "up", "down"}, false});
    for (Optimizer optimizer : {Optimizer::Sgd, Optimizer::Adam})
      expect_exact(apply_checkpointing(graph), setting.label, optimizer);
  }
}

TEST(GradAccumMemoryVsProfiler, LlamaLayersAreByteExact) {
  DecoderSize wide;
  wide.batch = 1;
  wide.seq = 24;
  wide.hidden = wide.kv_width = 96;
  wide.heads = 6;
  wide.mlp = 256;
  for (Optimizer optimizer : {Optimizer::Sgd, Optimizer::Adam}) {
    expect_exact(exact_llama(DecoderSize{}), "grad-accum 2", optimizer, 2);
    expect_exact(exact_llama(wide), "grad-accum 3, wide", optimizer, 3);
    expect_exact(apply_lora(exact_llama(wide), {8, 16, {"q", "v"}, false}), "grad-accum 2, wide, lora r=8 q,v",
                 optimizer, 2);
    expect_exact(apply_checkpointing(exact_llama(DecoderSize{})), "grad-accum 4, checkpointed", optimizer, 4);
  }
}

#else

TEST(CheckpointMemoryVsProfiler, NeedsLibtorch) {
  GTEST_SKIP() << "built without libtorch: no profiler to compare with";
}

#endif

}  // namespace
}  // namespace dnncast::memory
