// `dnncast train --db DATA --target time|memory|all --out DIR`: AutoML over the learners on a
// dataset, refit of the best, written as a predictor bundle (apps/predictor.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/predictor.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "data/store.h"
#include "features/featurizer.h"
#include "learn/learner.h"

namespace dnncast::cli {

int run_train(const Args& args) {
  CLI::App app(
      "Fit a predictor bundle from a dataset: k-fold AutoML over learners and hyperparameters within a time\n"
      "budget and/or a candidate budget, the best refit on all configurations. --target all writes OUT/time\n"
      "and, when the dataset has peak bytes, OUT/memory (the layout of data/predictors/NAME).",
      "dnncast train");
  std::string db, target = "all", out, learners_text, environment, time_column = "median";
  double budget_s = 60;
  int folds = 5, threads = 1;
  int64_t seed = 1, candidates = 0;
  bool quiet = false;
  app.add_option("--db", db, "dataset (SQLite file of dnncast campaign)")->required();
  app.add_option("--target", target, "time | memory | all (default all)");
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--budget-s", budget_s,
                 "AutoML time budget per target, seconds (default 60; 0 = none, with --candidates)");
  app.add_option("--candidates", candidates,
                 "stop each target's search after N candidates (default: when the time budget is spent); with\n"
                 "--budget-s 0 the search is the same on every machine");
  app.add_option("--folds", folds, "cross-validation folds (default 5)");
  app.add_option("--learners", learners_text, "comma-separated learners to search (default all: " + [] {
    std::string names;
    for (const std::string& name : learn::learner_names()) names += (names.empty() ? "" : ",") + name;
    return names;
  }() + ")");
  app.add_option("--env", environment, "train on one environment of the dataset (hash, label or slug)");
  app.add_option("--time-column", time_column, "median (default) or normalised (probe-scaled) iteration time");
  app.add_option("--seed", seed, "seed of folds and random search (default 1)");
  app.add_option("--threads", threads, "threads for fitting XGBoost (default 1)")->check(thread_count());
  std::string transform;
  app.add_option("--transform", transform,
                 "search only this target transform: log, log_ratio, log_residual or identity (default: all that apply)");
  std::string cv_groups = "network";
  app.add_option("--cv-groups", cv_groups, "AutoML folds keep each network whole (network, default), each family (family), or none");
  app.add_flag("--quiet", quiet, "no AutoML progress on stderr");
  std::string bench_path, bench_target = "warm";
  bool layers_only = false;
  app.add_option("--layer-bench", bench_path,
                 "also fit a layer-wise model (OUT/time/layers) on this dataset's single-layer benchmarks (dnncast\n"
                 "bench-layers) and the --db dataset's per-layer runs, and the corrected layer-wise model\n"
                 "(OUT/time/corrected: that sum times a learned correction): `predict` carries forecasts past the\n"
                 "trained batches with the first and forecasts the largest inputs with the second");
  app.add_option("--bench-target", bench_target, "warm (default) or cold: which timing of a benchmark to fit");
  app.add_flag("--layers-only", layers_only,
               "with --layer-bench: write only OUT/time/layers and OUT/time/corrected, leaving the set's time and memory\n"
               "predictors as they are");
  if (!parse_args(app, args, "train")) return 0;
  if (bench_target != "warm" && bench_target != "cold")
    throw InputError("unknown --bench-target " + quote(bench_target) + " (known: warm, cold)");
  if (layers_only && bench_path.empty()) throw InputError("--layers-only goes with --layer-bench FILE");
  if (!bench_path.empty() && target != "all")
    throw InputError("--layer-bench goes with --target all (the layer-wise model lives in OUT/time/layers)");
  if (layers_only && !std::filesystem::exists(out + "/time/manifest.json"))
    throw InputError("--layers-only: no predictor set at " + out + " (" + out + "/time/manifest.json is missing)");
  if (target != "time" && target != "memory" && target != "all")
    throw InputError("unknown --target " + quote(target) + " (known: time, memory, all)");
  if (candidates < 0) throw InputError("--candidates must be positive, got " + std::to_string(candidates));
  if (!(budget_s > 0) && !(budget_s == 0 && candidates > 0))
    throw InputError("--budget-s must be positive (0 only with --candidates N)");
  if (folds < 2) throw InputError("--folds must be at least 2, got " + std::to_string(folds));
  if (threads < 1) throw InputError("--threads must be at least 1");
  learn::set_fit_threads(threads);
  std::vector<std::string> learners = split_list(learners_text);
  for (const std::string& name : learners) learn::learner_info(name);  // unknown names fail before any work

  std::vector<data::LayerBenchRecord> bench;
  if (!bench_path.empty()) {
    if (!std::filesystem::exists(bench_path)) throw InputError("--layer-bench: no such file " + bench_path);
    data::Store store = data::Store::open(bench_path, data::Database::Mode::ReadOnly);
    bench = store.layer_benchmarks();
    if (bench.empty()) throw InputError(bench_path + ": no layer benchmarks (dnncast bench-layers)");
  }
  apps::TableOptions table_options;
  table_options.time_column = time_column;
  table_options.environment = environment;
  table_options.layer_sites = !bench_path.empty();
  table_options.all_layer_sites = !bench_path.empty();  // the corrected model needs every sample's sum
  apps::TrainingTable table = apps::load_training_table(db, table_options);
  if (!quiet) {
    std::fprintf(stderr, "train: %zu configurations (%lld runs) from %s\n", table.samples.size(),
                 static_cast<long long>(table.runs_used), db.c_str());
    for (const std::string& note : table.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  }

  std::vector<std::pair<std::string, std::string>> jobs;  // target, folder
  if (layers_only) {
    // nothing but the layer-wise model below
  } else if (target == "all") {
    jobs.emplace_back("time", out + "/time");
    if (table.has_memory()) jobs.emplace_back("memory", out + "/memory");
    else std::fprintf(stderr, "note: no memory predictor: some configurations have no peak bytes\n");
  } else {
    jobs.emplace_back(target, out);
  }
  auto train_options = [&](const std::string& job_target) {  // the search options of every predictor here
    apps::TrainOptions options;
    options.target = job_target;
    options.budget_s = budget_s;
    options.max_candidates = candidates;
    options.folds = folds;
    options.seed = static_cast<uint64_t>(seed);
    options.learners = learners;
    options.log = quiet ? nullptr : &std::cerr;
    options.cv_groups = cv_groups;
    return options;
  };
  for (const auto& [job_target, folder] : jobs) {
    apps::TrainOptions options = train_options(job_target);
    options.transform = transform;
    if (!quiet) std::fprintf(stderr, "train %s:\n", job_target.c_str());
    apps::Predictor predictor = apps::train_predictor(table, options);
    predictor.save(folder);
    const apps::Manifest& manifest = predictor.manifest();
    std::printf("wrote %s: %s predictor, %s (%s), CV MRE %.2f%% over %zu configurations\n", folder.c_str(),
                job_target.c_str(), manifest.learner.c_str(), manifest.transform.name().c_str(),
                100 * manifest.cv.at("mre").get<double>(), table.samples.size());
  }
  if (!bench.empty()) {
    apps::LayerModel layers = apps::train_layer_model(table, bench, bench_target, quiet ? nullptr : &std::cerr);
    layers.save(out + "/time/layers");
    std::printf("wrote %s/time/layers: layer-wise model on %lld layer rows\n", out.c_str(),
                static_cast<long long>(layers.training_rows()));
    // The corrected layer-wise model: the layer-wise sum times a learned correction, for the largest
    // inputs and past the trained batches (apps/forecast.cpp).
    apps::TrainingTable with_sum = table;
    const std::vector<double> sums = apps::layer_estimates_of(table, layers);
    const int column = features::feature_index("est.layers_ms");
    for (size_t row = 0; row < sums.size(); ++row) with_sum.x(static_cast<int64_t>(row), column) = sums[row];
    apps::TrainOptions options = train_options("time");
    options.ratio_reference = "est.layers_ms";
    if (!quiet) std::fprintf(stderr, "train the corrected layer-wise model:\n");
    std::filesystem::remove_all(out + "/time/corrected");  // fitted over another layer-wise model
    try {
      apps::Predictor corrected = apps::train_predictor(with_sum, options);
      corrected.save(out + "/time/corrected");
      std::printf("wrote %s/time/corrected: the layer-wise sum times %s's correction, CV MRE %.2f%%\n", out.c_str(),
                  corrected.manifest().learner.c_str(), 100 * corrected.manifest().cv.at("mre").get<double>());
    } catch (const InputError& error) {
      // Too few configurations, or no layer-wise sum that varies: the layer-wise model stands alone.
      std::fprintf(stderr, "note: no corrected layer-wise model (%s): predict uses the whole-network learner there\n",
                   error.what());
    }
  }
  return 0;
}

}  // namespace dnncast::cli
