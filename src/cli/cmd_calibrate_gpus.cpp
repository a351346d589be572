// `dnncast calibrate-gpus [--leave-one-out gpu|model|both] [--out FILE] [--public DIR] [--json]`: fits the
// GPU time model's constants (gpu/gpu_forecast.h) to the public end-to-end training tables and judges it
// on GPUs / models held out of the fit, beside the plain roofline (docs/GPU.md, docs/RESULTS.md).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_gpu_calibration.h"
#include "core/error.h"
#include "core/stats.h"
#include "gpu/gpu_calibration.h"
#include "gpu/kernel_evaluation.h"
#include "gpu/kernel_model.h"

namespace dnncast::cli {

using nlohmann::ordered_json;

namespace {

// The per-kernel model refitted without each GPU of the tables that it was fitted on (NeuSight's kernels and
// DeepBench's convolutions and GEMMs, where found), for the held-out GPU's fold; none when the kernel tables are not
// found.
std::map<std::string, gpu::GpuKernelModel> kernel_folds_of(const gpu::CalibrationSet& set,
                                                           const hardware::Catalogue& catalogue, bool print) {
  if (gpu::default_kernel_tables_dir().empty()) {
    std::fprintf(stderr,
                 "calibrate-gpus: no per-kernel tables (../shared/data/public/neusight/ops/train): a held-out GPU "
                 "keeps the shipped per-kernel model, which may have seen its kernels\n");
    return {};
  }
  gpu::KernelTables tables = gpu::load_kernel_tables(catalogue);
  if (const std::string deepbench = gpu::default_deepbench_convolutions(); !deepbench.empty())
    gpu::load_deepbench_convolutions(catalogue, deepbench, tables);
  if (const std::string gemms = gpu::default_deepbench_gemms(); !gemms.empty())
    gpu::load_deepbench_gemms(catalogue, gemms, tables);
  std::vector<std::string> gpus;
  for (const gpu::PublicMeasurement& row : set.rows()) gpus.push_back(row.gpu);
  std::map<std::string, gpu::GpuKernelModel> folds = gpu::kernel_folds(tables, catalogue, gpus);
  if (print && !folds.empty()) {
    std::printf("per-kernel model refitted without the held-out GPU for");
    for (const auto& [gpu, model] : folds) std::printf(" %s", gpu.c_str());
    std::printf("\n");
  }
  return folds;
}

}  // namespace

int run_calibrate_gpus(const Args& args) {
  CLI::App app(
      "Fit the GPU time model to the public end-to-end training tables (../shared/data/public/gpu_benchmarks)\n"
      "and judge it on GPUs or models held out of the fit, beside the plain roofline. --out writes the\n"
      "calibration `predict --device GPU` and `compare` read (data/hardware/gpu_calibration.csv).",
      "dnncast calibrate-gpus");
  std::string public_dir, out, leave_out, residuals;
  std::vector<std::string> catalogue_files;
  bool as_json = false, show_rows = false, score_test_gpus = false;
  app.add_flag("--rows", show_rows, "print every row: measured, fitted forecast, roofline");
  app.add_flag("--score-test-gpus", score_test_gpus,
               std::string("also score the rows of NeuSight's test GPUs (") + gpu::kTestGpusInWords +
                   "), which no fit sees: once, when asked; never tune on them");
  app.add_option("--public", public_dir, "folder of the public tables (default: ../shared/data/public/gpu_benchmarks)");
  app.add_option("--catalogue", catalogue_files, "extra catalogue file (docs/DEVICES.md)");
  app.add_option("--leave-one-out", leave_out, "gpu, model or both: evaluate on held-out groups");
  app.add_option("--out", out, "write the calibration here (its interval is the leave-one-GPU-out spread)");
  app.add_option("--residuals", residuals,
                 "write every row's measured time beside its forecasts held out by GPU and by model (the error "
                 "distribution `schedule-study` draws from; data/hardware/gpu_forecast_residuals.csv)");
  app.add_flag("--json", as_json, "print JSON");
  if (!parse_args(app, args, "calibrate-gpus")) return 0;
  if (!leave_out.empty() && leave_out != "gpu" && leave_out != "model" && leave_out != "both")
    throw InputError("--leave-one-out " + quote(leave_out) + ": expected gpu, model or both");
  const hardware::Catalogue catalogue = hardware::Catalogue::load(catalogue_files);
  const gpu::PublicTables tables = gpu::load_public_tables(catalogue, public_dir);
  const gpu::CalibrationSet set(tables.rows, catalogue);
  const bool print = !as_json;
  ordered_json result = {{"public", tables.dir}, {"rows", set.size()}};
  if (print) {
    std::printf("%zu public measurements used from %s; left out:\n", set.size(), tables.dir.c_str());
    for (const auto& [reason, count] : tables.skipped)
      std::printf("  %4lld  %s\n", static_cast<long long>(count), reason.c_str());
  }
  for (const auto& [reason, count] : tables.skipped) result["skipped"][reason] = count;
  gpu::GpuCalibration calibration = gpu::fit_gpu_calibration(set);
  // The rows every score below is over (the test GPUs' only with --score-test-gpus), chosen once.
  const std::vector<size_t> scored = set.scored_rows(score_test_gpus);
  double in_sample = 0;
  for (size_t index : scored)
    in_sample += std::abs(set.time(index, calibration).time_ms / set.row(index).measured_ms - 1);
  in_sample /= static_cast<double>(std::max<size_t>(scored.size(), 1));
  const auto [spread, spread_rows] = gpu::duplicate_spread(set);
  if (print) {
    std::printf("fit on every training GPU's rows: in-sample MRE %.1f%% over %lld%s\n", 100 * in_sample,
                static_cast<long long>(scored.size()),
                score_test_gpus ? " (the test GPUs' rows, never fitted, included)" : "");
    std::printf(
        "noise floor of the tables: %lld rows measured more than once deviate %.1f%% (mean) from their "
        "group's mean\n",
        static_cast<long long>(spread_rows), 100 * spread);
  }
  result["noise_floor"] = {{"rows", spread_rows}, {"mean_relative_deviation", spread}};
  if (print && show_rows) print_rows(set, calibration, scored);
  result["in_sample_mre"] = in_sample;
  const bool by_gpu = leave_out == "gpu" || leave_out == "both" || !out.empty() || !residuals.empty();
  gpu::HeldOut held_gpu, held_model;
  if (by_gpu) {
    const std::map<std::string, gpu::GpuKernelModel> folds = kernel_folds_of(set, catalogue, print);
    const gpu::HeldOut& held = held_gpu =
        folds.empty() ? gpu::leave_one_out(set, "gpu") : gpu::leave_one_gpu_out(set, catalogue, folds);
    if (leave_out == "gpu" || leave_out == "both")
      result["leave_one_gpu_out"] = print_held_out(set, held, print, scored);
    // The interval from the training GPUs' rows alone: NeuSight's test GPUs are in no fit, the interval included.
    std::vector<double> ratios;
    for (size_t index : set.scored_rows()) ratios.push_back(set.row(index).measured_ms / held.forecast_ms[index]);
    calibration.interval_low = quantile_low_plus_step(ratios, 0.05);
    calibration.interval_high = quantile_low_plus_step(ratios, 0.95);
  }
  if (leave_out == "model" || leave_out == "both" || !residuals.empty()) held_model = gpu::leave_one_out(set, "model");
  if (leave_out == "model" || leave_out == "both")
    result["leave_one_model_out"] = print_held_out(set, held_model, print, scored);
  if (!residuals.empty()) {
    gpu::write_residuals(set, calibration, held_gpu, held_model, residuals, score_test_gpus);
    if (print) std::printf("wrote %s\n", residuals.c_str());
  }
  if (!out.empty()) {
    gpu::write_gpu_calibration(calibration, out,
                               "dnncast GPU calibration (docs/GPU.md): written by `dnncast calibrate-gpus --out " +
                                   out + "` from " + std::to_string(set.size()) +
                                   " rows of ../shared/data/public/gpu_benchmarks; interval = 5th/95th percentile of "
                                   "measured/forecast when each GPU was held out, over the rows of GPUs other than "
                                   "NeuSight's test GPUs (" +
                                   gpu::kTestGpusInWords + ")");
    if (print) std::printf("wrote %s\n", out.c_str());
  }
  if (as_json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace dnncast::cli
