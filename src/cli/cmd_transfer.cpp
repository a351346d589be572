// `dnncast transfer --source DATA --target DATA --options a,b --metric COLUMN --budget FRACTION|N
//  --strategy dm,lms,nmls,gs --learner rt,nn,xgb [--json]`: carries a model of one environment to
// another with few target samples (src/transfer) and prints the MAPE of each strategy x learner on
// every target row not sampled. DATA is a plain CSV file or a dnncast dataset (SQLite), optionally
// narrowed by --source-where / --target-where (threads=1,input=3x64x64,...).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/transfer_table.h"
#include "core/error.h"
#include "transfer/transfer.h"

namespace dnncast::cli {

int run_transfer(const Args& args) {
  CLI::App app(
      "Carry a performance model from a source environment to a target one with few target samples\n"
      "(Iqbal, Kotthoff, Jamshidi 2019; docs/TRANSFER.md). Strategies: dm (source model as is), lms (linear\n"
      "shift), nmls (learned non-linear shift), gs (guided sampling), and the references random (from\n"
      "scratch on a random sample of the same budget) and scratch_all (from scratch on all target rows,\n"
      "k-fold cross-validated). Every strategy but scratch_all is scored on the target rows it did not\n"
      "sample: MAPE, mean over --draws random draws.",
      "dnncast transfer");
  std::string source, target, options_text, metric, strategies_text = "dm,lms,nmls,gs,random,scratch_all";
  std::string learners_text = "rt,nn,xgb", source_where, target_where;
  double budget = 0.0244;
  int draws = 20, folds = 10;
  int64_t seed = 1;
  bool json = false;
  app.add_option("--source", source, "source data: CSV file or dnncast dataset")->required();
  app.add_option("--target", target, "target data: CSV file or dnncast dataset")->required();
  app.add_option("--options", options_text, "comma-separated option columns (CSV: required; dataset: feature names)");
  app.add_option("--metric", metric, "metric column (CSV), or time_ms | peak_bytes (dataset)")->required();
  app.add_option("--budget", budget, "target rows to sample: a fraction in (0, 1) or a count (default 0.0244)");
  app.add_option("--strategy", strategies_text, "comma-separated: dm,lms,nmls,gs,random,scratch_all (default all)");
  app.add_option("--learner", learners_text,
                 "comma-separated learners: rt (cart), nn (mlp), xgb (xgboost), or any "
                 "registry name (default rt,nn,xgb)");
  app.add_option("--draws", draws, "random draws of the target sample (default 20)");
  app.add_option("--folds", folds, "folds of scratch_all's cross-validation (default 10)");
  app.add_option("--seed", seed, "seed of the draws and folds (default 1)");
  app.add_option("--source-where", source_where,
                 "dataset only: keep configurations with key=value[,key=value] "
                 "(threads, batch, input, optimizer, precision, device, network, family, env)");
  app.add_option("--target-where", target_where, "dataset only: same for the target");
  app.add_flag("--json", json, "print the result as JSON");
  if (!parse_args(app, args, "transfer")) return 0;
  transfer::ExperimentOptions options;
  options.budget = budget;
  options.strategies = split_list(strategies_text);
  options.learners = split_list(learners_text);
  options.draws = draws;
  options.folds = folds;
  options.seed = static_cast<uint64_t>(seed);
  for (const std::string& learner : options.learners) transfer::learner_name(learner);  // fail before reading data
  std::vector<std::string> option_names = split_list(options_text);
  transfer::OptionTable source_table = read_table(source, option_names, metric, source_where, "--source");
  transfer::OptionTable target_table = read_table(target, option_names, metric, target_where, "--target");
  transfer::ExperimentResult result = transfer::run_experiment(source_table, target_table, options);

  if (json) {
    nlohmann::json out = result.to_json();
    out["metric"] = metric;
    out["budget"] = budget;
    out["draws"] = draws;
    out["folds"] = folds;
    out["seed"] = seed;
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  std::printf("source %s (%lld rows) -> target %s (%lld rows), metric %s\n", result.source.c_str(),
              static_cast<long long>(result.source_rows), result.target.c_str(),
              static_cast<long long>(result.target_rows), metric.c_str());
  std::printf(
      "budget %lld target rows (%.2f%%); MAPE %% on the %lld rows not sampled, mean (sd) over %d draws; "
      "scratch_all: %d-fold CV on all %lld rows\n",
      static_cast<long long>(result.budget_rows),
      100.0 * static_cast<double>(result.budget_rows) / static_cast<double>(result.target_rows),
      static_cast<long long>(result.target_rows - result.budget_rows), draws, folds,
      static_cast<long long>(result.target_rows));
  std::printf("GS influential terms on the source:");
  for (size_t k = 0; k < result.source_terms.size(); ++k)
    std::printf(" %s (%.1f%%)", result.source_terms[k].name(result.options).c_str(), 100 * result.source_gains[k]);
  std::printf("%s\n", result.source_terms.empty() ? " none" : "");
  std::printf("%-12s %8s", "strategy", "samples");
  for (const std::string& learner : options.learners) std::printf(" %16s", learner.c_str());
  std::printf("\n");
  for (size_t s = 0; s < options.strategies.size(); ++s) {
    const transfer::Cell& first = result.cells[s * options.learners.size()];
    std::printf("%-12s %8lld", first.strategy.c_str(), static_cast<long long>(first.samples));
    for (size_t l = 0; l < options.learners.size(); ++l) {
      const transfer::Cell& cell = result.cells[s * options.learners.size() + l];
      char text[64];
      if (cell.draws > 1)
        std::snprintf(text, sizeof text, "%.2f (%.2f)", cell.mape_pct, cell.mape_sd_pct);
      else
        std::snprintf(text, sizeof text, "%.2f", cell.mape_pct);
      std::printf(" %16s", text);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace dnncast::cli
