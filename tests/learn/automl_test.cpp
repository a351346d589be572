// Metrics, folds, target transforms and the AutoML search.
#include "learn/automl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "core/error.h"

namespace dnncast::learn {
namespace {

TEST(Metrics, HandComputed) {
  Vector truth(4), predicted(4);
  truth << 2, 4, 5, 10;
  predicted << 2.1, 4, 4, 13;  // errors 0.05, 0, 0.2, 0.3
  ErrorStats stats = error_stats(predicted, truth);
  EXPECT_EQ(stats.count, 4);
  EXPECT_NEAR(stats.mre, (0.05 + 0 + 0.2 + 0.3) / 4, 1e-12);
  EXPECT_NEAR(stats.median_re, (0.05 + 0.2) / 2, 1e-12);
  EXPECT_NEAR(stats.p90_re, 0.2 + 0.7 * (0.3 - 0.2), 1e-12);  // position 0.9 * 3 = 2.7
  EXPECT_DOUBLE_EQ(stats.within_10pct, 0.5);
  truth(1) = 0;
  EXPECT_THROW(error_stats(predicted, truth), InputError);
}

TEST(Folds, CoverEveryRowOnceAndKeepGroupsWhole) {
  auto folds = kfold_indices(23, 5, 7);
  std::multiset<int64_t> seen;
  for (const auto& fold : folds) {
    seen.insert(fold.begin(), fold.end());
    EXPECT_GE(fold.size(), 4u);
  }
  EXPECT_EQ(seen.size(), 23u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 23u);

  std::vector<int64_t> groups;
  for (int64_t row = 0; row < 40; ++row) groups.push_back(row % 7);
  auto grouped = group_kfold_indices(groups, 3, 1);
  std::multiset<int64_t> rows;
  for (const auto& fold : grouped) {
    std::set<int64_t> fold_groups;
    for (int64_t row : fold) fold_groups.insert(groups[static_cast<size_t>(row)]);
    for (size_t other = 0; other < grouped.size(); ++other)
      if (&grouped[other] != &fold) {
        for (int64_t row : grouped[other]) EXPECT_EQ(fold_groups.count(groups[static_cast<size_t>(row)]), 0u);
      }
    rows.insert(fold.begin(), fold.end());
  }
  EXPECT_EQ(rows.size(), 40u);
  EXPECT_THROW(group_kfold_indices(std::vector<int64_t>(10, 1), 3, 1), InputError);
}

TEST(Target, TransformsInvert) {
  Matrix x(3, 2);
  x << 1, 100, 2, 1000, 3, 10;
  Vector y(3);
  y << 0.5, 7, 30;
  for (TargetTransform transform :
       {TargetTransform::identity(), TargetTransform::log(), TargetTransform::log_ratio(1, "ref"),
        TargetTransform::log_residual({0, 1}, {"a", "b"})}) {
    transform.fit(x, y);
    Vector back = transform.inverse(x, transform.forward(x, y));
    for (int64_t row = 0; row < 3; ++row) EXPECT_NEAR(back(row), y(row), 1e-12) << transform.name();
    TargetTransform copy = TargetTransform::from_json(transform.to_json());
    EXPECT_EQ(copy.name(), transform.name());
    EXPECT_EQ(copy.floor, transform.floor);
    EXPECT_EQ(copy.coefficients, transform.coefficients);
    EXPECT_EQ(copy.clamp_low, transform.clamp_low);
    EXPECT_EQ(copy.clamp_high, transform.clamp_high);
  }
  // Outputs far outside the training targets are held to the widened training range.
  TargetTransform log = TargetTransform::log();
  log.fit(x, y);  // log y spans log 0.5 .. log 30: widened by that span on each side
  Vector wild(1);
  wild << 50.0;
  EXPECT_NEAR(log.inverse(x.topRows(1), wild)(0), 30.0 * 60.0, 1e-6);
  // The residual reference is a least-squares fit: exact when y is linear in the references.
  Vector linear(3);
  linear << 2 * 1 + 0.01 * 100 + 3, 2 * 2 + 0.01 * 1000 + 3, 2 * 3 + 0.01 * 10 + 3;
  TargetTransform residual = TargetTransform::log_residual({0, 1}, {"a", "b"});
  residual.fit(x, linear);
  EXPECT_NEAR(residual.coefficients[0], 2, 1e-9);
  EXPECT_NEAR(residual.coefficients[1], 0.01, 1e-9);
  EXPECT_NEAR(residual.coefficients[2], 3, 1e-9);
  EXPECT_LT(residual.forward(x, linear).cwiseAbs().maxCoeff(), 1e-12);
  Vector negative = y;
  negative(0) = -1;
  EXPECT_THROW(TargetTransform::log().forward(x, negative), InputError);
  EXPECT_THROW(TargetTransform::from_json({{"kind", "sqrt"}}), InputError);
}

TEST(Target, ThreadScalingIsMeasuredOnPairs) {
  // Columns: work per thread (the ratio's reference), threads, work and batch (the pair key).
  // Six configurations at 1 and 2 threads whose 2-thread time is work / 2^e with e 0.4 .. 0.6
  // (median 0.5), and two configurations at 2 threads only.
  const double exponents[] = {0.4, 0.45, 0.5, 0.5, 0.55, 0.6};
  Matrix x(14, 4);
  Vector y(14);
  for (int k = 0; k < 6; ++k) {
    double work = 100.0 * (k + 1), batch = k % 3 + 1;
    x.row(2 * k) << work, 1, work, batch;
    y(2 * k) = work;
    x.row(2 * k + 1) << work / 2, 2, work, batch;
    y(2 * k + 1) = work / std::pow(2.0, exponents[k]);
  }
  x.row(12) << 50, 2, 100, 2;  // same work as configuration 0, other batch: not a pair
  y(12) = 80;
  x.row(13) << 400, 2, 800, 1;
  y(13) = 600;
  TargetTransform scaled =
      TargetTransform::log_ratio(0, "work_per_thread").with_thread_scaling(1, "threads", {2, 3}, {"work", "batch"});
  scaled.fit(x, y);
  EXPECT_EQ(scaled.thread_pairs, 6);
  EXPECT_NEAR(scaled.thread_exponent, 0.5, 1e-12);
  // The reference is work / threads^e plus the floor (5% quantile of work per thread).
  double row[4] = {300, 2, 600, 1};
  EXPECT_NEAR(scaled.reference(row), (300 + scaled.floor) * std::pow(2.0, 0.5), 1e-9);
  Vector back = scaled.inverse(x, scaled.forward(x, y));
  for (int64_t index = 0; index < y.size(); ++index) EXPECT_NEAR(back(index), y(index), 1e-9);
  TargetTransform copy = TargetTransform::from_json(scaled.to_json());
  EXPECT_EQ(copy.name(), scaled.name());
  EXPECT_EQ(copy.thread_exponent, scaled.thread_exponent);
  EXPECT_EQ(copy.pair_columns, scaled.pair_columns);
  EXPECT_EQ(copy.reference(row), scaled.reference(row));
  // Without pairs the scaling is ideal (e = 1): the reference is work per thread, as before.
  TargetTransform unpaired =
      TargetTransform::log_ratio(0, "work_per_thread").with_thread_scaling(1, "threads", {2, 3}, {"work", "batch"});
  unpaired.fit(x.bottomRows(2), y.tail(2));
  EXPECT_EQ(unpaired.thread_pairs, 0);
  EXPECT_EQ(unpaired.thread_exponent, 1.0);
  EXPECT_NEAR(unpaired.reference(row), 300 + unpaired.floor, 1e-9);
  // A manifest with an exponent outside [0, 1] is refused.
  nlohmann::json bad = scaled.to_json();
  bad["thread_scaling"]["exponent"] = 1.5;
  EXPECT_THROW(TargetTransform::from_json(bad), InputError);
}

TEST(AutoML, FindsAnAccurateModelAndRanksTheLeaderboard) {
  // y = exp(1 + x0 + x0*x1) * (1 + 1% noise): exact for stepwise regression in log space.
  Rng rng(11);
  int64_t rows = 300;
  Matrix x(rows, 4);
  Vector y(rows);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < 4; ++col) x(row, col) = rng.unit();
    y(row) = std::exp(1 + x(row, 0) + x(row, 0) * x(row, 1)) * (1 + 0.01 * rng.normal());
  }
  AutoMLOptions options;
  options.budget_s = 0;  // no time budget: the 8 candidates below, on any machine
  options.folds = 4;
  options.learners = {"ridge", "stepwise", "cart"};
  options.transforms = {TargetTransform::log(), TargetTransform::identity()};
  options.max_candidates = 8;
  std::ostringstream log;
  options.log = &log;
  AutoMLResult result = run_automl(x, y, options);
  ASSERT_EQ(result.leaderboard.size(), 8u);
  for (size_t rank = 1; rank < result.leaderboard.size(); ++rank)
    EXPECT_LE(result.leaderboard[rank - 1].cv.mre, result.leaderboard[rank].cv.mre);
  const CandidateResult& best = result.best();
  EXPECT_EQ(best.candidate.learner, "stepwise");
  EXPECT_LT(best.cv.mre, 0.015);  // noise is 1%: mean |noise| = 0.8%
  EXPECT_EQ(best.cv.count, rows);
  std::string table = format_leaderboard(result);
  EXPECT_NE(table.find("stepwise"), std::string::npos);
  EXPECT_NE(log.str().find("CV MRE"), std::string::npos);

  FittedModel model = fit_candidate(x, y, best.candidate);
  EXPECT_LT(error_stats(model.predict(x), y).mre, 0.015);
}

TEST(AutoML, TooFewRowsIsAnInputError) {
  Matrix x = Matrix::Random(5, 2);
  Vector y = Vector::Constant(5, 1.0);
  AutoMLOptions options;
  EXPECT_THROW(run_automl(x, y, options), InputError);
  options.learners = {"nope"};
  Matrix big = Matrix::Random(50, 2);
  EXPECT_THROW(run_automl(big, Vector::Constant(50, 1.0), options), InputError);
}

TEST(AutoML, CandidateBudgetAloneIsDeterministic) {
  Rng rng(5);
  Matrix x(60, 3);
  Vector y(60);
  for (int64_t row = 0; row < 60; ++row) {
    for (int64_t col = 0; col < 3; ++col) x(row, col) = rng.unit();
    y(row) = 1 + x(row, 0) + 2 * x(row, 2);
  }
  AutoMLOptions options;
  options.budget_s = 0;
  options.folds = 3;
  options.learners = {"ridge", "cart"};
  options.max_candidates = 5;
  AutoMLResult first = run_automl(x, y, options), second = run_automl(x, y, options);
  ASSERT_EQ(first.leaderboard.size(), 5u);
  ASSERT_EQ(second.leaderboard.size(), 5u);
  for (size_t rank = 0; rank < 5; ++rank) {
    EXPECT_EQ(first.leaderboard[rank].candidate.learner, second.leaderboard[rank].candidate.learner);
    EXPECT_EQ(first.leaderboard[rank].candidate.hyperparameters, second.leaderboard[rank].candidate.hyperparameters);
    EXPECT_EQ(first.leaderboard[rank].cv.mre, second.leaderboard[rank].cv.mre);
  }
  options.max_candidates = 0;  // and no time budget either: refused, not an endless search
  EXPECT_THROW(run_automl(x, y, options), InputError);
  options.budget_s = -1;
  options.max_candidates = 5;
  EXPECT_THROW(run_automl(x, y, options), InputError);
}

TEST(AutoML, WithNoLearnersNamedEveryRegisteredLearnerIsTried) {
  // The registration list is the only list: a learner added to the registry reaches AutoML's default
  // search (candidates go round the learners in order, so one candidate each covers them all).
  Rng rng(7);
  Matrix x(40, 2);
  Vector y(40);
  for (int64_t row = 0; row < 40; ++row) {
    for (int64_t col = 0; col < 2; ++col) x(row, col) = rng.unit();
    y(row) = 1 + x(row, 0);
  }
  AutoMLOptions options;
  options.budget_s = 0;
  options.folds = 2;
  options.max_candidates = static_cast<int64_t>(learner_names().size());
  AutoMLResult result = run_automl(x, y, options);
  std::set<std::string> tried;
  for (const CandidateResult& entry : result.leaderboard) tried.insert(entry.candidate.learner);
  const std::vector<std::string> names = learner_names();
  EXPECT_EQ(tried, std::set<std::string>(names.begin(), names.end()));
  // Cheap first: the order a short budget relies on.
  EXPECT_EQ(learners_cheap_first().front(), "mean");
  EXPECT_EQ(learners_cheap_first().size(), names.size());
}

}  // namespace
}  // namespace dnncast::learn
