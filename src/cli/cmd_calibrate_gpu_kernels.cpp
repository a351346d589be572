// `dnncast calibrate-gpu-kernels [--ops DIR] [--leave-one-out] [--labels FILE] [--configs DIR] [--out DIR]`:
// fits the per-kernel GPU time model (gpu/kernel_model.h) to NeuSight's per-kernel measurements and judges it
// as NeuSight was judged: per kernel with each GPU held out, and end to end on its transformer labels (the
// training GPUs' rows with their GPU held out, the test GPUs' rows with the fit that never saw them).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "gpu/gpu_calibration.h"
#include "gpu/kernel_evaluation.h"

namespace dnncast::cli {

using nlohmann::ordered_json;

namespace {

ordered_json print_kernel_errors(const gpu::KernelLeaveOneOut& held, bool print) {
  ordered_json rows = ordered_json::array();
  if (print) std::printf("\nper kernel, each GPU held out of the fit (mean relative error: model | roofline)\n");
  std::map<gpu::KernelFamily, std::array<double, 3>> sums;  // model, roofline, GPUs
  for (const gpu::KernelFamilyError& error : held.errors) {
    if (print)
      std::printf("  %-16s %-12s %6lld rows  %6.1f%% | %6.1f%%\n", error.gpu.c_str(), gpu::name(error.family).c_str(),
                  static_cast<long long>(error.rows), 100 * error.model_mre, 100 * error.roofline_mre);
    rows.push_back({{"gpu", error.gpu}, {"family", gpu::name(error.family)}, {"rows", error.rows},
                    {"model_mre", error.model_mre}, {"roofline_mre", error.roofline_mre}});
    sums[error.family] = {sums[error.family][0] + error.model_mre, sums[error.family][1] + error.roofline_mre,
                          sums[error.family][2] + 1};
  }
  if (print)
    for (const auto& [family, sum] : sums)
      std::printf("  mean over GPUs   %-12s              %6.1f%% | %6.1f%%\n", gpu::name(family).c_str(),
                  100 * sum[0] / sum[2], 100 * sum[1] / sum[2]);
  return rows;
}

}  // namespace

int run_calibrate_gpu_kernels(const Args& args) {
  CLI::App app(
      "Fit the per-kernel GPU time model to NeuSight's per-kernel measurements (../shared/data/public/neusight/ops)\n"
      "and judge it per kernel (each GPU held out) and end to end on NeuSight's transformer labels. The rows of\n"
      "its test GPUs (H100, L4, A100 80GB) are never fitted on. --out writes the model `predict --device` reads.",
      "dnncast calibrate-gpu-kernels");
  std::string ops_dir, labels, configs, out;
  std::vector<std::string> catalogue_files;
  bool leave_out = false, as_json = false, show_rows = false;
  int rounds = 200, stride = 1;
  app.add_option("--ops", ops_dir, "NeuSight's ops/train folder (default: ../shared/data/public/neusight/ops/train)");
  app.add_option("--catalogue", catalogue_files, "extra catalogue file (docs/DEVICES.md)");
  app.add_flag("--leave-one-out", leave_out, "judge per kernel with each GPU held out (and the labels of those GPUs)");
  app.add_option("--labels", labels,
                 "end-to-end labels (gpu_benchmarks/neusight_transformer_latency_labels.csv); with --configs");
  app.add_option("--configs", configs, "the labels' model configs (neusight/model_configs)");
  app.add_option("--rounds", rounds, "boosting rounds per kernel family (default 200)")->check(CLI::Range(1, 5000));
  app.add_option("--stride", stride, "fit on every Nth row (a quicker check; default 1)")->check(CLI::Range(1, 1000));
  app.add_option("--out", out, "write the model fitted on every row here (data/hardware/gpu_kernels)");
  app.add_flag("--rows", show_rows, "print every label row");
  app.add_flag("--json", as_json, "print JSON");
  if (!parse_args(app, args, "calibrate-gpu-kernels")) return 0;
  if (!labels.empty() && configs.empty()) throw InputError("--labels needs --configs (neusight/model_configs)");
  const hardware::Catalogue catalogue = hardware::Catalogue::load(catalogue_files);
  const gpu::KernelTables tables = gpu::load_kernel_tables(catalogue, ops_dir);
  const bool print = !as_json;
  ordered_json result = {{"ops", tables.dir}, {"rows", tables.rows.size()}, {"held_out_test_gpu_rows", tables.held_out}};
  if (print)
    std::printf("%zu kernel measurements from %s (%lld rows of the test GPUs H100, L4, A100 80GB left out)\n",
                tables.rows.size(), tables.dir.c_str(), static_cast<long long>(tables.held_out));
  gpu::KernelLeaveOneOut held;
  if (leave_out) {
    held = gpu::leave_one_gpu_out(tables, catalogue, rounds, stride);
    result["leave_one_gpu_out"] = print_kernel_errors(held, print);
  }
  gpu::GpuKernelModel full;
  if (!out.empty() || !labels.empty()) {
    std::vector<gpu::KernelMeasurement> rows;
    std::array<int64_t, gpu::kKernelFamilies> seen{};
    for (const gpu::KernelMeasurement& row : tables.rows)
      if (seen[static_cast<size_t>(row.shape.family)]++ % stride == 0) rows.push_back(row);
    full = gpu::GpuKernelModel::fit(rows, catalogue, rounds);
  }
  if (!labels.empty()) {
    const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
    std::map<std::string, std::array<double, 4>> by_gpu;       // train sum, train n, inf sum, inf n
    std::map<std::string, std::array<double, 2>> roof_by_gpu;  // sum, n
    std::array<double, 3> test_train{};  // error sum, roofline error sum, rows: the test GPUs' training rows
    ordered_json rows = ordered_json::array();
    if (print && show_rows) std::printf("\nend to end (ms): gpu model phase seq batch measured forecast roofline\n");
    for (const gpu::TransformerLabel& label : gpu::load_transformer_labels(catalogue, labels)) {
      const gpu::GpuKernelModel* model = &full;
      if (!label.test_gpu) {
        const auto at = held.models.find(label.gpu);
        if (at == held.models.end()) continue;  // a training GPU: judged only with --leave-one-out
        model = &at->second;
      }
      const gpu::LabelForecast forecast = gpu::forecast_label(label, configs, catalogue, calibration, *model);
      const double error = std::abs(forecast.forecast_ms / label.measured_ms - 1);
      const double roof_error = std::abs(forecast.roofline_ms / label.measured_ms - 1);
      const bool train = label.phase != gpu::GpuPhase::Inference;
      auto& sums = by_gpu[label.gpu];
      sums[train ? 0 : 2] += error;
      sums[train ? 1 : 3] += 1;
      if (label.test_gpu && train) test_train = {test_train[0] + error, test_train[1] + roof_error, test_train[2] + 1};
      roof_by_gpu[label.gpu][0] += roof_error;
      roof_by_gpu[label.gpu][1] += 1;
      rows.push_back({{"gpu", label.gpu}, {"test_gpu", label.test_gpu}, {"model", label.model},
                      {"phase", gpu::name(label.phase)}, {"seq", label.seq}, {"batch", label.batch},
                      {"measured_ms", label.measured_ms}, {"forecast_ms", forecast.forecast_ms},
                      {"roofline_ms", forecast.roofline_ms}});
      if (print && show_rows)  // gpu model phase seq batch measured forecast roofline
        std::printf("  %-16s %-11s %-16s %5lld %3lld %9.1f %9.1f %9.1f\n", label.gpu.c_str(), label.model.c_str(),
                    gpu::name(label.phase).c_str(), static_cast<long long>(label.seq),
                    static_cast<long long>(label.batch), label.measured_ms, forecast.forecast_ms, forecast.roofline_ms);
    }
    result["labels"] = rows;
    if (print) {
      std::printf("\nend to end, NeuSight's transformer labels (mean relative error; training GPUs held out in turn,\n"
                  "test GPUs with the fit that never saw them)\n");
      std::printf("  %-16s %5s %10s %5s %10s %10s\n", "gpu", "train", "error", "inf", "error", "roofline");
      for (const auto& [gpu, sums] : by_gpu)
        std::printf("  %-16s %5.0f %9.1f%% %5.0f %9.1f%% %9.1f%%%s\n", gpu.c_str(), sums[1],
                    sums[1] > 0 ? 100 * sums[0] / sums[1] : 0.0, sums[3], sums[3] > 0 ? 100 * sums[2] / sums[3] : 0.0,
                    100 * roof_by_gpu[gpu][0] / roof_by_gpu[gpu][1], gpu::is_held_out_test_gpu(gpu) ? "  (test GPU)" : "");
      if (test_train[2] > 0)
        std::printf("  the test GPUs' %.0f training rows: %.1f%% (roofline %.1f%%; NeuSight 7.1%% on its 19)\n",
                    test_train[2], 100 * test_train[0] / test_train[2], 100 * test_train[1] / test_train[2]);
    }
    if (test_train[2] > 0)
      result["test_gpus_training_rows"] = {{"rows", test_train[2]}, {"mre", test_train[0] / test_train[2]},
                                           {"roofline_mre", test_train[1] / test_train[2]}};
  }
  if (!out.empty()) {
    full.save(out, "dnncast per-kernel GPU model (docs/GPU.md): written by `dnncast calibrate-gpu-kernels --out " + out +
                       "` from " + std::to_string(tables.rows.size()) +
                       " NeuSight kernel rows (P4, P100, T4, V100, A100 40GB; no row of H100, L4 or A100 80GB)");
    if (print) std::printf("wrote %s\n", out.c_str());
  }
  if (as_json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace dnncast::cli
