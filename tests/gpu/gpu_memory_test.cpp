// The GPU memory model as nvidia-smi sees it (gpu/gpu_memory.h): fitted on part of GPUMemNet's published A100
// measurements (MLPs, and the timm training runs of zoo models), it forecasts the rest within the issues' goals;
// the simulator holds what PyTorch's FakeTensor counts for the same networks; "fits" is judged on an upper bound
// that is rarely wrong; the shipped constants are what a fit of the published files gives; its parts sum to the
// total that `memory --device GPU` and `predict --device GPU` share; a measured context replaces the fitted one.
#include "gpu/gpu_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/error.h"
#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"
#include "gpu/gpu_memory_calibration.h"
#include "gpu/gpu_memory_study.h"
#include "gpu/gpumemnet.h"
#include "gpu/timm_memory.h"
#include "import/model_source.h"

namespace dnncast::gpu {
namespace {

// The published files (../shared/data/public/gpu_memory), decompressed once per test binary.
std::string decompressed(const std::string& name) {
  const std::string source = std::string(DNNCAST_SOURCE_DIR) + "/../shared/data/public/gpu_memory/" + name + ".csv.xz";
  const std::string csv =
      (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".csv")).string();
  if (std::system(("xz -dkc '" + source + "' > '" + csv + "'").c_str()) != 0) return "";
  return csv;
}

const std::vector<GpuMemorySample>& published_samples() {
  static const std::vector<GpuMemorySample> samples = [] {
    const std::string csv = decompressed("gpumemnet_mlp_a100_40gb");
    if (csv.empty()) return std::vector<GpuMemorySample>{};
    std::vector<GpuMemorySample> simulated = simulate_gpumemnet(load_gpumemnet_rows(csv));
    std::filesystem::remove(csv);
    return simulated;
  }();
  return samples;
}

// The timm runs (../shared/data/public/gpu_memory/timm_a100_40gb.csv.xz) of the models the shipped map names.
const std::vector<TimmMemoryRow>& published_timm_rows() {
  static const std::vector<TimmMemoryRow> rows = [] {
    const std::string csv = decompressed("timm_a100_40gb");
    if (csv.empty()) return std::vector<TimmMemoryRow>{};
    std::vector<TimmMemoryRow> read = load_timm_memory_rows(csv);
    std::filesystem::remove(csv);
    return read;
  }();
  return rows;
}
const TimmSimulation& published_timm() {
  static const TimmSimulation simulation = simulate_timm(published_timm_rows(), load_timm_zoo_map(), Optimizer::Sgd);
  return simulation;
}
// The MLPs and the timm runs together, as calibrate-gpu-memory fits them.
const std::vector<GpuMemorySample>& published_all() {
  static const std::vector<GpuMemorySample> all = [] {
    std::vector<GpuMemorySample> samples = published_samples();
    samples.insert(samples.end(), published_timm().samples.begin(), published_timm().samples.end());
    return samples;
  }();
  return all;
}
const SampleGroup kTimmModel = timm_model;
const SampleGroup kTimmFamily = timm_family;

GpuMemoryScore timm_score(const std::vector<GpuMemorySample>& samples, const std::vector<int64_t>& forecast) {
  std::vector<GpuMemorySample> kept;
  std::vector<int64_t> kept_forecast;
  for (size_t index = 0; index < samples.size(); ++index)
    if (samples[index].source == "timm") kept.push_back(samples[index]), kept_forecast.push_back(forecast[index]);
  return score(kept, kept_forecast);
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

// Issue 46's goals on the timm runs (convolutional networks and a vision transformer, nvidia-smi peaks on an
// A100 40GB): held out model by model and family by family, mean error at most 5% and at most 1 in 20 forecast
// more than 5% under; the MLPs stay within 2%; issue 34's model (fitted to the MLPs alone) was under on most.
TEST(GpuMemory, TimmRunsHeldOutByModelAndFamilyMeetTheIssuesGoals) {
  const std::vector<GpuMemorySample>& samples = published_all();
  ASSERT_GT(published_timm().samples.size(), 100u) << "timm_a100_40gb.csv.xz missing, or the map lost its models?";
  EXPECT_EQ(published_timm().mapped_models, 24);
  for (const SampleGroup& group : {kTimmModel, kTimmFamily}) {
    const GpuMemoryEvaluation held = leave_group_out(samples, group);
    const GpuMemoryScore timm = timm_score(samples, held.held_out_forecast);
    EXPECT_EQ(timm.rows, int64_t(published_timm().samples.size()));
    EXPECT_LE(timm.mean_relative_error, 0.05);
    EXPECT_LE(timm.under_5pct_share, 0.05);
  }
  const GpuMemoryEvaluation by_arch = leave_group_out(samples, mlp_arch);
  std::vector<GpuMemorySample> mlps(samples.begin(), samples.begin() + 3000);
  std::vector<int64_t> mlp_forecast(by_arch.held_out_forecast.begin(), by_arch.held_out_forecast.begin() + 3000);
  EXPECT_LE(score(mlps, mlp_forecast).mean_relative_error, 0.02);

  std::vector<bool> mlp_only(samples.size());
  for (size_t index = 0; index < samples.size(); ++index) mlp_only[index] = samples[index].source == "mlp";
  const GpuMemoryCalibration issue34 = fit_gpu_memory(samples, mlp_only);
  std::vector<int64_t> before;
  for (const GpuMemorySample& sample : samples) before.push_back(forecast_bytes(sample, issue34));
  EXPECT_GT(timm_score(samples, before).under_5pct_share, 0.5);
}

// The upper bound: a run held out of the fit, with a margin its own model's runs did not set, is at or under its
// bound at about the quantile asked, and "fits" is wrong on at most 1 in 100 runs near a GPU's memory.
TEST(GpuMemory, FitsIsRarelyWrongNearTheMemoryLimit) {
  const std::vector<GpuMemorySample>& samples = published_all();
  const GpuMemoryEvaluation held = leave_group_out(samples, kTimmModel);
  const UpperMargins margins = upper_margins(samples, held, kTimmModel, 0.98);
  EXPECT_GT(margins.all, 0.0);
  EXPECT_LT(margins.all, 0.25);
  const FitsCheck check = check_fits(samples, held, margins, kTimmModel);
  ASSERT_GT(check.pairs, 50);
  EXPECT_GE(double(check.covered) / double(check.rows), 0.9);
  EXPECT_LE(double(check.wrong), 0.01 * double(check.pairs));
  EXPECT_GT(check.said_fits, 0);
}

// The zoo's networks hold what timm's do: per sample, the simulated step's peak allocated bytes grow as PyTorch
// FakeTensor's estimate of the same training step's tensors does (an independent count, from the published file).
TEST(GpuMemory, SimulatedTensorsPerSampleMatchFakeTensorsEstimate) {
  std::map<std::string, std::string> attention;
  for (const TimmZooMatch& match : load_timm_zoo_map()) attention[match.timm] = match.attention;
  const auto ratios = tensors_per_sample_ratios(published_timm_rows(), published_timm());
  for (const auto& [model, ratio] : ratios)  // the ViT's fused attention is modelled, not measured: 10%
    EXPECT_NEAR(ratio, 1.0, attention[model] == "sdpa" ? 0.10 : 0.03) << model;
  EXPECT_GE(ratios.size(), 20u);
}

// What cuDNN adds is counted where a graph loads it: the largest dense convolution's input + output, as
// torchvision's networks have it (resnet18's 7x7 stem: 3x224x224 in, 64x112x112 out; vit_b_16's 16x16 patch
// convolution: 3x224x224 in, 768x14x14 out; mobilenet_v2's 3x3 stem, its depthwise and 1x1 convolutions left out).
TEST(GpuMemory, CudnnUseNamesTheLargestDenseConvolution) {
  models::ModelSpec spec;
  spec.batch = 2;
  const int64_t f32 = 4;
  EXPECT_EQ(memory::CudnnUse::of(import::load_model("resnet18", spec)).conv_io_bytes,
            2 * f32 * (3 * 224 * 224 + 64 * 112 * 112));
  EXPECT_EQ(memory::CudnnUse::of(import::load_model("vit_b_16", spec)).conv_io_bytes,
            2 * f32 * (3 * 224 * 224 + 768 * 14 * 14));
  EXPECT_EQ(memory::CudnnUse::of(import::load_model("mobilenet_v2", spec)).conv_io_bytes,
            2 * f32 * (3 * 224 * 224 + 32 * 112 * 112));
  EXPECT_TRUE(memory::CudnnUse::of(import::load_model("vit_b_16", spec)).loaded);
  spec.seq_len = 64;
  const memory::CudnnUse bert = memory::CudnnUse::of(import::load_model("bert_base", spec));
  EXPECT_FALSE(bert.loaded);
  EXPECT_EQ(bert.conv_io_bytes, 0);
}

// data/hardware/gpu_memory_calibration.csv is what `dnncast calibrate-gpu-memory` fits to the published files,
// not numbers typed in.
TEST(GpuMemory, ShippedConstantsAreTheFitOfThePublishedFile) {
  const std::vector<GpuMemorySample>& samples = published_all();
  ASSERT_FALSE(published_samples().empty());
  const GpuMemoryCalibration fitted = fit_gpu_memory(samples), shipped = load_gpu_memory_calibration();
  EXPECT_NEAR(double(shipped.context_bytes), double(fitted.context_bytes), 1 << 20);
  EXPECT_NEAR(shipped.reserve_fraction, fitted.reserve_fraction, 1e-4);
  EXPECT_NEAR(double(shipped.cudnn_context_bytes), double(fitted.cudnn_context_bytes), 1 << 20);
  EXPECT_NEAR(shipped.conv_workspace_fraction, fitted.conv_workspace_fraction, 1e-4);
  const GpuMemoryEvaluation held = leave_group_out(samples, kTimmModel);
  EXPECT_NEAR(shipped.upper_margin, upper_margins(samples, held, kTimmModel, shipped.upper_quantile).all, 1e-4);
  EXPECT_EQ(shipped.workspace_bytes, kCublasWorkspaceBytes);
  EXPECT_NE(shipped.fitted_on.find("3000 GPUMemNet"), std::string::npos) << shipped.fitted_on;
  EXPECT_NE(shipped.fitted_on.find("timm training runs"), std::string::npos) << shipped.fitted_on;
}

// A map naming a model the zoo lacks is refused in one line naming the file and line.
TEST(GpuMemory, ABrokenTimmMapNamesFileAndLine) {
  const std::string path = (std::filesystem::temp_directory_path() / "dnncast_bad_timm_map.csv").string();
  {
    std::ofstream out(path);
    out << "timm,zoo,input,attention,family,differs\nresnet34,resnet35,3x224x224,,resnet,\n";
  }
  try {
    load_timm_zoo_map(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(path + " line 2: unknown model 'resnet35'"), std::string::npos)
        << error.what();
  }
  std::filesystem::remove(path);
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
  EXPECT_EQ(parts.tensor_bytes + parts.reserve_bytes + parts.workspace_bytes + parts.cudnn_workspace_bytes +
                parts.context_bytes + parts.cudnn_context_bytes + parts.margin_bytes,
            memory.report.required_bytes);
  // resnet18 runs cuDNN; the margin is the shipped share of the forecast.
  EXPECT_GT(parts.cudnn_workspace_bytes, 0);
  EXPECT_GT(parts.cudnn_context_bytes, 0);
  EXPECT_NEAR(double(parts.margin_bytes), load_gpu_memory_calibration().upper_margin * double(parts.total_bytes()), 1);
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
  EXPECT_EQ(fitted.report.cuda.total_bytes() - fitted.report.cuda.context_bytes,
            measured.report.cuda.total_bytes() - (int64_t{300} << 20));
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
