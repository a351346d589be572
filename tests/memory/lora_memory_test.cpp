// LoRA and frozen weights (graph/lora.h, issue 35) in the memory simulator: the frozen base takes no gradient and
// no optimizer state, and, profiled with libtorch, the simulated peak equals the measured one to the byte.
//
// The decoders measured here are Llama's layer (pre-norm, q/k/v/o projections without bias, causal attention,
// SwiGLU MLP gate/up/down, an untied LM head) built from LayerNorm in place of RMSNorm and without rotary, the
// hidden states as the input; and the Hugging Face llama itself (RMSNorm, rotary, repeat_kv, Embedding: exact since
// issue 35's recipes; tests/memory/decoder_memory_test.cpp checks the three decoder families).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/lora.h"
#include "graph/op_registry.h"
#include "memory/exact_decoder.h"
#include "memory/simulator.h"
#include "models/hf_config.h"

#ifdef DNNCAST_HAVE_TORCH
#include "memory/profiled_limits.h"
#include "profile/measure.h"
#endif

namespace dnncast::memory {
namespace {

const std::vector<std::string> kAllProjections = {"q", "k", "v", "o", "gate", "up", "down"};

int64_t bytes_labelled(const MemoryReport& report, const std::string& what) {
  int64_t total = 0;
  for (const LoggedEvent& event : report.event_log)
    if (event.alloc && event.iteration == 1 && what == event.what) total += event.bytes;
  return total;
}

TEST(LoraMemory, OptimizerStateOnlyForTheAdapters) {
  const Graph graph = apply_lora(exact_llama(DecoderSize{}), {8, 16, {"q", "v"}, false});
  const int64_t trainable = trainable_parameter_count(graph);
  EXPECT_EQ(trainable, 2 * 2 * 8 * (64 + 64));  // 2 layers x (q, v) x r (in + out)
  MemoryConfig config;
  config.optimizer = Optimizer::Adam;
  config.keep_events = true;
  const MemoryReport report = simulate_memory(graph, config);
  EXPECT_EQ(bytes_labelled(report, "exp_avg"), trainable * 4);
  EXPECT_EQ(bytes_labelled(report, "exp_avg_sq"), trainable * 4);
  // Frozen: the full fine-tune of the same graph needs more (gradients and moments of every weight).
  const MemoryReport full = simulate_memory(exact_llama(DecoderSize{}), config);
  EXPECT_LT(report.peak_bytes, full.peak_bytes);
}

TEST(LoraMemory, FrozenOpsOutsideTheModelledOnesAreRefused) {
  GraphBuilder b("frozen_conv", "probe");
  int x = b.input(TensorShape({1, 3, 8, 8}));
  x = b.op("conv", "Conv2d", {x}, {{"out_channels", int64_t{4}}, {"kernel", int64_t{3}}, {"frozen", int64_t{1}}});
  x = b.flatten("flatten", x);
  b.linear("fc", x, 2);
  try {
    simulate_memory(b.finish(), MemoryConfig{});
    FAIL() << "a frozen Conv2d was simulated";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("'conv' (Conv2d) is frozen"), std::string::npos) << error.what();
  }
}

#ifdef DNNCAST_HAVE_TORCH

using memory_test::quick_limits;

// Simulated and measured peaks of `graph`; the error in percent.
double compare(const Graph& graph, const std::string& label, Optimizer optimizer, bool expect_exact) {
  profile::TrainConfig train;
  train.optimizer = optimizer;
  const profile::Measurement measured = profile::measure_isolated(graph, train, quick_limits());
  EXPECT_EQ(measured.status, "ok") << label << ": " << measured.message;
  if (measured.status != "ok") return 0;
  MemoryConfig config;
  config.optimizer = optimizer;
  const MemoryReport simulated = simulate_memory(graph, config);
  const double error = 100.0 * static_cast<double>(simulated.peak_bytes - measured.peak_bytes) /
                       static_cast<double>(measured.peak_bytes);
  std::printf("%-40s %-5s measured %10lld  simulated %10lld  error %+.4f%%\n", label.c_str(), name(optimizer).c_str(),
              static_cast<long long>(measured.peak_bytes), static_cast<long long>(simulated.peak_bytes), error);
  if (expect_exact) {
    EXPECT_EQ(simulated.baseline_bytes, measured.baseline_bytes) << label;
    EXPECT_EQ(simulated.peak_bytes, measured.peak_bytes) << label << " " << name(optimizer);
  }
  return error;
}

TEST(LoraMemoryVsProfiler, LlamaLayersAreByteExact) {
  DecoderSize wide;  // batch 1, another width and head count, a longer sequence
  wide.batch = 1;
  wide.seq = 24;
  wide.hidden = wide.kv_width = 96;
  wide.heads = 6;
  wide.mlp = 256;
  struct Setting {
    std::string label;
    DecoderSize size;
    LoraConfig lora;
  };
  const std::vector<Setting> settings = {
      {"lora r=8 q,v", DecoderSize{}, {8, 16, {"q", "v"}, false}},
      {"lora r=4 all projections", DecoderSize{}, {4, 8, kAllProjections, false}},
      {"lora r=8 all, wide, norms trained", wide, {8, 32, kAllProjections, true}},
      {"lora r=16 q,k,v,o, wide", wide, {16, 16, {"q", "k", "v", "o"}, false}},
  };
  for (const Setting& setting : settings)
    for (Optimizer optimizer : {Optimizer::Sgd, Optimizer::Adam})
      compare(apply_lora(exact_llama(setting.size), setting.lora), setting.label, optimizer, true);
}

// The Hugging Face llama with LoRA (tied head, grouped-query attention, biases): byte-exact.
TEST(LoraMemoryVsProfiler, HuggingFaceLlamaWithLora) {
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-small-tied.json";
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 16;
  const Graph base = models::build_hf_config(nlohmann::json::parse(std::ifstream(path)), spec, path);
  for (Optimizer optimizer : {Optimizer::Sgd, Optimizer::Adam}) {
    compare(apply_lora(base, {8, 16, {"q", "v"}, false}), "llama-small-tied lora r=8 q,v", optimizer, true);
    compare(apply_lora(base, {8, 16, kAllProjections, false}), "llama-small-tied lora r=8 all", optimizer, true);
  }
}

#else

TEST(LoraMemoryVsProfiler, NeedsLibtorch) { GTEST_SKIP() << "built without libtorch: no profiler to compare with"; }

#endif

}  // namespace
}  // namespace dnncast::memory
