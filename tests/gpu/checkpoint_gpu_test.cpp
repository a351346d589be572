// Activation checkpointing (graph/checkpoint.h) in the GPU kernel list: a checkpointed block's forward kernels run
// once more in the backward pass, so the iteration carries exactly the blocks' forward FLOPs more (the op registry's
// costs summed independently here), and its forecast time rises by less than a forward pass. Gradient accumulation:
// K forward-backward passes and one optimizer step.
#include <gtest/gtest.h>

#include "gpu/gpu_forecast.h"
#include "graph/checkpoint.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"

namespace dnncast::gpu {
namespace {

double work_flops(const GpuWork& work) {
  double flops = 0;
  for (const GpuKernel& kernel : work.kernels) flops += kernel.flops * static_cast<double>(kernel.count);
  return flops;
}

TEST(CheckpointGpu, RecomputedForwardIsCountedOnce) {
  models::ModelSpec spec;
  spec.batch = 4;
  spec.seq_len = 128;
  const Graph plain = import::load_model("gpt2_small", spec);
  const Graph checkpointed = apply_checkpointing(plain);
  double block_forward = 0, all_forward = 0;
  for (int index = 0; index < checkpointed.size(); ++index) {
    const double flops = static_cast<double>(node_cost(checkpointed, index).flops_fwd);
    all_forward += flops;
    if (checkpoint_block(checkpointed.node(index)) >= 0) block_forward += flops;
  }
  ASSERT_GT(block_forward, 0.5 * all_forward);  // the 12 layers hold most of GPT-2's work
  for (GpuPhase phase : {GpuPhase::Train, GpuPhase::ForwardBackward}) {
    const GpuWork without = gpu_work(plain, GpuPrecision::Fp32, Optimizer::Adam, phase);
    const GpuWork with = gpu_work(checkpointed, GpuPrecision::Fp32, Optimizer::Adam, phase);
    EXPECT_NEAR(work_flops(with) - work_flops(without), block_forward, 1e-9 * block_forward);
    EXPECT_GT(with.kernel_count, without.kernel_count);
  }
  // Inference has no backward pass: nothing is recomputed.
  EXPECT_EQ(gpu_work(checkpointed, GpuPrecision::Fp32, Optimizer::Adam, GpuPhase::Inference).kernel_count,
            gpu_work(plain, GpuPrecision::Fp32, Optimizer::Adam, GpuPhase::Inference).kernel_count);

  GpuForecastRequest request;
  request.model.name = "gpt2_small";
  request.model.spec = spec;
  request.gpu = hardware::shipped_catalogue().gpu("a100-40gb");
  const double plain_ms = forecast_gpu(request).time_ms;
  request.model.spec.checkpointing = true;
  const double checkpointed_ms = forecast_gpu(request).time_ms;
  request.model.spec.checkpointing = false;
  request.phase = GpuPhase::Inference;
  const double forward_ms = forecast_gpu(request).time_ms;
  EXPECT_GT(checkpointed_ms, plain_ms);
  EXPECT_LT(checkpointed_ms, plain_ms + forward_ms);
}

TEST(GradAccumGpu, MicroBatchesAreForwardBackwardPassesAndOneStep) {
  GpuForecastRequest request;
  request.model.name = "bert_base";
  request.model.spec.batch = 8;
  request.model.spec.seq_len = 128;
  request.gpu = hardware::shipped_catalogue().gpu("l4");
  request.epoch_samples = 960;
  const GpuForecast step = forecast_gpu(request);
  request.phase = GpuPhase::ForwardBackward;
  const GpuForecast pass = forecast_gpu(request);
  request.phase = GpuPhase::Train;
  request.grad_accum = 3;
  const GpuForecast accumulated = forecast_gpu(request);
  EXPECT_NEAR(accumulated.time_ms, step.time_ms + 2 * pass.time_ms, 1e-9 * accumulated.time_ms);
  EXPECT_LT(accumulated.time_ms, 3 * step.time_ms);
  // An epoch takes a third of the optimizer steps, each 3 micro-batches of 8.
  EXPECT_EQ(accumulated.epoch_iterations, 960 / 24);
}

}  // namespace
}  // namespace dnncast::gpu
