// GPUMemNet's timm training runs (../shared/data/public/gpu_memory/timm_a100_40gb.csv, decompressed): 1,008 timm
// image models trained at batches 8-128 on an A100-SXM4-40GB, each row nvidia-smi's peak memory.used and PyTorch
// FakeTensor's estimate of the tensors alone. The models the zoo builds (data/hardware/timm_zoo_map.csv: timm's
// name, the zoo's, the input, the attention path and what differs) are simulated, so that their rows fit and judge
// the GPU memory model (gpu_memory.h) beside the MLPs; the other models' rows are read and counted.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/training_setup.h"
#include "gpu/gpu_memory_calibration.h"

namespace dnncast::gpu {

struct TimmMemoryRow {
  int64_t line = 0;
  std::string model;  // timm's name
  int64_t batch = 0;
  double measured_mib = 0;    // nvidia_smi_peak_mib
  double faketensor_mib = 0;  // faketensor_estimate_mib: the tensors alone, as FakeTensor counts them
};

// Throws InputError naming the file and line: a missing or compressed file, a missing column, a bad number.
std::vector<TimmMemoryRow> load_timm_memory_rows(const std::string& path);

struct TimmZooMatch {
  std::string timm, zoo, family;
  std::vector<int64_t> input;  // C, H, W
  std::string attention;       // "" or "sdpa"
  std::string differs;         // what timm's network does that the zoo's does not ("" when nothing)
};

// data/hardware/timm_zoo_map.csv, or `path`; throws InputError naming the file and line (an unknown zoo model too).
std::vector<TimmZooMatch> load_timm_zoo_map(const std::string& path = "");
std::string default_timm_zoo_map_path();

// A row at the GPU's memory (nvidia-smi's peak at or above this share of its 40 GiB) says only that the run took
// what was free: cudnn.benchmark's trials or an out-of-memory error. It is kept out of the fit and the error.
inline constexpr double kAtCapacityShare = 0.95;
inline constexpr double kTimmGpuMemoryMib = 40960;

struct TimmSimulation {
  std::vector<GpuMemorySample> samples;    // the mapped rows below capacity, simulated
  std::vector<TimmMemoryRow> at_capacity;  // mapped rows at the GPU's memory
  int64_t rows = 0, models = 0;            // in the file
  int64_t mapped_models = 0;               // of the map, found in the file
};

// Each mapped row simulated as every GPU memory forecast simulates (PyTorch 2's step on cuda, `optimizer`, fp32).
TimmSimulation simulate_timm(const std::vector<TimmMemoryRow>& rows, const std::vector<TimmZooMatch>& map,
                             Optimizer optimizer);

// The zoo's networks against timm's, per sample: for each mapped model with runs at batches 8 and 32 below
// capacity, the simulated step's peak allocated bytes at 32 minus at 8, over FakeTensor's estimate at 32 minus
// at 8 (PyTorch's own count of the same step's tensors, from the file). By timm name.
std::vector<std::pair<std::string, double>> tensors_per_sample_ratios(const std::vector<TimmMemoryRow>& rows,
                                                                      const TimmSimulation& simulation);

}  // namespace dnncast::gpu
