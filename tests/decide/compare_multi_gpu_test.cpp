// `dnncast compare --multi-gpu --sharding S` (decide/compare.h, issue 35): a multi-GPU row's memory is what
// `dnncast memory --gpus N --sharding S --device GPU` gives one GPU (forecast_memory, run here apart), its
// collectives are memory's, timed by the collective model on the instance GPU's link, and sharding lets a model that
// fits no single GPU fit on an instance of several.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "decide/compare.h"
#include "forecast/forecast.h"
#include "forecast/predict.h"
#include "gpu/gpu_forecast.h"
#include "gpu/parallel_plan.h"
#include "hardware/catalogue.h"

namespace dnncast::decide {
namespace {

const std::string kTinyLlama = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/tinyllama-1.1b.json";

CompareRequest multi_gpu_request(const std::string& model, int64_t batch, int64_t seq, const std::string& sharding,
                                 std::vector<std::string> gpus, std::vector<std::string> providers = {}) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  forecast::PredictOptions options;
  options.forecast.optimizer = "adam";
  CompareRequest request;
  request.forecast = forecast::make_gpu_request({model, spec, {}}, options, OptionStyle::Flag);
  request.gpus = std::move(gpus);
  request.providers = std::move(providers);
  request.multi_gpu = true;
  request.sharding = sharding;
  return request;
}

// The same model, batch and sharding through `dnncast memory --device GPU --gpus N --sharding S`'s API.
forecast::MemoryForecast memory_of(const std::string& model, int64_t batch, int64_t seq, const std::string& gpu,
                                   int64_t gpus, const std::string& sharding) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  forecast::MemoryOptions options;
  options.optimizer = "adam";
  options.device = gpu;
  options.gpus = gpus;
  options.sharding = sharding;
  return forecast::forecast_memory(forecast::make_memory_request({model, spec, {}}, options, OptionStyle::Flag));
}

const CompareRow& row_of(const Comparison& comparison, const std::string& gpu, int64_t gpus) {
  for (const CompareRow& row : comparison.rows)
    if (row.gpu == gpu && row.gpu_count == gpus) return row;
  throw std::runtime_error("no row of " + std::to_string(gpus) + " x " + gpu);
}

TEST(CompareMultiGpu, PerGpuMemoryAndCollectivesAreMemorysUnderEachSharding) {
  for (const std::string sharding : {"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"}) {
    const Comparison comparison =
        compare(multi_gpu_request("gpt2_small", 4, 256, sharding, {"a100-80gb"}, {"lambda", "runpod"}));
    EXPECT_EQ(comparison.sharding, sharding);
    const CompareRow& eight = row_of(comparison, "a100-80gb", 8);
    const forecast::MemoryForecast memory = memory_of("gpt2_small", 4, 256, "a100-80gb", 8, sharding);
    ASSERT_TRUE(memory.sharded.has_value());
    ASSERT_TRUE(eight.required_bytes.has_value());
    EXPECT_EQ(*eight.required_bytes, memory.sharded->required_bytes) << sharding;
    EXPECT_EQ(eight.fits, memory.fits) << sharding;
    int64_t bytes = 0;
    double seconds = 0;
    for (const memory::Collective& collective : memory.sharded->collectives) {
      bytes += collective.bytes;
      ASSERT_TRUE(collective.seconds.has_value()) << collective.what;
      seconds += *collective.seconds;
      // NCCL's ring on the link: never faster than its bytes at the link's peak.
      EXPECT_GE(*collective.seconds, memory::link_seconds(collective.bytes, memory.link_gbs)) << collective.what;
    }
    EXPECT_EQ(eight.collective_bytes, bytes) << sharding;
    EXPECT_GT(bytes, 0) << sharding;
    ASSERT_TRUE(eight.collective_ms.has_value());
    EXPECT_DOUBLE_EQ(*eight.collective_ms, 1e3 * seconds) << sharding;
    EXPECT_EQ(eight.sharding, sharding);
    EXPECT_EQ(eight.link, memory.link);
    // No overlap: the iteration is the one-GPU compute plus the collectives.
    EXPECT_DOUBLE_EQ(eight.time_ms, eight.compute_ms + *eight.collective_ms) << sharding;
    // A one-GPU instance of the same GPU is as without --multi-gpu.
    const CompareRow& one = row_of(comparison, "a100-80gb", 1);
    EXPECT_EQ(one.sharding, "");
    EXPECT_DOUBLE_EQ(one.time_ms, one.compute_ms);
    EXPECT_DOUBLE_EQ(one.compute_ms, eight.compute_ms);
  }
}

TEST(CompareMultiGpu, OneGpuRowsAreUnchangedByMultiGpu) {
  CompareRequest request = multi_gpu_request("resnet18", 32, 0, "", {"t4"}, {"aws"});
  request.forecast.model.spec.seq_len = 0;
  const Comparison multi = compare(request);
  request.multi_gpu = false;
  const Comparison single = compare(request);
  std::map<std::string, const CompareRow*> by_instance;
  for (const CompareRow& row : multi.rows) by_instance[row.instance_type] = &row;
  ASSERT_FALSE(single.rows.empty());
  for (const CompareRow& row : single.rows) {
    const CompareRow& same = *by_instance.at(row.instance_type);
    EXPECT_DOUBLE_EQ(same.time_ms, row.time_ms);
    EXPECT_DOUBLE_EQ(same.total_usd, row.total_usd);
    EXPECT_EQ(same.required_bytes, row.required_bytes);
    EXPECT_EQ(same.max_batch, row.max_batch);
  }
}

TEST(CompareMultiGpu, CollectiveTimeGrowsWithParametersAndFallsWithLinkBandwidth) {
  // Bigger model, same GPUs: more bytes, more time (the all-reduce of DDP carries every gradient).
  const Comparison small = compare(multi_gpu_request("gpt2_small", 2, 128, "ddp", {"a100-80gb"}, {"lambda"}));
  const Comparison large = compare(multi_gpu_request(kTinyLlama, 2, 128, "ddp", {"a100-80gb"}, {"lambda"}));
  const CompareRow& small_row = row_of(small, "a100-80gb", 8);
  const CompareRow& large_row = row_of(large, "a100-80gb", 8);
  EXPECT_GT(large_row.collective_bytes, 5 * small_row.collective_bytes);
  EXPECT_GT(*large_row.collective_ms, 5 * *small_row.collective_ms);
  // Same model and GPU count, slower link (PCIe 3 of a T4 against NVLink 3 of an A100): same bytes, more time.
  const Comparison both = compare(multi_gpu_request("gpt2_small", 2, 128, "ddp", {"a100-80gb", "t4"}));
  const CompareRow& nvlink = row_of(both, "a100-80gb", 8);
  const CompareRow& pcie = row_of(both, "t4", 8);
  EXPECT_EQ(nvlink.collective_bytes, pcie.collective_bytes);
  EXPECT_EQ(nvlink.link, "nvlink3");
  EXPECT_EQ(pcie.link, "pcie3");
  // The bandwidth term scales with the link; the ring's per-step latency, the same on both, narrows the ratio a little.
  EXPECT_LT(*pcie.collective_ms / *nvlink.collective_ms, 300.0 / 16.0);
  EXPECT_GT(*pcie.collective_ms / *nvlink.collective_ms, 0.9 * 300.0 / 16.0);
  // More GPUs in a ring: each sends a larger share (2(N-1)/N of the gradients).
  EXPECT_GT(row_of(both, "t4", 8).collective_bytes, row_of(both, "t4", 4).collective_bytes);
}

TEST(CompareMultiGpu, AModelThatFitsNoT4UnderDdpFitsEightUnderZero3AndFsdp) {
  // TinyLlama 1.1B with Adam in fp32: 16 bytes per parameter, about 17.6 GB of model states alone.
  const Comparison ddp = compare(multi_gpu_request(kTinyLlama, 1, 256, "ddp", {"t4"}, {"aws"}));
  for (const CompareRow& row : ddp.rows) EXPECT_EQ(row.fits, false) << row.instance_type;
  EXPECT_TRUE(ddp.fits_nowhere);
  for (const std::string sharding : {"zero3", "fsdp"}) {
    const Comparison sharded = compare(multi_gpu_request(kTinyLlama, 1, 256, sharding, {"t4"}, {"aws"}));
    EXPECT_FALSE(sharded.fits_nowhere);
    const CompareRow& eight = row_of(sharded, "t4", 8);
    EXPECT_EQ(eight.fits, true) << sharding;
    EXPECT_GE(eight.max_batch.value_or(0), 1) << sharding;
    EXPECT_EQ(row_of(sharded, "t4", 1).fits, false) << sharding;
    EXPECT_LT(*eight.required_bytes, *row_of(ddp, "t4", 8).required_bytes / 4) << sharding;
  }
}

TEST(CompareMultiGpu, ShardingIsRefusedWithoutMultiGpuUnknownOrWithNoInstanceToShard) {
  auto message = [](CompareRequest request) -> std::string {
    try {
      compare(request);
    } catch (const InputError& error) {
      return error.what();
    }
    return "accepted";
  };
  CompareRequest request = multi_gpu_request("resnet18", 8, 0, "zero3", {"t4"});
  request.forecast.model.spec.seq_len = 0;
  request.multi_gpu = false;
  EXPECT_EQ(message(request), "--sharding zero3 needs --multi-gpu: it applies to the instances with more than one GPU");
  request.multi_gpu = true;
  request.sharding = "zero4";
  EXPECT_EQ(message(request), "--sharding 'zero4': expected one of ddp, zero1, zero2, zero3, fsdp, hsdp");
  // As `memory --sharding zero3 --gpus 1` is refused: nothing to divide the model among.
  request.sharding = "zero3";
  request.gpus = {"gh200"};
  request.providers = {"lambda"};
  EXPECT_NE(message(request).find("needs 2 or more, but no instance selected has more than one"), std::string::npos);
  request.sharding = "ddp";  // replicating is a plan for one GPU too (memory takes --sharding ddp --gpus 1)
  EXPECT_EQ(message(request), "accepted");
}

}  // namespace
}  // namespace dnncast::decide

namespace dnncast::decide {
namespace {

// --parallel auto: each multi-GPU instance's fastest plan among those that fit, the same row the plan gives when named.
TEST(CompareMultiGpu, ParallelAutoTakesTheFastestPlanThatFits) {
  CompareRequest request = multi_gpu_request(kTinyLlama, 1, 256, "", {"t4"}, {"aws"});
  request.parallel = "auto";
  const Comparison automatic = compare(request);
  const CompareRow& chosen = row_of(automatic, "t4", 8);
  ASSERT_EQ(chosen.fits, true);  // under DDP no T4 instance fits (AModelThatFitsNoT4UnderDdp... above)
  double fastest = 0;
  std::string fastest_plan;
  for (const std::string plan : {"tp=1,pp=1", "tp=2,pp=1", "tp=4,pp=1", "tp=8,pp=1", "tp=1,pp=2", "tp=2,pp=2",
                                 "tp=4,pp=2", "tp=1,pp=4", "tp=2,pp=4", "tp=1,pp=8"}) {
    request.parallel = plan;
    Comparison named;
    try {
      named = compare(request);
    } catch (const InputError&) {
      continue;  // runs on no instance (TinyLlama's 4 key-value heads over 8 GPUs)
    }
    const CompareRow* row = nullptr;
    for (const CompareRow& one : named.rows)
      if (one.gpu == "t4" && one.gpu_count == 8) row = &one;
    if (row == nullptr || !row->fits.value_or(false)) continue;  // refused (heads) or does not fit
    if (fastest_plan.empty() || row->time_ms < fastest) fastest = row->time_ms, fastest_plan = row->sharding;
  }
  ASSERT_FALSE(fastest_plan.empty());
  EXPECT_EQ(chosen.sharding, fastest_plan);
  EXPECT_DOUBLE_EQ(chosen.time_ms, fastest);
}

// Under a parallel plan the row's largest batch per GPU is its replica's largest over the replica's GPUs: the plan
// forecast directly (gpu/gpu_forecast.h, as predict --gpus --parallel) fits at that batch and not at one more per GPU.
TEST(CompareMultiGpu, AParallelPlansLargestBatchFitsAndTheNextDoesNot) {
  CompareRequest request = multi_gpu_request(kTinyLlama, 1, 256, "", {"t4"}, {"aws"});
  request.parallel = "tp=4,pp=1";
  const Comparison comparison = compare(request);
  const CompareRow& row = row_of(comparison, "t4", 8);
  ASSERT_TRUE(row.max_batch.has_value());
  ASSERT_GT(*row.max_batch, 1);
  const hardware::Catalogue catalogue = hardware::Catalogue::load({});
  auto required_at = [&](int64_t per_gpu) {
    gpu::GpuForecastRequest one = request.forecast;
    one.gpu = catalogue.gpu("t4");
    one.parallel = gpu::parse_parallel("tp=4,pp=1", 8, 1, 8, {"GPUs", "--parallel"});
    one.model.spec.batch = per_gpu * 4;
    const gpu::GpuForecast forecast = gpu::forecast_gpu(one);
    return std::make_pair(*forecast.required_bytes, *forecast.device_memory_bytes);
  };
  const auto [fits, memory] = required_at(*row.max_batch);
  EXPECT_LE(fits, memory);
  EXPECT_GT(required_at(*row.max_batch + 1).first, memory);
}

TEST(CompareMultiGpu, ParallelPlansAreRefusedInOneLine) {
  CompareRequest cnn = multi_gpu_request("resnet18", 8, 0, "", {"a100-80gb"}, {"lambda"});
  cnn.forecast.model.spec.seq_len = 0;
  cnn.parallel = "tp";
  EXPECT_THROW(compare(cnn), InputError);  // no transformer block on any instance
  CompareRequest both = multi_gpu_request("gpt2_small", 2, 64, "zero3", {"a100-80gb"}, {"lambda"});
  both.parallel = "auto";
  EXPECT_THROW(compare(both), InputError);
  CompareRequest single = multi_gpu_request("gpt2_small", 2, 64, "", {"a100-80gb"}, {"lambda"});
  single.multi_gpu = false;
  single.parallel = "dp";
  EXPECT_THROW(compare(single), InputError);
}

}  // namespace
}  // namespace dnncast::decide
