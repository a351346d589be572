// `dnncast calibrate-collectives [--vidur DIR] [--out FILE] [--score-test-gpus]`: fits the collective model
// (gpu/collectives.h) to Vidur's measured NCCL times of the development node kind, the A40 pairs, and prints its
// error there; the test GPUs' node kinds (A100 80GB and H100: NeuSight's test GPUs) are scored only when asked,
// with the fit that never saw them.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <tuple>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/text.h"
#include "gpu/collectives.h"
#include "gpu/kernel_model.h"

namespace dnncast::cli {

namespace {

// The fit's rows: the A40's send/recv within one node, over the pair's NVLink bridge.
bool fitted_row(const gpu::CollectiveMeasurement& row) {
  return row.node == "a40_pairwise_nvlink" && row.kind == gpu::CollectiveKind::SendRecv &&
         row.gpus == row.gpus_per_node;
}

void print_scores(const gpu::CollectiveModel& model, const gpu::CollectiveModel& peak,
                  const gpu::CollectiveTables& tables, const std::vector<size_t>& rows) {
  const std::vector<gpu::CollectiveScore> scores = gpu::score_collectives(model, tables, rows);
  const std::vector<gpu::CollectiveScore> at_peak = gpu::score_collectives(peak, tables, rows);
  std::printf("%-21s %-10s %4s %8s %-6s %5s %9s %9s %9s %10s\n", "node", "collective", "gpus", "per node", "scope",
              "rows", "error %", ">=1MB %", "bias %", "peak >=1MB");
  for (size_t at = 0; at < scores.size(); ++at) {
    const gpu::CollectiveScore& score = scores[at];
    std::printf("%-21s %-10s %4lld %8lld %-6s %5lld %9.1f %9.1f %+9.1f %10.1f\n", score.node.c_str(),
                gpu::name(score.kind).c_str(), static_cast<long long>(score.gpus),
                static_cast<long long>(score.gpus_per_node), score.gpus_per_node < score.gpus ? "cross" : "intra",
                static_cast<long long>(score.rows), score.error_pct, score.error_large_pct, score.bias_large_pct,
                at_peak[at].error_large_pct);
  }
  // The same errors by node kind, collective and scope (within a node or across), weighted by rows.
  std::map<std::tuple<std::string, std::string, bool>, std::array<double, 4>> summary;  // rows, sum, large, sum
  for (const gpu::CollectiveScore& score : scores) {
    std::array<double, 4>& sums = summary[{score.node, gpu::name(score.kind), score.gpus_per_node < score.gpus}];
    sums[0] += static_cast<double>(score.rows);
    sums[1] += score.error_pct * static_cast<double>(score.rows);
    sums[2] += static_cast<double>(score.rows_large);
    sums[3] += score.error_large_pct * static_cast<double>(score.rows_large);
  }
  std::printf("\n%-21s %-10s %-6s %5s %9s %9s\n", "node", "collective", "scope", "rows", "error %", ">=1MB %");
  for (const auto& [key, sums] : summary)
    std::printf("%-21s %-10s %-6s %5.0f %9.1f %9.1f\n", std::get<0>(key).c_str(), std::get<1>(key).c_str(),
                std::get<2>(key) ? "cross" : "intra", sums[0], sums[1] / sums[0], sums[3] / std::max(1.0, sums[2]));
}

}  // namespace

int run_calibrate_collectives(const Args& args) {
  CLI::App app(
      "Fit the collective model (alpha and efficiency of NCCL's ring, data/hardware/collectives.csv) to Vidur's\n"
      "measured NCCL times (../shared/data/public/vidur/network) of the A40 pairs' send/recv within a node, and\n"
      "print its error there. The A100 80GB and H100 nodes (NeuSight's test GPUs) are never fitted on;\n"
      "--score-test-gpus scores them with the fit that never saw them.",
      "dnncast calibrate-collectives");
  std::string vidur_dir, out;
  std::vector<std::string> catalogue_files;
  bool score_test_gpus = false;
  std::string efficiency = "peak";
  app.add_option("--vidur", vidur_dir, "Vidur's network folder (default: ../shared/data/public/vidur/network)");
  app.add_option("--catalogue", catalogue_files, "extra catalogue file (docs/DEVICES.md)");
  app.add_option("--out", out, "write the fitted model here (data/hardware/collectives.csv)");
  app.add_option(
         "--efficiency", efficiency,
         "peak (default): ship the fitted alpha with every link at its datasheet peak (the A40 pair's transfers "
         "did not run at NVLink speed, docs/GPU.md); fit: ship the fitted efficiency too")
      ->check(CLI::IsMember({"peak", "fit"}));
  app.add_flag("--score-test-gpus", score_test_gpus,
               "also score the A100 80GB and H100 nodes (NeuSight's test GPUs): once, when asked; never tune on them");
  if (!parse_args(app, args, "calibrate-collectives")) return 0;
  const hardware::Catalogue catalogue = hardware::Catalogue::load(catalogue_files);
  const gpu::CollectiveTables tables = gpu::load_vidur_collectives(catalogue, vidur_dir, score_test_gpus);
  std::vector<size_t> fit_rows, development, test;
  for (size_t at = 0; at < tables.rows.size(); ++at) {
    const gpu::CollectiveMeasurement& row = tables.rows[at];
    const bool held_out = gpu::is_held_out_test_gpu(tables.specs[row.spec].name);
    (held_out ? test : development).push_back(at);
    if (!held_out && fitted_row(row)) fit_rows.push_back(at);
  }
  if (fit_rows.empty())
    throw InputError("no development rows (a40_pairwise_nvlink/send_recv within a node) under " + quote(tables.dir));
  // The shipped file gives the InfiniBand link's bandwidth and every row's source; the fit replaces the constants.
  const gpu::CollectiveModel base = gpu::load_collective_model();
  gpu::CollectiveModel model = gpu::fit_collective_model(tables, fit_rows, base);
  const std::string fitted_on = "a40_pairwise_nvlink/send_recv within a node (" + std::to_string(fit_rows.size()) +
                                " rows: two A40s on their NVLink bridge)";
  for (size_t kind = 0; kind < gpu::kLinkKinds; ++kind)
    model.links[kind].fitted_on =
        kind == 0 ? fitted_on : "nvlink's fit (no development rows of this link): " + fitted_on;
  gpu::CollectiveModel peak = base;  // the link's peak and no latency: compare --multi-gpu's model before this one
  for (gpu::LinkConstants& link : peak.links) {
    link.alpha_s = 0;
    link.efficiency = 1;
  }
  const gpu::LinkConstants& nvlink = model.at(gpu::LinkKind::NvLink);
  const double fitted_efficiency = nvlink.efficiency;
  if (efficiency == "peak")
    for (size_t kind = 0; kind < gpu::kLinkKinds; ++kind) {
      model.links[kind].efficiency = 1;
      model.links[kind].fitted_on = "alpha: " + model.links[kind].fitted_on +
                                    "; efficiency: the link's datasheet peak (the fitted " +
                                    shown_number(fitted_efficiency) + " describes that pair's transfers, not the link)";
    }
  std::printf(
      "%zu NCCL measurements from %s (%s)\nfitted on %zu rows: alpha %.2f us per ring step, efficiency %.4f of the "
      "link's per-direction GB/s (every link kind; InfiniBand at %g GB/s per GPU); shipped efficiency: %s\n\n"
      "development rows (the A40's: error %% is the mean absolute %% error over all sizes, >=1MB over sizes of at "
      "least 1 MB, bias the mean signed one there, +: forecast too slow; peak: the link's peak, no latency)\n",
      tables.rows.size(), tables.dir.c_str(),
      score_test_gpus
          ? "the test GPUs A100 80GB and H100 scored, as asked"
          : (std::to_string(tables.held_out) + " rows of the test GPUs A100 80GB and H100 left out").c_str(),
      fit_rows.size(), nvlink.alpha_s * 1e6, fitted_efficiency,
      model.at(gpu::LinkKind::InfiniBand).link_gbs.value_or(0),
      efficiency == "peak" ? "1 (the link's peak; scores below are the shipped model's)" : "the fitted one");
  print_scores(model, peak, tables, development);
  if (score_test_gpus) {
    std::printf("\nheld-out node kinds (NeuSight's test GPUs; the fit never saw them)\n");
    print_scores(model, peak, tables, test);
  }
  if (!out.empty()) {
    gpu::save_collective_model(model, out,
                               "dnncast collective model (docs/GPU.md): written by `dnncast calibrate-collectives "
                               "--out " +
                                   out + (efficiency == "peak" ? "" : " --efficiency fit") + "`; alpha" +
                                   (efficiency == "peak" ? " (efficiency: each link's peak)" : " and efficiency") +
                                   " fitted on " + fitted_on +
                                   " of Vidur's NCCL measurements, no row of the A100 80GB or H100");
    std::printf("\nwrote %s\n", out.c_str());
  }
  return 0;
}

}  // namespace dnncast::cli
