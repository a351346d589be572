// Fitting the nvidia-smi memory model's constants (gpu_memory.h) to the GPUMemNet measurements
// (gpumemnet.h) and judging them on architectures held out of the fit (`dnncast calibrate-gpu-memory`).
#pragma once

#include <cstdint>
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
  std::string arch;
  int64_t batch = 0, parameters = 0;
  int64_t peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  double measured_bytes = 0;  // nvidia-smi's peak memory.used
  int64_t before_bytes = 0;   // the model before issue 34 (kAssumedContextBytes)
};

// libtorch_step: the ablation, libtorch 1.13's step (memory::MemoryConfig::python_defaults off) for the tensors.
std::vector<GpuMemorySample> simulate_gpumemnet(const std::vector<GpuMemNetRow>& rows, bool libtorch_step = false);

// The forecast total for a sample under `calibration` (memory::cuda_memory_parts, as every GPU forecast).
int64_t forecast_bytes(const GpuMemorySample& sample, const GpuMemoryCalibration& calibration);

// Context and reserve fraction fitted to the samples with use[i] (all when empty): least squares of the
// relative error, then the context raised until at most `under_share` of them are forecast more than 5%
// below their measurement. The workspace is kCublasWorkspaceBytes.
GpuMemoryCalibration fit_gpu_memory(const std::vector<GpuMemorySample>& samples, const std::vector<bool>& use = {},
                                    double under_share = 0.02);

struct GpuMemoryScore {
  int64_t rows = 0;
  double mean_relative_error = 0;  // mean |forecast / measured - 1|
  double under_5pct_share = 0;     // share forecast more than 5% below the measurement
  double max_under = 0;            // largest 1 - forecast / measured (0 when none is under)
  double max_over = 0;             // largest forecast / measured - 1
};
GpuMemoryScore score(const std::vector<GpuMemorySample>& samples, const std::vector<int64_t>& forecast);

// Leave-one-architecture-out: each sample's forecast by the calibration fitted without its arch.
struct GpuMemoryEvaluation {
  std::vector<std::string> archs;
  std::vector<GpuMemoryCalibration> fitted;  // per held-out arch
  std::vector<int64_t> held_out_forecast;    // per sample
  std::vector<int64_t> before_forecast;      // per sample: the old model (GpuMemorySample::before_bytes)
};
GpuMemoryEvaluation leave_one_arch_out(const std::vector<GpuMemorySample>& samples);

}  // namespace dnncast::gpu
