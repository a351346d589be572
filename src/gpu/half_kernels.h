// Half-precision kernels (issue 45): the per-kernel model of kernel_model.h learned from measured fp16 tensor-core
// kernels, Vidur's (../shared/data/public/vidur/compute/GPU/ORG/MODEL/mlp.csv.xz: one transformer layer's GEMMs,
// norms, rotary, activation and residual add, forward, fp16, by token count; A100, A40 and H100 as Vidur names
// them), and its judgement beside the calibrated curves (gpu_forecast.h) and the plain roofline.
//
// The protocol: Vidur's A100 is an 80 GB one (its device configuration, vidur/config/device_sku_config.py, says 80
// GB; its nodes are DGX A100s) and its H100 an H100: both are NeuSight's test GPUs and ours (A100 80GB, H100), so
// their rows are in no fit that is shipped and are scored only when asked. What is left to fit on is the A40: the
// half-precision model is learned on one GPU, and carries to others through the same GPU-relative features as the
// fp32 model (waves over the SMs, intensity over the ridge point -- here the tensor-core peak over the bandwidth).
// Judged on the A40 with each of its models (Llama-2-7B, Qwen-72B, ...) held out in turn; on the test GPUs once.
//
// Where a forecast uses it (gpu_forecast.cpp time_on_gpu): amp (fp16) and bf16 training of a graph with no
// convolution -- its GEMMs, norms and elementwise kernels at 2 bytes an element through this model (bf16 at the
// BF16 tensor peak, which equals the FP16 one on every GPU of the catalogue that has both), its softmax in fp32
// through the fp32 model (autocast runs softmax in fp32), the optimizer in fp32. Convolutions keep the calibrated
// curves: no public half-precision convolution row is here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_forecast.h"
#include "gpu/kernel_model.h"
#include "hardware/catalogue.h"

namespace dnncast::gpu {

// The GPU as the half-precision model sees it: the tensor-core peak of `precision` (fp16 or bf16) in place of the
// FP32 one. InputError names a missing catalogue column.
KernelDevice half_kernel_device(const hardware::GpuSpec& gpu, GpuPrecision precision);
// The same for one kernel of `family` as a half-precision model of GEMM share `gemm_vector_share` sees it
// (GpuKernelModel::gemm_vector_share): a GEMM's compute peak is the tensor-core peak slowed by that share of its FLOPs
// run at the FP32 rate, 1 / (1 / tensor + share / fp32) -- the work a tensor-core GEMM's tiles wait on in the SM's
// other pipes (address arithmetic, the epilogue, loads), which the tensor peak alone does not see. GPUs whose tensor
// peak is many times their FP32 one (A100 16x, V100 and Turing 8x at fp16) lose more of it than the A40 (4x) the
// model is learned on. Other families see the tensor peak.
KernelDevice half_kernel_device(const hardware::GpuSpec& gpu, GpuPrecision precision, KernelFamily family,
                                double gemm_vector_share);

// Vidur's compute folder: every kernel row as a half-precision KernelMeasurement (bytes at 2 per element), its
// `group` the model. Vidur's GPU names map to the catalogue (a100 -> a100-80gb, a40 -> a40, h100 -> h100-sxm); rows
// of NeuSight's test GPUs are counted in `held_out` and left out unless `include_test_gpus`. InputError names a
// malformed file and line.
struct HalfKernelTables {
  std::vector<KernelMeasurement> rows;
  int64_t held_out = 0;
  std::string dir;
};
HalfKernelTables load_vidur_kernels(const hardware::Catalogue& catalogue, const std::string& dir = "",
                                    bool include_test_gpus = false);
std::string default_vidur_dir();  // ../shared/data/public/vidur/compute, or $DNNCAST_VIDUR_DATA

// A half-precision kernel as the calibrated curves time it (time_on_gpu's arithmetic for one kernel, no host
// overhead): compute at the tensor peak times the GEMM curve's efficiency plus bytes over the bandwidth times the
// memory efficiency; a memory-bound kernel at the FP32 rate; at least the launch cost.
double curve_kernel_seconds(const KernelShape& shape, const hardware::GpuSpec& gpu, GpuPrecision precision,
                            const GpuCalibration& calibration);

// Judgement, per GPU and family: mean relative error of the per-kernel model (A40: fitted with the row's model
// held out; a test GPU: fitted on every A40 row), of the curves and of the plain roofline.
struct HalfKernelError {
  std::string gpu;
  KernelFamily family = KernelFamily::Gemm;
  int64_t rows = 0;
  double model_mre = 0, curve_mre = 0, roofline_mre = 0;
  bool test_gpu = false;
};
std::vector<HalfKernelError> judge_half_kernels(const HalfKernelTables& tables, const hardware::Catalogue& catalogue,
                                                const GpuCalibration& calibration, int rounds,
                                                double gemm_vector_share = 0);

// The shipped half-precision model (data/hardware/gpu_kernels_fp16), read once; none when its folder is absent.
const GpuKernelModel* shipped_half_kernel_model();
std::string default_half_kernel_dir();

}  // namespace dnncast::gpu
