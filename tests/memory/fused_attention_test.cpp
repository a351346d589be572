// Fused attention (`--attention sdpa`, PyTorch 2's flash / memory-efficient kernels on CUDA): no S x S matrix is
// kept, so what a step keeps grows linearly in the sequence where the math path's grows with its square; the CPU
// trace refuses it (libtorch 1.13 has no fused kernel to measure it against).
#include <gtest/gtest.h>

#include "core/error.h"
#include "memory/simulator.h"
#include "models/zoo.h"

namespace dnncast::memory {
namespace {

Graph gpt2(int64_t seq, bool fused) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = seq;
  Graph graph = models::build_zoo_model("gpt2_small", spec);
  if (fused)
    for (Node& node : graph.mutable_nodes())
      if (node.op == "ScaledDotProductAttention") node.attrs["fused"] = int64_t{1};
  return graph;
}

// Activations kept at the end of the forward pass: the forward phase's peak less parameters and inputs.
int64_t forward_activations(int64_t seq, bool fused) {
  MemoryConfig config;
  config.device = Device::Cuda;
  config.python_defaults = true;
  const MemoryReport report = simulate_memory(gpt2(seq, fused), config);
  return report.phase_peaks[static_cast<size_t>(Phase::Forward)].activation_bytes;
}

TEST(FusedAttention, KeepsNoSquareOfTheSequence) {
  const int64_t eager_512 = forward_activations(512, false), eager_1024 = forward_activations(1024, false);
  const int64_t fused_512 = forward_activations(512, true), fused_1024 = forward_activations(1024, true);
  EXPECT_LT(fused_512, eager_512);
  // 12 layers x 12 heads x batch 2 x S^2 fp32 scores: the math path keeps the probabilities (at least one S x S
  // matrix per layer), the fused kernels none.
  const int64_t one_matrix_per_layer_1024 = int64_t{12} * 12 * 2 * 1024 * 1024 * 4;
  EXPECT_GE(eager_1024 - fused_1024, one_matrix_per_layer_1024);
  // Linear in S: doubling the sequence doubles the fused activations (within the logits' and the rounding's
  // share), where the math path's grow by more.
  EXPECT_NEAR(static_cast<double>(fused_1024) / static_cast<double>(fused_512), 2.0, 0.02);
  EXPECT_GT(static_cast<double>(eager_1024) / static_cast<double>(eager_512), 2.3);
}

TEST(FusedAttention, IsRefusedOnTheCpu) {
  MemoryConfig config;
  EXPECT_THROW(simulate_memory(gpt2(64, true), config), InputError);
}

}  // namespace
}  // namespace dnncast::memory
