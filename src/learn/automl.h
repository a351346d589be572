// AutoML: k-fold cross-validation over learners x hyperparameters x target transforms within a
// time budget, a candidate budget, or both (random search: every learner's defaults first, then
// random points of each learner's space in turn), ranked by cross-validated mean relative error.
// A candidate budget alone makes the search independent of the machine's speed: the same seed
// tries the same candidates everywhere.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "learn/learner.h"
#include "learn/metrics.h"
#include "learn/target.h"

namespace dnncast::learn {

struct Candidate {
  std::string learner;
  nlohmann::json hyperparameters;
  TargetTransform transform;
};

struct CandidateResult {
  Candidate candidate;
  ErrorStats cv;       // out-of-fold, in the original target space
  double seconds = 0;  // wall time of all folds
  std::string error;   // non-empty when a fold failed (then cv is empty)
  Vector out_of_fold;  // predictions for every row, each from the fold that did not see it
};

struct AutoMLOptions {
  double budget_s = 60;  // 0 = no time budget (then max_candidates > 0)
  int folds = 5;
  uint64_t seed = 1;
  std::vector<std::string> learners;        // empty = all registered, cheap ones first
  std::vector<TargetTransform> transforms;  // empty = {log}
  std::vector<int64_t> groups;              // non-empty: grouped folds (one group per row)
  int64_t max_candidates = 0;               // 0 = until the budget is spent
  std::ostream* log = nullptr;              // one line per candidate when set
};

struct AutoMLResult {
  std::vector<CandidateResult> leaderboard;  // best first; failed candidates last
  const CandidateResult& best() const;       // throws InputError when every candidate failed
};

// Cross-validated error of one candidate (fits `folds` models).
CandidateResult cross_validate(const Matrix& x, const Vector& y, const Candidate& candidate,
                               const std::vector<std::vector<int64_t>>& folds);

// Throws InputError when there are fewer rows than 2 x folds, or when neither budget is set.
AutoMLResult run_automl(const Matrix& x, const Vector& y, const AutoMLOptions& options);

// The leaderboard as a text table (rank, learner, transform, CV MRE, median, p90, within 10%, seconds).
std::string format_leaderboard(const AutoMLResult& result, size_t top = 10);

// Fits a candidate on all rows: the transform's floor and the learner.
struct FittedModel {
  TargetTransform transform;
  std::unique_ptr<Learner> learner;
  Vector predict(const Matrix& x) const { return transform.inverse(x, learner->predict(x)); }
};
FittedModel fit_candidate(const Matrix& x, const Vector& y, const Candidate& candidate);

}  // namespace dnncast::learn
