// `dnncast calibrate --predictor P --plan PLAN --budget N|FRACTION --db OUT [--out DIR]`: adapts a time
// predictor to this host with few measurements; the steps are apps::calibrate_host's
// (src/calibrate/calibrate.h, docs/TRANSFER.md "Calibrate").
// `dnncast calibrate --predictor P --from-db DATA --budget N [--draws K]`: the same adaptation on the
// configurations DATA already holds, scored on all those not sampled (apps::calibrate_offline).
// This file parses and prints.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "calibrate/calibrate.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "measure/campaign.h"

namespace dnncast::cli {

namespace {

void print_spread(const nlohmann::json& spread) {
  std::printf(" %6.1f (%.1f, %.1f-%.1f)", spread["mean"].get<double>(), spread["sd"].get<double>(),
              spread["min"].get<double>(), spread["max"].get<double>());
}

int run_offline(const CLI::App& app, const calibrate::CalibrateOptions& options,
                calibrate::OfflineCalibrateOptions offline, const std::string& isa_text, bool json) {
  for (const char* name : {"--plan", "--db", "--out", "--holdout", "--threads", "--cpus", "--time-budget-s"})
    if (app.count(name) > 0) throw InputError(std::string(name) + " does not go with --from-db (nothing is profiled)");
  offline.predictor_dir = options.predictor_dir;
  offline.budget = options.budget;
  offline.seed = options.seed;
  if (!isa_text.empty()) offline.isa = parse_isa_option(isa_text, "--isa");
  nlohmann::json report = calibrate::calibrate_offline(offline);
  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  std::printf("offline calibration of %s on %s: %lld configurations (mean of their repeats; features %s)\n",
              offline.predictor_dir.c_str(), offline.db_path.c_str(), report["candidates"].get<long long>(),
              report["isa"].get<std::string>().c_str());
  std::printf("noise floor (a repeat against its configuration's mean): %.1f%%\n",
              report["noise_floor_pct"].get<double>());
  std::printf("the predictor as is (DM) on all %lld: MAPE %.1f%% against the means, %.1f%% against single repeats\n",
              report["candidates"].get<long long>(), report["dm_all_mape_pct"].get<double>(),
              report["dm_all_repeat_mape_pct"].get<double>());
  std::printf("GS terms:");
  for (const auto& term : report["gs_terms"]) std::printf(" %s", term.get<std::string>().c_str());
  std::printf("\nbudget %lld; MAPE %% on the %lld configurations not sampled, mean (sd, min-max) over %lld draws\n",
              report["budget"].get<long long>(), report["evaluated"].get<long long>(),
              report["draws"].get<long long>());
  std::printf("%-7s %-22s %-22s", "sampler", "dm", "chosen");
  for (const char* name : {"ratio", "lms", "gs"}) std::printf(" %-22s", name);
  std::printf(" chosen maps\n");
  for (const char* sampler : {"guided", "random"}) {
    const nlohmann::json& errors = report[sampler]["mape_pct"];
    std::printf("%-7s", sampler);
    for (const char* name : {"dm", "chosen", "ratio", "lms", "gs"}) {
      if (errors.contains(name))
        print_spread(errors[name]);
      else
        std::printf(" %22s", "-");
    }
    std::printf(" ");
    for (const auto& [map, count] : report[sampler]["chosen_count"].items())
      std::printf(" %s %lld", map.c_str(), count.get<long long>());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int run_calibrate(const Args& args) {
  if (int code = 0; calibrate_other_form(args, code)) return code;  // MODEL --minutes, --layer-bench
  CLI::App app(
      "Adapt a time predictor to this host: profile only the configurations guided sampling finds most\n"
      "informative, fit a guided shift of the predictor's forecasts, write an adapted predictor bundle, and\n"
      "report the error on extra held-back profiled configurations (docs/TRANSFER.md).\n"
      "With --from-db DATA: the same sampling and shift on the configurations DATA already holds, scored on\n"
      "all the configurations not sampled, over --draws guided and random samples; nothing is profiled.",
      "dnncast calibrate");
  calibrate::CalibrateOptions options;
  std::string cpus_text;
  bool json = false;
  app.add_option("--predictor", options.predictor_dir, "source predictor set (DIR with time/, or a time bundle)")
      ->required();
  app.add_option("--plan", options.plan_path, "campaign plan whose configurations are the candidates");
  app.add_option("--budget", options.budget,
                 "configurations to profile: a fraction of the candidates in (0, 1) or a count "
                 "(default 0.1)");
  app.add_option("--db", options.db_path, "dataset the calibration measurements go to (created or resumed)");
  app.add_option("--out", options.out_dir, "folder of the adapted predictor bundle (default: none written)");
  app.add_option("--holdout", options.holdout,
                 "extra random configurations profiled only to report the error (default 4)");
  app.add_option("--threads", options.threads, "measure every candidate at this thread count (default: the plan's)")
      ->check(thread_count());
  app.add_option("--cpus", cpus_text, "pin the measurements to these CPUs (\"0\")");
  app.add_option("--time-budget-s", options.time_budget_s,
                 "timing budget per measurement, seconds (default: the plan's)");
  app.add_option("--seed", options.seed, "seed of the sample (default 1)");
  calibrate::OfflineCalibrateOptions offline;
  std::string isa_text;
  app.add_option("--from-db", offline.db_path,
                 "offline: the configurations of this dataset are the candidates, nothing is profiled, the maps "
                 "are scored on all those not sampled (instead of --plan and --db)");
  app.add_option("--draws", offline.draws, "offline: samples drawn per sampler, guided and random (default 20)");
  app.add_option("--env", offline.environment, "offline: keep only this environment of the dataset");
  app.add_option(
      "--isa", isa_text,
      "offline: compute the features under this ISA's rules (" + isa_list() + "; default: as the dataset records)");
  app.add_flag("--list-draws", offline.list_draws, "offline, with --json: list every draw's sample and errors");
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  if (!offline.db_path.empty()) return run_offline(app, options, offline, isa_text, json);
  for (const char* name : {"--draws", "--env", "--isa", "--list-draws"})
    if (app.count(name) > 0) throw InputError(std::string(name) + " goes with --from-db");
  if (options.plan_path.empty() || options.db_path.empty())
    throw InputError("--plan and --db are required (or --from-db DATA for an offline calibration)");
  if (!cpus_text.empty()) options.cpus = measure::parse_cpu_list(cpus_text);
  nlohmann::json report = calibrate::calibrate_host(options);

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
