// What `dnncast calibrate-gpus` prints: held-out errors by group beside the roofline, and every row.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu/gpu_calibration.h"
#include "gpu/gpu_memory_calibration.h"
#include "gpu/half_kernels.h"
#include "gpu/kernel_evaluation.h"

namespace dnncast::cli {

// Mean relative errors of held-out forecasts and of the roofline, by the group's key (GPU or model), by
// framework and overall; printed when `print`, returned as calibrate-gpus --json has them.
// Over the rows `scored` (CalibrationSet::scored_rows: NeuSight's test GPUs only when asked); the set's other rows
// are counted as the test GPUs' rows not scored.
nlohmann::ordered_json print_held_out(const gpu::CalibrationSet& set, const gpu::HeldOut& held, bool print,
                                      const std::vector<size_t>& scored);
// The rows `scored`: measured, the fit on all rows, the plain roofline.
void print_rows(const gpu::CalibrationSet& set, const gpu::GpuCalibration& calibration,
                const std::vector<size_t>& scored);
// calibrate-gpu-kernels: the per-kernel errors with each GPU held out, by GPU and family (printed when `print`).
nlohmann::ordered_json print_kernel_errors(const gpu::KernelLeaveOneOut& held, bool print);
// calibrate-gpu-kernels: DeepBench's convolution passes added to `tables` from `path` (empty: the public file, when
// found; "none": not read), what was read and left out printed and put in `result`.
gpu::DeepBenchLoad add_deepbench(const std::string& path, const hardware::Catalogue& catalogue,
                                 gpu::KernelTables& tables, bool print, nlohmann::ordered_json& result);
// The same for DeepBench's training GEMMs (`--deepbench-gemm`; default deepbench_gemm_train_fp32.csv beside it).
gpu::DeepBenchLoad add_deepbench_gemms(const std::string& path, const hardware::Catalogue& catalogue,
                                       gpu::KernelTables& tables, bool print, nlohmann::ordered_json& result);
// ... and DeepBench's convolutions by pass against pricing every pass as its forward shape (empty without them).
nlohmann::ordered_json print_conv_passes(const gpu::KernelLeaveOneOut& held, bool print);
// calibrate-gpu-kernels --half: the half-precision model's, the curves' and the roofline's errors by GPU and family.
nlohmann::ordered_json print_half_kernel_errors(const std::vector<gpu::HalfKernelError>& errors, bool print);
// calibrate-gpu-kernels --labels: NeuSight's end-to-end transformer labels forecast by the kernel model (training
// GPUs with their own GPU held out; the test GPUs, with `full`, only when score_test_gpus: NeuSight's protocol
// scores them once, when asked, so that development runs never show them); {"labels", "test_gpus_training_rows",
// "test_gpu_rows_not_scored"} for --json.
nlohmann::ordered_json print_transformer_labels(const std::string& labels, const std::string& configs,
                                                const hardware::Catalogue& catalogue, const gpu::GpuKernelModel& full,
                                                const gpu::KernelLeaveOneOut& held, bool print, bool show_rows,
                                                bool score_test_gpus);
// calibrate-gpu-memory's before/after table: one row (name, rows, mean error, share under by more than 5%,
// max under, max over) and the same score as --json has it.
std::vector<std::string> memory_score_row(const std::string& name, const gpu::GpuMemoryScore& score);
nlohmann::ordered_json memory_score_json(const gpu::GpuMemoryScore& score);
// 0.123 -> "12.3%".
std::string percent_text(double fraction);

// `calibrate-gpu-kernels --half`: the half-precision model from Vidur's fp16 kernels (gpu/half_kernels.h), judged,
// and written to `out` when given, with `gemm_vector_share` (half_kernel_device); prints (or, `as_json`, writes JSON)
// and returns the exit code.
int calibrate_half_kernels(const std::string& vidur_dir, const hardware::Catalogue& catalogue, int rounds,
                           bool score_test_gpus, const std::string& out, bool as_json, double gemm_vector_share);

}  // namespace dnncast::cli
