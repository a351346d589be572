// Statistics every module shares.
#pragma once

#include <vector>

namespace dnncast {

// The q-quantile (q in [0, 1]) of `values`, interpolated linearly between the two nearest order
// statistics at position q * (n - 1) (numpy.quantile's default "linear" method; equal to it up to
// rounding). Values need not be sorted. Empty -> 0.
double quantile(std::vector<double> values, double q);

// The same quantile computed as low + (high - low) * weight instead of low * (1 - weight) + high * weight:
// the two can differ in the last bit. Only `dataset stats` uses it, whose --json prints its repeat
// spreads to 17 digits; kept so that they print exactly as before (issue 17: behaviour unchanged).
double quantile_low_plus_step(std::vector<double> values, double q);

}  // namespace dnncast
