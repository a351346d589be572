// Calibrating the GPU time model (gpu_forecast.h) on published end-to-end training measurements, and
// judging it on the GPUs and models it was not fitted to (`dnncast calibrate-gpus`, docs/GPU.md).
//
// The tables (../shared/data/public/gpu_benchmarks; line 1 of each says what it timed) differ in what
// they time, and each row says so here: framework, precision, whether the optimizer step is in.
//   lambda_tf       TensorFlow tf_cnn_benchmarks, full SGD step, synthetic data, fp32 (tf32 with CUDA 11) / fp16
//   lambda_pytorch  NVIDIA DeepLearningExamples ResNet-50, full step, synthetic rows only, tf32 / amp
//   jcjohnson       Torch7 + cuDNN, forward + backward (no optimizer), batch 16, newest cuDNN per GPU
//   u39kun          PyTorch / TensorFlow, forward + loss + backward (no optimizer), batch 16
// Rows of models the zoo lacks, GPUs the catalogue lacks, GPUs without the peak a precision needs, and
// non-cuDNN or Caffe2 rows are left out and counted in PublicTables::skipped.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_forecast.h"
#include "hardware/catalogue.h"

namespace dnncast::gpu {

struct PublicMeasurement {
  std::string table;       // "lambda_tf", "lambda_pytorch", "jcjohnson", "u39kun"
  int64_t line = 0;        // in its file
  std::string gpu;         // catalogue name
  std::string gpu_listed;  // as the table names it
  std::string model;       // zoo name
  models::ModelSpec spec;
  GpuPrecision precision = GpuPrecision::Fp32;
  Framework framework = Framework::PyTorch;
  bool with_optimizer_step = true;
  // lambda_tf: run with XLA's auto-clustering (its xla column). Another program than the same row without (on the
  // same system the step without XLA takes 0.98-1.77x the step with it: scripts/xla-pairs.py), so no repeat of it for
  // the tables' noise floor; the time model does not tell them apart.
  bool xla = false;
  double measured_ms = 0;  // per iteration
};

struct PublicTables {
  std::vector<PublicMeasurement> rows;
  std::map<std::string, int64_t> skipped;  // reason -> rows
  std::string dir;
};

// $DNNCAST_PUBLIC_DATA, else the nearest shared/data/public/gpu_benchmarks beside or above the
// executable's source tree; "" when neither exists.
std::string default_public_dir();
// Throws InputError for a missing file or a malformed row (file and line named).
PublicTables load_public_tables(const hardware::Catalogue& catalogue, const std::string& dir = "");

// The rows prepared once: each row's kernels (graphs built once per model, batch and precision).
class CalibrationSet {
 public:
  // Rows the per-kernel model times (fp32: gpu_forecast.h times_per_kernel) are timed by `kernels` when given,
  // as `predict --device` times them; the fit then sets only their launch cost and overheads.
  CalibrationSet(const std::vector<PublicMeasurement>& rows, const hardware::Catalogue& catalogue,
                 const GpuKernelModel* kernels = shipped_kernel_model());
  size_t size() const { return rows_.size(); }
  const PublicMeasurement& row(size_t index) const { return rows_[index]; }
  const std::vector<PublicMeasurement>& rows() const { return rows_; }
  bool per_kernel(size_t index) const { return busy_[index] != nullptr; }  // timed by the per-kernel model
  // The rows a fit, an interval or a score takes, in order: every row of a training GPU, and the rows of NeuSight's
  // test GPUs (is_held_out_test_gpu) only with `with_test_gpus` (a score asked for once, never a fit).
  std::vector<size_t> scored_rows(bool with_test_gpus = false) const;
  // Forecast and plain roofline of one row under `calibration`.
  GpuTiming time(size_t index, const GpuCalibration& calibration) const;

 private:
  std::vector<PublicMeasurement> rows_;
  std::vector<const hardware::GpuSpec*> gpus_;
  std::vector<std::shared_ptr<const GpuWork>> work_;
  std::vector<std::shared_ptr<const KernelBusy>> busy_;  // per row: null where the curves time it
};

// Huber loss on log(forecast / measured) over the rows `use` selects (all when empty), by
// Nelder-Mead over the constants; efficiencies and factors bounded to their meaning.
GpuCalibration fit_gpu_calibration(const CalibrationSet& set, const std::vector<bool>& use = {});

// Each row's forecast when its group (GPU, or model) was held out of the fit.
struct HeldOut {
  std::string group;                             // "gpu" or "model"
  std::vector<double> forecast_ms, roofline_ms;  // per row of the set
};
HeldOut leave_one_out(const CalibrationSet& set, const std::string& group);
// By GPU, each GPU the per-kernel model was fitted on timed in its fold -- its rows judged and the others' fitted --
// by the per-kernel model fitted without it (`folds`: GPU -> that model, kernel_evaluation.h kernel_folds), as
// NeuSight's protocol holds a GPU out of every fit.
HeldOut leave_one_gpu_out(const CalibrationSet& set, const hardware::Catalogue& catalogue,
                          const std::map<std::string, GpuKernelModel>& folds);

// The tables' own noise floor: rows of one GPU, model, batch, precision and framework measured more than
// once, each row's mean relative deviation from its group's mean, and how many rows that is.
std::pair<double, int64_t> duplicate_spread(const CalibrationSet& set);
// Every row's measured time beside the fit on all rows, the forecasts with its GPU and its model held out of
// the fit, and the plain roofline, as CSV (`calibrate-gpus --residuals`); InputError when PATH cannot be written.
// A row of NeuSight's test GPUs keeps its three forecasts empty unless `with_test_gpus` (their score is asked for
// once, `--score-test-gpus`; a shipped file does not carry it).
void write_residuals(const CalibrationSet& set, const GpuCalibration& calibration, const HeldOut& held_gpu,
                     const HeldOut& held_model, const std::string& path, bool with_test_gpus = false);

}  // namespace dnncast::gpu
