// Training memory on a GPU as nvidia-smi sees it (issue 34, docs/GPU.md "Memory"): the memory simulator's
// caching-allocator model of the training step (memory/simulator.h) plus what the allocator does not see.
//
//   tensors            peak allocated bytes of the simulated step, blocks rounded to 512 B, with the step as
//                      PyTorch 2's Python API runs it on CUDA (MemoryConfig::python_defaults: gradients freed
//                      by zero_grad, the foreach optimizers)
//   allocator reserve  peak reserved minus peak allocated: the segments the caching allocator holds
//                      (2 MiB for blocks under 1 MiB, 20 MiB or 2 MiB-rounded ones for larger blocks,
//                      freed blocks kept cached), simulated; plus a fitted fraction of the tensors (what
//                      the real run holds beyond the simulated program: fragmentation, a batch copied in
//                      while the last one is alive, autograd's bookkeeping)
//   workspaces         cuBLAS's workspace, PyTorch's default size (derived, not fitted); and for a graph
//                      with convolutions, cuDNN's: a fitted fraction of the largest dense convolution's input
//                      + output bytes (cudnn.benchmark tries algorithms whose workspaces the caching allocator
//                      then keeps; memory::CudnnUse)
//   context            the CUDA context: driver, runtime and the kernels of libtorch and cuBLAS (fitted), plus
//                      what loading cuDNN's kernels adds for a graph with convolutions or BatchNorm (fitted),
//                      or a measured one (`memory --cuda-context`)
//   margin             required_bytes (what fits, the largest batch, compare and schedule decide on) is the
//                      total times 1 + a margin: the quantile of measured / forecast on runs held out of the
//                      fit, so that a "fits" that runs out of memory is rare and its rate measured
//
// The fitted constants live in data/hardware/gpu_memory_calibration.csv, written by
// `dnncast calibrate-gpu-memory` from the GPUMemNet measurements on an A100 40GB (3,000 MLPs and the timm
// training runs of models the zoo builds, gpu/timm_memory.h); other GPUs carry them over.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "memory/simulator.h"

namespace dnncast::gpu {

struct GpuMemoryCalibration {
  int64_t context_bytes = 0;           // fitted
  int64_t workspace_bytes = 0;         // derived: cuBLAS's default workspace
  double reserve_fraction = 0;         // fitted: extra reserve per byte of simulated tensors
  int64_t cudnn_context_bytes = 0;     // fitted: what cuDNN's kernels add to the context
  double conv_workspace_fraction = 0;  // fitted: cuDNN's workspaces per byte of the largest dense convolution's I/O
  double upper_margin = 0;             // measured: measured / forecast - 1 at upper_quantile on held-out runs
  double upper_quantile = 0;           // the quantile upper_margin was taken at (0 when none)
  std::string fitted_on;               // "a100-40gb: 3000 GPUMemNet MLPs (Adam, fp32)"
  std::string margin_from;             // how upper_margin was measured
  std::string source;                  // the file read
};

// The catalogue name of the GPU the shipped constants were fitted on.
inline constexpr const char* kGpuMemoryFittedOn = "a100-40gb";

// PyTorch's default cuBLAS workspace on GPUs before Hopper (CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8"):
// two 4 MiB chunks and eight 16 KiB ones, allocated through the caching allocator once per handle.
inline constexpr int64_t kCublasWorkspaceBytes = 2 * (int64_t{4096} << 10) + 8 * (int64_t{16} << 10);

// The shipped file (data/hardware/gpu_memory_calibration.csv), or `path`; throws InputError naming the file
// and line for a missing or malformed one. write_ writes what load_ reads, with `header` as line 1.
GpuMemoryCalibration load_gpu_memory_calibration(const std::string& path = "");
void write_gpu_memory_calibration(const GpuMemoryCalibration& calibration, const std::string& path,
                                  const std::string& header);
std::string default_gpu_memory_calibration_path();

// What every catalogued GPU's memory forecast simulates with (predict --device GPU, memory --device GPU,
// compare, schedule): on cuda, with the calibration's context, workspace and reserve fraction.
void apply_gpu_memory_calibration(const GpuMemoryCalibration& calibration, memory::MemoryConfig& config);
// The same from scratch: fp32, `optimizer`.
memory::MemoryConfig gpu_memory_config(const GpuMemoryCalibration& calibration, Optimizer optimizer);

// One line per part that is not simulated: what it is set to and where that comes from (fitted on what,
// derived, or measured; cuDNN's parts for a graph that loads it, memory::CudnnUse), the upper bound's margin, and
// that a GPU other than the one fitted on carries the fitted values over.
std::vector<std::string> gpu_memory_notes(const GpuMemoryCalibration& calibration, const std::string& gpu,
                                          bool context_measured, bool cudnn_loaded);

}  // namespace dnncast::gpu
