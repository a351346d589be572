// The table and JSON of `dnncast compare` (print_compare.h).
#include "cli/json_out.h"
#include "cli/print_compare.h"

#include <cstdio>
#include <string>

#include "core/units.h"

namespace dnncast::cli {

namespace {

using nlohmann::ordered_json;

ordered_json row_json(const apps::CompareRow& row) {
  return {{"provider", row.provider},
          {"instance_type", row.instance_type},
          {"gpu", row.gpu},
          {"gpu_name", row.gpu_name},
          {"gpu_count", row.gpu_count},
          {"price_usd_per_hour", row.price_usd_per_hour},
          {"time_ms", row.time_ms},
          {"time_ms_low", row.time_ms_low},
          {"time_ms_high", row.time_ms_high},
          {"epoch_s", or_null(row.epoch_s)},
          {"iterations", row.iterations},
          {"total_hours", row.total_hours},
          {"total_hours_low", row.total_hours_low},
          {"total_hours_high", row.total_hours_high},
          {"total_usd", row.total_usd},
          {"total_usd_low", row.total_usd_low},
          {"total_usd_high", row.total_usd_high},
          {"gpu_memory_bytes", or_null(row.gpu_memory_bytes)},
          {"fits", or_null(row.fits)},
          {"max_batch", or_null(row.max_batch)},
          {"basis", row.basis},
          {"on_pareto_front", row.on_pareto_front}};
}

std::string bytes_text(const std::optional<int64_t>& bytes) {
  return bytes ? core::format_bytes(static_cast<double>(*bytes)) : std::string("unknown");
}

}  // namespace

ordered_json comparison_json(const apps::Comparison& comparison) {
  ordered_json rows = ordered_json::array();
  for (const apps::CompareRow& row : comparison.rows) rows.push_back(row_json(row));
  ordered_json left_out = ordered_json::array();
  for (const apps::LeftOutInstance& left : comparison.left_out)
    left_out.push_back({{"provider", left.provider},
                        {"instance_type", left.instance_type},
                        {"gpu", left.gpu},
                        {"reason", left.reason}});
  return {{"model", comparison.model},
          {"graph", comparison.graph},
          {"batch", comparison.batch},
          {"input", comparison.input},
          {"optimizer", name(comparison.optimizer)},
          {"precision", apps::name(comparison.precision)},
          {"framework", apps::name(comparison.framework)},
          {"epochs", comparison.epochs},
          {"epoch_samples", comparison.epoch_samples},
          {"iterations_without_epochs", apps::kIterationsWithoutEpochs},
          {"spot", comparison.spot},
          {"multi_gpu", comparison.multi_gpu},
          {"fits_nowhere", comparison.fits_nowhere},
          {"required_bytes", or_null(comparison.required_bytes)},
          {"largest_memory_bytes", or_null(comparison.largest_memory_bytes)},
          {"bases", comparison.bases},
          {"notes", comparison.notes},
          {"rows", rows},
          {"left_out", left_out}};
}

void print_comparison(const apps::Comparison& comparison) {
  std::printf("%s, batch %lld%s, %s, %s, %s; ", comparison.model.c_str(), static_cast<long long>(comparison.batch),
              comparison.multi_gpu ? " per GPU" : "", apps::name(comparison.precision).c_str(),
              apps::name(comparison.framework).c_str(), name(comparison.optimizer).c_str());
  if (comparison.epoch_samples > 0)
    std::printf("%lld epoch(s) of %lld samples\n", static_cast<long long>(comparison.epochs),
                static_cast<long long>(comparison.epoch_samples));
  else
    std::printf("%lld iterations (no --epoch-samples)\n", static_cast<long long>(apps::kIterationsWithoutEpochs));
  std::printf("%1s %-7s %-26s %-15s %4s %8s %10s %10s %9s %10s %10s %4s %6s  %s\n", "", "provider", "instance", "gpu",
              "gpus", "usd/h", "ms/iter", "epoch_s", "hours", "usd", "usd_high", "fits", "max_b", "basis");
  for (const apps::CompareRow& row : comparison.rows) {
    char epoch[32] = "-";
    if (row.epoch_s) std::snprintf(epoch, sizeof epoch, "%.1f", *row.epoch_s);
    const std::string fits = row.fits ? (*row.fits ? "yes" : "no") : "?";
    const std::string max_batch = row.max_batch ? std::to_string(*row.max_batch) : "-";
    std::printf("%1s %-7s %-26s %-15s %4lld %8.4f %10.2f %10s %9.4f %10.4f %10.4f %4s %6s  %s\n",
                row.on_pareto_front ? "*" : "", row.provider.c_str(),
                row.instance_type.empty() ? "(gpu only)" : row.instance_type.c_str(), row.gpu.c_str(),
                static_cast<long long>(row.gpu_count), row.price_usd_per_hour, row.time_ms, epoch, row.total_hours,
                row.total_usd, row.total_usd_high, fits.c_str(), max_batch.c_str(), row.basis.c_str());
  }
  std::printf("\n%zu instances, cheapest first", comparison.rows.size());
  if (!comparison.left_out.empty()) std::printf(" (%zu more not forecast: see the notes)", comparison.left_out.size());
  std::printf(
      "; * on the cost-versus-time Pareto front (among those that fit); usd_high: at the top of the 90%% "
      "time interval.\n");
  if (comparison.fits_nowhere)
    std::printf("Fits on no instance: one GPU needs %s; the largest offered has %s.\n",
                bytes_text(comparison.required_bytes).c_str(), bytes_text(comparison.largest_memory_bytes).c_str());
}

}  // namespace dnncast::cli
