// Relative-error metrics (docs/RESULTS.md) and cross-validation folds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/stats.h"
#include "learn/learner.h"

namespace dnncast::learn {

// |predicted - truth| / truth over rows with truth > 0.
struct ErrorStats {
  int64_t count = 0;
  double mre = 0;           // mean relative error
  double median_re = 0;     // median relative error
  double p90_re = 0;        // 90th percentile
  double within_10pct = 0;  // share of rows with relative error <= 0.10
  nlohmann::json to_json() const;
};

// Throws InputError when the sizes differ or a truth is not positive.
ErrorStats error_stats(const Vector& predicted, const Vector& truth);
ErrorStats error_stats(const std::vector<double>& relative_errors);

// Test-row indices of k shuffled folds over `rows` (folds = min(folds, rows)).
std::vector<std::vector<int64_t>> kfold_indices(int64_t rows, int folds, uint64_t seed);
// Folds that keep each group whole: groups are dealt to folds largest first, to balance the sizes.
std::vector<std::vector<int64_t>> group_kfold_indices(const std::vector<int64_t>& groups, int folds, uint64_t seed);
// All indices of [0, rows) not in `test`, in order.
std::vector<int64_t> complement(int64_t rows, const std::vector<int64_t>& test);

Matrix select_rows(const Matrix& x, const std::vector<int64_t>& rows);
Vector select_rows(const Vector& y, const std::vector<int64_t>& rows);

}  // namespace dnncast::learn
