// The GPU memory model as nvidia-smi sees it (gpu/gpu_memory.h): fitted on part of GPUMemNet's published A100
// measurements, it forecasts the rest within the issue's goals; the shipped constants are what a fit of the
// published file gives; its parts sum to the total that `memory --device GPU` and `predict --device GPU`
// share; a measured context replaces the fitted one.
#include "gpu/gpu_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"
#include "gpu/gpu_memory_calibration.h"
#include "gpu/gpumemnet.h"

namespace dnncast::gpu {
namespace {

// The published file (../shared/data/public/gpu_memory), decompressed once per test binary.
const std::vector<GpuMemorySample>& published_samples() {
  static const std::vector<GpuMemorySample> samples = [] {
    const std::string source =
        std::string(DNNCAST_SOURCE_DIR) + "/../shared/data/public/gpu_memory/gpumemnet_mlp_a100_40gb.csv.xz";
    const std::string csv =
        (std::filesystem::temp_directory_path() / ("gpumemnet_" + std::to_string(::getpid()) + ".csv")).string();
    if (std::system(("xz -dkc '" + source + "' > '" + csv + "'").c_str()) != 0) return std::vector<GpuMemorySample>{};
    std::vector<GpuMemorySample> simulated = simulate_gpumemnet(load_gpumemnet_rows(csv));
    std::filesystem::remove(csv);
    return simulated;
  }();
  return samples;
}

// The issue's goals (issue 34): mean relative error at most 5%, and at most 1 in 20 configurations forecast
// more than 5% below what nvidia-smi measured. Held out: an architecture the fit never saw, and every fifth
// row of the others; the measured values are the published ones, not this model's output.
TEST(GpuMemory, HeldOutGpuMemNetRowsAreForecastWithinTheIssuesGoals) {
  const std::vector<GpuMemorySample>& samples = published_samples();
  ASSERT_EQ(samples.size(), 3000u) << "../shared/data/public/gpu_memory/gpumemnet_mlp_a100_40gb.csv.xz missing?";
  std::vector<bool> use(samples.size());
  for (size_t index = 0; index < samples.size(); ++index)
    use[index] = samples[index].arch != "uniform" && samples[index].line % 5 != 0;
  const GpuMemoryCalibration fitted = fit_gpu_memory(samples, use);
  std::vector<GpuMemorySample> held;
  std::vector<int64_t> forecast, before;
  for (size_t index = 0; index < samples.size(); ++index) {
    if (use[index]) continue;
    held.push_back(samples[index]);
    forecast.push_back(forecast_bytes(samples[index], fitted));
    before.push_back(samples[index].before_bytes);
  }
  ASSERT_GT(held.size(), 1000u);
  const GpuMemoryScore after_score = score(held, forecast), before_score = score(held, before);
  EXPECT_LE(after_score.mean_relative_error, 0.05);
  EXPECT_LE(after_score.under_5pct_share, 0.05);
  // The old model (512 MiB assumed context, libtorch's step) was under on almost every row: the fit is what fixed it.
  EXPECT_GT(before_score.under_5pct_share, 0.5);
  // A CUDA context of PyTorch with cuBLAS and cuDNN loaded, as published elsewhere: several hundred MiB to ~2 GiB.
  EXPECT_GT(fitted.context_bytes, int64_t{300} << 20);
  EXPECT_LT(fitted.context_bytes, int64_t{2} << 30);
}

// data/hardware/gpu_memory_calibration.csv is what `dnncast calibrate-gpu-memory` fits to the published file,
// not numbers typed in.
TEST(GpuMemory, ShippedConstantsAreTheFitOfThePublishedFile) {
  const std::vector<GpuMemorySample>& samples = published_samples();
  ASSERT_FALSE(samples.empty());
  const GpuMemoryCalibration fitted = fit_gpu_memory(samples), shipped = load_gpu_memory_calibration();
  EXPECT_NEAR(double(shipped.context_bytes), double(fitted.context_bytes), 1 << 20);
  EXPECT_NEAR(shipped.reserve_fraction, fitted.reserve_fraction, 1e-4);
  EXPECT_EQ(shipped.workspace_bytes, kCublasWorkspaceBytes);
  EXPECT_NE(shipped.fitted_on.find("3000 GPUMemNet"), std::string::npos) << shipped.fitted_on;
}

forecast::MemoryForecast memory_on(const std::string& device, const std::string& context = "") {
  forecast::MemoryOptions options;
  options.optimizer = "adam";
  options.device = device;
  options.cuda_context = context;
  models::ModelSpec spec;
  spec.batch = 16;
  return forecast::forecast_memory(forecast::make_memory_request({"resnet18", spec, {}}, options, OptionStyle::Flag));
}

TEST(GpuMemory, PartsSumToTheTotalThatMemoryAndPredictShare) {
  const forecast::MemoryForecast memory = memory_on("a100-40gb");
  const memory::CudaMemoryParts& parts = memory.report.cuda;
  EXPECT_EQ(parts.tensor_bytes + parts.reserve_bytes + parts.workspace_bytes + parts.context_bytes,
            memory.report.required_bytes);
  EXPECT_EQ(parts.tensor_bytes, memory.report.peak_allocated_bytes);
  EXPECT_GE(parts.reserve_bytes, memory.report.peak_reserved_bytes - memory.report.peak_allocated_bytes);
  const GpuMemoryCalibration shipped = load_gpu_memory_calibration();
  EXPECT_EQ(parts.context_bytes, shipped.context_bytes);
  EXPECT_EQ(parts.workspace_bytes, shipped.workspace_bytes);
  ASSERT_TRUE(memory.gpu_memory.has_value());
  EXPECT_FALSE(memory.memory_notes.empty());

  GpuForecastRequest request;
  request.model.name = "resnet18";
  request.model.spec.batch = 16;
  request.optimizer = Optimizer::Adam;
  request.gpu = hardware::shipped_catalogue().gpu("a100-40gb");
  const GpuForecast predicted = forecast_gpu(request);
  ASSERT_TRUE(predicted.required_bytes.has_value());
  EXPECT_EQ(*predicted.required_bytes, memory.report.required_bytes);
  // Another GPU carries the A100's constants over, and says so.
  request.gpu = hardware::shipped_catalogue().gpu("v100-16gb");
  const GpuForecast v100 = forecast_gpu(request);
  ASSERT_TRUE(v100.required_bytes.has_value());
  EXPECT_EQ(*v100.required_bytes, memory.report.required_bytes);
  bool said = false;
  for (const std::string& note : v100.notes) said = said || note.find("carried over") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(GpuMemory, AMeasuredContextReplacesTheFittedOne) {
  const forecast::MemoryForecast fitted = memory_on("a100-40gb"), measured = memory_on("a100-40gb", "300MiB");
  EXPECT_EQ(measured.report.cuda.context_bytes, int64_t{300} << 20);
  EXPECT_TRUE(measured.context_measured);
  EXPECT_EQ(fitted.report.required_bytes - fitted.report.cuda.context_bytes,
            measured.report.required_bytes - (int64_t{300} << 20));
}

TEST(GpuMemory, ABrokenCalibrationFileNamesFileAndLine) {
  const std::string path = (std::filesystem::temp_directory_path() / "dnncast_bad_memory_calibration.csv").string();
  {
    std::ofstream out(path);
    out << "# test\nkey,value,detail\ncontext_bytes,lots,\n";
  }
  try {
    load_gpu_memory_calibration(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(path + " line 3: 'lots' is not a non-negative number"), std::string::npos)
        << error.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dnncast::gpu
