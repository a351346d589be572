// Regressors behind one interface, and a registry of them by name.
// x: one row per sample, one column per feature; y: one target per row. Learners see plain
// numbers: target transforms (log space) and column selection belong to the caller (forecast/predictor.h,
// study/training.h).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"

namespace dnncast::learn {

using Matrix = Eigen::MatrixXd;  // rows = samples, columns = features
using Vector = Eigen::VectorXd;

class Learner {
 public:
  virtual ~Learner() = default;
  virtual std::string name() const = 0;
  // Every hyperparameter with its value (defaults filled in); make_learner(name(), this) rebuilds it.
  virtual nlohmann::json hyperparameters() const = 0;
  // Throws InputError when x and y disagree in rows, are empty, or hold a non-finite value.
  virtual void fit(const Matrix& x, const Vector& y) = 0;
  // Throws InputError when unfitted or when x has another column count than at fit time.
  virtual Vector predict(const Matrix& x) const = 0;
  // Writes the fitted model into `dir` (which exists) as model_file(); load() reads it back.
  virtual void save(const std::string& dir) const = 0;
  virtual void load(const std::string& dir) = 0;
  virtual std::string model_file() const = 0;  // "xgboost.json", "ridge.json", ...
  // Fast path for forecasts: `count` rows of `columns` floats, row-major; one prediction per row
  // into `out`. The default copies into a Matrix and calls predict(); XGBoost reads them in place.
  virtual void predict_rows(const float* rows, int64_t count, int64_t columns, double* out) const;
};

// Deterministic random numbers, the same on every platform (core/rng.h).
using Rng = SplitMix64;

struct LearnerInfo {
  std::string name;
  std::string summary;
  // Builds an unfitted learner; unknown or ill-typed hyperparameters are an InputError naming them.
  std::function<std::unique_ptr<Learner>(const nlohmann::json& hyperparameters)> make;
  // A random point of the learner's search space, for AutoML.
  std::function<nlohmann::json(Rng& rng)> sample;
};

// All learners, sorted by name: cart, lasso, mean, mlp, random_forest, ridge, stepwise, xgboost.
const std::vector<LearnerInfo>& learner_registry();
std::vector<std::string> learner_names();
// The same learners in AutoML's default search order, cheap first (the order they are registered in).
const std::vector<std::string>& learners_cheap_first();
// Throws InputError "unknown learner 'x' (known learners: ...)".
const LearnerInfo& learner_info(const std::string& name);
std::unique_ptr<Learner> make_learner(const std::string& name, const nlohmann::json& hyperparameters = {});
// The JSON object of hyperparameters given to `option` for learner `name` ("" = none: an empty object); a text
// that is not a JSON object, or names the learner does not take, is an InputError before any work.
nlohmann::json parse_hyperparameters(const std::string& name, const std::string& text, const std::string& option);
// Builds the learner named in a saved directory's hyperparameters and loads it.
std::unique_ptr<Learner> load_learner(const std::string& name, const nlohmann::json& hyperparameters,
                                      const std::string& dir);

// Threads a learner may use to fit (XGBoost); prediction always uses one. Default 1.
void set_fit_threads(int threads);
int fit_threads();

}  // namespace dnncast::learn
