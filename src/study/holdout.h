// Scoring a predictor set on measured runs it never saw (`dnncast evaluate --predictor SET --db DB`):
// the frozen holdout (data/plans/holdout.json, TableOptions::holdout), or any dataset. Nothing is
// fitted. Each configuration is forecast as `dnncast predict` would forecast it on the machine that
// measured it: with the hardware features of the predictor's matching training environment (exact,
// else the nearest, apps::match_host). Errors are taken against every repeat, beside the noise floor
// of the same runs (evaluate's protocol, docs/RESULTS.md), and the interval's
// coverage is the share of measured repeats inside the forecast's 90% interval.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "learn/metrics.h"
#include "study/training.h"

namespace dnncast::study {

struct ScoreGroup {
  std::string name;  // "all", "designed", "synthetic", or a plan group
  int64_t configurations = 0, runs = 0;
  learn::ErrorStats model;        // forecast against every measured repeat
  double median_signed = 0;       // median of (forecast - measured) / measured; < 0 = too fast
  double coverage = 0;            // share of measured repeats inside [low, high]
  learn::ErrorStats noise_floor;  // over this group's configurations with 2+ repeats
  int64_t noise_configurations = 0;
  nlohmann::json to_json() const;
};

// Monotone in the batch: over each measured series (one network, input, optimizer, precision,
// threads and environment) the adjacent measured batches b < b'. The forecast's time per sample
// should not rise from b to b' where the measured one does not.
struct MonotoneCheck {
  int64_t pairs = 0;           // adjacent measured pairs
  int64_t measured_flat = 0;   // of them, those whose measured time per sample did not rise
  int64_t forecast_rises = 0;  // of those, the ones whose forecast time per sample rose
  double worst_rise = 0;       // the largest such rise, as a fraction (0.2 = 20%)
  std::string worst;           // which: "network input batches b->b'"
  nlohmann::json to_json() const;
};

struct PredictorScore {
  std::string predictor, dataset, which;  // which: "holdout" (runs of the holdout plan) or "all runs"
  double interval_nominal = 0.90;         // the manifest's 5%-95% quantiles of log(truth / forecast)
  // Per measured environment: the training environment whose features it was forecast with.
  struct EnvironmentUse {
    std::string measured, measured_label, predictor_environment;
    bool exact = false;
    std::vector<std::string> differs;  // fields that disagree, when not exact
  };
  std::vector<EnvironmentUse> environments;
  ScoreGroup all;
  std::vector<ScoreGroup> by_kind;  // designed, synthetic: those with runs
  MonotoneCheck monotone;
  std::vector<std::string> notes;
  nlohmann::json to_json() const;
  std::string text() const;
  std::string markdown() const;  // a docs/RESULTS.md-ready table row set
};

struct ScoreOptions {
  HoldoutRuns runs = HoldoutRuns::Only;
  std::string environment;  // keep only this environment of the dataset ("" = all)
};

// Throws InputError when the set has no time bundle, the dataset has no run to score, or a forecast
// cannot be made.
PredictorScore score_predictor(const std::string& set_dir, const std::string& db_path,
                               const ScoreOptions& options = {});

}  // namespace dnncast::study
