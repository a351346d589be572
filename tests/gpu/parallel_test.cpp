// Several GPUs (gpu/parallel.h): Megatron's split of a transformer block (two column- and two row-parallel Linears
// per GPT-2 block, five and two per Llama block, as the Megatron-LM paper and its Llama ports split them), pipeline
// stages of equal runs of blocks, the plans users type, and one iteration's time beside NeuSight's published 4-GPU
// Megatron-LM measurements of an A100 SXM4 40GB node (a training GPU of the protocol; the H100 rows are not read).
#include "gpu/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "forecast/forecast.h"
#include "forecast/predict.h"
#include "gpu/gpu_forecast.h"
#include "gpu/gpu_memory.h"
#include "graph/op_registry.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"
#include "memory/sharding.h"

namespace dnncast::gpu {
namespace {

namespace fs = std::filesystem;

Graph model(const std::string& name, int64_t seq, int64_t batch) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  return import::load_model(name, spec);
}

std::string hf_config(const std::string& file) {
  return (fs::path(DNNCAST_SOURCE_DIR) / "tests" / "models" / "hf_configs" / file).string();
}

int64_t count(const std::vector<NodePart>& parts, NodePart part) {
  return std::count(parts.begin(), parts.end(), part);
}

std::string part_of(const Graph& graph, const std::vector<NodePart>& parts, const std::string& suffix) {
  for (int index = 0; index < graph.size(); ++index) {
    const std::string& name = graph.node(index).name;
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      switch (parts[static_cast<size_t>(index)]) {
        case NodePart::Whole:
          return "whole";
        case NodePart::Skip:
          return "skip";
        case NodePart::Split:
          return "split";
        case NodePart::Column:
          return "column";
        case NodePart::Row:
          return "row";
      }
    }
  }
  return "absent";
}

TEST(TensorParallel, Gpt2BlockSplitsAsMegatronDoes) {
  const Graph graph = model("gpt2_small", 64, 2);
  const std::vector<NodePart> parts = tensor_parallel_parts(graph, 4);
  // Per block: QKV and fc1 column-parallel, the attention projection and fc2 row-parallel; the head column too.
  EXPECT_EQ(count(parts, NodePart::Column), 12 * 2 + 1);
  EXPECT_EQ(count(parts, NodePart::Row), 12 * 2);
  EXPECT_EQ(part_of(graph, parts, "h.3.attn.c_attn"), "column");
  EXPECT_EQ(part_of(graph, parts, "h.3.attn.attention"), "split");
  EXPECT_EQ(part_of(graph, parts, "h.3.attn.c_proj"), "row");
  EXPECT_EQ(part_of(graph, parts, "h.3.mlp.act"), "split");
  EXPECT_EQ(part_of(graph, parts, "h.3.mlp.c_proj"), "row");
  EXPECT_EQ(part_of(graph, parts, "h.3.ln_2"), "whole");  // norms and residual adds run whole
  EXPECT_EQ(part_of(graph, parts, "h.3.add_2"), "whole");
  EXPECT_EQ(part_of(graph, parts, "lm_head"), "column");
  const std::vector<NodePart> one = tensor_parallel_parts(graph, 1);
  EXPECT_EQ(count(one, NodePart::Whole), graph.size());
}

TEST(TensorParallel, LlamaSplitsFiveColumnAndTwoRowLinearsPerBlock) {
  const Graph graph = import::load_model(hf_config("tinyllama-1.1b.json"), models::ModelSpec{1, {}, 128});
  const std::vector<NodePart> parts = tensor_parallel_parts(graph, 4);
  EXPECT_EQ(count(parts, NodePart::Column), 22 * 5 + 1);  // q, k, v, gate, up; the head
  EXPECT_EQ(count(parts, NodePart::Row), 22 * 2);         // o, down
  // TinyLlama's 4 key-value heads split over 4 GPUs, not over 8.
  EXPECT_THROW(tensor_parallel_parts(graph, 8), InputError);
}

TEST(TensorParallel, RefusesWhatItDoesNotSplit) {
  EXPECT_THROW(tensor_parallel_parts(model("gpt2_small", 64, 1), 5), InputError);  // 12 heads
  EXPECT_THROW(tensor_parallel_parts(model("resnet18", 0, 1), 2), InputError);     // no transformer block
  const Graph moe = import::load_model(hf_config("mixtral-small.json"), models::ModelSpec{1, {}, 64});
  try {
    tensor_parallel_parts(moe, 2);
    FAIL() << "a mixture of experts was split";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("expert"), std::string::npos) << error.what();
  }
}

TEST(PipelineParallel, StagesTakeEqualRunsOfBlocks) {
  const Graph graph = model("gpt2_small", 64, 1);
  const std::vector<int> stages = pipeline_stages(graph, 4);
  for (int index = 0; index < graph.size(); ++index) {
    const int64_t block = memory::block_of(graph.node(index));
    if (block >= 0) {
      EXPECT_EQ(stages[static_cast<size_t>(index)], block / 3) << graph.node(index).name;
    }
  }
  EXPECT_EQ(stages[static_cast<size_t>(graph.find("transformer.wte"))], 0);
  EXPECT_EQ(stages[static_cast<size_t>(graph.find("lm_head"))], 3);
  EXPECT_THROW(pipeline_stages(graph, 13), InputError);  // 12 blocks
}

TEST(ParallelPlan, ParsesWhatUsersType) {
  const ParallelPlan tp = parse_parallel("tp", 8, 1, 8);
  EXPECT_EQ(tp.tp, 8);
  EXPECT_EQ(tp.dp, 1);
  const ParallelPlan mixed = parse_parallel("tp=2,pp=2", 8, 4, 8);
  EXPECT_EQ(mixed.dp, 2);
  EXPECT_EQ(mixed.tp, 2);
  EXPECT_EQ(mixed.pp, 2);
  EXPECT_EQ(mixed.micro_batches, 4);
  EXPECT_EQ(parse_parallel("dp=2,tp=2,pp=2", 8, 1, 8).gpus(), 8);
  for (const auto& [text, gpus, micro] : {std::tuple<std::string, int64_t, int64_t>{"tp=3", 8, 1},
                                          {"zp", 4, 1},
                                          {"tp=2,tp=2", 4, 1},
                                          {"tp=", 4, 1},
                                          {"dp=2,tp=2", 8, 1},
                                          {"dp", 4, 2},   // micro-batches without a pipeline
                                          {"tp", 16, 1},  // a tensor-parallel group beyond a node of 8
                                          {"dp", 0, 1}}) {
    EXPECT_THROW(parse_parallel(text, gpus, micro, 8), InputError) << text << " on " << gpus;
  }
}

class ParallelTime : public ::testing::Test {
 protected:
  void SetUp() override { calibration = load_gpu_calibration(); }
  const hardware::Catalogue& catalogue = shipped_catalogue();
  GpuCalibration calibration;

  static const hardware::Catalogue& shipped_catalogue() {
    static const hardware::Catalogue loaded = hardware::Catalogue::load();
    return loaded;
  }
};

// The gradients' all-reduce carries every trainable parameter once, in fp32: GPT-2 small's 124,439,808 (tied head).
TEST_F(ParallelTime, DataParallelAllReducesEveryGradientOnce) {
  ParallelPlan plan;
  plan.dp = 4;
  const ParallelTiming timing = time_parallel(model("gpt2_small", 128, 2), plan, catalogue.gpu("a100-40gb"),
                                              GpuPrecision::Fp32, Optimizer::AdamW, calibration);
  ASSERT_EQ(timing.collectives.size(), 1u);
  const CollectiveCost& all_reduce = timing.collectives.front();
  EXPECT_NEAR(all_reduce.bytes * static_cast<double>(all_reduce.count), 4.0 * 124439808, 4.0);
  EXPECT_GE(timing.exposed_comm_ms, 0);
  EXPECT_LE(timing.exposed_comm_ms, all_reduce.ms + 1e-9);
  EXPECT_TRUE(timing.links_known);
}

// Splitting over 4 GPUs divides the blocks' matrix work by 4, not the norms, embeddings and residual adds.
TEST_F(ParallelTime, TensorParallelComputeIsAQuarterAndMore) {
  const Graph graph = model("gpt2_small", 512, 8);
  const hardware::GpuSpec& gpu = catalogue.gpu("a100-40gb");
  const double single = time_on_gpu(gpu_work(graph, GpuPrecision::Fp32, Optimizer::AdamW, GpuPhase::ForwardBackward),
                                    gpu, GpuPrecision::Fp32, Framework::PyTorch, calibration, shipped_kernel_model())
                            .time_ms;
  ParallelPlan plan;
  plan.tp = 4;
  const ParallelTiming timing = time_parallel(graph, plan, gpu, GpuPrecision::Fp32, Optimizer::AdamW, calibration);
  EXPECT_GT(timing.compute_ms, single / 4);
  EXPECT_LT(timing.compute_ms, single / 2);
  EXPECT_GT(timing.exposed_comm_ms, 0);  // all-reduces Megatron waits for
}

// 1F1B: more micro-batches of the same batch shrink the bubble.
TEST_F(ParallelTime, PipelineBubbleShrinksWithMicroBatches) {
  const hardware::GpuSpec& gpu = catalogue.gpu("a100-40gb");
  ParallelPlan plan;
  plan.pp = 4;
  const ParallelTiming whole =
      time_parallel(model("gpt2_small", 256, 16), plan, gpu, GpuPrecision::Fp32, Optimizer::AdamW, calibration);
  plan.micro_batches = 8;
  const ParallelTiming micro =
      time_parallel(model("gpt2_small", 256, 2), plan, gpu, GpuPrecision::Fp32, Optimizer::AdamW, calibration);
  EXPECT_GT(whole.bubble_ms, whole.compute_ms / 2);  // one micro-batch: three stages of four wait
  EXPECT_LT(micro.bubble_ms, whole.bubble_ms / 4);
  EXPECT_LT(micro.time_ms, 0.8 * whole.time_ms);
}

// One GPU's memory: tensor parallelism over 2 divides every block's matrices and the vocabulary-parallel embedding,
// not the norms and position embedding (GPT-2 small: 124,439,808 parameters, 768 x 1024 of them positions and
// 2 x 768 per norm, 25 norms); a 4-stage pipeline's first stage holds 3 blocks and the embeddings, and with 4
// micro-batches the activations of all 4 in flight, the last stage those of 1.
TEST_F(ParallelTime, MemoryPerGpuDividesWhatThePlanSplits) {
  const Graph graph = model("gpt2_small", 128, 2);
  memory::MemoryConfig config = gpu_memory_config(load_gpu_memory_calibration(), Optimizer::AdamW);
  const memory::MemoryReport single = memory::simulate_memory(graph, config);
  ParallelPlan tp;
  tp.tp = 2;
  const ParallelMemory split = parallel_memory(single, graph, tp);
  const double whole = 768.0 * 1024 + 25 * 2 * 768, total = 124439808;
  // What the simulation holds of the parameters at the chosen peak, re-divided: (total - whole) / 2 + whole.
  const double expected = (total - whole) / 2 + whole;
  int64_t one_gpu_parameters = 0;
  for (const memory::MemoryBreakdown& peak : single.phase_peaks)
    one_gpu_parameters = std::max(one_gpu_parameters, peak.parameter_bytes);
  EXPECT_NEAR(static_cast<double>(split.parameter_bytes) / static_cast<double>(one_gpu_parameters), expected / total,
              0.002);
  EXPECT_LT(split.required_bytes, single.required_bytes);
  ParallelPlan pp;
  pp.pp = 4;
  pp.micro_batches = 4;
  const ParallelMemory stage = parallel_memory(single, graph, pp);
  EXPECT_EQ(stage.stage, 0);
  EXPECT_EQ(stage.in_flight, 4);
  EXPECT_GT(stage.parameter_bytes, one_gpu_parameters / 4);
  EXPECT_LT(stage.parameter_bytes, one_gpu_parameters / 2);
}

// NeuSight's published 4-GPU Megatron-LM iterations of GPT-2 Large on an A100 SXM4 40GB node (fp32, AdamW; the label's
// batch is the global one): data, tensor and pipeline parallel each within 10% of the measured time.
TEST_F(ParallelTime, NeuSightA100FortyGigabyteRowsWithinTenPercent) {
  const fs::path public_dir = fs::path(DNNCAST_SOURCE_DIR) / ".." / "shared" / "data" / "public";
  std::ifstream labels(public_dir / "gpu_benchmarks" / "neusight_transformer_latency_labels.csv");
  if (!labels) GTEST_SKIP() << "no NeuSight labels under " << public_dir;
  const fs::path config = public_dir / "neusight" / "model_configs" / "gpt2_large.json";
  int rows = 0;
  for (std::string line; std::getline(labels, line);) {
    if (line.rfind("NVIDIA_A100-SXM4-40GB,gpt2_large,", 0) != 0) continue;
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    ASSERT_EQ(fields.size(), 11u) << line;
    const std::string variant = fields[6];
    if (variant.empty()) continue;
    ParallelPlan plan;
    int64_t batch = std::stoll(fields[5]);
    if (variant == "dp4") plan.dp = 4, batch /= 4;
    if (variant == "tp4") plan.tp = 4;
    if (variant == "pp4_1") plan.pp = 4;
    ASSERT_EQ(plan.gpus(), 4) << variant;
    models::ModelSpec spec;
    spec.batch = batch;
    spec.seq_len = std::stoll(fields[4]);
    const ParallelTiming timing =
        time_parallel(import::load_model(config.string(), spec), plan, catalogue.gpu("a100-40gb"), GpuPrecision::Fp32,
                      Optimizer::AdamW, calibration);
    const double measured = std::stod(fields[8]);
    EXPECT_NEAR(timing.time_ms / measured, 1.0, 0.10)
        << variant << ": " << timing.time_ms << " ms, measured " << measured;
    ++rows;
  }
  EXPECT_EQ(rows, 3);
}

// `--max-batch` under a plan: the largest batch per replica, a whole number of micro-batches, whose memory per GPU
// fits, found by the search; set beside forecasts made directly at that batch and at the next one the plan takes,
// and the same answer from `memory` and from `predict`.
TEST(ParallelMaxBatch, FitsAtTheAnswerAndNotAtTheNextBatchThePlanTakes) {
  const std::string config = hf_config("tinyllama-1.1b.json");
  for (const auto& [plan, micro_batches] : std::vector<std::pair<std::string, int64_t>>{{"tp", 1}, {"pp", 4}}) {
    SCOPED_TRACE(plan);
    forecast::MemoryOptions options;
    options.device = "a100-40gb";
    options.optimizer = "adamw";
    options.precision = "bf16";
    options.gpus = 4;
    options.parallel = plan;
    options.micro_batches = micro_batches;
    models::ModelSpec spec;
    spec.seq_len = 2048;
    spec.batch = micro_batches;
    auto at = [&](int64_t batch, bool search) {
      forecast::MemoryOptions asked = options;
      if (search) asked.max_batch = "gpu";
      models::ModelSpec sized = spec;
      sized.batch = batch;
      return forecast::forecast_memory(forecast::make_memory_request({config, sized, {}}, asked, OptionStyle::Flag));
    };
    const forecast::MemoryForecast searched = at(micro_batches, true);
    const int64_t largest = searched.max_batch.batch;
    ASSERT_GT(largest, micro_batches);
    EXPECT_EQ(largest % micro_batches, 0);
    const forecast::MemoryForecast fits = at(largest, false), over = at(largest + micro_batches, false);
    ASSERT_TRUE(fits.parallel && over.parallel);
    EXPECT_EQ(fits.parallel->required_bytes, searched.max_batch.required_bytes);
    EXPECT_EQ(over.parallel->required_bytes, searched.max_batch.next_required_bytes);
    EXPECT_LE(fits.parallel->required_bytes, searched.batch_limit);
    EXPECT_GT(over.parallel->required_bytes, searched.batch_limit);

    forecast::PredictOptions predict;
    predict.forecast.device = "a100-40gb";
    predict.forecast.optimizer = "adamw";
    predict.forecast.precision = "bf16";
    predict.gpus = 4;
    predict.parallel = plan;
    predict.micro_batches = micro_batches;
    predict.max_batch = true;
    const forecast::Prediction answer = forecast::predict({config, spec, {}}, predict, OptionStyle::Flag);
    ASSERT_TRUE(answer.gpu && answer.gpu->max_batch);
    EXPECT_EQ(*answer.gpu->max_batch, largest);
  }
}

}  // namespace
}  // namespace dnncast::gpu
