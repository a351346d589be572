#include "learn/learner.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/json_limits.h"
#include "learn/json_int.h"
#include "learn/learn_util.h"

namespace dnncast::learn {

void Learner::predict_rows(const float* rows, int64_t count, int64_t columns, double* out) const {
  Matrix x(count, columns);
  for (int64_t row = 0; row < count; ++row)
    for (int64_t col = 0; col < columns; ++col) x(row, col) = rows[row * columns + col];
  Vector result = predict(x);
  for (int64_t row = 0; row < count; ++row) out[row] = result(row);
}

namespace {
int g_fit_threads = 1;  // the machine is shared: OpenMP spinning on busy cores is slower than one thread
}

void set_fit_threads(int threads) { g_fit_threads = std::max(1, threads); }
int fit_threads() { return g_fit_threads; }

namespace {

// THE list of learners: adding one is its own file plus one entry here. The order is AutoML's default
// search order, cheap learners first, so that a short budget still sees every family of model.
std::vector<LearnerInfo> registered_learners() {
  return {mean_learner_info(),    ridge_learner_info(),         stepwise_learner_info(), cart_learner_info(),
          xgboost_learner_info(), random_forest_learner_info(), lasso_learner_info(),    mlp_learner_info()};
}

}  // namespace

const std::vector<std::string>& learners_cheap_first() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> result;
    for (const LearnerInfo& info : registered_learners()) result.push_back(info.name);
    return result;
  }();
  return names;
}

const std::vector<LearnerInfo>& learner_registry() {
  static const std::vector<LearnerInfo> registry = [] {
    std::vector<LearnerInfo> entries = registered_learners();
    std::sort(entries.begin(), entries.end(),
              [](const LearnerInfo& a, const LearnerInfo& b) { return a.name < b.name; });
    for (size_t entry = 1; entry < entries.size(); ++entry)
      DNNCAST_ASSERT(entries[entry - 1].name != entries[entry].name);
    return entries;
  }();
  return registry;
}

std::vector<std::string> learner_names() {
  std::vector<std::string> names;
  for (const LearnerInfo& info : learner_registry()) names.push_back(info.name);
  return names;
}

const LearnerInfo& learner_info(const std::string& name) {
  for (const LearnerInfo& info : learner_registry())
    if (info.name == name) return info;
  std::string known;
  for (const LearnerInfo& info : learner_registry()) known += (known.empty() ? "" : ", ") + info.name;
  throw InputError("unknown learner " + quote(name) + " (known learners: " + known + ")");
}

std::unique_ptr<Learner> make_learner(const std::string& name, const nlohmann::json& hyperparameters) {
  return learner_info(name).make(hyperparameters);
}

std::unique_ptr<Learner> load_learner(const std::string& name, const nlohmann::json& hyperparameters,
                                      const std::string& dir) {
  std::unique_ptr<Learner> learner = make_learner(name, hyperparameters);
  learner->load(dir);
  return learner;
}

namespace detail {

void check_fit_input(const std::string& learner, const Matrix& x, const Vector& y) {
  if (x.rows() == 0 || x.cols() == 0)
    throw InputError(learner + ": nothing to fit on (" + std::to_string(x.rows()) + " rows, " +
                     std::to_string(x.cols()) + " columns)");
  if (x.rows() != y.size())
    throw InputError(learner + ": " + std::to_string(x.rows()) + " rows of features but " + std::to_string(y.size()) +
                     " targets");
  if (!x.allFinite()) throw InputError(learner + ": the features hold a NaN or infinite value");
  if (!y.allFinite()) throw InputError(learner + ": the targets hold a NaN or infinite value");
}

void check_predict_input(const std::string& learner, const Matrix& x, int64_t fitted_columns) {
  if (fitted_columns < 0) throw InputError(learner + ": predict called before fit or load");
  if (x.cols() != fitted_columns)
    throw InputError(learner + ": fitted on " + std::to_string(fitted_columns) + " features, asked with " +
                     std::to_string(x.cols()));
}

nlohmann::json merge_hyperparameters(const std::string& learner, const nlohmann::json& known,
                                     const nlohmann::json& given) {
  nlohmann::json result = known;
  if (given.is_null()) return result;
  if (!given.is_object()) throw InputError(learner + ": hyperparameters must be a JSON object");
  for (const auto& [key, value] : given.items()) {
    if (!known.contains(key)) {
      std::string names;
      for (const auto& [known_key, unused] : known.items()) names += (names.empty() ? "" : ", ") + known_key;
      throw InputError(learner + ": unknown hyperparameter " + quote(key) + " (known: " + names + ")");
    }
    const nlohmann::json& expected = known.at(key);
    bool ok = (expected.is_number() && value.is_number()) || (expected.is_boolean() && value.is_boolean()) ||
              (expected.is_string() && value.is_string()) || (expected.is_array() && value.is_array());
    if (expected.is_number_integer() && value.is_number_float() &&
        value.get<double>() != std::floor(value.get<double>()))
      ok = false;
    if (!ok)
      throw InputError(learner + ": hyperparameter " + quote(key) + " should look like " + expected.dump() + ", got " +
                       value.dump());
    result[key] = expected.is_number_integer() ? nlohmann::json(static_cast<int64_t>(value.get<double>())) : value;
  }
  return result;
}

void write_json(const std::string& path, const nlohmann::json& document) {
  std::ofstream out(path);
  if (!out) throw InputError("cannot write " + path);
  out << document.dump(1) << "\n";
  if (!out) throw InputError("cannot write " + path);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + path);
  const std::string text = read_all(in);
  check_json_nesting(text, path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path + ": not valid JSON: " + error.what());
  }
}

void Standardizer::fit(const Matrix& x) {
  mean = x.colwise().mean();
  scale.resize(x.cols());
  active.clear();
  for (int64_t column = 0; column < x.cols(); ++column) {
    double deviation = std::sqrt((x.col(column).array() - mean(column)).square().mean());
    scale(column) = deviation > 1e-12 * std::max(1.0, std::abs(mean(column))) ? deviation : 1.0;
    if (deviation > 1e-12 * std::max(1.0, std::abs(mean(column)))) active.push_back(static_cast<int>(column));
  }
}

Matrix Standardizer::transform(const Matrix& x) const {
  DNNCAST_ASSERT(x.cols() == mean.size());
  Matrix result(x.rows(), static_cast<int64_t>(active.size()));
  for (size_t index = 0; index < active.size(); ++index) {
    int column = active[index];
    result.col(static_cast<int64_t>(index)) = (x.col(column).array() - mean(column)) / scale(column);
  }
  return result;
}

nlohmann::json Standardizer::to_json() const {
  return {{"mean", vector_to_json(mean)}, {"scale", vector_to_json(scale)}, {"active", active}};
}

void Standardizer::from_json(const nlohmann::json& document) {
  mean = vector_from_json(document.at("mean"));
  scale = vector_from_json(document.at("scale"));
  active = json_ints(document.at("active"), "standardizer active");
  if (mean.size() != scale.size()) throw InputError("standardizer: mean and scale differ in length");
  for (int column : active)
    if (column < 0 || column >= mean.size()) throw InputError("standardizer: active column out of range");
}

nlohmann::json vector_to_json(const Vector& values) {
  return std::vector<double>(values.data(), values.data() + values.size());
}

Vector vector_from_json(const nlohmann::json& document) {
  std::vector<double> values = document.get<std::vector<double>>();
  return Eigen::Map<const Vector>(values.data(), static_cast<int64_t>(values.size()));
}

nlohmann::json matrix_to_json(const Matrix& values) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t row = 0; row < values.rows(); ++row) rows.push_back(vector_to_json(values.row(row).transpose()));
  return rows;
}

Matrix matrix_from_json(const nlohmann::json& document) {
  if (!document.is_array()) throw InputError("expected a matrix (array of rows)");
  int64_t rows = static_cast<int64_t>(document.size());
  int64_t cols = rows > 0 ? static_cast<int64_t>(document.at(0).size()) : 0;
  Matrix result(rows, cols);
  for (int64_t row = 0; row < rows; ++row) {
    const nlohmann::json& line = document.at(static_cast<size_t>(row));
    if (static_cast<int64_t>(line.size()) != cols) throw InputError("matrix rows differ in length");
    for (int64_t col = 0; col < cols; ++col) result(row, col) = line.at(static_cast<size_t>(col)).get<double>();
  }
  return result;
}

}  // namespace detail

nlohmann::json parse_hyperparameters(const std::string& name, const std::string& text, const std::string& option) {
  if (text.empty()) return nlohmann::json::object();
  check_json_nesting(text, option);
  nlohmann::json hyperparameters = nlohmann::json::parse(text, nullptr, false);
  if (!hyperparameters.is_object()) throw InputError(option + " is not a JSON object: " + text);
  make_learner(name, hyperparameters);  // unknown or ill-typed names fail here
  return hyperparameters;
}

}  // namespace dnncast::learn
