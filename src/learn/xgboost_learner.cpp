// Gradient-boosted trees and random forests through XGBoost's C API (linked as libxgboost.so).
// The random forest is XGBoost's RF mode: one round of num_parallel_tree trees on row subsamples
// with per-node column sampling and learning rate 1.
#include <xgboost/c_api.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "graph/error.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

// A value never seen in features: XGBoost's "missing" marker for in-place prediction.
constexpr float kMissing = std::numeric_limits<float>::lowest();

void xgb_check(int status, const std::string& what) {
  if (status != 0) throw InputError("xgboost: " + what + ": " + XGBGetLastError());
}

class DMatrix {
 public:
  DMatrix(const std::vector<float>& rows, int64_t row_count, int64_t column_count) {
    xgb_check(XGDMatrixCreateFromMat(rows.data(), static_cast<bst_ulong>(row_count),
                                     static_cast<bst_ulong>(column_count), kMissing, &handle_),
              "creating the training matrix");
  }
  ~DMatrix() { XGDMatrixFree(handle_); }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle handle() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

std::vector<float> row_major_floats(const Matrix& x) {
  std::vector<float> values(static_cast<size_t>(x.rows() * x.cols()));
  for (int64_t row = 0; row < x.rows(); ++row)
    for (int64_t col = 0; col < x.cols(); ++col)
      values[static_cast<size_t>(row * x.cols() + col)] = static_cast<float>(x(row, col));
  return values;
}

std::string number_text(const nlohmann::json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  std::ostringstream text;
  text.precision(17);
  text << value.get<double>();
  return text.str();
}

class XGBoostLearner : public Learner {
 public:
  XGBoostLearner(std::string name, nlohmann::json hyperparameters, bool forest)
      : name_(std::move(name)), hyper_(std::move(hyperparameters)), forest_(forest) {
    validate();
  }
  ~XGBoostLearner() override { free_booster(); }

  std::string name() const override { return name_; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return "xgboost.json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input(name_, x, y);
    std::vector<float> rows = row_major_floats(x);
    DMatrix train(rows, x.rows(), x.cols());
    std::vector<float> labels(y.data(), y.data() + y.size());
    xgb_check(XGDMatrixSetFloatInfo(train.handle(), "label", labels.data(), static_cast<bst_ulong>(labels.size())),
              "setting labels");
    free_booster();
    DMatrixHandle handles[] = {train.handle()};
    xgb_check(XGBoosterCreate(handles, 1, &booster_), "creating the booster");
    set("objective", "reg:squarederror");
    set("tree_method", "hist");
    set("verbosity", "0");
    set("nthread", std::to_string(fit_threads()));
    set("seed", number_text(hyper_.at("seed")));
    set("max_depth", number_text(hyper_.at("max_depth")));
    set("min_child_weight", number_text(hyper_.at("min_child_weight")));
    set("subsample", number_text(hyper_.at("subsample")));
    set("lambda", number_text(hyper_.at("lambda")));
    // Start from the mean target, not XGBoost's 0.5, so few rounds already fit a log-time target.
    set("base_score", number_text(nlohmann::json(y.mean())));
    int64_t rounds = 1;
    if (forest_) {
      set("num_parallel_tree", number_text(hyper_.at("trees")));
      set("colsample_bynode", number_text(hyper_.at("colsample_bynode")));
      set("learning_rate", "1");
    } else {
      set("learning_rate", number_text(hyper_.at("learning_rate")));
      set("colsample_bytree", number_text(hyper_.at("colsample_bytree")));
      set("alpha", number_text(hyper_.at("alpha")));
      rounds = hyper_.at("rounds").get<int64_t>();
    }
    for (int64_t round = 0; round < rounds; ++round)
      xgb_check(XGBoosterUpdateOneIter(booster_, static_cast<int>(round), train.handle()), "boosting");
    set("nthread", "1");  // predictions are small; one thread avoids the thread pool's start-up cost
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input(name_, x, columns_);
    std::vector<float> rows = row_major_floats(x);
    Vector result(x.rows());
    if (x.rows() == 0) return result;
    predict_in_place(rows.data(), x.rows(), result.data());
    return result;
  }

  void predict_rows(const float* rows, int64_t count, int64_t columns, double* out) const override {
    if (columns_ < 0) throw InputError(name_ + ": predict called before fit or load");
    if (columns != columns_)
      throw InputError(name_ + ": fitted on " + std::to_string(columns_) + " features, asked with " + std::to_string(columns));
    if (count > 0) predict_in_place(rows, count, out);
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError(name_ + ": save called before fit");
    xgb_check(XGBoosterSaveModel(booster_, (dir + "/" + model_file()).c_str()), "saving " + dir);
  }

  void load(const std::string& dir) override {
    free_booster();
    std::string path = dir + "/" + model_file();
    xgb_check(XGBoosterCreate(nullptr, 0, &booster_), "creating the booster");
    if (XGBoosterLoadModel(booster_, path.c_str()) != 0) {
      std::string message = XGBGetLastError();
      free_booster();
      throw InputError("cannot load XGBoost model " + path + ": " + message);
    }
    set("nthread", "1");
    bst_ulong features = 0;
    xgb_check(XGBoosterGetNumFeature(booster_, &features), "reading the feature count");
    columns_ = static_cast<int64_t>(features);
  }

 private:
  void validate() const {
    auto positive = [&](const char* key) {
      if (hyper_.at(key).get<double>() <= 0) throw InputError(name_ + ": " + key + " must be positive");
    };
    auto fraction = [&](const char* key) {
      double value = hyper_.at(key).get<double>();
      if (!(value > 0 && value <= 1)) throw InputError(name_ + ": " + key + " must be in (0, 1]");
    };
    positive("max_depth");
    fraction("subsample");
    if (forest_) {
      positive("trees");
      fraction("colsample_bynode");
    } else {
      positive("rounds");
      fraction("learning_rate");
      fraction("colsample_bytree");
    }
  }

  void set(const char* key, const std::string& value) {
    xgb_check(XGBoosterSetParam(booster_, key, value.c_str()), std::string("setting ") + key + "=" + value);
  }

  void free_booster() {
    if (booster_ != nullptr) XGBoosterFree(booster_);
    booster_ = nullptr;
    columns_ = -1;
  }

  void predict_in_place(const float* rows, int64_t row_count, double* out) const {
    std::ostringstream array;
    array << "{\"data\":[" << reinterpret_cast<uintptr_t>(rows) << ",true],\"shape\":[" << row_count << ","
          << columns_ << "],\"typestr\":\"<f4\",\"version\":3}";
    static const std::string config = [] {
      std::ostringstream text;
      text.precision(10);
      text << "{\"type\":0,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,\"strict_shape\":false,"
              "\"cache_id\":0,\"missing\":"
           << static_cast<double>(kMissing) << "}";
      return text.str();
    }();
    const bst_ulong* shape = nullptr;
    bst_ulong dims = 0;
    const float* values = nullptr;
    xgb_check(XGBoosterPredictFromDense(booster_, array.str().c_str(), config.c_str(), nullptr, &shape, &dims,
                                        &values),
              "predicting");
    for (int64_t row = 0; row < row_count; ++row) out[row] = values[row];
  }

  std::string name_;
  nlohmann::json hyper_;
  bool forest_;
  BoosterHandle booster_ = nullptr;
  int64_t columns_ = -1;
};

const nlohmann::json kBoostDefaults = {{"rounds", 400},        {"learning_rate", 0.05}, {"max_depth", 6},
                                       {"min_child_weight", 1.0}, {"subsample", 0.8},   {"colsample_bytree", 0.8},
                                       {"lambda", 1.0},        {"alpha", 0.0},          {"seed", 0}};
const nlohmann::json kForestDefaults = {{"trees", 200},           {"max_depth", 12},   {"min_child_weight", 1.0},
                                        {"subsample", 0.632},     {"colsample_bynode", 0.8},
                                        {"lambda", 0.0},          {"seed", 0}};

}  // namespace

LearnerInfo xgboost_learner_info() {
  LearnerInfo info;
  info.name = "xgboost";
  info.summary = "gradient-boosted trees (XGBoost hist)";
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<XGBoostLearner>("xgboost", detail::merge_hyperparameters("xgboost", kBoostDefaults, given),
                                            false);
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"rounds", rng.int_between(100, 800)},
                          {"learning_rate", rng.log_uniform(0.02, 0.3)},
                          {"max_depth", rng.int_between(3, 10)},
                          {"min_child_weight", rng.log_uniform(0.5, 10)},
                          {"subsample", 0.5 + 0.5 * rng.unit()},
                          {"colsample_bytree", 0.3 + 0.7 * rng.unit()},
                          {"lambda", rng.log_uniform(0.1, 10)},
                          {"alpha", 0.0},
                          {"seed", 0}};
  };
  return info;
}

LearnerInfo random_forest_learner_info() {
  LearnerInfo info;
  info.name = "random_forest";
  info.summary = "random forest (XGBoost RF mode: 1 round of parallel trees, row and column sampling)";
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<XGBoostLearner>(
        "random_forest", detail::merge_hyperparameters("random_forest", kForestDefaults, given), true);
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"trees", rng.int_between(50, 300)},
                          {"max_depth", rng.int_between(6, 16)},
                          {"min_child_weight", rng.log_uniform(0.5, 5)},
                          {"subsample", 0.5 + 0.4 * rng.unit()},
                          {"colsample_bynode", 0.2 + 0.7 * rng.unit()},
                          {"lambda", 0.0},
                          {"seed", 0}};
  };
  return info;
}

}  // namespace dnncast::learn
