#include "apps/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "apps/predictor.h"
#include "data/campaign.h"
#include "data/network_source.h"
#include "data/plan.h"
#include "features/featurizer.h"
#include "graph/error.h"
#include "hardware/hardware.h"
#include "learn/automl.h"
#include "learn/metrics.h"
#include "transfer/transfer.h"

namespace dnncast::apps {

namespace {

using nlohmann::json;

// Configuration options GS reasons about (feature names; all exist in every feature version 1 row).
const std::vector<std::string> kCalibrateOptions{
    "log.batch",  "log.threads",   "input.pixels",          "log.flops_train",
    "log.params", "log.act_bytes", "config.opt_state_bytes"};

std::string config_key(const std::string& network_hash, const data::RunConfig& config) {
  return network_hash + "|" + std::to_string(config.batch) + "|" + config.input_text() + "|" +
         std::to_string(config.seq_len) + "|" + config.optimizer + "|" + config.precision + "|" +
         std::to_string(config.threads) + "|" + config.device;
}

double mape_of(const learn::Vector& predicted, const std::vector<int64_t>& rows, const std::vector<double>& truth) {
  DNNCAST_ASSERT(rows.size() == truth.size() && !truth.empty());
  double sum = 0;
  for (size_t k = 0; k < truth.size(); ++k) sum += std::abs(predicted(rows[k]) - truth[k]) / truth[k];
  return 100 * sum / static_cast<double>(truth.size());
}

// The plan's distinct configurations (at the forced thread count), featurized for this host, with
// the source's forecast of each and the option columns GS reasons about.
struct Candidates {
  std::vector<data::PlanEntry> entries;
  learn::Matrix rows;      // candidates x features::feature_count()
  learn::Vector forecast;  // the source's time forecast, ms
  learn::Matrix options;   // candidates x kCalibrateOptions
  int64_t size() const { return static_cast<int64_t>(entries.size()); }
};

Candidates candidates_of(const data::Plan& plan, int64_t threads, const Predictor& source) {
  const hardware::HostInfo& host = hardware::detect_host();
  data::EnvironmentRecord here;
  here.cpu_model = host.cpu_model;
  here.cores = host.logical_cores;
  here.memory_bytes = host.memory_bytes;
  features::HardwareFeatures hardware = hardware_of(here);
  Candidates result;
  std::set<std::string> seen;
  for (data::PlanEntry entry : plan.entries) {
    if (threads > 0) entry.config.threads = threads;
    if (seen.insert(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config)).second)
      result.entries.push_back(entry);
  }
  const int64_t count = result.size();
  result.rows.resize(count, static_cast<int64_t>(features::feature_count()));
  std::map<std::string, features::GraphFeatures> graphs;  // one graph per network and input size
  for (int64_t k = 0; k < count; ++k) {
    const data::PlanEntry& entry = result.entries[static_cast<size_t>(k)];
    const data::PlanNetwork& network = plan.networks[static_cast<size_t>(entry.network)];
    std::string graph_key = network.hash + "|" + entry.config.input_text() + "|" + std::to_string(entry.config.seq_len);
    auto cached = graphs.find(graph_key);
    if (cached == graphs.end())
      cached =
          graphs.emplace(graph_key, features::graph_features(data::build_network(network.model, entry.config))).first;
    features::TrainingConfig config;
    config.batch = entry.config.batch;
    config.optimizer = entry.config.optimizer;
    config.precision = entry.config.precision;
    config.threads = entry.config.threads;
    std::vector<double> row = features::featurize(cached->second, config, hardware);
    for (size_t col = 0; col < row.size(); ++col) result.rows(k, static_cast<int64_t>(col)) = row[col];
  }
  result.forecast.resize(count);
  std::vector<Forecast> forecasts = source.predict(result.rows);
  for (int64_t k = 0; k < count; ++k) result.forecast(k) = std::max(forecasts[static_cast<size_t>(k)].value, 1e-9);
  result.options.resize(count, static_cast<int64_t>(kCalibrateOptions.size()));
  for (size_t c = 0; c < kCalibrateOptions.size(); ++c)
    result.options.col(static_cast<int64_t>(c)) = result.rows.col(features::feature_index(kCalibrateOptions[c]));
  return result;
}

// Which candidates to profile: the guided sample covering the influential options' levels, and the
// random holdout among the rest. Both sorted.
struct Draw {
  transfer::StepwiseResult source_fit;  // stepwise terms of the log forecasts
  std::vector<int64_t> sample, held;
};

Draw draw_candidates(const Candidates& candidates, int64_t budget_rows, int64_t holdout, int64_t seed) {
  Draw draw;
  draw.source_fit = transfer::stepwise_terms(candidates.options, candidates.forecast.array().log().matrix());
  std::vector<int> covered;
  for (const transfer::Term& term : draw.source_fit.terms)
    for (int col : {term.first, term.second})
      if (col >= 0 && std::find(covered.begin(), covered.end(), col) == covered.end()) covered.push_back(col);
  learn::Rng rng(static_cast<uint64_t>(seed));
  draw.sample = transfer::covering_sample(candidates.options, covered, budget_rows, rng);
  std::sort(draw.sample.begin(), draw.sample.end());
  std::vector<int64_t> rest = learn::complement(candidates.size(), draw.sample);
  for (int64_t pick : transfer::random_sample(static_cast<int64_t>(rest.size()), holdout, rng))
    draw.held.push_back(rest[static_cast<size_t>(pick)]);
  std::sort(draw.held.begin(), draw.held.end());
  return draw;
}

// The candidates of `picks` that measured ok in the dataset, and their times.
struct Measured {
  std::vector<int64_t> rows;
  std::vector<double> times_ms;
};

Measured measured_of(const std::vector<int64_t>& picks, const Candidates& candidates, const data::Plan& plan,
                     const std::map<std::string, double>& times) {
  Measured result;
  for (int64_t k : picks) {
    const data::PlanEntry& entry = candidates.entries[static_cast<size_t>(k)];
    auto found = times.find(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config));
    if (found == times.end()) continue;  // failed (oom, error, timeout): not a time
    result.rows.push_back(k);
    result.times_ms.push_back(found->second);
  }
  return result;
}

// Writes the adapted bundle and returns its MAPE on the holdout, reloaded from disk.
double write_adapted_bundle(PredictorSet& set, const CalibrateOptions& options, const TrainingTable& table,
                            const Candidates& candidates, const transfer::ShiftChoice& choice,
                            const learn::Vector& shifted, const Measured& fit, const Measured& test, json calibration) {
  const Manifest& manifest = set.time->manifest();
  Manifest adapted = manifest;
  adapted.environments.clear();
  for (const auto& [hash, environment] : table.environments) adapted.environments.push_back(environment);
  if (choice.chosen != "gs") {
    // source, ratio, lms: the source model itself with the map applied to its forecasts, so the
    // bundle forecasts every configuration the source could, not only the plan's.
    adapted.shift_log_intercept = choice.log_intercept + choice.log_slope * manifest.shift_log_intercept;
    adapted.shift_log_slope = choice.log_slope * manifest.shift_log_slope;
    calibration["method"] =
        "the " + choice.chosen + " map (chosen by leave-one-out on the sample) applied to the source's forecasts";
    adapted.training["calibration"] = calibration;
    set.time->set_manifest(adapted);
    set.time->save(options.out_dir);
  } else {
    // gs reads the options: the source's learner, columns and transform refitted on every
    // candidate (the measured value where the sample has one, else the shifted forecast).
    learn::Vector labels = shifted;
    for (size_t k = 0; k < fit.rows.size(); ++k) labels(fit.rows[k]) = fit.times_ms[k];
    learn::Matrix x(candidates.size(), static_cast<int64_t>(manifest.columns.size()));
    for (size_t c = 0; c < manifest.columns.size(); ++c)
      x.col(static_cast<int64_t>(c)) = candidates.rows.col(manifest.columns[c]);
    learn::Candidate candidate{manifest.learner, manifest.hyperparameters, manifest.transform};
    learn::FittedModel model = learn::fit_candidate(x, labels, candidate);
    adapted.transform = model.transform;
    adapted.hyperparameters = model.learner->hyperparameters();
    calibration["method"] =
        "the gs map of the source forecasts (chosen by leave-one-out on the sample), distilled into the source's "
        "learner on the plan's candidates";
    adapted.training["calibration"] = calibration;
    Predictor(adapted, std::move(model.learner)).save(options.out_dir);
  }
  Predictor reloaded = Predictor::load(options.out_dir);
  std::vector<Forecast> again = reloaded.predict(learn::select_rows(candidates.rows, test.rows));
  double sum = 0;
  for (size_t k = 0; k < again.size(); ++k) sum += std::abs(again[k].value - test.times_ms[k]) / test.times_ms[k];
  return 100 * sum / static_cast<double>(again.size());
}

}  // namespace

json calibrate_host(const CalibrateOptions& options) {
  if (options.holdout < 1) throw InputError("--holdout must be at least 1");
  if (options.threads < 0) throw InputError("--threads must be positive");
  if (options.time_budget_s < 0) throw InputError("--time-budget-s must be positive");
  PredictorSet set = load_predictor_set(options.predictor_dir);
  if (!set.time) throw InputError("predictor set '" + options.predictor_dir + "' has no time predictor");
  data::Plan plan = data::load_plan(options.plan_path);
  if (options.time_budget_s > 0) plan.measure.time_budget_s = options.time_budget_s;
  plan.repeats = 1;

  Candidates candidates = candidates_of(plan, options.threads, *set.time);
  const int64_t budget_rows = transfer::budget_rows(options.budget, candidates.size());
  if (budget_rows + options.holdout > candidates.size())
    throw InputError("the plan has " + std::to_string(candidates.size()) + " configurations; --budget (" +
                     std::to_string(budget_rows) + ") plus --holdout (" + std::to_string(options.holdout) +
                     ") exceed them");
  Draw draw = draw_candidates(candidates, budget_rows, options.holdout, options.seed);

  // Profile exactly those, into the dataset.
  data::Plan chosen_plan = plan;
  chosen_plan.entries.clear();
  for (const std::vector<int64_t>* picks : {&draw.sample, &draw.held})
    for (int64_t k : *picks) chosen_plan.entries.push_back(candidates.entries[static_cast<size_t>(k)]);
  data::CampaignOptions campaign;
  campaign.db_path = options.db_path;
  campaign.cpus = options.cpus;
  campaign.progress_bar = 0;
  std::fprintf(stderr, "calibrate: %lld candidates; GS terms:", static_cast<long long>(candidates.size()));
  for (const transfer::Term& term : draw.source_fit.terms)
    std::fprintf(stderr, " %s", term.name(kCalibrateOptions).c_str());
  std::fprintf(stderr, "; profiling %lld + %lld held back\n", static_cast<long long>(budget_rows),
               static_cast<long long>(options.holdout));
  data::CampaignSummary summary = data::run_campaign(chosen_plan, campaign);

  // Measured times of the chosen configurations (this host's runs only).
  TrainingTable table = load_training_table(options.db_path);
  std::map<std::string, double> times;
  for (const Sample& sample : table.samples) times[config_key(sample.network_hash, sample.config)] = sample.time_ms();
  Measured fit = measured_of(draw.sample, candidates, plan, times);
  Measured test = measured_of(draw.held, candidates, plan, times);
  if (fit.rows.size() < 2)
    throw InputError("only " + std::to_string(fit.rows.size()) + " of the sampled configurations measured ok");
  if (test.rows.empty()) throw InputError("no held-back configuration measured ok");

  // Which map to apply is decided on the budget alone (leave-one-out); the holdout only reports.
  const learn::Vector fit_y =
      Eigen::Map<const learn::Vector>(fit.times_ms.data(), static_cast<int64_t>(fit.times_ms.size()));
  const learn::Matrix fit_x = learn::select_rows(candidates.options, fit.rows);
  const learn::Vector fit_s = learn::select_rows(candidates.forecast, fit.rows);
  transfer::ShiftChoice choice = transfer::choose_shift(draw.source_fit, fit_x, fit_s, fit_y);
  const learn::Vector shifted = choice.predict(candidates.options, candidates.forecast);

  json holdout_mape{{"chosen", mape_of(shifted, test.rows, test.times_ms)}};
  json loo_mape = json::object();
  for (const auto& [name, error] : choice.loo_log_error_pct) loo_mape[name] = error;
  for (const std::string name : {"source", "ratio", "lms", "gs"}) {
    const size_t needs = name == "source" ? 0 : name == "ratio" ? 2 : 5;  // rows each map needs to be fitted
    if (fit.rows.size() < needs) continue;
    if (name == choice.chosen) {
      holdout_mape[name] = holdout_mape["chosen"];  // the chosen map, fitted once
      continue;
    }
    transfer::ShiftChoice one = transfer::fit_shift(name, draw.source_fit, fit_x, fit_s, fit_y);
    holdout_mape[name] = mape_of(one.predict(candidates.options, candidates.forecast), test.rows, test.times_ms);
  }
  json report{{"candidates", candidates.size()},      {"profiled", summary.measured},     {"sample", fit.rows.size()},
              {"holdout", test.rows.size()},          {"gs_terms", json::array()},        {"chosen", choice.chosen},
              {"sample_loo_log_error_pct", loo_mape}, {"holdout_mape_pct", holdout_mape}, {"db", options.db_path}};
  for (const transfer::Term& term : draw.source_fit.terms) report["gs_terms"].push_back(term.name(kCalibrateOptions));
  report["gs_terms_used"] = choice.chosen == "gs" ? choice.guided.terms_used : 0;

  if (!options.out_dir.empty()) {
    json calibration{{"source_predictor", options.predictor_dir},
                     {"plan", options.plan_path},
                     {"dataset", options.db_path},
                     {"measured", fit.rows.size()},
                     {"candidates", candidates.size()},
                     {"chosen", choice.chosen},
                     {"sample_loo_log_error_pct", loo_mape},
                     {"holdout_mape_pct", holdout_mape}};
    report["holdout_mape_pct"]["bundle"] =
        write_adapted_bundle(set, options, table, candidates, choice, shifted, fit, test, calibration);
    report["out"] = options.out_dir;
  }
  return report;
}

}  // namespace dnncast::apps
