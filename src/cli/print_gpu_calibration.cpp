#include "cli/print_gpu_calibration.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "gpu/kernel_model.h"

namespace dnncast::cli {

using nlohmann::ordered_json;

namespace {

struct Errors {
  double forecast = 0, roofline = 0;  // summed relative errors
  int64_t rows = 0;
  std::string tables;
};

}  // namespace

ordered_json print_held_out(const gpu::CalibrationSet& set, const gpu::HeldOut& held, bool print,
                            const std::vector<size_t>& scored) {
  std::map<std::string, Errors> by, by_framework;
  Errors all;
  const auto unscored = static_cast<int64_t>(set.size() - scored.size());
  for (size_t index : scored) {
    const gpu::PublicMeasurement& row = set.row(index);
    Errors& errors = by[held.group == "gpu" ? row.gpu : row.model];
    const double forecast = std::abs(held.forecast_ms[index] / row.measured_ms - 1);
    const double roofline = std::abs(held.roofline_ms[index] / row.measured_ms - 1);
    Errors& framework = by_framework[gpu::name(row.framework)];
    for (Errors* e : {&errors, &all, &framework}) e->forecast += forecast, e->roofline += roofline, ++e->rows;
    if (errors.tables.find(row.table) == std::string::npos)
      errors.tables += (errors.tables.empty() ? "" : " ") + row.table;
  }
  ordered_json rows = ordered_json::array();
  double mean_of_groups = 0, mean_roofline = 0;
  int64_t below = 0;
  if (print)
    std::printf("\nleave-one-%s-out (each %s's rows held out of the fit in turn)\n", held.group.c_str(),
                held.group.c_str());
  if (print) std::printf("  %-20s %5s  %9s  %9s  %s\n", held.group.c_str(), "rows", "MRE", "roofline", "tables");
  for (const auto& [key, e] : by) {
    const double mre = e.forecast / static_cast<double>(e.rows), roof = e.roofline / static_cast<double>(e.rows);
    mean_of_groups += mre / static_cast<double>(by.size());
    mean_roofline += roof / static_cast<double>(by.size());
    below += mre < roof;
    rows.push_back({{held.group, key}, {"rows", e.rows}, {"mre", mre}, {"roofline_mre", roof}, {"tables", e.tables}});
    if (print)
      std::printf("  %-20s %5lld  %8.1f%%  %8.1f%%  %s\n", key.c_str(), static_cast<long long>(e.rows), 100 * mre,
                  100 * roof, e.tables.c_str());
  }
  const double mre_rows = all.forecast / static_cast<double>(all.rows),
               roof_rows = all.roofline / static_cast<double>(all.rows);
  if (print) {
    std::printf("  %-20s %5lld  %8.1f%%  %8.1f%%  (mean over rows)\n", "all", static_cast<long long>(all.rows),
                100 * mre_rows, 100 * roof_rows);
    std::printf("  %-20s %5zu  %8.1f%%  %8.1f%%  (mean over %ss; below the roofline on %lld of %zu)\n", "per group",
                by.size(), 100 * mean_of_groups, 100 * mean_roofline, held.group.c_str(), static_cast<long long>(below),
                by.size());
  }
  ordered_json frameworks = ordered_json::object();
  for (const auto& [framework, e] : by_framework) {
    const double mre = e.forecast / static_cast<double>(e.rows), roof = e.roofline / static_cast<double>(e.rows);
    frameworks[framework] = {{"rows", e.rows}, {"mre", mre}, {"roofline_mre", roof}};
    if (print)
      std::printf("  %-20s %5lld  %8.1f%%  %8.1f%%  (rows of this framework)\n", framework.c_str(),
                  static_cast<long long>(e.rows), 100 * mre, 100 * roof);
  }
  if (print && unscored > 0)
    std::printf("  %lld rows of the test GPUs (%s) not scored: --score-test-gpus scores them, once\n",
                static_cast<long long>(unscored), gpu::kTestGpusInWords);
  return {{"group", held.group},
          {"test_gpu_rows_not_scored", unscored},
          {"rows", rows},
          {"frameworks", frameworks},
          {"mre_rows", mre_rows},
          {"roofline_mre_rows", roof_rows},
          {"mre_groups", mean_of_groups},
          {"roofline_mre_groups", mean_roofline},
          {"below_roofline", below}};
}

void print_rows(const gpu::CalibrationSet& set, const gpu::GpuCalibration& calibration,
                const std::vector<size_t>& scored) {
  std::printf("  %-15s %5s %-16s %-13s %5s %-5s %-10s %10s %10s %10s\n", "table", "line", "gpu", "model", "batch",
              "prec", "framework", "measured", "forecast", "roofline");
  for (size_t index : scored) {
    const gpu::PublicMeasurement& row = set.row(index);
    const gpu::GpuTiming timing = set.time(index, calibration);
    std::printf("  %-15s %5lld %-16s %-13s %5lld %-5s %-10s %10.2f %10.2f %10.2f\n", row.table.c_str(),
                static_cast<long long>(row.line), row.gpu.c_str(), row.model.c_str(),
                static_cast<long long>(row.spec.batch), gpu::name(row.precision).c_str(),
                gpu::name(row.framework).c_str(), row.measured_ms, timing.time_ms, timing.roofline_ms);
  }
}

ordered_json print_half_kernel_errors(const std::vector<gpu::HalfKernelError>& errors, bool print) {
  ordered_json rows = ordered_json::array();
  if (print)
    std::printf("  %-12s %-12s %6s %11s %9s %9s\n", "gpu", "family", "rows", "per-kernel", "curves", "roofline");
  for (const gpu::HalfKernelError& error : errors) {
    rows.push_back({{"gpu", error.gpu},
                    {"family", gpu::name(error.family)},
                    {"rows", error.rows},
                    {"test_gpu", error.test_gpu},
                    {"per_kernel_mre", error.model_mre},
                    {"curves_mre", error.curve_mre},
                    {"roofline_mre", error.roofline_mre}});
    if (print)
      std::printf("  %-12s %-12s %6lld %10.1f%% %8.1f%% %8.1f%%%s\n", error.gpu.c_str(),
                  gpu::name(error.family).c_str(), static_cast<long long>(error.rows), 100 * error.model_mre,
                  100 * error.curve_mre, 100 * error.roofline_mre, error.test_gpu ? "  (test GPU)" : "");
  }
  return rows;
}

ordered_json print_kernel_errors(const gpu::KernelLeaveOneOut& held, bool print) {
  ordered_json rows = ordered_json::array();
  if (print) std::printf("\nper kernel, each GPU held out of the fit (mean relative error: model | roofline)\n");
  std::map<gpu::KernelFamily, std::array<double, 3>> sums;  // model, roofline, GPUs
  for (const gpu::KernelFamilyError& error : held.errors) {
    if (print)
      std::printf("  %-16s %-12s %-10s %6lld rows  %6.1f%% | %6.1f%%\n", error.gpu.c_str(),
                  gpu::name(error.family).c_str(), error.source.c_str(), static_cast<long long>(error.rows),
                  100 * error.model_mre, 100 * error.roofline_mre);
    rows.push_back({{"gpu", error.gpu},
                    {"family", gpu::name(error.family)},
                    {"source", error.source},
                    {"rows", error.rows},
                    {"model_mre", error.model_mre},
                    {"roofline_mre", error.roofline_mre}});
    if (error.source != "neusight") continue;  // the means are over NeuSight's rows, as before DeepBench's
    sums[error.family] = {sums[error.family][0] + error.model_mre, sums[error.family][1] + error.roofline_mre,
                          sums[error.family][2] + 1};
  }
  if (print)
    for (const auto& [family, sum] : sums)
      std::printf("  mean over GPUs   %-12s neusight              %6.1f%% | %6.1f%%\n", gpu::name(family).c_str(),
                  100 * sum[0] / sum[2], 100 * sum[1] / sum[2]);
  return rows;
}

namespace {

// One of DeepBench's tables (`path`, or the default found beside the public data; "none" leaves it out) appended to
// `tables` by `load`; its file, rows and what was left out go into `result` under `key` and, when `print`, to stdout.
gpu::DeepBenchLoad add_deepbench_table(const std::string& path, const std::string& default_path,
                                       gpu::DeepBenchLoad (*load)(const hardware::Catalogue&, const std::string&,
                                                                  gpu::KernelTables&),
                                       const hardware::Catalogue& catalogue, gpu::KernelTables& tables, const char* key,
                                       const char* what, const char* option, bool print, ordered_json& result) {
  const std::string file = path.empty() ? default_path : path;
  if (file.empty())
    std::fprintf(stderr,
                 "calibrate-gpu-kernels: DeepBench's %s not found (../shared/data/public/gpu_benchmarks): fitting "
                 "without them; %s FILE names them\n",
                 what, option);
  gpu::DeepBenchLoad deep;
  if (!file.empty() && file != "none") deep = load(catalogue, file, tables);
  result[key] = file;
  result[std::string(key) + "_rows"] = deep.rows;
  for (const auto& [reason, count] : deep.skipped) result[std::string(key) + "_skipped"][reason] = count;
  if (print && (deep.rows > 0 || !deep.skipped.empty())) {
    std::printf("%lld %s from %s; left out:\n", static_cast<long long>(deep.rows), what, file.c_str());
    for (const auto& [reason, count] : deep.skipped)
      std::printf("  %4lld  %s\n", static_cast<long long>(count), reason.c_str());
  }
  return deep;
}

}  // namespace

gpu::DeepBenchLoad add_deepbench(const std::string& path, const hardware::Catalogue& catalogue,
                                 gpu::KernelTables& tables, bool print, ordered_json& result) {
  return add_deepbench_table(path, gpu::default_deepbench_convolutions(), gpu::load_deepbench_convolutions, catalogue,
                             tables, "deepbench", "convolution passes (forward, input and weight gradients)",
                             "--deepbench", print, result);
}

gpu::DeepBenchLoad add_deepbench_gemms(const std::string& path, const hardware::Catalogue& catalogue,
                                       gpu::KernelTables& tables, bool print, ordered_json& result) {
  return add_deepbench_table(path, gpu::default_deepbench_gemms(), gpu::load_deepbench_gemms, catalogue, tables,
                             "deepbench_gemm", "GEMMs", "--deepbench-gemm", print, result);
}

ordered_json print_conv_passes(const gpu::KernelLeaveOneOut& held, bool print) {
  ordered_json passes = ordered_json::array();
  if (held.conv_passes.empty()) return passes;
  if (print)
    std::printf(
        "\nDeepBench's convolutions by pass, each GPU held out (mean relative error of the busy time: model | "
        "every pass priced as its forward shape by NeuSight's forward rows alone, as before | roofline)\n");
  std::map<gpu::ConvPass, std::array<double, 4>> pass_sums;  // model, forward shape, roofline, GPUs
  for (const gpu::ConvPassError& pass : held.conv_passes) {
    if (print)
      std::printf("  %-16s %-12s %4lld rows  %6.1f%% | %6.1f%% | %6.1f%%\n", pass.gpu.c_str(),
                  gpu::name(pass.pass).c_str(), static_cast<long long>(pass.rows), 100 * pass.model_mre,
                  100 * pass.forward_shape_mre, 100 * pass.roofline_mre);
    auto& sum = pass_sums[pass.pass];
    sum = {sum[0] + pass.model_mre, sum[1] + pass.forward_shape_mre, sum[2] + pass.roofline_mre, sum[3] + 1};
  }
  for (const auto& [pass, sum] : pass_sums) {
    if (print)
      std::printf("  mean over GPUs   %-12s            %6.1f%% | %6.1f%% | %6.1f%%\n", gpu::name(pass).c_str(),
                  100 * sum[0] / sum[3], 100 * sum[1] / sum[3], 100 * sum[2] / sum[3]);
    passes.push_back({{"pass", gpu::name(pass)},
                      {"gpus", sum[3]},
                      {"model_mre", sum[0] / sum[3]},
                      {"forward_shape_mre", sum[1] / sum[3]},
                      {"roofline_mre", sum[2] / sum[3]}});
  }
  return passes;
}

ordered_json print_transformer_labels(const std::string& labels, const std::string& configs,
                                      const hardware::Catalogue& catalogue, const gpu::GpuKernelModel& full,
                                      const gpu::KernelLeaveOneOut& held, bool print, bool show_rows,
                                      bool score_test_gpus) {
  ordered_json result = ordered_json::object();
  int64_t unscored = 0;  // the test GPUs' rows, without score_test_gpus
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  std::map<std::string, std::array<double, 4>> by_gpu;       // train sum, train n, inf sum, inf n
  std::map<std::string, std::array<double, 2>> roof_by_gpu;  // sum, n
  std::array<double, 3> test_train{};  // error sum, roofline error sum, rows: the test GPUs' training rows
  ordered_json rows = ordered_json::array();
  if (print && show_rows) std::printf("\nend to end (ms): gpu model phase seq batch measured forecast roofline\n");
  for (const gpu::TransformerLabel& label : gpu::load_transformer_labels(catalogue, labels)) {
    const gpu::GpuKernelModel* model = &full;
    if (label.test_gpu && !score_test_gpus) {
      ++unscored;
      continue;
    }
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
    rows.push_back({{"gpu", label.gpu},
                    {"test_gpu", label.test_gpu},
                    {"model", label.model},
                    {"phase", gpu::name(label.phase)},
                    {"seq", label.seq},
                    {"batch", label.batch},
                    {"measured_ms", label.measured_ms},
                    {"forecast_ms", forecast.forecast_ms},
                    {"roofline_ms", forecast.roofline_ms}});
    if (print && show_rows)  // gpu model phase seq batch measured forecast roofline
      std::printf("  %-16s %-11s %-16s %5lld %3lld %9.1f %9.1f %9.1f\n", label.gpu.c_str(), label.model.c_str(),
                  gpu::name(label.phase).c_str(), static_cast<long long>(label.seq),
                  static_cast<long long>(label.batch), label.measured_ms, forecast.forecast_ms, forecast.roofline_ms);
  }
  result["labels"] = rows;
  result["test_gpu_rows_not_scored"] = unscored;
  if (print) {
    std::printf(
        "\nend to end, NeuSight's transformer labels (mean relative error; training GPUs held out in turn,\n"
        "test GPUs with the fit that never saw them)\n");
    std::printf("  %-16s %5s %10s %5s %10s %10s\n", "gpu", "train", "error", "inf", "error", "roofline");
    for (const auto& [gpu, sums] : by_gpu)
      std::printf("  %-16s %5.0f %9.1f%% %5.0f %9.1f%% %9.1f%%%s\n", gpu.c_str(), sums[1],
                  sums[1] > 0 ? 100 * sums[0] / sums[1] : 0.0, sums[3], sums[3] > 0 ? 100 * sums[2] / sums[3] : 0.0,
                  100 * roof_by_gpu[gpu][0] / roof_by_gpu[gpu][1],
                  gpu::is_held_out_test_gpu(gpu) ? "  (test GPU)" : "");
    if (test_train[2] > 0)
      std::printf("  the test GPUs' %.0f training rows: %.1f%% (roofline %.1f%%; NeuSight 7.1%% on its 19)\n",
                  test_train[2], 100 * test_train[0] / test_train[2], 100 * test_train[1] / test_train[2]);
    if (unscored > 0)
      std::printf("  %lld rows of the test GPUs (%s) not scored: --score-test-gpus scores them, once\n",
                  static_cast<long long>(unscored), gpu::kTestGpusInWords);
  }
  if (test_train[2] > 0)
    result["test_gpus_training_rows"] = {{"rows", test_train[2]},
                                         {"mre", test_train[0] / test_train[2]},
                                         {"roofline_mre", test_train[1] / test_train[2]}};
  return result;
}

std::vector<std::string> memory_score_row(const std::string& name, const gpu::GpuMemoryScore& s) {
  return {name,
          std::to_string(s.rows),
          percent_text(s.mean_relative_error),
          percent_text(s.under_5pct_share),
          percent_text(s.max_under),
          percent_text(s.max_over)};
}

ordered_json memory_score_json(const gpu::GpuMemoryScore& s) {
  return {{"rows", s.rows},
          {"mean_relative_error", s.mean_relative_error},
          {"under_5pct_share", s.under_5pct_share},
          {"max_under", s.max_under},
          {"max_over", s.max_over}};
}

std::string percent_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * value);
  return text;
}

// `--half`: the half-precision model from Vidur's fp16 kernels (gpu/half_kernels.h), judged and written.
int calibrate_half_kernels(const std::string& vidur_dir, const hardware::Catalogue& catalogue, int rounds,
                           bool score_test_gpus, const std::string& out, bool as_json, double gemm_vector_share) {
  const gpu::HalfKernelTables tables = gpu::load_vidur_kernels(catalogue, vidur_dir, score_test_gpus);
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration();
  const bool print = !as_json;
  int64_t training_rows = 0;
  for (const gpu::KernelMeasurement& row : tables.rows) training_rows += gpu::is_held_out_test_gpu(row.gpu) ? 0 : 1;
  ordered_json result = {{"vidur", tables.dir},
                         {"training_rows", training_rows},
                         {"held_out_test_gpu_rows", score_test_gpus ? 0 : tables.held_out},
                         {"gemm_vector_share", gemm_vector_share}};
  if (print)
    std::printf(
        "%lld fp16 kernel measurements of training GPUs from %s (%s)\n"
        "per-kernel: the A40's rows with their model held out of the fit; a test GPU's with the fit on every A40 "
        "row; GEMMs at the tensor peak with %.4g of their FLOPs at the FP32 rate\n\n",
        static_cast<long long>(training_rows), tables.dir.c_str(),
        score_test_gpus
            ? "the test GPUs A100 80GB and H100 scored, as asked"
            : (std::to_string(tables.held_out) + " rows of the test GPUs A100 80GB and H100 left out").c_str(),
        gemm_vector_share);
  result["errors"] = print_half_kernel_errors(
      gpu::judge_half_kernels(tables, catalogue, calibration, rounds, gemm_vector_share), print);
  if (!out.empty()) {
    std::vector<gpu::KernelMeasurement> training;
    for (const gpu::KernelMeasurement& row : tables.rows)
      if (!gpu::is_held_out_test_gpu(row.gpu)) training.push_back(row);
    std::ostringstream share;
    share << gemm_vector_share;
    const std::string share_text = share.str();
    gpu::GpuKernelModel::fit(training, catalogue, rounds, true, gemm_vector_share)
        .save(out,
              "dnncast half-precision per-kernel GPU model (docs/GPU.md): written by `dnncast "
              "calibrate-gpu-kernels --half --gemm-vector-share " +
                  share_text + " --out " + out + "` from " + std::to_string(training.size()) +
                  " of Vidur's fp16 kernel rows of the A40 (no row of its A100 80GB or H100)");
    if (print) std::printf("wrote %s\n", out.c_str());
  }
  if (as_json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace dnncast::cli
