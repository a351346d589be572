// `dnncast transfer --source DATA --target DATA --options a,b --metric COLUMN --budget FRACTION|N
//  --strategy dm,lms,nmls,gs --learner rt,nn,xgb [--json]`: carries a model of one environment to
// another with few target samples (src/transfer) and prints the MAPE of each strategy x learner on
// every target row not sampled. DATA is a plain CSV file or a dnncast dataset (SQLite), optionally
// narrowed by --source-where / --target-where (threads=1,input=3x64x64,...).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "apps/predictor.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "features/featurizer.h"
#include "core/error.h"
#include "transfer/transfer.h"

namespace dnncast::cli {

namespace {

bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[16] = {};
  in.read(magic, 16);
  return in.gcount() == 16 && std::string(magic, 15) == "SQLite format 3";
}

// Options read from a dataset when --options is not given: the configuration and the network's size.
const std::vector<std::string> kDatasetOptions{"log.batch", "log.threads", "input.pixels", "log.flops_train",
                                               "log.params", "log.act_bytes", "config.opt_state_bytes"};

// Does a sample pass every key=value of a --*-where filter?
bool passes(const apps::Sample& sample, const std::map<std::string, std::string>& where) {
  for (const auto& [key, value] : where) {
    std::string actual;
    if (key == "threads") actual = std::to_string(sample.config.threads);
    else if (key == "batch") actual = std::to_string(sample.config.batch);
    else if (key == "input") actual = sample.config.input_text();
    else if (key == "optimizer") actual = name(sample.config.optimizer);
    else if (key == "precision") actual = name(sample.config.precision);
    else if (key == "device") actual = name(sample.config.device);
    else if (key == "network") actual = sample.network_name;
    else if (key == "family") actual = sample.family;
    else if (key == "env") actual = sample.environment_hash;
    else DNNCAST_ASSERT(false);
    if (actual != value) return false;
  }
  return true;
}

std::map<std::string, std::string> parse_where(const std::string& text, const std::string& flag) {
  static const std::vector<std::string> keys{"threads", "batch", "input", "optimizer", "precision",
                                             "device",  "network", "family", "env"};
  std::map<std::string, std::string> where;
  for (const std::string& item : split_list(text)) {
    size_t equals = item.find('=');
    std::string key = item.substr(0, equals);
    if (equals == std::string::npos || equals + 1 == item.size())
      throw InputError(flag + ": expected key=value, got " + quote(item));
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const std::string& name : keys) known += (known.empty() ? "" : ", ") + name;
      throw InputError(flag + ": unknown key " + quote(key) + " (known: " + known + ")");
    }
    where[key] = item.substr(equals + 1);
  }
  return where;
}

transfer::OptionTable read_dataset_table(const std::string& path, const std::vector<std::string>& options,
                                         const std::string& metric, const std::string& where_text, const std::string& flag) {
  if (metric != "time_ms" && metric != "peak_bytes")
    throw InputError("dataset " + quote(path) + ": unknown --metric " + quote(metric) + " (datasets have time_ms, peak_bytes)");
  std::map<std::string, std::string> where = parse_where(where_text, flag);
  std::vector<int> columns;
  const std::vector<std::string>& names = features::feature_names();
  for (const std::string& option : options) {
    auto found = std::find(names.begin(), names.end(), option);
    if (found == names.end())
      throw InputError("dataset " + quote(path) + " has no option column " + quote(option) + " (options are feature names such as " +
                       "config.batch, config.threads, input.pixels, log.flops_train, total.params; see the featurizer)");
    columns.push_back(static_cast<int>(found - names.begin()));
  }
  apps::TrainingTable table = apps::load_training_table(path);
  std::vector<int64_t> rows;
  for (size_t k = 0; k < table.samples.size(); ++k)
    if (passes(table.samples[k], where) && (metric == "time_ms" || table.samples[k].peak() > 0))
      rows.push_back(static_cast<int64_t>(k));
  std::string name = path + (where_text.empty() ? "" : " [" + where_text + "]");
  if (rows.empty()) throw InputError("no configuration of " + quote(name) + " has a " + metric);
  transfer::OptionTable out;
  out.name = name;
  out.options = options;
  out.x.resize(static_cast<int64_t>(rows.size()), static_cast<int64_t>(columns.size()));
  out.y.resize(static_cast<int64_t>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const apps::Sample& sample = table.samples[static_cast<size_t>(rows[r])];
    for (size_t c = 0; c < columns.size(); ++c)
      out.x(static_cast<int64_t>(r), static_cast<int64_t>(c)) = table.x(rows[r], columns[c]);
    out.y(static_cast<int64_t>(r)) = metric == "time_ms" ? sample.time_ms() : sample.peak();
  }
  return out;
}

transfer::OptionTable read_table(const std::string& path, const std::vector<std::string>& options,
                                 const std::string& metric, const std::string& where, const std::string& flag) {
  std::ifstream probe(path);
  if (!probe) throw InputError(flag + ": cannot open " + quote(path));
  if (is_sqlite_file(path)) return read_dataset_table(path, options.empty() ? kDatasetOptions : options, metric, where, flag);
  if (!where.empty()) throw InputError(flag + "-where applies to dnncast datasets only; " + quote(path) + " is a CSV file");
  if (options.empty()) throw InputError("--options is required for CSV file " + quote(path));
  return transfer::read_csv_table(path, options, metric);
}

}  // namespace

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
  app.add_option("--learner", learners_text, "comma-separated learners: rt (cart), nn (mlp), xgb (xgboost), or any "
                                             "registry name (default rt,nn,xgb)");
  app.add_option("--draws", draws, "random draws of the target sample (default 20)");
  app.add_option("--folds", folds, "folds of scratch_all's cross-validation (default 10)");
  app.add_option("--seed", seed, "seed of the draws and folds (default 1)");
  app.add_option("--source-where", source_where, "dataset only: keep configurations with key=value[,key=value] "
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
  std::printf("budget %lld target rows (%.2f%%); MAPE %% on the %lld rows not sampled, mean (sd) over %d draws; "
              "scratch_all: %d-fold CV on all %lld rows\n",
              static_cast<long long>(result.budget_rows), 100.0 * static_cast<double>(result.budget_rows) /
                                                                static_cast<double>(result.target_rows),
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
      if (cell.draws > 1) std::snprintf(text, sizeof text, "%.2f (%.2f)", cell.mape_pct, cell.mape_sd_pct);
      else std::snprintf(text, sizeof text, "%.2f", cell.mape_pct);
      std::printf(" %16s", text);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace dnncast::cli
