#include "cli/print_gpu_calibration.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace dnncast::cli {

using nlohmann::ordered_json;

namespace {

struct Errors {
  double forecast = 0, roofline = 0;  // summed relative errors
  int64_t rows = 0;
  std::string tables;
};

}  // namespace

ordered_json print_held_out(const gpu::CalibrationSet& set, const gpu::HeldOut& held, bool print) {
  std::map<std::string, Errors> by, by_framework;
  Errors all;
  for (size_t index = 0; index < set.size(); ++index) {
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
  return {{"group", held.group},
          {"rows", rows},
          {"frameworks", frameworks},
          {"mre_rows", mre_rows},
          {"roofline_mre_rows", roof_rows},
          {"mre_groups", mean_of_groups},
          {"roofline_mre_groups", mean_roofline},
          {"below_roofline", below}};
}


void print_rows(const gpu::CalibrationSet& set, const gpu::GpuCalibration& calibration) {
    std::printf("  %-15s %5s %-16s %-13s %5s %-5s %-10s %10s %10s %10s\n", "table", "line", "gpu", "model", "batch",
                "prec", "framework", "measured", "forecast", "roofline");
    for (size_t index = 0; index < set.size(); ++index) {
      const gpu::PublicMeasurement& row = set.row(index);
      const gpu::GpuTiming timing = set.time(index, calibration);
      std::printf("  %-15s %5lld %-16s %-13s %5lld %-5s %-10s %10.2f %10.2f %10.2f\n", row.table.c_str(),
                  static_cast<long long>(row.line), row.gpu.c_str(), row.model.c_str(),
                  static_cast<long long>(row.spec.batch), gpu::name(row.precision).c_str(),
                  gpu::name(row.framework).c_str(), row.measured_ms, timing.time_ms, timing.roofline_ms);
    }
  }

}  // namespace dnncast::cli
