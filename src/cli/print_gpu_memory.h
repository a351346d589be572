// What `dnncast calibrate-gpu-memory` prints and writes (gpu/gpu_memory_study.h): the tables of docs/RESULTS.md,
// "GPU memory as nvidia-smi sees it", the --json document and every row.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/gpu_memory_study.h"

namespace dnncast::cli {

using TextTable = std::vector<std::vector<std::string>>;  // row 0: the header

// The MLPs before and after; the timm runs by model and family held out; the worst ten held-out runs with their
// parts; the upper bound's coverage and "fits" near a GPU's memory (the last three empty without timm runs).
std::vector<TextTable> gpu_memory_tables(const gpu::GpuMemoryStudy& study);
// "22 CNNs 0.976-1.008; the ViT (fused attention) 1.060": the simulated tensors per sample over FakeTensor's.
std::string tensors_per_sample_text(const gpu::GpuMemoryStudy& study);
nlohmann::ordered_json gpu_memory_json(const gpu::GpuMemoryStudy& study);
// Every sample: measured, simulated parts, the forecasts before, in sample and held out. Throws InputError.
void write_gpu_memory_rows(const gpu::GpuMemoryStudy& study, const std::string& path);
// The tables as Markdown, then the tensors-per-sample line. Throws InputError.
void write_gpu_memory_markdown(const gpu::GpuMemoryStudy& study, const std::string& path);
void print_gpu_memory_study(const gpu::GpuMemoryStudy& study);

}  // namespace dnncast::cli
