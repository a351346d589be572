#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace dnncast {

namespace {

// The order statistics around position q * (n - 1) of `values` (sorted here, not empty).
struct Bracket {
  double low, high, weight;  // weight of `high`, in [0, 1)
};

Bracket bracket(std::vector<double>& values, double q) {
  std::sort(values.begin(), values.end());
  double position = q * static_cast<double>(values.size() - 1);
  auto below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, values.size() - 1);
  return {values[below], values[above], position - static_cast<double>(below)};
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  Bracket around = bracket(values, q);
  // This form is the one every stored forecast interval (predictor manifests) was computed with.
  return around.low * (1 - around.weight) + around.high * around.weight;
}

double quantile_low_plus_step(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  Bracket around = bracket(values, q);
  return around.low + (around.high - around.low) * around.weight;
}

}  // namespace dnncast
