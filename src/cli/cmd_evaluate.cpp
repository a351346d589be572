// `dnncast evaluate --db DATA --split random|family|batch|input|env`: held-out error of the learned
// predictor beside the analytic baseline and the noise floor (apps/evaluate.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "apps/evaluate.h"
#include "apps/holdout.h"
#include "cli/commands.h"
#include "data/store.h"
#include "cli/parse_args.h"
#include "cli/print_report.h"
#include "core/error.h"
#include "learn/learner.h"

namespace dnncast::cli {

int run_evaluate(const Args& args) {
  CLI::App app(
      "Error of the learned predictor on held-out configurations (MRE, median and p90 relative error, share\n"
      "within 10%) for time and memory, beside the noise floor of the same data and a least-squares roofline.",
      "dnncast evaluate");
  std::string db, split = "random", learner = "auto", target, environment, time_column = "median", transform,
      predictions_path;
  double budget_s = 60;
  int folds = 5, threads = 1;
  int64_t seed = 1;
  bool as_json = false, markdown = false, quiet = false;
  app.add_option("--db", db, "dataset (SQLite file of dnncast campaign)")->required();
  app.add_option("--split", split, "random | family | batch | input (the largest image size held out) | env (default random)");
  app.add_option("--learner", learner, "auto (AutoML on the training part) or a learner name");
  std::string learners_text, hyperparameters_text;
  app.add_option("--learners", learners_text, "with --learner auto: comma-separated learners to search (default all)");
  app.add_option("--hyperparameters", hyperparameters_text,
                 "with a learner name: JSON object of hyperparameters over its defaults, e.g. '{\"max_depth\": 8}'");
  app.add_option("--transform", transform,
                 "try only this target transform: log, log_ratio, log_residual or identity (default: all that apply)");
  app.add_option("--budget-s", budget_s, "AutoML budget per target, seconds (default 60)");
  app.add_option("--folds", folds, "AutoML folds and family-split folds (default 5)");
  app.add_option("--target", target, "time | memory (default: both when the data has memory)");
  app.add_option("--env", environment, "evaluate on one environment of the dataset");
  app.add_option("--time-column", time_column, "median (default) or normalised");
  app.add_option("--seed", seed, "seed of splits and search (default 1)");
  app.add_option("--threads", threads, "threads for fitting XGBoost (default 1)")->check(thread_count());
  app.add_option("--predictions", predictions_path,
                 "write every held-out run (measured, forecast, roofline) to this CSV file");
  app.add_flag("--json", as_json, "print JSON");
  std::string json_out;
  app.add_option("--json-out", json_out, "also write the JSON report to this file (whatever is printed)");
  app.add_flag("--markdown", markdown, "print a docs/RESULTS.md-ready table");
  std::string cv_groups;
  app.add_option("--cv-groups", cv_groups,
                 "AutoML folds keep each network whole (network), each family (family), or none; default: family for "
                 "the family split, network otherwise");
  app.add_flag("--quiet", quiet, "no progress on stderr");
  bool layer_feature = false;
  app.add_flag("--layer-feature", layer_feature,
               "where the data has per-layer timings, also give the time predictor the layer-wise model's "
               "forecast as a feature (est.layers_ms)");
  std::vector<std::string> models{"whole", "layerwise"};
  app.add_option("--model", models,
                 "time predictors scored side by side: whole (the whole-network learner), layerwise (the sum of "
                 "per-layer forecasts), hybrid (the whole-network learner with that sum as a feature), scaled (the "
                 "whole-network learner, past the trained batches carried by the layer-wise sum's batch scaling), "
                 "corrected (the layer-wise sum times a learned correction: log_ratio over it); default whole,layerwise")
      ->delimiter(',');
  std::string bench_path, bench_target = "warm";
  app.add_option("--layer-bench", bench_path,
                 "also fit the layer-wise model on this dataset's single-layer benchmarks (dnncast bench-layers)");
  app.add_option("--bench-target", bench_target, "warm (default) or cold: which timing of a benchmark to fit");
  std::string predictor_dir;
  bool all_runs = false;
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
      if (app.count(option) > 0) throw InputError(std::string(option) + " does not go with --predictor (nothing is fitted)");
    std::ofstream json_file;
    if (!json_out.empty()) {
      json_file.open(json_out);
      if (!json_file) throw InputError("cannot write " + json_out);
    }
    apps::ScoreOptions score_options;
    score_options.runs = all_runs ? apps::HoldoutRuns::Include : apps::HoldoutRuns::Only;
    score_options.environment = environment;
    apps::PredictorScore score = apps::score_predictor(predictor_dir, db, score_options);
    print_report(score, as_json, markdown, json_file, json_out);
    return 0;
  }
  if (learner != "auto") learn::learner_info(learner);
  std::vector<std::string> learners = split_list(learners_text);
  for (const std::string& name : learners) learn::learner_info(name);  // unknown names fail before any work
  if (!learners.empty() && learner != "auto") throw InputError("--learners goes with --learner auto");
  nlohmann::json hyperparameters = nlohmann::json::object();
  if (!hyperparameters_text.empty()) {
    if (learner == "auto") throw InputError("--hyperparameters goes with a learner name (--learner xgboost, ...)");
    hyperparameters = nlohmann::json::parse(hyperparameters_text, nullptr, false);
    if (!hyperparameters.is_object())
      throw InputError("--hyperparameters is not a JSON object: " + hyperparameters_text);
    learn::make_learner(learner, hyperparameters);  // unknown or ill-typed names fail before any work
  }
  if (!target.empty() && target != "time" && target != "memory")
    throw InputError("unknown --target " + quote(target) + " (known: time, memory)");
  if (!(budget_s > 0)) throw InputError("--budget-s must be positive");
  if (folds < 2) throw InputError("--folds must be at least 2");
  if (threads < 1) throw InputError("--threads must be at least 1");
  learn::set_fit_threads(threads);
  // Output files are opened before the minutes of fitting: an unwritable path fails first.
  std::ofstream predictions_file, json_file;
  for (auto [path, file] : {std::pair{&predictions_path, &predictions_file}, std::pair{&json_out, &json_file}}) {
    if (path->empty()) continue;
    file->open(*path);
    if (!*file) throw InputError("cannot write " + *path);
  }

  apps::TableOptions table_options;
  table_options.time_column = time_column;
  table_options.environment = environment;
  table_options.simulate_memory = target.empty() || target == "memory";
  table_options.layer_sites = target.empty() || target == "time";
  apps::EvaluateOptions options;
  for (const std::string& model : models)
    if (model != "whole" && model != "layerwise" && model != "hybrid" && model != "scaled" && model != "corrected")
      throw InputError("unknown --model " + quote(model) + " (known: whole, layerwise, hybrid, scaled, corrected)");
  options.hybrid = std::find(models.begin(), models.end(), "hybrid") != models.end();
  options.scaled = std::find(models.begin(), models.end(), "scaled") != models.end();
  options.corrected = std::find(models.begin(), models.end(), "corrected") != models.end();
  if ((options.hybrid || options.corrected) && layer_feature)
    throw InputError("--layer-feature is --model hybrid alone: give one of them");
  if (bench_target != "warm" && bench_target != "cold")
    throw InputError("unknown --bench-target " + quote(bench_target) + " (known: warm, cold)");
  if (split != "random" && split != "family" && split != "batch" && split != "input" && split != "env")
    throw InputError("unknown split " + quote(split) + " (known: random, family, batch, input, env)");
  options.bench_target = bench_target;
  if (!bench_path.empty()) {
    data::Store bench = data::Store::open(bench_path, data::Database::Mode::ReadOnly);
    options.layer_bench = bench.layer_benchmarks();
    if (options.layer_bench.empty()) throw InputError(bench_path + ": no layer benchmarks (dnncast bench-layers)");
    table_options.all_layer_sites = table_options.layer_sites;
  }
  apps::TrainingTable table = apps::load_training_table(db, table_options);
  options.split = split;
  options.layer_feature = layer_feature;
  options.learner = learner;
  options.learners = learners;
  options.hyperparameters = hyperparameters;
  options.transform = transform;
  options.keep_predictions = !predictions_path.empty();
  options.budget_s = budget_s;
  options.folds = folds;
  options.seed = static_cast<uint64_t>(seed);
  if (!target.empty()) options.targets = {target};
  options.log = quiet ? nullptr : &std::cerr;
  options.cv_groups = cv_groups;
  apps::EvaluationReport report = apps::evaluate(table, options);
  if (predictions_file.is_open()) {
    apps::write_predictions_csv(table, report, predictions_file);
    predictions_file.close();
    if (!predictions_file) throw InputError("cannot write " + predictions_path);
  }
  print_report(report, as_json, markdown, json_file, json_out);
  return 0;
}

}  // namespace dnncast::cli
