// Helpers shared by the learners (internal to src/learn).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "learn/learner.h"

namespace dnncast::learn::detail {

// Throws InputError naming the learner when x/y are empty, disagree, or hold NaN/inf.
void check_fit_input(const std::string& learner, const Matrix& x, const Vector& y);
// Throws InputError when unfitted (columns < 0) or x has another column count.
void check_predict_input(const std::string& learner, const Matrix& x, int64_t fitted_columns);

// Reads hyperparameters from `given` into defaults of `known` (same keys): an unknown key or a
// value of another JSON type is an InputError naming the learner and the key.
nlohmann::json merge_hyperparameters(const std::string& learner, const nlohmann::json& known,
                                     const nlohmann::json& given);

void write_json(const std::string& path, const nlohmann::json& document);
nlohmann::json read_json(const std::string& path);  // InputError naming the file

// Column means and scales (standard deviation; 1 where a column is constant) for standardizing.
struct Standardizer {
  Vector mean, scale;
  std::vector<int> active;  // columns whose standard deviation is > 0
  void fit(const Matrix& x);
  Matrix transform(const Matrix& x) const;  // only the active columns, standardized
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& document);
};

nlohmann::json vector_to_json(const Vector& values);
Vector vector_from_json(const nlohmann::json& document);
nlohmann::json matrix_to_json(const Matrix& values);  // row-major nested arrays
Matrix matrix_from_json(const nlohmann::json& document);

}  // namespace dnncast::learn::detail

namespace dnncast::learn {
// Each learner file declares its registry entry.
LearnerInfo xgboost_learner_info();
LearnerInfo random_forest_learner_info();
LearnerInfo ridge_learner_info();
LearnerInfo lasso_learner_info();
LearnerInfo stepwise_learner_info();
LearnerInfo cart_learner_info();
LearnerInfo mlp_learner_info();
LearnerInfo mean_learner_info();
}  // namespace dnncast::learn
