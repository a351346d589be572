// Judging the per-kernel GPU model (kernel_model.h) the way NeuSight was judged (issue 34, docs/RESULTS.md):
// per kernel, each NVIDIA GPU of the kernel tables held out of the fit in turn, beside the plain roofline;
// end to end, transformer training and inference rows of NeuSight's labels -- the training GPUs' rows with
// their GPU held out, the test GPUs' (H100, L4, A100 80GB) with the shipped fit, which never saw them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/gpu_forecast.h"
#include "gpu/kernel_model.h"
#include "hardware/catalogue.h"

namespace dnncast::gpu {

// Mean relative error of one kernel family on one held-out GPU: the model (its busy time plus the launch floor
// of the GPUs it was fitted on, as the tables time a kernel alone) and the plain roofline.
// Rows queued back to back (DeepBench's) are judged on the busy time alone, and apart ("deepbench").
struct KernelFamilyError {
  std::string gpu;
  KernelFamily family = KernelFamily::Gemm;
  std::string source = "neusight";  // the rows' KernelMeasurement::group, "neusight" when it has none
  int64_t rows = 0;
  double model_mre = 0, roofline_mre = 0;
};
// DeepBench's convolutions of the held-out GPU by pass: the model, and as dnncast priced them before the passes
// were told apart (every pass the forward shape, by a model fitted on NeuSight's forward rows alone, the GPU out).
struct ConvPassError {
  std::string gpu;
  ConvPass pass = ConvPass::Forward;
  int64_t rows = 0;
  double model_mre = 0, forward_shape_mre = 0, roofline_mre = 0;
};
// One held-out row's forecasts (kept when asked: `calibrate-gpu-kernels --held-out-rows FILE`).
struct KernelRowForecast {
  const KernelMeasurement* row = nullptr;  // into the tables judged
  double model_s = 0, roofline_s = 0;
};
struct KernelLeaveOneOut {
  std::vector<KernelFamilyError> errors;
  std::vector<KernelRowForecast> rows;           // every held-out row, when `keep_rows`
  std::vector<ConvPassError> conv_passes;        // empty without DeepBench rows
  std::map<std::string, GpuKernelModel> models;  // held-out GPU -> the model fitted without it
};
// `stride` > 1 fits on every stride-th row of each family (a quicker check); errors are over all rows.
KernelLeaveOneOut leave_one_gpu_out(const KernelTables& tables, const hardware::Catalogue& catalogue, int rounds,
                                    int stride = 1, bool keep_rows = false);
// Writes `held.rows` as CSV (gpu, family, source, pass, batch, m, n, k, flops, bytes, measured, model and roofline
// seconds); InputError when the file cannot be written.
void write_held_out_rows(const KernelLeaveOneOut& held, const std::string& path);

// For each of `gpus` that `tables` has rows of, the model fitted on every other GPU's rows (the per-kernel model of
// that GPU's fold when an end-to-end table holds it out: gpu_calibration.h leave_one_gpu_out).
std::map<std::string, GpuKernelModel> kernel_folds(const KernelTables& tables, const hardware::Catalogue& catalogue,
                                                   const std::vector<std::string>& gpus, int rounds = 200);

// One end-to-end row of ../shared/data/public/gpu_benchmarks/neusight_transformer_latency_labels.csv.
struct TransformerLabel {
  std::string gpu, gpu_listed, model;
  GpuPhase phase = GpuPhase::ForwardBackward;  // train rows: forward + loss + backward, no optimizer step
  int64_t seq = 0, batch = 0;
  double measured_ms = 0;
  bool test_gpu = false;  // H100, L4, A100 80GB
};
// NVIDIA rows of dense models without a variant (no torch.compile, no multi-GPU, no mixture of experts).
std::vector<TransformerLabel> load_transformer_labels(const hardware::Catalogue& catalogue, const std::string& path);

// The per-kernel forecast of a row, its model built from `configs_dir`/MODEL.json, and the plain roofline.
struct LabelForecast {
  double forecast_ms = 0, roofline_ms = 0;
};
LabelForecast forecast_label(const TransformerLabel& label, const std::string& configs_dir,
                             const hardware::Catalogue& catalogue, const GpuCalibration& calibration,
                             const GpuKernelModel& model);

}  // namespace dnncast::gpu
