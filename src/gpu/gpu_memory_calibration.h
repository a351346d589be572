// Fitting the nvidia-smi memory model's constants (gpu_memory.h) to the GPUMemNet measurements (the MLPs of
// gpumemnet.h, the timm runs of timm_memory.h) and judging them on models held out of the fit
// (`dnncast calibrate-gpu-memory`).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/gpu_memory.h"
#include "gpu/gpumemnet.h"

namespace dnncast::gpu {

// The old model, for the before/after table: libtorch 1.13's step through the caching allocator, peak
// reserved plus an assumed 512 MiB context.
inline constexpr int64_t kAssumedContextBytes = int64_t{512} << 20;

// One measured configuration and what the simulator makes of it (Adam, fp32, cuda, PyTorch 2's Python
// defaults, no overheads).
struct GpuMemorySample {
  int64_t line = 0;
  std::string arch;            // an MLP's architecture (pyramid, ...), or a timm model's name
  std::string family;          // a timm model's family (data/hardware/timm_zoo_map.csv); "mlp"
  std::string source = "mlp";  // "mlp" (GPUMemNet's MLPs) or "timm"
  int64_t batch = 0, parameters = 0;
  int64_t peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  memory::CudnnUse cudnn;     // what the graph runs through cuDNN
  double measured_bytes = 0;  // nvidia-smi's peak memory.used
  int64_t before_bytes = 0;   // MLPs: the model before issue 34 (kAssumedContextBytes); timm: 0
};

// libtorch_step: the ablation, libtorch 1.13's step (memory::MemoryConfig::python_defaults off) for the tensors.
std::vector<GpuMemorySample> simulate_gpumemnet(const std::vector<GpuMemNetRow>& rows, bool libtorch_step = false);

// The forecast total for a sample under `calibration` (memory::cuda_memory_parts, as every GPU forecast).
int64_t forecast_bytes(const GpuMemorySample& sample, const GpuMemoryCalibration& calibration);

// How a fit weighs under-forecasts. under_weight: how much more a sample forecast under its measurement weighs
// than one over it; 4 (the 0.8 expectile) was chosen among 1, 2, 4 and 8 by the timm runs held out model by model
// and family by family (docs/RESULTS.md): the one that meets both the mean error and the share under by more than
// 5% (an under-forecast ends in an out-of-memory error). under_share: see fit_gpu_memory.
struct GpuMemoryFitOptions {
  double under_weight = 4;
  double under_share = 0.05;
};

// The contexts, reserve fraction and cuDNN workspace fraction fitted to the samples with use[i] (all when empty):
// asymmetric least squares of the relative error (options.under_weight), each source (MLPs, timm runs) weighing
// alike, no constant negative; then the CUDA context (over samples without cuDNN) and cuDNN's (over those with it)
// raised until at most options.under_share of them are forecast more than 5% below their measurement. The cuBLAS
// workspace is kCublasWorkspaceBytes; the margin is left 0 (upper_margins measures it).
GpuMemoryCalibration fit_gpu_memory(const std::vector<GpuMemorySample>& samples, const std::vector<bool>& use = {},
                                    const GpuMemoryFitOptions& options = {});

struct GpuMemoryScore {
  int64_t rows = 0;
  double mean_relative_error = 0;  // mean |forecast / measured - 1|
  double under_5pct_share = 0;     // share forecast more than 5% below the measurement
  double max_under = 0;            // largest 1 - forecast / measured (0 when none is under)
  double max_over = 0;             // largest forecast / measured - 1
};
GpuMemoryScore score(const std::vector<GpuMemorySample>& samples, const std::vector<int64_t>& forecast);

// Each sample's forecast by the calibration fitted without its group (group(sample) == "": never held out, always
// in the fit): leave one MLP architecture, one timm model or one timm family out.
using SampleGroup = std::function<std::string(const GpuMemorySample&)>;
struct GpuMemoryEvaluation {
  std::vector<std::string> groups;
  std::vector<GpuMemoryCalibration> fitted;  // per held-out group
  std::vector<int64_t> held_out_forecast;    // per sample (0 for a sample of no group)
  std::vector<int64_t> before_forecast;      // per sample: GpuMemorySample::before_bytes
};
GpuMemoryEvaluation leave_group_out(const std::vector<GpuMemorySample>& samples, const SampleGroup& group,
                                    const GpuMemoryFitOptions& options = {});

// The upper margin at `quantile` of measured / forecast - 1 over the held-out samples of `evaluation` (those of
// a group), and, per group, the same over the other groups' samples only (a margin its own rows did not set),
// which is what coverage is judged with. Never negative.
struct UpperMargins {
  double quantile = 0;
  double all = 0;               // over every group's held-out samples: the shipped margin
  std::vector<double> without;  // per group of evaluation.groups
};
UpperMargins upper_margins(const std::vector<GpuMemorySample>& samples, const GpuMemoryEvaluation& evaluation,
                           const SampleGroup& group, double quantile);

// "Fits" near a GPU's memory, each held-out sample of a group judged with the upper bound its own group's rows did
// not set (forecast x (1 + margins.without)): how many are at or under it, and over the (sample, memory size)
// pairs whose measurement lies within 25% of the size, how often "fits" was said and how often the measurement
// then exceeded the size.
struct FitsCheck {
  int64_t rows = 0, covered = 0;
  int64_t pairs = 0, said_fits = 0, wrong = 0;
};
inline const std::vector<double> kMemorySizesGiB = {8, 11, 12, 16, 20, 24, 32, 40, 48, 80};
FitsCheck check_fits(const std::vector<GpuMemorySample>& samples, const GpuMemoryEvaluation& evaluation,
                     const UpperMargins& margins, const SampleGroup& group,
                     const std::vector<double>& sizes_gib = kMemorySizesGiB);

}  // namespace dnncast::gpu
