// `dnncast evaluate --db DATA --split random|family|batch|input|env`: held-out error of the learned
// predictor beside the analytic baseline and the noise floor (study/evaluate.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_report.h"
#include "core/error.h"
#include "learn/learner.h"
#include "store/store.h"
#include "study/evaluate.h"
#include "study/holdout.h"

namespace dnncast::cli {

namespace {

// `evaluate --predictor SET`: a shipped set scored on the dataset's holdout runs (or all of them); nothing fitted.
int score_holdout(const std::string& predictor_dir, const std::string& db, const std::string& environment,
                  bool all_runs, bool as_json, bool markdown, const std::string& json_out) {
  std::ofstream json_file = open_output(json_out);
  study::ScoreOptions score_options;
  score_options.runs = all_runs ? study::HoldoutRuns::Include : study::HoldoutRuns::Only;
  score_options.environment = environment;
  study::PredictorScore score = study::score_predictor(predictor_dir, db, score_options);
  print_report(score, as_json, markdown, json_file, json_out);
  return 0;
}

}  // namespace

int run_evaluate(const Args& args) {
  CLI::App app(
      "Error of the learned predictor on held-out configurations (MRE, median and p90 relative error, share\n"
      "within 10%) for time and memory, beside the noise floor of the same data and a least-squares roofline.",
      "dnncast evaluate");
  study::EvaluateOptions options;  // the flags below fill it where they can
  study::TableOptions table;
  std::string db, target, predictions_path, learners_text, hyperparameters_text, json_out, bench_path, predictor_dir;
  int threads = 1;
  int64_t seed = 1;
  bool as_json = false, markdown = false, quiet = false, all_runs = false;
  app.add_option("--db", db, "dataset (SQLite file of dnncast campaign)")->required();
  app.add_option("--split", options.split,
                 "random | family | batch | input (the largest image size held out) | env (default random)");
  app.add_option("--learner", options.learner, "auto (AutoML on the training part) or a learner name");
  app.add_option("--learners", learners_text, "with --learner auto: comma-separated learners to search (default all)");
  app.add_option("--hyperparameters", hyperparameters_text,
                 "with a learner name: JSON object of hyperparameters over its defaults, e.g. '{\"max_depth\": 8}'");
  app.add_option("--transform", options.transform,
                 "try only this target transform: log, log_ratio, log_residual or identity (default: all that apply)");
  app.add_option("--budget-s", options.budget_s, "AutoML budget per target, seconds (default 60)");
  app.add_option("--folds", options.folds, "AutoML folds and family-split folds (default 5)");
  app.add_option("--target", target, "time | memory (default: both when the data has memory)");
  app.add_option("--env", table.environment, "evaluate on one environment of the dataset");
  app.add_option("--time-column", table.time_column, "median (default) or normalised");
  app.add_option("--seed", seed, "seed of splits and search (default 1)");
  app.add_option("--threads", threads, "threads for fitting XGBoost (default 1)")->check(thread_count());
  app.add_option("--predictions", predictions_path,
                 "write every held-out run (measured, forecast, roofline) to this CSV file");
  app.add_flag("--json", as_json, "print JSON");
  app.add_option("--json-out", json_out, "also write the JSON report to this file (whatever is printed)");
  app.add_flag("--markdown", markdown, "print a docs/RESULTS.md-ready table");
  app.add_option("--cv-groups", options.cv_groups,
                 "AutoML folds keep each network whole (network), each family (family), or none; default: family for "
                 "the family split, network otherwise");
  app.add_flag("--quiet", quiet, "no progress on stderr");
  app.add_flag("--layer-feature", options.layer_feature,
               "where the data has per-layer timings, also give the time predictor the layer-wise model's "
               "forecast as a feature (est.layers_ms)");
  std::vector<std::string> models{"whole", "layerwise"};
  app.add_option(
         "--model", models,
         "time predictors scored side by side: whole (the whole-network learner), layerwise (the sum of "
         "per-layer forecasts), hybrid (the whole-network learner with that sum as a feature), scaled (the "
         "whole-network learner, past the trained batches carried by the layer-wise sum's batch scaling), "
         "corrected (the layer-wise sum times a learned correction: log_ratio over it); default whole,layerwise")
      ->delimiter(',');
  app.add_option("--layer-bench", bench_path,
                 "also fit the layer-wise model on this dataset's single-layer benchmarks (dnncast bench-layers)");
  app.add_option("--bench-target", options.bench_target, "warm (default) or cold: which timing of a benchmark to fit");
  app.add_option("--predictor", predictor_dir,
                 "score this predictor set on the dataset's holdout runs (data/plans/holdout.json) instead: nothing is "
                 "fitted; MRE beside the noise floor, and the share inside the 90% interval");
  app.add_flag("--all-runs", all_runs, "with --predictor: score every run of the dataset, not only the holdout's");
  if (!parse_args(app, args, "evaluate")) return 0;
  if (all_runs && predictor_dir.empty()) throw InputError("--all-runs goes with --predictor");
  if (!predictor_dir.empty()) {
    for (const char* option : {"--split", "--learner", "--learners", "--hyperparameters", "--transform", "--budget-s",
                               "--folds", "--target", "--time-column", "--seed", "--threads", "--predictions",
                               "--cv-groups", "--layer-feature", "--model", "--layer-bench", "--bench-target"})
      if (app.count(option) > 0)
        throw InputError(std::string(option) + " does not go with --predictor (nothing is fitted)");
    return score_holdout(predictor_dir, db, table.environment, all_runs, as_json, markdown, json_out);
  }
  if (options.learner != "auto") learn::learner_info(options.learner);
  options.learners = split_list(learners_text);
  for (const std::string& name : options.learners) learn::learner_info(name);  // unknown names fail before any work
  if (!options.learners.empty() && options.learner != "auto") throw InputError("--learners goes with --learner auto");
  if (!hyperparameters_text.empty() && options.learner == "auto")
    throw InputError("--hyperparameters goes with a learner name (--learner xgboost, ...)");
  options.hyperparameters = learn::parse_hyperparameters(options.learner, hyperparameters_text, "--hyperparameters");
  if (!target.empty() && target != "time" && target != "memory")
    throw InputError("unknown --target " + quote(target) + " (known: time, memory)");
  if (!(options.budget_s > 0)) throw InputError("--budget-s must be positive");
  if (options.folds < 2) throw InputError("--folds must be at least 2");
  learn::set_fit_threads(threads);
  study::set_time_models(options, models, "--model");
  if ((options.hybrid || options.corrected) && options.layer_feature)
    throw InputError("--layer-feature is --model hybrid alone: give one of them");
  study::check_bench_target(options.bench_target, "--bench-target");
  study::check_split(options.split);
  // Output files are opened before the minutes of fitting: an unwritable path fails first.
  std::ofstream predictions_file = open_output(predictions_path), json_file = open_output(json_out);
  table.simulate_memory = target.empty() || target == "memory";
  table.layer_sites = target.empty() || target == "time";
  if (!bench_path.empty()) {
    options.layer_bench = study::read_layer_benchmarks(bench_path, "--layer-bench");
    table.all_layer_sites = table.layer_sites;
  }
  const study::TrainingTable training = study::load_training_table(db, table);
  options.keep_predictions = !predictions_path.empty();
  options.seed = static_cast<uint64_t>(seed);
  if (!target.empty()) options.targets = {target};
  options.log = quiet ? nullptr : &std::cerr;
  study::EvaluationReport report = study::evaluate(training, options);
  if (predictions_file.is_open()) {
    study::write_predictions_csv(training, report, predictions_file);
    predictions_file.close();
    if (!predictions_file) throw InputError("cannot write " + predictions_path);
  }
  print_report(report, as_json, markdown, json_file, json_out);
  return 0;
}

}  // namespace dnncast::cli
