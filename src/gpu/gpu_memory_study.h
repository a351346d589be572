// The GPU memory model's whole calibration run (`dnncast calibrate-gpu-memory`, scripts/gpu-memory-eval.sh): the
// published measurements simulated, the constants fitted on all of them, and the model judged holding out one MLP
// architecture, one timm model and one timm family at a time, with the upper bound's margin and how often "fits"
// would be wrong near a GPU's memory (gpu_memory.h, gpu_memory_calibration.h, timm_memory.h).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_memory_calibration.h"
#include "gpu/timm_memory.h"

namespace dnncast::gpu {

struct GpuMemoryStudyOptions {
  std::string mlp_csv;   // GPUMemNet's MLP table, decompressed (required)
  std::string timm_csv;  // its timm runs, decompressed ("" = the MLPs alone)
  std::string timm_map;  // "" = data/hardware/timm_zoo_map.csv
  Optimizer timm_optimizer = Optimizer::Sgd;
  bool libtorch_step = false;  // the MLPs' ablation: libtorch 1.13's step
  double quantile = 0.98;      // the upper bound's
  GpuMemoryFitOptions fit;
};

struct GpuMemoryStudy {
  GpuMemoryStudyOptions options;
  std::vector<GpuMemorySample> samples;  // the MLPs, then the timm runs below capacity
  size_t mlp_rows = 0;
  TimmSimulation timm;
  std::vector<TimmMemoryRow> timm_rows;          // the whole file
  std::map<std::string, TimmZooMatch> match_of;  // by timm name
  GpuMemoryCalibration fitted;                   // on every sample, with the margin: what is shipped
  GpuMemoryCalibration mlp_fit;                  // issue 34's model: the MLPs alone
  std::vector<int64_t> issue34, in_sample;       // per sample
  GpuMemoryEvaluation by_arch, by_model, by_family;
  UpperMargins margins;  // over by_model
  FitsCheck fits;
  std::vector<std::pair<std::string, double>> tensor_ratios;  // tensors_per_sample_ratios
  std::vector<int64_t> at_capacity_upper;                     // per timm.at_capacity row: the shipped upper bound

  bool with_timm() const { return samples.size() > mlp_rows; }
};

// Throws InputError for a missing or malformed file (naming it and the line).
GpuMemoryStudy run_gpu_memory_study(const GpuMemoryStudyOptions& options);

// The groups of the study's evaluations.
std::string mlp_arch(const GpuMemorySample& sample);     // an MLP's architecture, "" for a timm run
std::string timm_model(const GpuMemorySample& sample);   // a timm run's model, "" for an MLP
std::string timm_family(const GpuMemorySample& sample);  // a timm run's family, "" for an MLP

}  // namespace dnncast::gpu
