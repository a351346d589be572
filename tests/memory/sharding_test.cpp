// Multi-GPU memory (memory/sharding.h): the model states per GPU against the ZeRO paper's formulas, the
// published GPT-2 parameter count, and plans that cannot run refused.
//
// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models" (SC'20), Figure 1:
// with Psi parameters, K bytes of optimizer state per parameter and N_d data-parallel GPUs, the model states per
// GPU are (2 + 2 + K) Psi for data parallelism, 2 Psi + 2 Psi + K Psi / N_d for stage 1 (P_os), 2 Psi +
// (2 + K) Psi / N_d for stage 2 (P_os+g) and (2 + 2 + K) Psi / N_d for stage 3 (P_os+g+p). The paper's 2-byte
// parameters and gradients are fp16; trained in fp32 with Adam they are 4 and 4, and K = 8 (two moments).
#include "memory/sharding.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "memory/simulator.h"
#include "models/zoo.h"

namespace dnncast::memory {
namespace {

constexpr int64_t kGpt2Parameters = 124'439'808;  // GPT-2 small as OpenAI and Hugging Face publish it

struct Gpt2Step {
  Graph graph;
  MemoryReport report;
  MemoryConfig config;
};

// GPT-2 small at batch 1, sequence 16, Adam on cuda: small activations, so the optimizer step holds the
// one-GPU peak.
Gpt2Step gpt2_step() {
  models::ModelSpec spec;
  spec.batch = 1;
  spec.seq_len = 16;
  Gpt2Step step{models::build_zoo_model("gpt2_small", spec), {}, {}};
  step.config.optimizer = Optimizer::Adam;
  step.config.device = Device::Cuda;
  step.config.python_defaults = true;
  step.report = simulate_memory(step.graph, step.config);
  return step;
}

int64_t model_states(const ShardedMemory& sharded) {
  return sharded.parameter_bytes + sharded.gradient_bytes + sharded.optimizer_state_bytes;
}

TEST(Sharding, ModelStatesFollowTheZeroPapersFormulas) {
  Gpt2Step step = gpt2_step();
  ASSERT_EQ(step.report.peak_phase, Phase::Optimizer);
  // The optimizer step's peak alone (every gradient and state alive): a sharded plan may move a GPU's peak to
  // the backward pass, where only part of the gradients exist.
  for (size_t phase = 0; phase < step.report.phase_peak_bytes.size(); ++phase)
    if (phase != static_cast<size_t>(Phase::Optimizer)) step.report.phase_peak_bytes[phase] = 0;
  const int64_t psi = kGpt2Parameters, n = 8;
  auto per_gpu = [&](Sharding strategy) {
    return shard_memory(step.report, step.graph, {strategy, n, 8}, step.config);
  };
  EXPECT_EQ(model_states(per_gpu(Sharding::Ddp)), (4 + 4 + 8) * psi);
  EXPECT_EQ(model_states(per_gpu(Sharding::Zero1)), 4 * psi + 4 * psi + 8 * psi / n);
  EXPECT_EQ(model_states(per_gpu(Sharding::Zero2)), 4 * psi + (4 + 8) * psi / n);
  EXPECT_EQ(model_states(per_gpu(Sharding::Zero3)), (4 + 4 + 8) * psi / n);
  EXPECT_EQ(model_states(per_gpu(Sharding::Fsdp)), (4 + 4 + 8) * psi / n);
  // hsdp over 2 nodes of 4 divides by the node's 4 GPUs only.
  const ShardedMemory hybrid = shard_memory(step.report, step.graph, {Sharding::Hsdp, 8, 4}, step.config);
  EXPECT_EQ(hybrid.shard_degree, 4);
  EXPECT_EQ(model_states(hybrid), (4 + 4 + 8) * psi / 4);
}

TEST(Sharding, EachStrategyNeedsLessThanTheOneBefore) {
  const Gpt2Step step = gpt2_step();
  int64_t previous = shard_memory(step.report, step.graph, {Sharding::Ddp, 8, 8}, step.config).required_bytes;
  EXPECT_GT(previous, step.report.required_bytes);  // ddp's buckets: a second copy of the gradients
  for (Sharding strategy : {Sharding::Zero1, Sharding::Zero2, Sharding::Zero3}) {
    const int64_t bytes = shard_memory(step.report, step.graph, {strategy, 8, 8}, step.config).required_bytes;
    EXPECT_LT(bytes, previous) << sharding_name(strategy);
    previous = bytes;
  }
}

TEST(Sharding, BlocksAreFoundByNameAndTheRestIsTheRoot) {
  const Gpt2Step step = gpt2_step();
  const ParameterSizes sizes = parameter_sizes(step.graph, 4);
  EXPECT_EQ(sizes.parameter_bytes, 4 * kGpt2Parameters);
  EXPECT_EQ(sizes.blocks, 12);
  // A GPT-2 block: 12 h^2 weights + 13 h biases and norm terms (h = 768); the root is the token and position
  // embeddings (50257 x 768, 1024 x 768) and the final LayerNorm (2 x 768).
  EXPECT_EQ(sizes.largest_block_bytes, 4 * (12 * 768 * 768 + 13 * 768));
  EXPECT_EQ(sizes.root_bytes, 4 * (50257 * 768 + 1024 * 768 + 2 * 768));
}

TEST(Sharding, CollectivesSendTheRingsShare) {
  const Gpt2Step step = gpt2_step();
  const ShardedMemory ddp = shard_memory(step.report, step.graph, {Sharding::Ddp, 4, 8}, step.config);
  ASSERT_EQ(ddp.collectives.size(), 1u);
  EXPECT_EQ(ddp.collectives[0].bytes, 2 * 3 * (4 * kGpt2Parameters) / 4);  // 2 (N-1)/N of the gradients
  EXPECT_FALSE(ddp.collectives[0].crosses_nodes);
  const ShardedMemory zero3 = shard_memory(step.report, step.graph, {Sharding::Zero3, 16, 8}, step.config);
  ASSERT_EQ(zero3.collectives.size(), 3u);
  for (const Collective& collective : zero3.collectives) EXPECT_TRUE(collective.crosses_nodes);
  EXPECT_NEAR(link_seconds(300'000'000'000, 300), 1.0, 1e-12);
}

TEST(Sharding, PlansThatCannotRunAreRefused) {
  auto message = [](const ShardingPlan& plan) {
    try {
      check_sharding_plan(plan);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(message({Sharding::Zero3, 1, 8}).find("needs --gpus 2 or more"), std::string::npos);
  EXPECT_NE(message({Sharding::Fsdp, 1, 8}).find("needs --gpus 2 or more"), std::string::npos);
  EXPECT_NE(message({Sharding::None, 4, 8}).find("needs --sharding"), std::string::npos);
  EXPECT_NE(message({Sharding::Hsdp, 12, 8}).find("not a multiple of --gpus-per-node 8"), std::string::npos);
  EXPECT_NE(message({Sharding::Ddp, 0, 8}).find("--gpus must be between"), std::string::npos);
  EXPECT_EQ(message({Sharding::Ddp, 1, 8}), "");
  EXPECT_EQ(parse_sharding("ZeRO-2"), Sharding::Zero2);
  EXPECT_EQ(parse_sharding("fsdp-hybrid"), Sharding::Hsdp);
  EXPECT_THROW(parse_sharding("zero4"), InputError);
}

}  // namespace
}  // namespace dnncast::memory
