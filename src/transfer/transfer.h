// Transfer of performance models between environments (Iqbal, Kotthoff, Jamshidi 2019;
// docs/TRANSFER.md). A source model is fitted on all source measurements; a target
// environment is measured at a small budget of configurations and the source model is carried over:
//   DM    direct model transfer: the source model's forecast as is
//   LMS   linear model shift: target = a * source forecast + b, least squares on the target sample
//   NMLS  non-linear model shift: the learner maps (options, log source forecast) -> log target
//   GS    guided sampling: forward/backward stepwise regression on the source (options and their
//         pairwise interactions, log target) finds the influential terms; the target sample is drawn
//         to cover the levels of the options in them; the target model is a ridge log-linear shift
//         of the source forecast plus the strongest influential terms (as many as the sample carries)
// References: "random" = the learner from scratch on a random target sample of the same budget;
// "scratch_all" = the learner from scratch on all target rows, k-fold cross-validated.
//
// Data: x = one row per configuration, one column per option (plain numbers); y = the metric,
// positive. Learners fit log(y) (MAPE is a relative error) and forecasts are exp'd back.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "learn/learner.h"

namespace dnncast::transfer {

// Configurations of one environment: options (columns of x) and one positive metric per row.
struct OptionTable {
  std::string name;                  // where it came from (file path, dataset filter)
  std::vector<std::string> options;  // column names of x
  learn::Matrix x;                   // rows x options
  learn::Vector y;                   // rows, > 0
  int64_t rows() const { return x.rows(); }
};

// Reads a plain CSV file (header line; lines starting with '#' skipped) into the named option
// columns and metric column. Throws InputError naming the file and what is wrong: missing file,
// unknown column (listing the known ones), a non-numeric option value, a metric that is not a
// positive number, no rows.
OptionTable read_csv_table(const std::string& path, const std::vector<std::string>& options, const std::string& metric);

// ---- stepwise regression over options and pairwise interactions ----

struct Term {
  int first = -1;   // option column
  int second = -1;  // option column of an interaction, -1 for a main effect
  std::string name(const std::vector<std::string>& options) const;  // "a" or "a*b"
};

struct StepwiseOptions {
  double min_gain = 0.01;  // forward: add a term while it removes >= this share of the total sum of squares
  int max_terms = 10;
  bool interactions = true;
};

struct StepwiseResult {
  std::vector<Term> terms;    // in the order forward selection added them (strongest first)
  std::vector<double> gains;  // share of the total sum of squares each term removed when added
  double r2 = 0;              // of the final model
  learn::Vector low, high;    // option ranges used to scale options to [0, 1]
};

// Forward selection (greatest decrease of the residual sum of squares, stop below min_gain) with a
// backward elimination pass after each addition (drop any term whose removal costs less than half
// of min_gain). Options are scaled to [0, 1] by their range; constant options are never chosen.
StepwiseResult stepwise_terms(const learn::Matrix& x, const learn::Vector& y, const StepwiseOptions& options = {});
// Design columns of the terms for rows of x, scaled like the fit.
learn::Matrix term_columns(const StepwiseResult& fit, const learn::Matrix& x);

// ---- sampling ----

// `count` distinct row indices of [0, rows), uniformly at random.
std::vector<int64_t> random_sample(int64_t rows, int64_t count, learn::Rng& rng);
// `count` distinct rows chosen greedily so that the levels of each option in `columns` are covered
// as evenly as possible (least-covered levels first, ties at random); options with many distinct
// values are binned into at most `max_levels` quantile bins.
std::vector<int64_t> covering_sample(const learn::Matrix& x, const std::vector<int>& columns, int64_t count,
                                     learn::Rng& rng, int max_levels = 8);

// ---- the experiment ----

inline const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names{"dm", "lms", "nmls", "gs", "random", "scratch_all"};
  return names;
}

struct ExperimentOptions {
  double budget = 0.0244;  // target rows to measure: a fraction in (0, 1), or a count >= 1
  std::vector<std::string> strategies{"dm", "lms", "nmls", "gs", "random", "scratch_all"};
  std::vector<std::string> learners{"rt", "nn", "xgb"};  // aliases or learner registry names
  int draws = 20;  // random target samples per strategy (dm and scratch_all do not depend on them)
  int folds = 10;  // scratch_all cross-validation
  uint64_t seed = 1;
  StepwiseOptions stepwise;
};

// Learner registry name of an alias: rt -> cart, nn -> mlp, xgb -> xgboost; others unchanged.
// Throws InputError listing the known learners and aliases for an unknown one.
std::string learner_name(const std::string& alias);
// Target rows of a budget: round-up of fraction x rows, or the count. Throws InputError when it is
// not in (0, rows - 1] rows or below 2 (a linear shift needs two points).
int64_t budget_rows(double budget, int64_t rows);

struct Cell {
  std::string strategy, learner;  // learner as given (alias)
  int64_t samples = 0;            // target rows used for fitting (all rows for scratch_all)
  int64_t evaluated = 0;          // target rows the error is taken on, per draw
  int draws = 0;
  double mape_pct = 0;     // mean over draws
  double mape_sd_pct = 0;  // standard deviation over draws
  nlohmann::json to_json() const;
};

struct ExperimentResult {
  std::string source, target;
  std::vector<std::string> options;
  int64_t source_rows = 0, target_rows = 0, budget_rows = 0;
  std::vector<Term> source_terms;  // GS's influential terms on the source
  std::vector<double> source_gains;
  std::vector<Cell> cells;  // strategy-major, learners in the given order
  nlohmann::json to_json() const;
};

// Runs every strategy x learner; every cell is evaluated on the target rows not sampled (for a
// given draw, all strategies share the random sample, except GS which draws its own covering one).
// Throws InputError on unknown strategies or learners, mismatched options, a bad budget.
ExperimentResult run_experiment(const OptionTable& source, const OptionTable& target, const ExperimentOptions& options);

// ---- pieces, exposed for tests and calibrate ----

// a, b of y = a * s + b by least squares (a = 0, b = mean when s is constant).
std::pair<double, double> fit_linear_shift(const learn::Vector& s, const learn::Vector& y);

// The GS target model: log y = c0 + c1 log s + sum_k ck term_k, ridge (lambda on the term weights)
// on the sample; the number of terms kept is min(terms, (samples - 3) / 5). Below 5 samples the
// slope is fixed at 1 (a pure ratio to the source forecast).
struct GuidedShift {
  StepwiseResult source_fit;
  int terms_used = 0;
  learn::Vector coefficients;  // intercept, log s, then one per term used
  void fit(const learn::Matrix& x, const learn::Vector& source_forecast, const learn::Vector& y, double ridge = 1e-3);
  learn::Vector predict(const learn::Matrix& x, const learn::Vector& source_forecast) const;
};

// ---- calibrate: how far to move from the source ----
// Maps from the source forecast s to the target, from the least fitted to the most:
//   source  y = s                                  (the source predictor kept as it is)
//   ratio   log y = log s + b                      (one constant factor)
//   lms     log y = a log s + b                    (a linear shift in log space: a power law)
//   gs      GuidedShift (the shift plus the source's influential terms)
// choose_shift scores each by its leave-one-out error on the measured sample -- the mean absolute
// log ratio of forecast to measurement, x 100 (the maps are fitted in log space; MAPE would let a
// few over-forecasts decide) -- and keeps the least fitted
// one whose score is within `margin` of the best (best x (1 + margin) + 0.5 percentage points): a
// fitted map must earn its parameters on the sample by more than its noise, else the simpler stays. A handful of
// measurements cannot support a slope: lms and gs are only candidates from 5 samples on, ratio from 2.
struct ShiftChoice {
  std::string chosen = "source";
  std::vector<std::pair<std::string, double>>
      loo_log_error_pct;                    // candidate -> leave-one-out mean |log(forecast / measured)| x 100
  double log_intercept = 0, log_slope = 1;  // ratio and lms
  GuidedShift guided;                       // gs
  learn::Vector predict(const learn::Matrix& x, const learn::Vector& source_forecast) const;
};
// One map fitted on all of (x, s, y). Throws InputError for an unknown name.
ShiftChoice fit_shift(const std::string& name, const StepwiseResult& source_fit, const learn::Matrix& x,
                      const learn::Vector& source_forecast, const learn::Vector& y);
ShiftChoice choose_shift(const StepwiseResult& source_fit, const learn::Matrix& x, const learn::Vector& source_forecast,
                         const learn::Vector& y, double margin = 0.10);

// MAPE (percent) of predictions over the given rows.
double mape_pct(const learn::Vector& predicted, const learn::Vector& truth, const std::vector<int64_t>& rows);

}  // namespace dnncast::transfer
