// `dnncast train --db DATA --target time|memory|all --out DIR`: AutoML over the learners on a
// dataset, refit of the best, written as a predictor bundle (forecast/predictor.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "learn/learner.h"
#include "study/training.h"

namespace dnncast::cli {

int run_train(const Args& args) {
  CLI::App app(
      "Fit a predictor bundle from a dataset: k-fold AutoML over learners and hyperparameters within a time\n"
      "budget and/or a candidate budget, the best refit on all configurations. --target all writes OUT/time\n"
      "and, when the dataset has peak bytes, OUT/memory (the layout of data/predictors/NAME).",
      "dnncast train");
  study::TrainOptions search;  // the search of every predictor here; the flags below fill it
  study::TableOptions table_options;
  std::string db, target = "all", out, learners_text;
  int threads = 1;
  int64_t seed = 1;
  bool quiet = false;
  app.add_option("--db", db, "dataset (SQLite file of dnncast campaign)")->required();
  app.add_option("--target", target, "time | memory | all (default all)");
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--budget-s", search.budget_s,
                 "AutoML time budget per target, seconds (default 60; 0 = none, with --candidates)");
  app.add_option("--candidates", search.max_candidates,
                 "stop each target's search after N candidates (default: when the time budget is spent); with\n"
                 "--budget-s 0 the search is the same on every machine");
  app.add_option("--folds", search.folds, "cross-validation folds (default 5)");
  app.add_option(
      "--learners", learners_text, "comma-separated learners to search (default all: " + [] {
        std::string names;
        for (const std::string& name : learn::learner_names()) names += (names.empty() ? "" : ",") + name;
        return names;
      }() + ")");
  app.add_option("--env", table_options.environment, "train on one environment of the dataset (hash, label or slug)");
  app.add_option("--time-column", table_options.time_column,
                 "median (default) or normalised (probe-scaled) iteration time");
  app.add_option("--seed", seed, "seed of folds and random search (default 1)");
  app.add_option("--threads", threads, "threads for fitting XGBoost (default 1)")->check(thread_count());
  std::string transform;
  app.add_option(
      "--transform", transform,
      "search only this target transform: log, log_ratio, log_residual or identity (default: all that apply)");
  app.add_option("--cv-groups", search.cv_groups,
                 "AutoML folds keep each network whole (network, default), each family (family), or none");
  app.add_flag("--quiet", quiet, "no AutoML progress on stderr");
  std::string bench_path, bench_target = "warm";
  bool layers_only = false;
  app.add_option("--layer-bench", bench_path,
                 "also fit a layer-wise model (OUT/time/layers) on this dataset's single-layer benchmarks (dnncast\n"
                 "bench-layers) and the --db dataset's per-layer runs, and the corrected layer-wise model\n"
                 "(OUT/time/corrected: that sum times a learned correction): `predict` carries forecasts past the\n"
                 "trained batches with the first and forecasts the largest inputs with the second");
  app.add_option("--bench-target", bench_target, "warm (default) or cold: which timing of a benchmark to fit");
  app.add_flag(
      "--layers-only", layers_only,
      "with --layer-bench: write only OUT/time/layers and OUT/time/corrected, leaving the set's time and memory\n"
      "predictors as they are");
  if (!parse_args(app, args, "train")) return 0;
  study::check_bench_target(bench_target, "--bench-target");
  if (layers_only && bench_path.empty()) throw InputError("--layers-only goes with --layer-bench FILE");
  if (!bench_path.empty() && target != "all")
    throw InputError("--layer-bench goes with --target all (the layer-wise model lives in OUT/time/layers)");
  if (layers_only && !std::filesystem::exists(out + "/time/manifest.json"))
    throw InputError("--layers-only: no predictor set at " + out + " (" + out + "/time/manifest.json is missing)");
  if (target != "time" && target != "memory" && target != "all")
    throw InputError("unknown --target " + quote(target) + " (known: time, memory, all)");
  if (search.max_candidates < 0)
    throw InputError("--candidates must be positive, got " + std::to_string(search.max_candidates));
  if (!(search.budget_s > 0) && !(search.budget_s == 0 && search.max_candidates > 0))
    throw InputError("--budget-s must be positive (0 only with --candidates N)");
  if (search.folds < 2) throw InputError("--folds must be at least 2, got " + std::to_string(search.folds));
  learn::set_fit_threads(threads);
  search.learners = split_list(learners_text);
  for (const std::string& name : search.learners) learn::learner_info(name);  // unknown names fail before any work
  search.seed = static_cast<uint64_t>(seed);
  search.log = quiet ? nullptr : &std::cerr;

  std::vector<records::LayerBenchRecord> bench;
  if (!bench_path.empty()) bench = study::read_layer_benchmarks(bench_path, "--layer-bench");
  table_options.layer_sites = !bench_path.empty();
  table_options.all_layer_sites = !bench_path.empty();  // the corrected model needs every sample's sum
  study::TrainingTable table = study::load_training_table(db, table_options);
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
    if (table.has_memory())
      jobs.emplace_back("memory", out + "/memory");
    else
      std::fprintf(stderr, "note: no memory predictor: some configurations have no peak bytes\n");
  } else {
    jobs.emplace_back(target, out);
  }
  for (const auto& [job_target, folder] : jobs) {
    study::TrainOptions options = search;
    options.target = job_target;
    options.transform = transform;
    if (!quiet) std::fprintf(stderr, "train %s:\n", job_target.c_str());
    forecast::Predictor predictor = study::train_predictor(table, options);
    predictor.save(folder);
    const forecast::Manifest& manifest = predictor.manifest();
    std::printf("wrote %s: %s predictor, %s (%s), CV MRE %.2f%% over %zu configurations\n", folder.c_str(),
                job_target.c_str(), manifest.learner.c_str(), manifest.transform.name().c_str(),
                100 * manifest.cv.at("mre").get<double>(), table.samples.size());
  }
  if (!bench.empty()) {
    forecast::LayerModel layers = study::train_layer_model(table, bench, bench_target, quiet ? nullptr : &std::cerr);
    layers.save(out + "/time/layers");
    std::printf("wrote %s/time/layers: layer-wise model on %lld layer rows\n", out.c_str(),
                static_cast<long long>(layers.training_rows()));
    // The corrected layer-wise model: the layer-wise sum times a learned correction, for the largest
    // inputs and past the trained batches (forecast/forecast.cpp).
    if (!quiet) std::fprintf(stderr, "train the corrected layer-wise model:\n");
    std::filesystem::remove_all(out + "/time/corrected");  // fitted over another layer-wise model
    try {
      forecast::Predictor corrected = study::train_corrected_model(table, layers, search);
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
