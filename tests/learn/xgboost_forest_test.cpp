// dnncast walks XGBoost's fitted trees itself for forecasts (src/learn/xgboost_learner.cpp); here
// its outputs are checked against XGBoost's own prediction of the saved model (C API, a DMatrix),
// for boosted trees and the RF mode, with missing values (NaN) among the rows predicted.
#include <gtest/gtest.h>
#include <xgboost/c_api.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "learn/learner.h"
#include "learn/metrics.h"

namespace dnncast::learn {
namespace {

std::vector<float> xgboost_predictions(const std::string& model_path, const std::vector<float>& rows, int64_t count,
                                       int64_t columns) {
  BoosterHandle booster = nullptr;
  DMatrixHandle matrix = nullptr;
  std::vector<float> result;
  if (XGBoosterCreate(nullptr, 0, &booster) == 0 && XGBoosterLoadModel(booster, model_path.c_str()) == 0 &&
      XGDMatrixCreateFromMat(rows.data(), static_cast<bst_ulong>(count), static_cast<bst_ulong>(columns),
                             std::numeric_limits<float>::quiet_NaN(), &matrix) == 0) {
    bst_ulong length = 0;
    const float* values = nullptr;
    if (XGBoosterPredict(booster, matrix, 0, 0, 0, &length, &values) == 0) result.assign(values, values + length);
  }
  if (matrix != nullptr) XGDMatrixFree(matrix);
  if (booster != nullptr) XGBoosterFree(booster);
  return result;
}

TEST(XGBoostForest, WalksTheTreesAsXGBoostPredicts) {
  const int64_t columns = 7, train_rows = 400, test_rows = 300;
  Rng rng(11);
  Matrix x(train_rows, columns);
  Vector y(train_rows);
  for (int64_t row = 0; row < train_rows; ++row) {
    for (int64_t col = 0; col < columns; ++col) x(row, col) = 4 * rng.unit() - 2;
    y(row) = std::sin(x(row, 0)) * x(row, 1) + (x(row, 2) > 0.3 ? 1.5 : -0.5) + 0.1 * rng.normal();
  }
  // Rows to predict: fresh points, a tenth of the values missing, and the training points
  // themselves (their values sit exactly on XGBoost's split thresholds' neighbours).
  std::vector<float> rows;
  for (int64_t row = 0; row < test_rows; ++row)
    for (int64_t col = 0; col < columns; ++col)
      rows.push_back(rng.unit() < 0.1 ? std::numeric_limits<float>::quiet_NaN()
                                      : static_cast<float>(5 * rng.unit() - 2.5));
  for (int64_t row = 0; row < train_rows; ++row)
    for (int64_t col = 0; col < columns; ++col) rows.push_back(static_cast<float>(x(row, col)));
  const int64_t count = test_rows + train_rows;

  for (const char* name : {"xgboost", "random_forest"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<Learner> learner = make_learner(name);
    learner->fit(x, y);
    std::string dir = std::string(DNNCAST_BINARY_DIR) + "/test_learn_tmp/forest_" + name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    learner->save(dir);
    std::vector<float> expected = xgboost_predictions(dir + "/" + learner->model_file(), rows, count, columns);
    ASSERT_EQ(static_cast<int64_t>(expected.size()), count);

    std::vector<double> fitted(static_cast<size_t>(count)), loaded(static_cast<size_t>(count));
    learner->predict_rows(rows.data(), count, columns, fitted.data());
    std::unique_ptr<Learner> reloaded = make_learner(name);
    reloaded->load(dir);
    reloaded->predict_rows(rows.data(), count, columns, loaded.data());
    // The trees are walked several rows side by side (Forest::predict_many): a row's forecast is the same to the
    // bit whatever rows share its walk (issue 37).
    for (int64_t row = 0; row < count; row += 37) {
      double alone = 0;
      learner->predict_rows(rows.data() + row * columns, 1, columns, &alone);
      EXPECT_EQ(alone, fitted[static_cast<size_t>(row)]) << "row " << row;
    }
    double largest = 0;
    for (int64_t row = 0; row < count; ++row) {
      double truth = expected[static_cast<size_t>(row)];
      largest = std::max(largest, std::abs(fitted[static_cast<size_t>(row)] - truth));
      EXPECT_NEAR(fitted[static_cast<size_t>(row)], truth, 1e-5 * std::max(1.0, std::abs(truth))) << "row " << row;
      EXPECT_EQ(loaded[static_cast<size_t>(row)], fitted[static_cast<size_t>(row)]) << "row " << row;
    }
    // The model is not trivial: its outputs spread over the target's range.
    double low = *std::min_element(expected.begin(), expected.end());
    double high = *std::max_element(expected.begin(), expected.end());
    EXPECT_GT(high - low, 2.0);
    std::printf("%s: largest difference from XGBoost's prediction %.3g\n", name, largest);
  }
}

// save() writes the trees beside the JSON (xgboost.trees, stamped with the JSON's hash) and load() takes them
// from there; a trees file that is missing, damaged, or written from another model's JSON is passed over for
// the JSON, never trusted: every load predicts what the model it reads from JSON predicts.
TEST(XGBoostForest, TheTreesFileIsUsedOnlyWhenItMatchesItsJson) {
  const int64_t columns = 5, rows = 200;
  Rng rng(5);
  Matrix x(rows, columns);
  Vector y_a(rows), y_b(rows);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < columns; ++col) x(row, col) = rng.unit();
    y_a(row) = x(row, 0) + 2 * x(row, 1);
    y_b(row) = 3 * x(row, 2) - x(row, 3);
  }
  std::vector<float> flat;
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < columns; ++col) flat.push_back(static_cast<float>(x(row, col)));
  auto predictions = [&](const Learner& learner) {
    std::vector<double> out(static_cast<size_t>(rows));
    learner.predict_rows(flat.data(), rows, columns, out.data());
    return out;
  };
  const std::string base = std::string(DNNCAST_BINARY_DIR) + "/test_learn_tmp/trees_file";
  std::filesystem::remove_all(base);
  std::unique_ptr<Learner> a = make_learner("xgboost"), b = make_learner("xgboost");
  a->fit(x, y_a);
  b->fit(x, y_b);
  for (const auto& [dir, learner] : {std::pair{base + "/a", a.get()}, std::pair{base + "/b", b.get()}}) {
    std::filesystem::create_directories(dir);
    learner->save(dir);
    ASSERT_TRUE(std::filesystem::exists(dir + "/xgboost.trees"));
  }
  const std::vector<double> want_a = predictions(*a), want_b = predictions(*b);
  ASSERT_NE(want_a, want_b);
  auto loaded = [&](const std::string& dir) {
    std::unique_ptr<Learner> learner = make_learner("xgboost");
    learner->load(dir);
    return predictions(*learner);
  };
  EXPECT_EQ(loaded(base + "/a"), want_a);  // the trees file
  // a's trees beside b's JSON: stale, so b's JSON answers.
  std::filesystem::copy_file(base + "/a/xgboost.trees", base + "/b/xgboost.trees",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(loaded(base + "/b"), want_b);
  // Damaged: cut short, a node's child index turned backwards, noise; and missing.
  const std::string good = [&] {
    std::ifstream in(base + "/a/xgboost.trees", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_GT(good.size(), 200u);
  std::string backwards = good;
  // The last node's "left" field (17 bytes a node: 3 int32, a float, a byte; left first) set to node 0.
  const int32_t first_node = 0;
  std::memcpy(&backwards[good.size() - 17], &first_node, sizeof first_node);
  for (const std::string& damaged : {good.substr(0, good.size() / 2), backwards, std::string(good.size(), '\x7f')}) {
    std::ofstream(base + "/a/xgboost.trees", std::ios::binary) << damaged;
    EXPECT_EQ(loaded(base + "/a"), want_a);
  }
  std::filesystem::remove(base + "/a/xgboost.trees");
  EXPECT_EQ(loaded(base + "/a"), want_a);
}

}  // namespace
}  // namespace dnncast::learn
