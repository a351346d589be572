// `dnncast calibrate --predictor P --plan PLAN --budget N|FRACTION --db OUT [--out DIR]`: adapts a time
// predictor to this host with few measurements (guided sampling, docs/TRANSFER.md "Calibrate"):
//   1. the plan's configurations are the candidates; the source predictor forecasts each one;
//   2. stepwise regression of the log forecasts over the configuration options finds the influential
//      ones; the budget is drawn to cover their levels, plus --holdout random others;
//   3. only those are profiled here (the campaign runner, pinned with --cpus), into OUT;
//   4. the map from forecast to measurement is chosen on the budget alone, by leave-one-out log error
//      (transfer::choose_shift): keep the source, a constant ratio, a log-space linear shift, or the
//      guided shift with the influential terms; a fitted map must beat a simpler one by more
//      than 10% + 0.5 percentage points;
//   5. every map's error and the chosen one's are reported on the holdout (which chose nothing);
//   6. an adapted predictor bundle (apps/predictor.h format) is written to --out: the source model
//      with the chosen map on its forecasts (source, ratio, lms), or for gs the source's learner
//      refitted on the shifted forecasts of every candidate. Its own holdout error is reported too.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "apps/predictor.h"
#include "cli/commands.h"
#include "cli/parse_args.h"
#include "data/campaign.h"
#include "data/network_source.h"
#include "data/plan.h"
#include "features/featurizer.h"
#include "graph/error.h"
#include "hardware/hardware.h"
#include "learn/automl.h"
#include "learn/metrics.h"
#include "transfer/transfer.h"

namespace dnncast::cli {

namespace {

// Configuration options GS reasons about (feature names; all exist in every feature version 1 row).
const std::vector<std::string> kCalibrateOptions{"log.batch", "log.threads", "input.pixels", "log.flops_train",
                                                 "log.params", "log.act_bytes", "config.opt_state_bytes"};

std::string config_key(const std::string& network_hash, const data::RunConfig& config) {
  return network_hash + "|" + std::to_string(config.batch) + "|" + config.input_text() + "|" +
         std::to_string(config.seq_len) + "|" + config.optimizer + "|" + config.precision + "|" +
         std::to_string(config.threads) + "|" + config.device;
}

double mape_of(const std::vector<double>& predicted, const std::vector<double>& truth) {
  DNNCAST_ASSERT(predicted.size() == truth.size() && !truth.empty());
  double sum = 0;
  for (size_t k = 0; k < truth.size(); ++k) sum += std::abs(predicted[k] - truth[k]) / truth[k];
  return 100 * sum / static_cast<double>(truth.size());
}

}  // namespace

int run_calibrate(const Args& args) {
  CLI::App app(
      "Adapt a time predictor to this host: profile only the configurations guided sampling finds most\n"
      "informative, fit a guided shift of the predictor's forecasts, write an adapted predictor bundle, and\n"
      "report the error on extra held-back profiled configurations (docs/TRANSFER.md).",
      "dnncast calibrate");
  std::string predictor_dir, plan_path, db_path, out_dir, cpus_text;
  double budget = 0.1;
  int64_t holdout = 4, threads = 0, seed = 1;
  double time_budget_s = 0;
  bool json = false;
  app.add_option("--predictor", predictor_dir, "source predictor set (DIR with time/, or a time bundle)")->required();
  app.add_option("--plan", plan_path, "campaign plan whose configurations are the candidates")->required();
  app.add_option("--budget", budget, "configurations to profile: a fraction of the candidates in (0, 1) or a count "
                                     "(default 0.1)");
  app.add_option("--db", db_path, "dataset the calibration measurements go to (created or resumed)")->required();
  app.add_option("--out", out_dir, "folder of the adapted predictor bundle (default: none written)");
  app.add_option("--holdout", holdout, "extra random configurations profiled only to report the error (default 4)");
  app.add_option("--threads", threads, "measure every candidate at this thread count (default: the plan's)");
  app.add_option("--cpus", cpus_text, "pin the measurements to these CPUs (\"0\")");
  app.add_option("--time-budget-s", time_budget_s, "timing budget per measurement, seconds (default: the plan's)");
  app.add_option("--seed", seed, "seed of the sample (default 1)");
  app.add_flag("--json", json, "print the report as JSON");
  if (!parse_args(app, args, "calibrate")) return 0;
  if (holdout < 1) throw InputError("--holdout must be at least 1");
  if (threads < 0) throw InputError("--threads must be positive");
  if (time_budget_s < 0) throw InputError("--time-budget-s must be positive");

  apps::PredictorSet set = apps::load_predictor_set(predictor_dir);
  if (!set.time) throw InputError("predictor set '" + predictor_dir + "' has no time predictor");
  const apps::Predictor& source = *set.time;
  data::Plan plan = data::load_plan(plan_path);
  if (time_budget_s > 0) plan.measure.time_budget_s = time_budget_s;
  plan.repeats = 1;

  // Candidates: every plan entry (at --threads), featurized for this host, with the source forecast.
  const hardware::HostInfo& host = hardware::detect_host();
  data::EnvironmentRecord here;
  here.cpu_model = host.cpu_model;
  here.cores = host.logical_cores;
  here.memory_bytes = host.memory_bytes;
  features::HardwareFeatures hardware = apps::hardware_of(here);
  std::vector<data::PlanEntry> entries;
  std::set<std::string> seen;
  for (data::PlanEntry entry : plan.entries) {
    if (threads > 0) entry.config.threads = threads;
    if (seen.insert(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config)).second)
      entries.push_back(entry);
  }
  const int64_t candidates = static_cast<int64_t>(entries.size());
  int64_t budget_rows = transfer::budget_rows(budget, candidates);
  if (budget_rows + holdout > candidates)
    throw InputError("the plan has " + std::to_string(candidates) + " configurations; --budget (" +
                     std::to_string(budget_rows) + ") plus --holdout (" + std::to_string(holdout) + ") exceed them");
  learn::Matrix rows(candidates, static_cast<int64_t>(features::feature_count()));
  std::map<std::string, features::GraphFeatures> graphs;
  for (int64_t k = 0; k < candidates; ++k) {
    const data::PlanEntry& entry = entries[static_cast<size_t>(k)];
    const data::PlanNetwork& network = plan.networks[static_cast<size_t>(entry.network)];
    std::string graph_key = network.hash + "|" + entry.config.input_text() + "|" + std::to_string(entry.config.seq_len);
    auto cached = graphs.find(graph_key);
    if (cached == graphs.end())
      cached = graphs.emplace(graph_key, features::graph_features(data::build_network(network.model, entry.config))).first;
    features::TrainingConfig config;
    config.batch = entry.config.batch;
    config.optimizer = entry.config.optimizer;
    config.precision = entry.config.precision;
    config.threads = entry.config.threads;
    std::vector<double> row = features::featurize(cached->second, config, hardware);
    for (size_t col = 0; col < row.size(); ++col) rows(k, static_cast<int64_t>(col)) = row[col];
  }
  learn::Vector forecast(candidates);
  {
    std::vector<apps::Forecast> forecasts = source.predict(rows);
    for (int64_t k = 0; k < candidates; ++k) forecast(k) = std::max(forecasts[static_cast<size_t>(k)].value, 1e-9);
  }
  learn::Matrix options(candidates, static_cast<int64_t>(kCalibrateOptions.size()));
  for (size_t c = 0; c < kCalibrateOptions.size(); ++c)
    options.col(static_cast<int64_t>(c)) = rows.col(features::feature_index(kCalibrateOptions[c]));

  // Guided sampling on the source's forecasts.
  transfer::GuidedShift shift;
  shift.source_fit = transfer::stepwise_terms(options, forecast.array().log().matrix());
  std::vector<int> covered;
  for (const transfer::Term& term : shift.source_fit.terms)
    for (int col : {term.first, term.second})
      if (col >= 0 && std::find(covered.begin(), covered.end(), col) == covered.end()) covered.push_back(col);
  learn::Rng rng(static_cast<uint64_t>(seed));
  std::vector<int64_t> sample = transfer::covering_sample(options, covered, budget_rows, rng);
  std::sort(sample.begin(), sample.end());
  std::vector<int64_t> rest = learn::complement(candidates, sample);
  std::vector<int64_t> held;
  for (int64_t pick : transfer::random_sample(static_cast<int64_t>(rest.size()), holdout, rng))
    held.push_back(rest[static_cast<size_t>(pick)]);
  std::sort(held.begin(), held.end());

  // Profile exactly those, into the dataset.
  data::Plan chosen = plan;
  chosen.entries.clear();
  for (int64_t k : sample) chosen.entries.push_back(entries[static_cast<size_t>(k)]);
  for (int64_t k : held) chosen.entries.push_back(entries[static_cast<size_t>(k)]);
  data::CampaignOptions campaign;
  campaign.db_path = db_path;
  if (!cpus_text.empty()) campaign.cpus = data::parse_cpu_list(cpus_text);
  campaign.progress_bar = 0;
  std::fprintf(stderr, "calibrate: %lld candidates; GS terms:", static_cast<long long>(candidates));
  for (const transfer::Term& term : shift.source_fit.terms) std::fprintf(stderr, " %s", term.name(kCalibrateOptions).c_str());
  std::fprintf(stderr, "; profiling %lld + %lld held back\n", static_cast<long long>(budget_rows), static_cast<long long>(holdout));
  data::CampaignSummary summary = data::run_campaign(chosen, campaign);

  // Measured times of the chosen configurations (this host's runs only).
  apps::TrainingTable table = apps::load_training_table(db_path);
  std::map<std::string, double> measured;
  for (const apps::Sample& sample_row : table.samples) measured[config_key(sample_row.network_hash, sample_row.config)] = sample_row.time_ms();
  auto measured_rows = [&](const std::vector<int64_t>& picks, std::vector<int64_t>& ok, std::vector<double>& values) {
    for (int64_t k : picks) {
      const data::PlanEntry& entry = entries[static_cast<size_t>(k)];
      auto found = measured.find(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config));
      if (found == measured.end()) continue;  // failed (oom, error, timeout): not a time
      ok.push_back(k);
      values.push_back(found->second);
    }
  };
  std::vector<int64_t> fit_rows, test_rows;
  std::vector<double> fit_values, test_values;
  measured_rows(sample, fit_rows, fit_values);
  measured_rows(held, test_rows, test_values);
  if (fit_rows.size() < 2) throw InputError("only " + std::to_string(fit_rows.size()) + " of the sampled configurations measured ok");
  if (test_rows.empty()) throw InputError("no held-back configuration measured ok");
  learn::Vector fit_y = Eigen::Map<learn::Vector>(fit_values.data(), static_cast<int64_t>(fit_values.size()));
  const learn::Matrix fit_x = learn::select_rows(options, fit_rows);
  const learn::Vector fit_s = learn::select_rows(forecast, fit_rows);
  // Which map to apply is decided on the budget alone (leave-one-out); the holdout only reports.
  transfer::ShiftChoice choice = transfer::choose_shift(shift.source_fit, fit_x, fit_s, fit_y);
  learn::Vector shifted = choice.predict(options, forecast);

  nlohmann::json holdout_mape{{"chosen", 0.0}};
  nlohmann::json loo_mape = nlohmann::json::object();
  for (const auto& [name, mape] : choice.loo_log_error_pct) loo_mape[name] = mape;
  for (const char* name : {"source", "ratio", "lms", "gs"}) {
    if (std::string(name) != "source" && static_cast<int64_t>(fit_rows.size()) < (std::string(name) == "ratio" ? 2 : 5))
      continue;
    transfer::ShiftChoice one = transfer::fit_shift(name, shift.source_fit, fit_x, fit_s, fit_y);
    learn::Vector predicted = one.predict(options, forecast);
    std::vector<double> values;
    for (int64_t k : test_rows) values.push_back(predicted(k));
    holdout_mape[name] = mape_of(values, test_values);
  }
  {
    std::vector<double> values;
    for (int64_t k : test_rows) values.push_back(shifted(k));
    holdout_mape["chosen"] = mape_of(values, test_values);
  }
  nlohmann::json report{{"candidates", candidates},
                        {"profiled", summary.measured},
                        {"sample", fit_rows.size()},
                        {"holdout", test_rows.size()},
                        {"gs_terms", nlohmann::json::array()},
                        {"chosen", choice.chosen},
                        {"sample_loo_log_error_pct", loo_mape},
                        {"holdout_mape_pct", holdout_mape},
                        {"db", db_path}};
  for (const transfer::Term& term : shift.source_fit.terms) report["gs_terms"].push_back(term.name(kCalibrateOptions));
  report["gs_terms_used"] = choice.chosen == "gs" ? choice.guided.terms_used : 0;

  if (!out_dir.empty()) {
    const apps::Manifest& manifest = source.manifest();
    apps::Manifest adapted = manifest;
    adapted.environments.clear();
    for (const auto& [hash, environment] : table.environments) adapted.environments.push_back(environment);
    nlohmann::json calibration{{"source_predictor", predictor_dir},
                               {"plan", plan_path},
                               {"dataset", db_path},
                               {"measured", fit_rows.size()},
                               {"candidates", candidates},
                               {"chosen", choice.chosen},
                               {"sample_loo_log_error_pct", loo_mape},
                               {"holdout_mape_pct", report["holdout_mape_pct"]}};
    if (choice.chosen != "gs") {
      // source, ratio, lms: the source model itself with the map applied to its forecasts, so the
      // bundle forecasts every configuration the source could, not only the plan's.
      adapted.shift_log_intercept = choice.log_intercept + choice.log_slope * manifest.shift_log_intercept;
      adapted.shift_log_slope = choice.log_slope * manifest.shift_log_slope;
      calibration["method"] = "the " + choice.chosen + " map (chosen by leave-one-out on the sample) applied to the source's forecasts";
      adapted.training["calibration"] = calibration;
      set.time->set_manifest(adapted);
      set.time->save(out_dir);
    } else {
      // gs reads the options: the source's learner, columns and transform refitted on every
      // candidate (the measured value where the sample has one, else the shifted forecast).
      learn::Vector labels = shifted;
      for (size_t k = 0; k < fit_rows.size(); ++k) labels(fit_rows[k]) = fit_values[k];
      learn::Matrix x(candidates, static_cast<int64_t>(manifest.columns.size()));
      for (size_t c = 0; c < manifest.columns.size(); ++c) x.col(static_cast<int64_t>(c)) = rows.col(manifest.columns[c]);
      learn::Candidate candidate{manifest.learner, manifest.hyperparameters, manifest.transform};
      learn::FittedModel model = learn::fit_candidate(x, labels, candidate);
      adapted.transform = model.transform;
      adapted.hyperparameters = model.learner->hyperparameters();
      calibration["method"] = "the gs map of the source forecasts (chosen by leave-one-out on the sample), distilled into the source's learner on the plan's candidates";
      adapted.training["calibration"] = calibration;
      apps::Predictor adapted_predictor(adapted, std::move(model.learner));
      adapted_predictor.save(out_dir);
    }
    apps::Predictor reloaded = apps::Predictor::load(out_dir);
    std::vector<apps::Forecast> again = reloaded.predict(learn::select_rows(rows, test_rows));
    std::vector<double> bundle_test;
    for (const apps::Forecast& f : again) bundle_test.push_back(f.value);
    report["holdout_mape_pct"]["bundle"] = mape_of(bundle_test, test_values);
    report["out"] = out_dir;
  }

  if (json) {
    std::cout << report.dump(1) << "\n";
    return 0;
  }
  std::printf("calibrated on %zu profiled configurations of %lld candidates (GS terms:", fit_rows.size(),
              static_cast<long long>(candidates));
  for (const auto& term : report["gs_terms"]) std::printf(" %s", term.get<std::string>().c_str());
  std::printf(")\nchosen map: %s (leave-one-out mean |log error| x 100 on the sample:", choice.chosen.c_str());
  for (const auto& [name, mape] : choice.loo_log_error_pct) std::printf(" %s %.1f", name.c_str(), mape);
  std::printf(")\nerror on %zu held-back profiled configurations (MAPE %%):", test_rows.size());
  for (const char* name : {"source", "ratio", "lms", "gs"})
    if (report["holdout_mape_pct"].contains(name))
      std::printf(" %s %.1f,", name, report["holdout_mape_pct"][name].get<double>());
  std::printf(" chosen (%s) %.1f", choice.chosen.c_str(), report["holdout_mape_pct"]["chosen"].get<double>());
  if (report["holdout_mape_pct"].contains("bundle"))
    std::printf(", adapted bundle %.1f\nwrote %s", report["holdout_mape_pct"]["bundle"].get<double>(), out_dir.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace dnncast::cli
