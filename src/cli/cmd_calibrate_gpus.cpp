// `dnncast calibrate-gpus [--leave-one-out gpu|model|both] [--out FILE] [--public DIR] [--json]`: fits the
// GPU time model's constants (apps/gpu_forecast.h) to the public end-to-end training tables and judges it
// on GPUs / models held out of the fit, beside the plain roofline (docs/GPU.md, docs/RESULTS.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/gpu_calibration.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/csv.h"
#include "core/error.h"

namespace dnncast::cli {

namespace {

using nlohmann::ordered_json;

struct Errors {
  double forecast = 0, roofline = 0;  // summed relative errors
  int64_t rows = 0;
  std::string tables;
};

// Mean relative errors of held-out forecasts and of the roofline, by the group's key, and overall.
ordered_json held_out_table(const apps::CalibrationSet& set, const apps::HeldOut& held, bool print) {
  std::map<std::string, Errors> by, by_framework;
  Errors all;
  for (size_t index = 0; index < set.size(); ++index) {
    const apps::PublicMeasurement& row = set.row(index);
    Errors& errors = by[held.group == "gpu" ? row.gpu : row.model];
    const double forecast = std::abs(held.forecast_ms[index] / row.measured_ms - 1);
    const double roofline = std::abs(held.roofline_ms[index] / row.measured_ms - 1);
    Errors& framework = by_framework[apps::name(row.framework)];
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
  return {{"group", held.group},
          {"rows", rows},
          {"frameworks", frameworks},
          {"mre_rows", mre_rows},
          {"roofline_mre_rows", roof_rows},
          {"mre_groups", mean_of_groups},
          {"roofline_mre_groups", mean_roofline},
          {"below_roofline", below}};
}

// The tables' own noise floor: rows of one GPU, model, batch, precision and framework measured more than
// once (other systems, software versions), each row's relative deviation from its group's mean.
std::pair<double, int64_t> duplicate_spread(const apps::CalibrationSet& set) {
  std::map<std::string, std::vector<double>> groups;
  for (size_t index = 0; index < set.size(); ++index) {
    const apps::PublicMeasurement& row = set.row(index);
    groups[row.table + "/" + row.gpu + "/" + row.model + "/" + std::to_string(row.spec.batch) + "/" +
           apps::name(row.precision) + "/" + apps::name(row.framework)]
        .push_back(row.measured_ms);
  }
  double sum = 0;
  int64_t rows = 0;
  for (const auto& [key, times] : groups) {
    if (times.size() < 2) continue;
    double mean = 0;
    for (double t : times) mean += t / static_cast<double>(times.size());
    for (double t : times) sum += std::abs(t / mean - 1), ++rows;
  }
  return {rows ? sum / static_cast<double>(rows) : 0, rows};
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const size_t low = static_cast<size_t>(at);
  const size_t high = std::min(values.size() - 1, low + 1);
  return values[low] + (at - static_cast<double>(low)) * (values[high] - values[low]);
}

// Every row: measured, the fit on all rows, held out by GPU and by model, and the plain roofline.
void write_residuals(const apps::CalibrationSet& set, const apps::GpuCalibration& calibration,
                     const apps::HeldOut& held_gpu, const apps::HeldOut& held_model, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError("--residuals " + quote(path) + ": cannot write the file");
  out << "# dnncast GPU forecast residuals: written by `dnncast calibrate-gpus --residuals " << path
      << "`; per public row (../shared/data/public/gpu_benchmarks) the measured time per iteration, the forecast "
         "fitted on all rows, the forecast with the row's GPU held out of the fit, with its model held out, and "
         "the plain roofline (ms)\n";
  core::write_csv_record(out, {"table", "line", "gpu", "model", "batch", "precision", "framework", "measured_ms",
                               "fit_ms", "held_gpu_ms", "held_model_ms", "roofline_ms"});
  char number[5][32];
  for (size_t index = 0; index < set.size(); ++index) {
    const apps::PublicMeasurement& row = set.row(index);
    const apps::GpuTiming timing = set.time(index, calibration);
    const double values[5] = {row.measured_ms, timing.time_ms, held_gpu.forecast_ms[index],
                              held_model.forecast_ms[index], timing.roofline_ms};
    for (int column = 0; column < 5; ++column)
      std::snprintf(number[column], sizeof number[column], "%.6g", values[column]);
    core::write_csv_record(out, {row.table, std::to_string(row.line), row.gpu, row.model,
                                 std::to_string(row.spec.batch), apps::name(row.precision), apps::name(row.framework),
                                 number[0], number[1], number[2], number[3], number[4]});
  }
  if (!out) throw InputError("--residuals " + quote(path) + ": writing failed");
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
  bool as_json = false, show_rows = false;
  app.add_flag("--rows", show_rows, "print every row: measured, fitted forecast, roofline");
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
  const apps::PublicTables tables = apps::load_public_tables(catalogue, public_dir);
  const apps::CalibrationSet set(tables.rows, catalogue);
  const bool print = !as_json;
  ordered_json result = {{"public", tables.dir}, {"rows", set.size()}};
  if (print) {
    std::printf("%zu public measurements used from %s; left out:\n", set.size(), tables.dir.c_str());
    for (const auto& [reason, count] : tables.skipped)
      std::printf("  %4lld  %s\n", static_cast<long long>(count), reason.c_str());
  }
  for (const auto& [reason, count] : tables.skipped) result["skipped"][reason] = count;
  apps::GpuCalibration calibration = apps::fit_gpu_calibration(set);
  double in_sample = 0;
  for (size_t index = 0; index < set.size(); ++index)
    in_sample += std::abs(set.time(index, calibration).time_ms / set.row(index).measured_ms - 1) /
                 static_cast<double>(set.size());
  const auto [spread, spread_rows] = duplicate_spread(set);
  if (print) {
    std::printf("fit on all rows: in-sample MRE %.1f%%\n", 100 * in_sample);
    std::printf(
        "noise floor of the tables: %lld rows measured more than once deviate %.1f%% (mean) from their "
        "group's mean\n",
        static_cast<long long>(spread_rows), 100 * spread);
  }
  result["noise_floor"] = {{"rows", spread_rows}, {"mean_relative_deviation", spread}};
  if (print && show_rows) {
    std::printf("  %-15s %5s %-16s %-13s %5s %-5s %-10s %10s %10s %10s\n", "table", "line", "gpu", "model", "batch",
                "prec", "framework", "measured", "forecast", "roofline");
    for (size_t index = 0; index < set.size(); ++index) {
      const apps::PublicMeasurement& row = set.row(index);
      const apps::GpuTiming timing = set.time(index, calibration);
      std::printf("  %-15s %5lld %-16s %-13s %5lld %-5s %-10s %10.2f %10.2f %10.2f\n", row.table.c_str(),
                  static_cast<long long>(row.line), row.gpu.c_str(), row.model.c_str(),
                  static_cast<long long>(row.spec.batch), apps::name(row.precision).c_str(),
                  apps::name(row.framework).c_str(), row.measured_ms, timing.time_ms, timing.roofline_ms);
    }
  }
  result["in_sample_mre"] = in_sample;
  const bool by_gpu = leave_out == "gpu" || leave_out == "both" || !out.empty() || !residuals.empty();
  apps::HeldOut held_gpu, held_model;
  if (by_gpu) {
    const apps::HeldOut& held = held_gpu = apps::leave_one_out(set, "gpu");
    if (leave_out == "gpu" || leave_out == "both") result["leave_one_gpu_out"] = held_out_table(set, held, print);
    std::vector<double> ratios;
    for (size_t index = 0; index < set.size(); ++index)
      ratios.push_back(set.row(index).measured_ms / held.forecast_ms[index]);
    calibration.interval_low = quantile(ratios, 0.05);
    calibration.interval_high = quantile(ratios, 0.95);
  }
  if (leave_out == "model" || leave_out == "both" || !residuals.empty()) held_model = apps::leave_one_out(set, "model");
  if (leave_out == "model" || leave_out == "both")
    result["leave_one_model_out"] = held_out_table(set, held_model, print);
  if (!residuals.empty()) {
    write_residuals(set, calibration, held_gpu, held_model, residuals);
    if (print) std::printf("wrote %s\n", residuals.c_str());
  }
  if (!out.empty()) {
    apps::write_gpu_calibration(calibration, out,
                                "dnncast GPU calibration (docs/GPU.md): written by `dnncast calibrate-gpus --out " +
                                    out + "` from " + std::to_string(set.size()) +
                                    " rows of ../shared/data/public/gpu_benchmarks; interval = 5th/95th percentile of "
                                    "measured/forecast when each GPU was held out");
    if (print) std::printf("wrote %s\n", out.c_str());
  }
  if (as_json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace dnncast::cli
