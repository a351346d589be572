// Ridge (closed form) and lasso (cyclic coordinate descent with an active set) on standardized
// features; the intercept is the target mean and is never penalized.
#include <cmath>

#include "core/error.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

namespace {

double soft_threshold(double value, double threshold) {
  if (value > threshold) return value - threshold;
  if (value < -threshold) return value + threshold;
  return 0.0;
}

class LinearLearner : public Learner {
 public:
  LinearLearner(std::string name, nlohmann::json hyperparameters)
      : name_(std::move(name)), hyper_(std::move(hyperparameters)) {
    if (hyper_.at("alpha").get<double>() < 0) throw InputError(name_ + ": alpha must be non-negative");
  }
  std::string name() const override { return name_; }
  nlohmann::json hyperparameters() const override { return hyper_; }
  std::string model_file() const override { return name_ + ".json"; }

  void fit(const Matrix& x, const Vector& y) override {
    detail::check_fit_input(name_, x, y);
    standardizer_.fit(x);
    Matrix xs = standardizer_.transform(x);
    intercept_ = y.mean();
    Vector centered = y.array() - intercept_;
    double alpha = hyper_.at("alpha").get<double>();
    coefficients_ = name_ == "ridge" ? fit_ridge(xs, centered, alpha) : fit_lasso(xs, centered, alpha);
    columns_ = x.cols();
  }

  Vector predict(const Matrix& x) const override {
    detail::check_predict_input(name_, x, columns_);
    if (coefficients_.size() == 0) return Vector::Constant(x.rows(), intercept_);
    return (standardizer_.transform(x) * coefficients_).array() + intercept_;
  }

  void save(const std::string& dir) const override {
    if (columns_ < 0) throw InputError(name_ + ": save called before fit");
    detail::write_json(dir + "/" + model_file(), {{"columns", columns_},
                                                  {"intercept", intercept_},
                                                  {"coefficients", detail::vector_to_json(coefficients_)},
                                                  {"standardizer", standardizer_.to_json()}});
  }

  void load(const std::string& dir) override {
    std::string path = dir + "/" + model_file();
    nlohmann::json document = detail::read_json(path);
    try {
      standardizer_.from_json(document.at("standardizer"));
      coefficients_ = detail::vector_from_json(document.at("coefficients"));
      intercept_ = document.at("intercept").get<double>();
      columns_ = document.at("columns").get<int64_t>();
    } catch (const nlohmann::json::exception& error) {
      throw InputError(path + ": " + error.what());
    }
    if (coefficients_.size() != static_cast<int64_t>(standardizer_.active.size()) ||
        standardizer_.mean.size() != columns_)
      throw InputError(path + ": coefficient and column counts disagree");
  }

 private:
  static Vector fit_ridge(const Matrix& xs, const Vector& y, double alpha) {
    int64_t rows = xs.rows(), cols = xs.cols();
    if (cols == 0) return Vector();
    double penalty = alpha * static_cast<double>(rows);
    if (cols <= rows) {
      Matrix gram = xs.transpose() * xs;
      gram.diagonal().array() += penalty + 1e-10 * static_cast<double>(rows);
      return gram.ldlt().solve(xs.transpose() * y);
    }
    // More features than rows: the dual form, (X X' + penalty I)^-1 y mapped back by X'.
    Matrix kernel = xs * xs.transpose();
    kernel.diagonal().array() += penalty + 1e-10 * static_cast<double>(rows);
    return xs.transpose() * kernel.ldlt().solve(y);
  }

  Vector fit_lasso(const Matrix& xs, const Vector& y, double alpha) const {
    int64_t rows = xs.rows(), cols = xs.cols();
    Vector beta = Vector::Zero(cols);
    if (cols == 0) return beta;
    Vector residual = y;
    double n = static_cast<double>(rows);
    Vector norms = xs.colwise().squaredNorm().transpose() / n;  // 1 for standardized columns
    int64_t max_epochs = hyper_.at("max_epochs").get<int64_t>();
    double tolerance = hyper_.at("tolerance").get<double>() * std::max(1e-12, y.cwiseAbs().maxCoeff());
    auto sweep = [&](bool active_only) {
      double largest_change = 0;
      for (int64_t col = 0; col < cols; ++col) {
        if (active_only && beta(col) == 0) continue;
        double old = beta(col);
        double rho = xs.col(col).dot(residual) / n + norms(col) * old;
        double updated = soft_threshold(rho, alpha) / norms(col);
        if (updated != old) {
          residual -= (updated - old) * xs.col(col);
          beta(col) = updated;
          largest_change = std::max(largest_change, std::abs(updated - old));
        }
      }
      return largest_change;
    };
    for (int64_t epoch = 0; epoch < max_epochs; ++epoch) {
      double change = sweep(false);
      if (change < tolerance) break;
      for (int64_t inner = 0; inner < max_epochs && sweep(true) >= tolerance; ++inner) {
      }
    }
    return beta;
  }

  std::string name_;
  nlohmann::json hyper_;
  detail::Standardizer standardizer_;
  Vector coefficients_;
  double intercept_ = 0;
  int64_t columns_ = -1;
};

}  // namespace

LearnerInfo ridge_learner_info() {
  LearnerInfo info;
  info.name = "ridge";
  info.summary = "ridge regression on standardized features (Eigen, closed form)";
  static const nlohmann::json defaults = {{"alpha", 1e-3}};
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<LinearLearner>("ridge", detail::merge_hyperparameters("ridge", defaults, given));
  };
  info.sample = [](Rng& rng) { return nlohmann::json{{"alpha", rng.log_uniform(1e-6, 10)}}; };
  return info;
}

LearnerInfo lasso_learner_info() {
  LearnerInfo info;
  info.name = "lasso";
  info.summary = "lasso regression on standardized features (coordinate descent)";
  static const nlohmann::json defaults = {{"alpha", 1e-3}, {"max_epochs", 300}, {"tolerance", 1e-6}};
  info.make = [](const nlohmann::json& given) -> std::unique_ptr<Learner> {
    return std::make_unique<LinearLearner>("lasso", detail::merge_hyperparameters("lasso", defaults, given));
  };
  info.sample = [](Rng& rng) {
    return nlohmann::json{{"alpha", rng.log_uniform(1e-5, 0.1)}, {"max_epochs", 300}, {"tolerance", 1e-6}};
  };
  return info;
}

}  // namespace dnncast::learn
