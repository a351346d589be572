#include "calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/error.h"
#include "features/featurizer.h"
#include "hardware/hardware.h"
#include "learn/automl.h"
#include "learn/metrics.h"
#include "measure/campaign.h"
#include "measure/plan.h"
#include "records/network_source.h"
#include "study/evaluate.h"
#include "study/training.h"
#include "transfer/transfer.h"

namespace dnncast::calibrate {

namespace {

using nlohmann::json;

// Configuration options GS reasons about (feature names; all exist in every feature version 1 row).
const std::vector<std::string> kCalibrateOptions{
    "log.batch",  "log.threads",   "input.pixels",          "log.flops_train",
    "log.params", "log.act_bytes", "config.opt_state_bytes"};

std::string config_key(const std::string& network_hash, const records::RunConfig& config) {
  return network_hash + "|" + std::to_string(config.batch) + "|" + config.input_text() + "|" +
         std::to_string(config.seq_len) + "|" + name(config.optimizer) + "|" + name(config.precision) + "|" +
         std::to_string(config.threads) + "|" + name(config.device);
}

double mape_of(const learn::Vector& predicted, const std::vector<int64_t>& rows, const std::vector<double>& truth) {
  DNNCAST_ASSERT(rows.size() == truth.size() && !truth.empty());
  double sum = 0;
  for (size_t k = 0; k < truth.size(); ++k) sum += std::abs(predicted(rows[k]) - truth[k]) / truth[k];
  return 100 * sum / static_cast<double>(truth.size());
}

// The candidate configurations, featurized, with the source's forecast of each and the option
// columns GS reasons about: a plan's (calibrate_host, entries filled) or a dataset's (offline).
struct Candidates {
  std::vector<measure::PlanEntry> entries;  // calibrate_host only
  learn::Matrix rows;                       // candidates x features::feature_count()
  learn::Vector forecast;                   // the source's time forecast, ms
  learn::Matrix options;                    // candidates x kCalibrateOptions
  int64_t size() const { return rows.rows(); }
};

// Fills the source's forecast and the option columns from the feature rows.
void forecast_candidates(Candidates& candidates, const forecast::Predictor& source) {
  const int64_t count = candidates.size();
  candidates.forecast.resize(count);
  std::vector<forecast::Estimate> forecasts = source.predict(candidates.rows);
  for (int64_t k = 0; k < count; ++k) candidates.forecast(k) = std::max(forecasts[static_cast<size_t>(k)].value, 1e-9);
  candidates.options.resize(count, static_cast<int64_t>(kCalibrateOptions.size()));
  for (size_t c = 0; c < kCalibrateOptions.size(); ++c)
    candidates.options.col(static_cast<int64_t>(c)) =
        candidates.rows.col(features::feature_index(kCalibrateOptions[c]));
}

Candidates candidates_of(const measure::Plan& plan, int64_t threads, const forecast::Predictor& source) {
  const hardware::HostInfo& host = hardware::detect_host();
  records::EnvironmentRecord here;
  here.cpu_model = host.cpu_model;
  here.cores = host.logical_cores;
  here.memory_bytes = host.memory_bytes;
  features::HardwareFeatures hardware = forecast::hardware_of(here);
  Candidates result;
  std::set<std::string> seen;
  for (measure::PlanEntry entry : plan.entries) {
    if (threads > 0) entry.config.threads = threads;
    if (seen.insert(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config)).second)
      result.entries.push_back(entry);
  }
  const int64_t count = static_cast<int64_t>(result.entries.size());
  result.rows.resize(count, static_cast<int64_t>(features::feature_count()));
  std::map<std::string, features::GraphFeatures> graphs;  // one graph per network and input size
  for (int64_t k = 0; k < count; ++k) {
    const measure::PlanEntry& entry = result.entries[static_cast<size_t>(k)];
    const measure::PlanNetwork& network = plan.networks[static_cast<size_t>(entry.network)];
    std::string graph_key = network.hash + "|" + entry.config.input_text() + "|" + std::to_string(entry.config.seq_len);
    auto cached = graphs.find(graph_key);
    if (cached == graphs.end())
      cached = graphs.emplace(graph_key, features::graph_features(records::build_network(network.model, entry.config)))
                   .first;
    features::TrainingConfig config = study::training_config_of(entry.config);
    std::vector<double> row = features::featurize(cached->second, config, hardware);
    for (size_t col = 0; col < row.size(); ++col) result.rows(k, static_cast<int64_t>(col)) = row[col];
  }
  forecast_candidates(result, source);
  return result;
}

// Which candidates to profile: the guided sample covering the influential options' levels, and the
// random holdout among the rest. Both sorted.
struct Draw {
  transfer::StepwiseResult source_fit;  // stepwise terms of the log forecasts
  std::vector<int64_t> sample, held;
};

// Stepwise terms of the log forecasts over the options: GS's influential terms.
transfer::StepwiseResult source_terms_of(const Candidates& candidates) {
  return transfer::stepwise_terms(candidates.options, candidates.forecast.array().log().matrix());
}

// The guided sample: `budget_rows` candidates covering the levels of the options in the source's
// influential terms. Sorted.
std::vector<int64_t> guided_sample(const Candidates& candidates, const transfer::StepwiseResult& source_fit,
                                   int64_t budget_rows, learn::Rng& rng) {
  std::vector<int> covered;
  for (const transfer::Term& term : source_fit.terms)
    for (int col : {term.first, term.second})
      if (col >= 0 && std::find(covered.begin(), covered.end(), col) == covered.end()) covered.push_back(col);
  std::vector<int64_t> sample = transfer::covering_sample(candidates.options, covered, budget_rows, rng);
  std::sort(sample.begin(), sample.end());
  return sample;
}

Draw draw_candidates(const Candidates& candidates, int64_t budget_rows, int64_t holdout, int64_t seed) {
  Draw draw;
  draw.source_fit = source_terms_of(candidates);
  learn::Rng rng(static_cast<uint64_t>(seed));
  draw.sample = guided_sample(candidates, draw.source_fit, budget_rows, rng);
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

Measured measured_of(const std::vector<int64_t>& picks, const Candidates& candidates, const measure::Plan& plan,
                     const std::map<std::string, double>& times) {
  Measured result;
  for (int64_t k : picks) {
    const measure::PlanEntry& entry = candidates.entries[static_cast<size_t>(k)];
    auto found = times.find(config_key(plan.networks[static_cast<size_t>(entry.network)].hash, entry.config));
    if (found == times.end()) continue;  // failed (oom, error, timeout): not a time
    result.rows.push_back(k);
    result.times_ms.push_back(found->second);
  }
  return result;
}

// Every map fitted on `fit`, the one chosen there (leave-one-out on `fit` alone), and each one's
// MAPE on `test`, which chooses nothing.
struct MapScores {
  transfer::ShiftChoice choice;
  learn::Vector shifted;                    // the chosen map's forecast of every candidate, ms
  json loo_log_error_pct = json::object();  // {map: leave-one-out mean |log error| x 100 on fit}
  json mape_pct = json::object();           // {chosen, source, ratio, lms, gs: MAPE on test}; a map
                                            // is absent when fit has too few rows for it
};

MapScores score_maps(const transfer::StepwiseResult& source_fit, const Candidates& candidates, const Measured& fit,
                     const Measured& test) {
  DNNCAST_ASSERT(fit.rows.size() >= 2 && !test.rows.empty());
  const learn::Vector fit_y =
      Eigen::Map<const learn::Vector>(fit.times_ms.data(), static_cast<int64_t>(fit.times_ms.size()));
  const learn::Matrix fit_x = learn::select_rows(candidates.options, fit.rows);
  const learn::Vector fit_s = learn::select_rows(candidates.forecast, fit.rows);
  MapScores scores;
  scores.choice = transfer::choose_shift(source_fit, fit_x, fit_s, fit_y);
  scores.shifted = scores.choice.predict(candidates.options, candidates.forecast);
  scores.mape_pct["chosen"] = mape_of(scores.shifted, test.rows, test.times_ms);
  for (const auto& [name, error] : scores.choice.loo_log_error_pct) scores.loo_log_error_pct[name] = error;
  for (const std::string name : {"source", "ratio", "lms", "gs"}) {
    const size_t needs = name == "source" ? 0 : name == "ratio" ? 2 : 5;  // rows each map needs to be fitted
    if (fit.rows.size() < needs) continue;
    if (name == scores.choice.chosen) {
      scores.mape_pct[name] = scores.mape_pct["chosen"];  // the chosen map, fitted once
      continue;
    }
    transfer::ShiftChoice one = transfer::fit_shift(name, source_fit, fit_x, fit_s, fit_y);
    scores.mape_pct[name] = mape_of(one.predict(candidates.options, candidates.forecast), test.rows, test.times_ms);
  }
  return scores;
}

// Writes the adapted bundle and returns its MAPE on the holdout, reloaded from disk.
double write_adapted_bundle(forecast::PredictorSet& set, const CalibrateOptions& options,
                            const study::TrainingTable& table, const Candidates& candidates,
                            const transfer::ShiftChoice& choice, const learn::Vector& shifted, const Measured& fit,
                            const Measured& test, json calibration) {
  const forecast::Manifest& manifest = set.time->manifest();
  forecast::Manifest adapted = manifest;
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
    forecast::Predictor(adapted, std::move(model.learner)).save(options.out_dir);
  }
  forecast::Predictor reloaded = forecast::Predictor::load(options.out_dir);
  std::vector<forecast::Estimate> again = reloaded.predict(learn::select_rows(candidates.rows, test.rows));
  double sum = 0;
  for (size_t k = 0; k < again.size(); ++k) sum += std::abs(again[k].value - test.times_ms[k]) / test.times_ms[k];
  return 100 * sum / static_cast<double>(again.size());
}

// Mean, standard deviation (over draws, n - 1), min and max of one error over the draws.
json spread_of(const std::vector<double>& values) {
  DNNCAST_ASSERT(!values.empty());
  double sum = 0;
  for (double value : values) sum += value;
  const double mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double value : values) squares += (value - mean) * (value - mean);
  const double sd = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  return json{{"mean", mean},
              {"sd", sd},
              {"min", *std::min_element(values.begin(), values.end())},
              {"max", *std::max_element(values.begin(), values.end())}};
}

}  // namespace

json calibrate_host(const CalibrateOptions& options) {
  if (options.holdout < 1) throw InputError("--holdout must be at least 1");
  if (options.threads < 0) throw InputError("--threads must be positive");
  if (options.time_budget_s < 0) throw InputError("--time-budget-s must be positive");
  forecast::PredictorSet set = forecast::load_predictor_set(options.predictor_dir);
  if (!set.time) throw InputError("predictor set " + quote(options.predictor_dir) + " has no time predictor");
  measure::Plan plan = measure::load_plan(options.plan_path);
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
  measure::Plan chosen_plan = plan;
  chosen_plan.entries.clear();
  for (const std::vector<int64_t>* picks : {&draw.sample, &draw.held})
    for (int64_t k : *picks) chosen_plan.entries.push_back(candidates.entries[static_cast<size_t>(k)]);
  measure::CampaignOptions campaign;
  campaign.db_path = options.db_path;
  campaign.cpus = options.cpus;
  campaign.progress_bar = 0;
  std::fprintf(stderr, "calibrate: %lld candidates; GS terms:", static_cast<long long>(candidates.size()));
  for (const transfer::Term& term : draw.source_fit.terms)
    std::fprintf(stderr, " %s", term.name(kCalibrateOptions).c_str());
  std::fprintf(stderr, "; profiling %lld + %lld held back\n", static_cast<long long>(budget_rows),
               static_cast<long long>(options.holdout));
  measure::CampaignSummary summary = measure::run_campaign(chosen_plan, campaign);

  // Measured times of the chosen configurations (this host's runs only).
  study::TrainingTable table = study::load_training_table(options.db_path);
  std::map<std::string, double> times;
  for (const study::Sample& sample : table.samples)
    times[config_key(sample.network_hash, sample.config)] = sample.time_ms();
  Measured fit = measured_of(draw.sample, candidates, plan, times);
  Measured test = measured_of(draw.held, candidates, plan, times);
  if (fit.rows.size() < 2)
    throw InputError("only " + std::to_string(fit.rows.size()) + " of the sampled configurations measured ok");
  if (test.rows.empty()) throw InputError("no held-back configuration measured ok");

  // Which map to apply is decided on the budget alone (leave-one-out); the holdout only reports.
  MapScores scores = score_maps(draw.source_fit, candidates, fit, test);
  const transfer::ShiftChoice& choice = scores.choice;
  const learn::Vector& shifted = scores.shifted;
  const json& holdout_mape = scores.mape_pct;
  const json& loo_mape = scores.loo_log_error_pct;
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

json calibrate_offline(const OfflineCalibrateOptions& options) {
  if (options.draws < 1) throw InputError("--draws must be at least 1");
  forecast::PredictorSet set = forecast::load_predictor_set(options.predictor_dir);
  if (!set.time) throw InputError("predictor set " + quote(options.predictor_dir) + " has no time predictor");
  study::TableOptions table_options;
  table_options.environment = options.environment;
  table_options.isa = options.isa;
  const study::TrainingTable table = study::load_training_table(options.db_path, table_options);

  // Each configuration, featurized from its own runs, is a candidate; its time is the mean of its repeats.
  Candidates candidates;
  candidates.rows = table.x;
  forecast_candidates(candidates, *set.time);
  const int64_t count = candidates.size();
  if (count < 3)
    throw InputError("dataset " + options.db_path + " has " + std::to_string(count) +
                     " configurations; an offline calibration needs at least 3");
  if (options.budget >= static_cast<double>(count))
    throw InputError("--budget " + std::to_string(static_cast<long long>(options.budget)) + " is not below the " +
                     std::to_string(count) + " configurations of " + options.db_path +
                     ": some must be left to score the maps on");
  const int64_t budget_rows = transfer::budget_rows(options.budget, count);
  std::vector<double> times_ms;
  std::vector<std::vector<double>> repeats;
  for (const study::Sample& sample : table.samples) {
    times_ms.push_back(sample.time_ms());
    repeats.push_back(sample.times_ms);
  }
  const Measured all{learn::complement(count, {}), times_ms};
  double repeat_error_sum = 0;
  int64_t repeat_count = 0;
  for (int64_t k = 0; k < count; ++k)
    for (double time_ms : repeats[static_cast<size_t>(k)]) {
      repeat_error_sum += std::abs(candidates.forecast(k) - time_ms) / time_ms;
      ++repeat_count;
    }

  const transfer::StepwiseResult source_fit = source_terms_of(candidates);
  json report{{"dataset", options.db_path},
              {"predictor", options.predictor_dir},
              {"candidates", count},
              {"budget", budget_rows},
              {"evaluated", count - budget_rows},
              {"draws", options.draws},
              {"seed", options.seed},
              {"isa", options.isa == hardware::CpuIsa::Unknown ? "as recorded" : hardware::isa_name(options.isa)},
              {"gs_terms", json::array()},
              {"noise_floor_pct", 100 * study::noise_floor(repeats).mre},
              {"dm_all_mape_pct", mape_of(candidates.forecast, all.rows, all.times_ms)},
              {"dm_all_repeat_mape_pct", 100 * repeat_error_sum / static_cast<double>(repeat_count)},
              {"notes", table.notes},
              {"configurations", json::array()}};
  for (const transfer::Term& term : source_fit.terms) report["gs_terms"].push_back(term.name(kCalibrateOptions));
  for (int64_t k = 0; k < count; ++k) {
    const study::Sample& sample = table.samples[static_cast<size_t>(k)];
    report["configurations"].push_back(json{{"network", sample.network_name},
                                            {"family", sample.family},
                                            {"batch", sample.config.batch},
                                            {"input", sample.config.input_text()},
                                            {"optimizer", name(sample.config.optimizer)},
                                            {"precision", name(sample.config.precision)},
                                            {"threads", sample.config.threads},
                                            {"repeats", sample.times_ms.size()},
                                            {"time_ms", sample.time_ms()},
                                            {"forecast_ms", candidates.forecast(k)}});
  }

  // Guided draws follow calibrate_host's for the same seed; the random ones have their own stream.
  learn::Rng guided_rng(static_cast<uint64_t>(options.seed));
  learn::Rng random_rng(static_cast<uint64_t>(options.seed) + 0x9e3779b97f4a7c15ULL);
  for (const std::string sampler : {"guided", "random"}) {
    std::map<std::string, std::vector<double>> errors;  // map -> one error per draw
    std::map<std::string, int64_t> chosen_count;
    json draws = json::array();
    for (int64_t draw = 0; draw < options.draws; ++draw) {
      std::vector<int64_t> sample;
      if (sampler == "guided") {
        sample = guided_sample(candidates, source_fit, budget_rows, guided_rng);
      } else {
        sample = transfer::random_sample(count, budget_rows, random_rng);
        std::sort(sample.begin(), sample.end());
      }
      Measured fit, test;
      for (int64_t k : sample) fit.rows.push_back(k);
      for (int64_t k : learn::complement(count, sample)) test.rows.push_back(k);
      for (int64_t k : fit.rows) fit.times_ms.push_back(times_ms[static_cast<size_t>(k)]);
      for (int64_t k : test.rows) test.times_ms.push_back(times_ms[static_cast<size_t>(k)]);
      MapScores scores = score_maps(source_fit, candidates, fit, test);
      scores.mape_pct["dm"] = scores.mape_pct["source"];  // the predictor as is, on the same rows
      for (const auto& [name, error] : scores.mape_pct.items()) errors[name].push_back(error.get<double>());
      ++chosen_count[scores.choice.chosen];
      if (options.list_draws)
        draws.push_back(json{{"sample", fit.rows}, {"chosen", scores.choice.chosen}, {"mape_pct", scores.mape_pct}});
    }
    json summary{{"mape_pct", json::object()}, {"chosen_count", chosen_count}};
    for (const auto& [name, values] : errors) summary["mape_pct"][name] = spread_of(values);
    if (options.list_draws) summary["draws"] = draws;
    report[sampler] = summary;
  }
  return report;
}

}  // namespace dnncast::calibrate
