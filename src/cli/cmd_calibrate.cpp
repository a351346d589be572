// `dnncast calibrate --predictor P --plan PLAN --budget N|FRACTION --db OUT [--out DIR]`: adapts a time
// predictor to this host with few measurements; the steps are apps::calibrate_host's
// (src/apps/calibrate.h, docs/TRANSFER.md "Calibrate"). This file parses and prints.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "apps/calibrate.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "data/campaign.h"

namespace dnncast::cli {

int run_calibrate(const Args& args) {
  CLI::App app(
      "Adapt a time predictor to this host: profile only the configurations guided sampling finds most\n"
      "informative, fit a guided shift of the predictor's forecasts, write an adapted predictor bundle, and\n"
      "report the error on extra held-back profiled configurations (docs/TRANSFER.md).",
      "dnncast calibrate");
  apps::CalibrateOptions options;
  std::string cpus_text;
  bool json = false;
  app.add_option("--predictor", options.predictor_dir, "source predictor set (DIR with time/, or a time bundle)")
      ->required();
  app.add_option("--plan", options.plan_path, "campaign plan whose configurations are the candidates")->required();
  app.add_option("--budget", options.budget,
                 "configurations to profile: a fraction of the candidates in (0, 1) or a count "
                 "(default 0.1)");
  app.add_option("--db", options.db_path, "dataset the calibration measurements go to (created or resumed)")
      ->required();
  app.add_option("--out", options.out_dir, "folder of the adapted predictor bundle (default: none written)");
  app.add_option("--holdout", options.holdout,
                 "extra random configurations profiled only to report the error (default 4)");
  app.add_option("--threads", options.threads, "measure every candidate at this thread count (default: the plan's)");
  app.add_option("--cpus", cpus_text, "pin the measurements to these CPUs (\"0\")");
  app.add_option("--time-budget-s", options.time_budget_s,
                 "timing budget per measurement, seconds (default: the plan's)");
  app.add_option("--seed", options.seed, "seed of the sample (default 1)");
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  if (!cpus_text.empty()) options.cpus = data::parse_cpu_list(cpus_text);
  nlohmann::json report = apps::calibrate_host(options);

  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  std::printf("calibrated on %zu profiled configurations of %lld candidates (GS terms:", report["sample"].get<size_t>(),
              report["candidates"].get<long long>());
  for (const auto& term : report["gs_terms"]) std::printf(" %s", term.get<std::string>().c_str());
  const std::string chosen = report["chosen"];
  std::printf(")\nchosen map: %s (leave-one-out mean |log error| x 100 on the sample:", chosen.c_str());
  for (const char* name : {"source", "ratio", "lms", "gs"})
    if (report["sample_loo_log_error_pct"].contains(name))
      std::printf(" %s %.1f", name, report["sample_loo_log_error_pct"][name].get<double>());
  std::printf(")\nerror on %zu held-back profiled configurations (MAPE %%):", report["holdout"].get<size_t>());
  for (const char* name : {"source", "ratio", "lms", "gs"})
    if (report["holdout_mape_pct"].contains(name))
      std::printf(" %s %.1f,", name, report["holdout_mape_pct"][name].get<double>());
  std::printf(" chosen (%s) %.1f", chosen.c_str(), report["holdout_mape_pct"]["chosen"].get<double>());
  if (report["holdout_mape_pct"].contains("bundle"))
    std::printf(", adapted bundle %.1f\nwrote %s", report["holdout_mape_pct"]["bundle"].get<double>(),
                options.out_dir.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace dnncast::cli
