// Target transforms: learners fit transformed targets and predictions are mapped back.
//   identity      y
//   log           log(y)                    times span orders of magnitude; errors become relative
//   log_ratio     log(y) - log(x[r] + f)    y relative to one reference column (FLOPs per thread);
//                                           optionally times threads^(1-e), e the parallel
//                                           efficiency exponent fitted on configurations measured
//                                           at several thread counts (1 when there are none)
//   log_residual  log(y) - log(R(x))        y relative to a linear model R(x) = a.x[refs] + d fitted
//                                           by weighted least squares (relative error) on the training
//                                           rows: the learner models what an analytic roofline misses,
//                                           and unseen networks extrapolate like the roofline
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "learn/learner.h"

namespace dnncast::learn {

struct TargetTransform {
  enum class Kind { Identity, Log, LogRatio, LogResidual };
  Kind kind = Kind::Log;
  std::vector<int> reference_columns;        // columns of x (LogRatio: one)
  std::vector<std::string> reference_names;  // their feature names, for manifests and re-resolution
  std::vector<double> coefficients;          // LogResidual: one per reference column, then the intercept
  double floor = 0;                          // lower bound added to (LogRatio) or imposed on (LogResidual) R(x)
  // LogRatio over a per-thread reference: the reference becomes x[r] * threads^(1 - thread_exponent),
  // i.e. work / threads^e. e is fitted from pairs of training rows that are the same configuration
  // at different thread counts (equal in every pair column): the median of
  // log(y_a / y_b) / log(t_b / t_a), clamped to [0, 1]; with no pair, e = 1 (ideal scaling, what
  // the hardware promises). Without a thread column the reference is x[r] as before.
  int thread_column = -1;
  std::string thread_name;
  std::vector<int> pair_columns;
  std::vector<std::string> pair_names;
  double thread_exponent = 1.0;
  int64_t thread_pairs = 0;  // pairs the exponent was fitted on
  // Bounds on the learner's output in transformed space, from the training targets (set by fit()):
  // log kinds allow the training range widened by itself on each side; ratio and residual kinds the
  // training range widened by a fifth, so far outside the data (a 224 px input after 32-64 px
  // training) the reference carries the extrapolation rather than a linear learner's tail; the
  // identity keeps a prediction above a tenth of the smallest target. Unfitted: no bounds.
  double clamp_low = -1e300, clamp_high = 1e300;

  static TargetTransform identity() { return of_kind(Kind::Identity); }
  static TargetTransform log() { return of_kind(Kind::Log); }
  static TargetTransform log_ratio(int column, const std::string& name) {
    TargetTransform transform = of_kind(Kind::LogRatio);
    transform.reference_columns = {column};
    transform.reference_names = {name};
    return transform;
  }
  static TargetTransform log_residual(std::vector<int> columns, std::vector<std::string> names) {
    TargetTransform transform = of_kind(Kind::LogResidual);
    transform.reference_columns = std::move(columns);
    transform.reference_names = std::move(names);
    return transform;
  }
  static TargetTransform of_kind(Kind kind) {
    TargetTransform transform;
    transform.kind = kind;
    return transform;
  }

  // The log_ratio reference scaled by the fitted thread exponent (see thread_column).
  TargetTransform with_thread_scaling(int column, const std::string& name, std::vector<int> pairs,
                                      std::vector<std::string> pair_names_) const;

  std::string kind_name() const;  // "identity", "log", "log_ratio", "log_residual"
  std::string name() const;       // "log", "log_ratio(est.flops_per_thread)", "log_residual(a+b+c)"
  // Fits what depends on the training data: the LogRatio floor (5% quantile of the reference),
  // the LogResidual coefficients and floor (a tenth of the smallest target), the output bounds.
  void fit(const Matrix& x, const Vector& y);
  // Throws InputError when a target is not positive (log kinds).
  Vector forward(const Matrix& x, const Vector& y) const;
  Vector inverse(const Matrix& x, const Vector& transformed) const;
  // The reference of one row given as `columns` values (float or double), for fast forecasts.
  double reference(const float* row) const;
  double reference(const double* row) const;
  // One value back, given the row's reference.
  double inverse_one(double reference_value, double transformed) const;

  nlohmann::json to_json() const;
  static TargetTransform from_json(const nlohmann::json& document);  // InputError on a bad document
};

}  // namespace dnncast::learn
