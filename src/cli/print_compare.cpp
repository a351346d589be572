// The table and JSON of `dnncast compare` (print_compare.h).
#include "cli/print_compare.h"

#include <cstdio>
#include <string>

#include "core/units.h"
#include "decide/catalogue_json.h"

namespace dnncast::cli {

namespace {

using nlohmann::ordered_json;

std::string bytes_text(const std::optional<int64_t>& bytes) {
  return bytes ? format_bytes(static_cast<double>(*bytes)) : std::string("unknown");
}

}  // namespace

ordered_json comparison_json(const decide::Comparison& comparison) { return decide::to_json(comparison); }

void print_comparison(const decide::Comparison& comparison) {
  std::printf("%s, batch %lld%s, %s, %s, %s; ", comparison.model.c_str(), static_cast<long long>(comparison.batch),
              comparison.multi_gpu ? " per GPU" : "", gpu::name(comparison.precision).c_str(),
              gpu::name(comparison.framework).c_str(), name(comparison.optimizer).c_str());
  if (comparison.epoch_samples > 0)
    std::printf("%lld epoch(s) of %lld samples\n", static_cast<long long>(comparison.epochs),
                static_cast<long long>(comparison.epoch_samples));
  else
    std::printf("%lld iterations (no --epoch-samples)\n", static_cast<long long>(decide::kIterationsWithoutEpochs));
  // With --multi-gpu, two more columns: the sharding of the row and its collectives' time per iteration.
  const bool multi = comparison.multi_gpu;
  std::printf("%1s %-7s %-26s %-15s %4s %8s %10s %10s %9s %10s %10s %4s %6s", "", "provider", "instance", "gpu", "gpus",
              "usd/h", "ms/iter", "epoch_s", "hours", "usd", "usd_high", "fits", "max_b");
  if (multi) std::printf(" %-5s %8s", "shard", "comm_ms");
  std::printf("  basis\n");
  for (const decide::CompareRow& row : comparison.rows) {
    char epoch[32] = "-";
    if (row.epoch_s) std::snprintf(epoch, sizeof epoch, "%.1f", *row.epoch_s);
    const std::string fits = row.fits ? (*row.fits ? "yes" : "no") : "?";
    const std::string max_batch = row.max_batch ? std::to_string(*row.max_batch) : "-";
    std::printf("%1s %-7s %-26s %-15s %4lld %8.4f %10.2f %10s %9.4f %10.4f %10.4f %4s %6s",
                row.on_pareto_front ? "*" : "", row.provider.c_str(),
                row.instance_type.empty() ? "(gpu only)" : row.instance_type.c_str(), row.gpu.c_str(),
                static_cast<long long>(row.gpu_count), row.price_usd_per_hour, row.time_ms, epoch, row.total_hours,
                row.total_usd, row.total_usd_high, fits.c_str(), max_batch.c_str());
    if (multi) {
      char comm[32] = "-";  // "-": one GPU; "?": the link is not catalogued
      if (!row.sharding.empty()) std::snprintf(comm, sizeof comm, "?");
      if (!row.sharding.empty() && row.collective_ms) std::snprintf(comm, sizeof comm, "%.2f", *row.collective_ms);
      std::printf(" %-5s %8s", row.sharding.empty() ? "-" : row.sharding.c_str(), comm);
    }
    std::printf("  %s\n", row.basis.c_str());
  }
  std::printf("\n%zu instances, cheapest first", comparison.rows.size());
  if (!comparison.left_out.empty()) std::printf(" (%zu more not forecast: see the notes)", comparison.left_out.size());
  std::printf(
      "; * on the cost-versus-time Pareto front (among those that fit); usd_high: at the top of the 90%% "
      "time interval.\n");
  if (multi && comparison.sharding.rfind("parallel ", 0) == 0)
    std::printf(
        "shard: each multi-GPU row's plan (tp, pp, dp degrees); comm_ms: its collectives left exposed; "
        "'-': one GPU.\n");
  else if (multi)
    std::printf(
        "comm_ms: the collectives of --sharding %s per iteration by the collective model, after compute (no overlap; "
        "a model); shard '-': one GPU.\n",
        comparison.sharding.c_str());
  if (comparison.fits_nowhere)
    std::printf("Fits on no instance: one GPU needs %s; the largest offered has %s.\n",
                bytes_text(comparison.required_bytes).c_str(), bytes_text(comparison.largest_memory_bytes).c_str());
}

}  // namespace dnncast::cli
