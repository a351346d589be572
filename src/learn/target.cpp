#include "learn/target.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "learn/json_int.h"
#include "learn/metrics.h"

namespace dnncast::learn {

namespace {

template <typename Value>
double reference_of(const TargetTransform& transform, const Value* row) {
  if (transform.kind == TargetTransform::Kind::LogRatio) {
    double value = std::max(0.0, static_cast<double>(row[transform.reference_columns[0]])) + transform.floor;
    if (transform.thread_column >= 0 && transform.thread_exponent != 1.0)
      value *=
          std::pow(std::max(1.0, static_cast<double>(row[transform.thread_column])), 1.0 - transform.thread_exponent);
    return value;
  }
  if (transform.kind == TargetTransform::Kind::LogResidual) {
    double value = transform.coefficients.back();
    for (size_t index = 0; index < transform.reference_columns.size(); ++index)
      value += transform.coefficients[index] * static_cast<double>(row[transform.reference_columns[index]]);
    return std::max(value, transform.floor);
  }
  return 1.0;
}

// The parallel-efficiency exponent e (time ~ work / threads^e) from pairs of rows that agree in
// every pair column and differ in threads; 1 and no pairs when there are none.
std::pair<double, int64_t> fit_thread_exponent(const TargetTransform& transform, const Matrix& x, const Vector& y) {
  std::map<std::vector<double>, std::vector<std::pair<double, double>>> by_configuration;  // (threads, log y)
  std::vector<double> key(transform.pair_columns.size());
  for (int64_t row = 0; row < x.rows(); ++row) {
    if (!(y(row) > 0)) continue;
    for (size_t index = 0; index < key.size(); ++index) key[index] = x(row, transform.pair_columns[index]);
    by_configuration[key].emplace_back(x(row, transform.thread_column), std::log(y(row)));
  }
  std::vector<double> estimates;
  for (const auto& [configuration, runs] : by_configuration)
    for (size_t a = 0; a < runs.size(); ++a)
      for (size_t b = a + 1; b < runs.size(); ++b) {
        const auto& [threads_a, log_a] = runs[a];
        const auto& [threads_b, log_b] = runs[b];
        if (!(threads_a >= 1 && threads_b >= 1) || threads_a == threads_b) continue;
        estimates.push_back((log_a - log_b) / (std::log(threads_b) - std::log(threads_a)));
      }
  if (estimates.empty()) return {1.0, 0};
  return {std::min(1.0, std::max(0.0, quantile(estimates, 0.5))), static_cast<int64_t>(estimates.size())};
}

}  // namespace

TargetTransform TargetTransform::with_thread_scaling(int column, const std::string& name, std::vector<int> pairs,
                                                     std::vector<std::string> pair_names_) const {
  DNNCAST_ASSERT(kind == Kind::LogRatio && pairs.size() == pair_names_.size());
  TargetTransform transform = *this;
  transform.thread_column = column;
  transform.thread_name = name;
  transform.pair_columns = std::move(pairs);
  transform.pair_names = std::move(pair_names_);
  return transform;
}

std::string TargetTransform::kind_name() const {
  const char* kinds[] = {"identity", "log", "log_ratio", "log_residual"};
  return kinds[static_cast<int>(kind)];
}

std::string TargetTransform::name() const {
  std::string references;
  for (const std::string& reference : reference_names) references += (references.empty() ? "" : "+") + reference;
  switch (kind) {
    case Kind::Identity:
      return "identity";
    case Kind::Log:
      return "log";
    case Kind::LogRatio: {
      if (thread_column < 0) return "log_ratio(" + references + ")";
      if (thread_pairs == 0) return "log_ratio(" + references + ", fitted thread scaling)";
      char scaling[96];
      std::snprintf(scaling, sizeof scaling, ", work / threads^%.2f from %lld pairs", thread_exponent,
                    static_cast<long long>(thread_pairs));
      return "log_ratio(" + references + scaling + ")";
    }
    case Kind::LogResidual:
      return "log_residual(" + references + ")";
  }
  return "";
}

void TargetTransform::fit(const Matrix& x, const Vector& y) {
  for (int column : reference_columns) DNNCAST_ASSERT(column >= 0 && column < x.cols());
  if (kind == Kind::LogRatio) {
    std::vector<double> values(x.col(reference_columns[0]).data(), x.col(reference_columns[0]).data() + x.rows());
    floor = std::max(1e-12, quantile(values, 0.05));
    thread_exponent = 1.0;
    thread_pairs = 0;
    if (thread_column >= 0) {
      DNNCAST_ASSERT(thread_column < x.cols());
      for (int column : pair_columns) DNNCAST_ASSERT(column >= 0 && column < x.cols());
      std::tie(thread_exponent, thread_pairs) = fit_thread_exponent(*this, x, y);
    }
  } else if (kind == Kind::LogResidual) {
    // Weighted least squares: rows divided by their target, so the fit minimizes relative error.
    int64_t parameters = static_cast<int64_t>(reference_columns.size()) + 1;
    Matrix a(x.rows(), parameters);
    Vector b = Vector::Ones(x.rows());
    double smallest = HUGE_VAL;
    for (int64_t row = 0; row < x.rows(); ++row) {
      if (!(y(row) > 0)) throw InputError("target " + std::to_string(y(row)) + " is not positive; cannot take its log");
      smallest = std::min(smallest, y(row));
      for (size_t index = 0; index < reference_columns.size(); ++index)
        a(row, static_cast<int64_t>(index)) = x(row, reference_columns[index]) / y(row);
      a(row, parameters - 1) = 1.0 / y(row);
    }
    Vector scale = a.colwise().norm().transpose();
    for (int64_t col = 0; col < parameters; ++col) {
      if (!(scale(col) > 0)) scale(col) = 1;
      a.col(col) /= scale(col);
    }
    Vector solution = a.colPivHouseholderQr().solve(b);
    coefficients.assign(static_cast<size_t>(parameters), 0.0);
    for (int64_t col = 0; col < parameters; ++col) coefficients[static_cast<size_t>(col)] = solution(col) / scale(col);
    floor = 0.1 * smallest;
  }
  clamp_low = -1e300;
  clamp_high = 1e300;
  if (y.size() == 0) return;
  if (kind == Kind::Identity) {
    clamp_low = 0.1 * y.minCoeff();
    return;
  }
  Vector transformed = forward(x, y);
  double low = transformed.minCoeff(), high = transformed.maxCoeff();
  double margin = (kind == Kind::Log ? 1.0 : 0.2) * std::max(high - low, 1e-6);
  clamp_low = low - margin;
  clamp_high = high + margin;
}

Vector TargetTransform::forward(const Matrix& x, const Vector& y) const {
  if (kind == Kind::Identity) return y;
  Vector result(y.size());
  std::vector<double> row(static_cast<size_t>(x.cols()));
  for (int64_t index = 0; index < y.size(); ++index) {
    if (!(y(index) > 0))
      throw InputError("target " + std::to_string(y(index)) + " is not positive; cannot take its log");
    result(index) = std::log(y(index));
    if (kind == Kind::LogRatio || kind == Kind::LogResidual) {
      for (int64_t col = 0; col < x.cols(); ++col) row[static_cast<size_t>(col)] = x(index, col);
      result(index) -= std::log(reference(row.data()));
    }
  }
  return result;
}

double TargetTransform::reference(const float* row) const { return reference_of(*this, row); }
double TargetTransform::reference(const double* row) const { return reference_of(*this, row); }

double TargetTransform::inverse_one(double reference_value, double transformed) const {
  transformed = std::min(std::max(transformed, clamp_low), clamp_high);
  if (kind == Kind::Identity) return transformed;
  if (kind == Kind::LogRatio || kind == Kind::LogResidual) transformed += std::log(reference_value);
  return std::exp(std::min(transformed, 700.0));
}

Vector TargetTransform::inverse(const Matrix& x, const Vector& transformed) const {
  Vector result(transformed.size());
  std::vector<double> row(static_cast<size_t>(x.cols()));
  bool needs_row = kind == Kind::LogRatio || kind == Kind::LogResidual;
  for (int64_t index = 0; index < transformed.size(); ++index) {
    double reference_value = 1.0;
    if (needs_row) {
      for (int64_t col = 0; col < x.cols(); ++col) row[static_cast<size_t>(col)] = x(index, col);
      reference_value = reference(row.data());
    }
    result(index) = inverse_one(reference_value, transformed(index));
  }
  return result;
}

nlohmann::json TargetTransform::to_json() const {
  nlohmann::json document{{"kind", kind_name()}, {"clamp", {clamp_low, clamp_high}}};
  if (kind == Kind::LogRatio || kind == Kind::LogResidual) {
    document["references"] = reference_names;
    document["reference_columns"] = reference_columns;
    document["floor"] = floor;
  }
  if (kind == Kind::LogRatio && thread_column >= 0)
    document["thread_scaling"] = {{"column", thread_column},      {"name", thread_name},
                                  {"exponent", thread_exponent},  {"pairs", thread_pairs},
                                  {"pair_columns", pair_columns}, {"pair_names", pair_names}};
  if (kind == Kind::LogResidual) document["coefficients"] = coefficients;
  return document;
}

TargetTransform TargetTransform::from_json(const nlohmann::json& document) {
  try {
    std::string kind = document.at("kind").get<std::string>();
    TargetTransform transform = log();
    if (document.contains("clamp")) {
      transform.clamp_low = document.at("clamp").at(0).get<double>();
      transform.clamp_high = document.at("clamp").at(1).get<double>();
    }
    if (kind == "identity") {
      transform.kind = Kind::Identity;
      return transform;
    }
    if (kind == "log") return transform;
    if (kind == "log_ratio" || kind == "log_residual") {
      transform.kind = kind == "log_ratio" ? Kind::LogRatio : Kind::LogResidual;
      transform.reference_columns = json_ints(document.at("reference_columns"), "transform reference_columns");
      transform.reference_names = document.at("references").get<std::vector<std::string>>();
      transform.floor = document.at("floor").get<double>();
      if (transform.reference_columns.empty() || transform.reference_columns.size() != transform.reference_names.size())
        throw InputError("target transform: references and their columns differ in number");
      for (int column : transform.reference_columns)
        if (column < 0) throw InputError("target transform: negative reference column");
      if (transform.kind == Kind::LogRatio && transform.reference_columns.size() != 1)
        throw InputError("target transform: log_ratio takes one reference");
      if (transform.kind == Kind::LogRatio && document.contains("thread_scaling")) {
        const nlohmann::json& scaling = document.at("thread_scaling");
        transform.thread_column = json_int(scaling.at("column"), "transform column");
        transform.thread_name = scaling.at("name").get<std::string>();
        transform.thread_exponent = scaling.at("exponent").get<double>();
        transform.thread_pairs = scaling.at("pairs").get<int64_t>();
        transform.pair_columns = json_ints(scaling.at("pair_columns"), "transform pair_columns");
        transform.pair_names = scaling.at("pair_names").get<std::vector<std::string>>();
        if (transform.thread_column < 0 || !(transform.thread_exponent >= 0 && transform.thread_exponent <= 1) ||
            transform.pair_columns.size() != transform.pair_names.size())
          throw InputError(
              "target transform: thread_scaling needs a column, an exponent in [0, 1] and named pair columns");
      }
      if (transform.kind == Kind::LogResidual) {
        transform.coefficients = document.at("coefficients").get<std::vector<double>>();
        if (transform.coefficients.size() != transform.reference_columns.size() + 1)
          throw InputError("target transform: log_residual needs one coefficient per reference and an intercept");
      }
      return transform;
    }
    throw InputError("unknown target transform " + quote(kind) + " (known: identity, log, log_ratio, log_residual)");
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("target transform: ") + error.what());
  }
}

}  // namespace dnncast::learn
