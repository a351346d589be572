#include "study/holdout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/stats.h"
#include "forecast/extrapolation.h"
#include "forecast/host_match.h"
#include "store/store.h"
#include "study/evaluate.h"

namespace dnncast::study {

using nlohmann::json;

namespace {

std::string percent(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * value);
  return text;
}

// Accumulates one group's forecasts and repeats.
struct GroupBuilder {
  std::string name;
  int64_t configurations = 0;
  std::vector<double> errors, signed_errors;
  int64_t inside = 0;
  std::vector<std::vector<double>> repeats;

  void add(const Sample& sample, const forecast::Estimate& forecast) {
    ++configurations;
    for (double measured : sample.times_ms) {
      errors.push_back(std::fabs(forecast.value - measured) / measured);
      signed_errors.push_back((forecast.value - measured) / measured);
      inside += measured >= forecast.low && measured <= forecast.high;
    }
    if (sample.times_ms.size() >= 2) repeats.push_back(sample.times_ms);
  }

  ScoreGroup finish() const {
    ScoreGroup group;
    group.name = name;
    group.configurations = configurations;
    group.runs = static_cast<int64_t>(errors.size());
    group.model = learn::error_stats(errors);
    group.median_signed = quantile(signed_errors, 0.5);
    group.coverage = errors.empty() ? 0 : static_cast<double>(inside) / static_cast<double>(errors.size());
    group.noise_floor = noise_floor(repeats);
    group.noise_configurations = static_cast<int64_t>(repeats.size());
    return group;
  }
};

MonotoneCheck monotone_check(const TrainingTable& table, const std::vector<forecast::Estimate>& forecasts) {
  // series key -> batch -> (measured mean, forecast), in ms
  std::map<std::string, std::map<int64_t, std::pair<double, double>>> series;
  std::map<std::string, std::string> series_name;
  for (size_t row = 0; row < table.samples.size(); ++row) {
    const Sample& sample = table.samples[row];
    const records::RunConfig& c = sample.config;
    std::string key = sample.environment_hash + "|" + sample.network_hash + "|" + c.input_text() + "|" +
                      std::to_string(c.seq_len) + "|" + name(c.optimizer) + "|" + name(c.precision) + "|" +
                      std::to_string(c.threads) + "|" + name(c.device);
    series[key][c.batch] = {sample.time_ms(), forecasts[row].value};
    series_name[key] = sample.network_name + " " + c.input_text() + " threads " + std::to_string(c.threads);
  }
  MonotoneCheck check;
  for (const auto& [key, by_batch] : series) {
    if (by_batch.size() < 2) continue;
    for (auto at = by_batch.begin(), next = std::next(at); next != by_batch.end(); at = next++) {
      ++check.pairs;
      const double a = static_cast<double>(at->first), b = static_cast<double>(next->first);
      const double measured = (next->second.first / b) / (at->second.first / a);
      const double forecast = (next->second.second / b) / (at->second.second / a);
      if (measured > 1.0) continue;
      ++check.measured_flat;
      if (forecast <= 1.0) continue;
      ++check.forecast_rises;
      if (forecast - 1.0 > check.worst_rise) {
        check.worst_rise = forecast - 1.0;
        check.worst =
            series_name.at(key) + " batches " + std::to_string(at->first) + "->" + std::to_string(next->first);
      }
    }
  }
  return check;
}

}  // namespace

json MonotoneCheck::to_json() const {
  return {{"pairs", pairs},
          {"measured_flat", measured_flat},
          {"forecast_rises", forecast_rises},
          {"worst_rise", worst_rise},
          {"worst", worst}};
}

json ScoreGroup::to_json() const {
  return {{"name", name},
          {"configurations", configurations},
          {"runs", runs},
          {"model", model.to_json()},
          {"median_signed", median_signed},
          {"interval_coverage", coverage},
          {"noise_floor", noise_floor.to_json()},
          {"noise_configurations", noise_configurations}};
}

json PredictorScore::to_json() const {
  json document = {{"predictor", predictor},
                   {"dataset", dataset},
                   {"runs_scored", which},
                   {"interval_nominal", interval_nominal},
                   {"all", all.to_json()}};
  json kinds = json::array();
  for (const ScoreGroup& group : by_kind) kinds.push_back(group.to_json());
  document["by_kind"] = kinds;
  json uses = json::array();
  for (const EnvironmentUse& use : environments)
    uses.push_back({{"measured", use.measured},
                    {"measured_label", use.measured_label},
                    {"predictor_environment", use.predictor_environment},
                    {"match", use.exact ? "exact" : "nearest"},
                    {"differs", use.differs}});
  document["environments"] = uses;
  document["monotone"] = monotone.to_json();
  document["notes"] = notes;
  return document;
}

std::string PredictorScore::text() const {
  std::ostringstream out;
  out << "Predictor " << predictor << " scored on " << which << " of " << dataset << " (nothing fitted)\n";
  for (const EnvironmentUse& use : environments) {
    out << "  measured in " << use.measured_label << " (" << use.measured << "): forecast with training environment "
        << use.predictor_environment << (use.exact ? " (exact match)" : " (nearest; differs in");
    if (!use.exact) {
      for (size_t i = 0; i < use.differs.size(); ++i) out << (i ? ", " : " ") << use.differs[i];
      out << ")";
    }
    out << "\n";
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %7s %5s %8s %8s %8s %9s %10s %12s\n", "runs of", "configs", "runs", "MRE",
                "median", "p90", "signed", "in 90% CI", "noise floor");
  out << line;
  std::vector<ScoreGroup> groups{all};
  groups.insert(groups.end(), by_kind.begin(), by_kind.end());
  for (const ScoreGroup& group : groups) {
    std::string floor = group.noise_configurations > 0
                            ? percent(group.noise_floor.mre) + " (" + std::to_string(group.noise_configurations) + ")"
                            : "-";
    std::snprintf(line, sizeof line, "%-10s %7lld %5lld %8s %8s %8s %9s %10s %12s\n", group.name.c_str(),
                  static_cast<long long>(group.configurations), static_cast<long long>(group.runs),
                  percent(group.model.mre).c_str(), percent(group.model.median_re).c_str(),
                  percent(group.model.p90_re).c_str(), percent(group.median_signed).c_str(),
                  percent(group.coverage).c_str(), floor.c_str());
    out << line;
  }
  out << "MRE against every measured repeat; the noise floor (same runs, configurations with 2+ repeats) is the "
         "MRE a forecast knowing each configuration's true mean would make. Interval goal: 85-95% inside.\n";
  out << "Monotone in the batch: of " << monotone.pairs << " adjacent measured batch pairs, " << monotone.measured_flat
      << " measured a time per sample that did not rise; the forecast's rose in " << monotone.forecast_rises;
  if (monotone.forecast_rises > 0) out << " (worst +" << percent(monotone.worst_rise) << ", " << monotone.worst << ")";
  out << "\n";
  for (const std::string& note : notes) out << "note: " << note << "\n";
  return out.str();
}

std::string PredictorScore::markdown() const {
  std::ostringstream out;
  out << "| Runs of | Configurations | Runs | Time MRE | Median | p90 | Median signed | Inside the 90% interval | "
         "Noise floor (configs) |\n|---|---|---|---|---|---|---|---|---|\n";
  std::vector<ScoreGroup> groups{all};
  groups.insert(groups.end(), by_kind.begin(), by_kind.end());
  for (const ScoreGroup& group : groups)
    out << "| " << group.name << " | " << group.configurations << " | " << group.runs << " | "
        << percent(group.model.mre) << " | " << percent(group.model.median_re) << " | " << percent(group.model.p90_re)
        << " | " << percent(group.median_signed) << " | " << percent(group.coverage) << " | "
        << (group.noise_configurations > 0 ? percent(group.noise_floor.mre) : std::string("-")) << " ("
        << group.noise_configurations << ") |\n";
  return out.str();
}

PredictorScore score_predictor(const std::string& set_dir, const std::string& db_path, const ScoreOptions& options) {
  forecast::PredictorSet set = forecast::load_predictor_set(set_dir);
  const forecast::Predictor& predictor = *set.time;
  const std::vector<records::EnvironmentRecord>& trained = predictor.manifest().environments;
  if (trained.empty()) throw InputError("predictor " + set_dir + " records no training environment");

  PredictorScore score;
  score.predictor = set_dir;
  score.dataset = db_path;
  score.which = options.runs == HoldoutRuns::Only ? "the holdout runs" : "all runs";

  // Each measured environment is forecast with its matching (or nearest) training environment's
  // hardware features, as `predict` on that machine would.
  TableOptions table_options;
  table_options.holdout = options.runs;
  table_options.environment = options.environment;
  {
    store::Store store = store::Store::open(db_path, store::Database::Mode::ReadOnly);
    for (const records::EnvironmentRecord& measured : store.environments()) {
      forecast::HostMatch match = forecast::match_host(measured, trained);
      auto chosen = std::find_if(trained.begin(), trained.end(),
                                 [&](const records::EnvironmentRecord& e) { return e.hash() == match.environment; });
      if (chosen == trained.end()) chosen = trained.begin();
      table_options.featurize_as[measured.hash()] = *chosen;
      PredictorScore::EnvironmentUse use;
      use.measured = measured.hash();
      use.measured_label = forecast::environment_label(measured);
      use.predictor_environment = chosen->hash();
      use.exact = match.exact;
      for (const forecast::FieldDifference& difference : match.differs)
        use.differs.push_back(difference.field + " " + difference.host + " vs " + difference.predictor);
      score.environments.push_back(use);
    }
  }
  TrainingTable table = load_training_table(db_path, table_options);
  // Only the environments that have runs left in the table.
  score.environments.erase(std::remove_if(score.environments.begin(), score.environments.end(),
                                          [&](const PredictorScore::EnvironmentUse& use) {
                                            return table.environments.count(use.measured) == 0;
                                          }),
                           score.environments.end());
  score.notes = table.notes;

  std::vector<forecast::Estimate> forecasts = predictor.predict(table.x);
  for (size_t row = 0; row < table.samples.size();
       ++row) {  // past the trained batches, bounded as `predict` bounds them
    const Sample& sample = table.samples[row];
    if (sample.graph >= 0)
      forecasts[row] =
          forecast::time_forecast(predictor, forecasts[row], table.graphs[static_cast<size_t>(sample.graph)],
                                  training_config_of(sample.config), table.hardware[row]);
  }
  GroupBuilder all;
  all.name = "all";
  std::map<std::string, GroupBuilder> kinds;
  for (size_t row = 0; row < table.samples.size(); ++row) {
    const Sample& sample = table.samples[row];
    const forecast::Estimate& forecast = forecasts[row];
    if (!(forecast.value > 0) || !std::isfinite(forecast.value))
      throw InputError("predictor " + set_dir + " forecast " + std::to_string(forecast.value) + " ms for " +
                       sample.network_name + " at batch " + std::to_string(sample.config.batch));
    all.add(sample, forecast);
    const std::string kind = sample.family == "synthetic" ? "synthetic" : "designed";
    GroupBuilder& group = kinds[kind];
    group.name = kind;
    group.add(sample, forecast);
  }
  score.all = all.finish();
  score.monotone = monotone_check(table, forecasts);
  for (const char* kind : {"designed", "synthetic"})
    if (kinds.count(kind)) score.by_kind.push_back(kinds.at(kind).finish());
  return score;
}

}  // namespace dnncast::study
