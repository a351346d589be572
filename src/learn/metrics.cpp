#include "learn/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/error.h"

namespace dnncast::learn {

nlohmann::json ErrorStats::to_json() const {
  return {{"count", count}, {"mre", mre}, {"median_re", median_re}, {"p90_re", p90_re}, {"within_10pct", within_10pct}};
}

ErrorStats error_stats(const std::vector<double>& relative_errors) {
  ErrorStats stats;
  stats.count = static_cast<int64_t>(relative_errors.size());
  if (relative_errors.empty()) return stats;
  double sum = 0;
  int64_t within = 0;
  for (double error : relative_errors) {
    sum += error;
    if (error <= 0.10) ++within;
  }
  stats.mre = sum / static_cast<double>(stats.count);
  stats.median_re = quantile(relative_errors, 0.5);
  stats.p90_re = quantile(relative_errors, 0.9);
  stats.within_10pct = static_cast<double>(within) / static_cast<double>(stats.count);
  return stats;
}

ErrorStats error_stats(const Vector& predicted, const Vector& truth) {
  if (predicted.size() != truth.size())
    throw InputError("error_stats: " + std::to_string(predicted.size()) + " predictions for " +
                     std::to_string(truth.size()) + " truths");
  std::vector<double> errors;
  errors.reserve(static_cast<size_t>(truth.size()));
  for (int64_t row = 0; row < truth.size(); ++row) {
    if (!(truth(row) > 0))
      throw InputError("error_stats: true value " + std::to_string(truth(row)) + " is not positive");
    errors.push_back(std::abs(predicted(row) - truth(row)) / truth(row));
  }
  return error_stats(errors);
}

namespace {
void shuffle(std::vector<int64_t>& values, uint64_t seed) {
  Rng rng(seed);
  for (size_t index = values.size(); index > 1; --index) std::swap(values[index - 1], values[rng.below(index)]);
}
}  // namespace

std::vector<std::vector<int64_t>> kfold_indices(int64_t rows, int folds, uint64_t seed) {
  if (rows < 2) throw InputError("cross-validation needs at least 2 rows, got " + std::to_string(rows));
  folds = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(folds, rows)));
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, seed);
  std::vector<std::vector<int64_t>> result(static_cast<size_t>(folds));
  for (size_t index = 0; index < order.size(); ++index)
    result[index % static_cast<size_t>(folds)].push_back(order[index]);
  for (auto& fold : result) std::sort(fold.begin(), fold.end());
  return result;
}

std::vector<std::vector<int64_t>> group_kfold_indices(const std::vector<int64_t>& groups, int folds, uint64_t seed) {
  std::map<int64_t, std::vector<int64_t>> members;
  for (size_t row = 0; row < groups.size(); ++row) members[groups[row]].push_back(static_cast<int64_t>(row));
  if (members.size() < 2)
    throw InputError("grouped cross-validation needs at least 2 groups, got " + std::to_string(members.size()));
  folds = static_cast<int>(std::max<size_t>(2, std::min<size_t>(static_cast<size_t>(folds), members.size())));
  std::vector<int64_t> keys;
  for (const auto& entry : members) keys.push_back(entry.first);
  shuffle(keys, seed);  // ties in size are broken by the seed
  std::stable_sort(keys.begin(), keys.end(),
                   [&](int64_t a, int64_t b) { return members[a].size() > members[b].size(); });
  std::vector<std::vector<int64_t>> result(static_cast<size_t>(folds));
  for (int64_t key : keys) {
    auto smallest = std::min_element(result.begin(), result.end(),
                                     [](const auto& a, const auto& b) { return a.size() < b.size(); });
    smallest->insert(smallest->end(), members[key].begin(), members[key].end());
  }
  for (auto& fold : result) std::sort(fold.begin(), fold.end());
  return result;
}

std::vector<int64_t> complement(int64_t rows, const std::vector<int64_t>& test) {
  std::vector<bool> in_test(static_cast<size_t>(rows), false);
  for (int64_t row : test) in_test[static_cast<size_t>(row)] = true;
  std::vector<int64_t> result;
  for (int64_t row = 0; row < rows; ++row)
    if (!in_test[static_cast<size_t>(row)]) result.push_back(row);
  return result;
}

Matrix select_rows(const Matrix& x, const std::vector<int64_t>& rows) {
  Matrix result(static_cast<int64_t>(rows.size()), x.cols());
  for (size_t index = 0; index < rows.size(); ++index) result.row(static_cast<int64_t>(index)) = x.row(rows[index]);
  return result;
}

Vector select_rows(const Vector& y, const std::vector<int64_t>& rows) {
  Vector result(static_cast<int64_t>(rows.size()));
  for (size_t index = 0; index < rows.size(); ++index) result(static_cast<int64_t>(index)) = y(rows[index]);
  return result;
}

}  // namespace dnncast::learn
