#include "learn/automl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"

namespace dnncast::learn {

using dnncast::seconds_since;

const CandidateResult& AutoMLResult::best() const {
  if (leaderboard.empty() || !leaderboard.front().error.empty()) {
    std::string why = leaderboard.empty() ? "no candidate was tried" : leaderboard.front().error;
    throw InputError("AutoML found no working model: " + why);
  }
  return leaderboard.front();
}

FittedModel fit_candidate(const Matrix& x, const Vector& y, const Candidate& candidate) {
  FittedModel model;
  model.transform = candidate.transform;
  model.transform.fit(x, y);
  model.learner = make_learner(candidate.learner, candidate.hyperparameters);
  model.learner->fit(x, model.transform.forward(x, y));
  return model;
}

CandidateResult cross_validate(const Matrix& x, const Vector& y, const Candidate& candidate,
                               const std::vector<std::vector<int64_t>>& folds) {
  CandidateResult result;
  result.candidate = candidate;
  result.out_of_fold = Vector::Zero(y.size());
  auto start = std::chrono::steady_clock::now();
  try {
    for (const std::vector<int64_t>& test : folds) {
      std::vector<int64_t> train = complement(x.rows(), test);
      Matrix x_train = select_rows(x, train);
      FittedModel model = fit_candidate(x_train, select_rows(y, train), candidate);
      Matrix x_test = select_rows(x, test);
      Vector predicted = model.predict(x_test);
      for (size_t index = 0; index < test.size(); ++index)
        result.out_of_fold(test[index]) = predicted(static_cast<int64_t>(index));
    }
    std::vector<int64_t> scored;
    for (const auto& fold : folds) scored.insert(scored.end(), fold.begin(), fold.end());
    result.cv = error_stats(select_rows(result.out_of_fold, scored), select_rows(y, scored));
    // A model that predicts NaN/inf is as good as failed.
    if (!result.out_of_fold.allFinite()) result.error = "non-finite predictions";
  } catch (const InputError& error) {
    result.error = error.what();
  }
  result.seconds = seconds_since(start);
  return result;
}

AutoMLResult run_automl(const Matrix& x, const Vector& y, const AutoMLOptions& options) {
  if (x.rows() != y.size()) throw InputError("AutoML: features and targets differ in rows");
  if (!(options.budget_s >= 0)) throw InputError("AutoML: the time budget must not be negative");
  if (options.budget_s == 0 && options.max_candidates <= 0)
    throw InputError("AutoML: no budget: give a time budget, a candidate budget, or both");
  if (x.rows() < 2 * std::max(2, options.folds))
    throw InputError("too few rows to train on: " + std::to_string(x.rows()) + " (need at least " +
                     std::to_string(2 * std::max(2, options.folds)) + " for " + std::to_string(options.folds) +
                     "-fold cross-validation)");
  std::vector<std::string> learners = options.learners;
  if (learners.empty()) learners = learners_cheap_first();      // every registered learner
  for (const std::string& name : learners) learner_info(name);  // unknown names fail before any work
  std::vector<TargetTransform> transforms = options.transforms;
  if (transforms.empty()) transforms.push_back(TargetTransform::log());
  std::vector<std::vector<int64_t>> folds = options.groups.empty()
                                                ? kfold_indices(x.rows(), options.folds, options.seed)
                                                : group_kfold_indices(options.groups, options.folds, options.seed);

  auto start = std::chrono::steady_clock::now();
  Rng rng(options.seed);
  AutoMLResult result;
  std::map<std::string, double> last_seconds;  // cost estimate per learner
  int64_t tried = 0;
  auto out_of_budget = [&](const std::string& learner) {
    if (options.max_candidates > 0 && tried >= options.max_candidates) return true;
    if (tried == 0) return false;  // always try one
    double estimate = last_seconds.count(learner) ? last_seconds[learner] : 0.0;
    return options.budget_s > 0 && seconds_since(start) + estimate > options.budget_s;
  };
  auto run = [&](const Candidate& candidate) {
    CandidateResult scored = cross_validate(x, y, candidate, folds);
    last_seconds[candidate.learner] = scored.seconds;
    ++tried;
    if (options.log != nullptr) {
      char line[256];
      if (scored.error.empty())
        std::snprintf(line, sizeof line, "automl %3lld  %-13s %-34s CV MRE %7.2f%%  (%.1f s)\n",
                      static_cast<long long>(tried), candidate.learner.c_str(), candidate.transform.name().c_str(),
                      100 * scored.cv.mre, scored.seconds);
      else
        std::snprintf(line, sizeof line, "automl %3lld  %-13s failed: %.150s\n", static_cast<long long>(tried),
                      candidate.learner.c_str(), scored.error.c_str());
      *options.log << line << std::flush;
    }
    result.leaderboard.push_back(std::move(scored));
  };

  // Round 0: every learner's defaults with each transform, learner by learner (so that a slow
  // learner late in the order cannot leave the early ones without a transform); then random
  // points, learners in turn.
  for (const std::string& learner : learners)
    for (const TargetTransform& transform : transforms) {
      if (out_of_budget(learner)) continue;
      run({learner, learner_info(learner).make({})->hyperparameters(), transform});
    }
  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (const std::string& learner : learners) {
      if (out_of_budget(learner)) continue;
      if (learner_info(learner).make({})->hyperparameters().empty()) continue;  // nothing to search
      const TargetTransform& transform = transforms[rng.below(transforms.size())];
      nlohmann::json sampled = learner_info(learner).sample(rng);
      run({learner, learner_info(learner).make(sampled)->hyperparameters(), transform});
      progressed = true;
    }
  }

  std::stable_sort(result.leaderboard.begin(), result.leaderboard.end(),
                   [](const CandidateResult& a, const CandidateResult& b) {
                     if (a.error.empty() != b.error.empty()) return a.error.empty();
                     return a.cv.mre < b.cv.mre;
                   });
  return result;
}

std::string format_leaderboard(const AutoMLResult& result, size_t top) {
  std::ostringstream out;
  char line[320];
  std::snprintf(line, sizeof line, "%-4s  %-13s  %-34s  %8s  %8s  %8s  %7s  %7s\n", "rank", "learner", "target",
                "CV MRE", "median", "p90", "<=10%", "seconds");
  out << line;
  for (size_t rank = 0; rank < result.leaderboard.size() && rank < top; ++rank) {
    const CandidateResult& entry = result.leaderboard[rank];
    if (!entry.error.empty()) {
      std::snprintf(line, sizeof line, "%-4zu  %-13s  failed: %.200s\n", rank + 1, entry.candidate.learner.c_str(),
                    entry.error.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-4zu  %-13s  %-34s  %7.2f%%  %7.2f%%  %7.2f%%  %6.1f%%  %7.1f\n", rank + 1,
                    entry.candidate.learner.c_str(), entry.candidate.transform.name().c_str(), 100 * entry.cv.mre,
                    100 * entry.cv.median_re, 100 * entry.cv.p90_re, 100 * entry.cv.within_10pct, entry.seconds);
    }
    out << line;
  }
  return out.str();
}

}  // namespace dnncast::learn
