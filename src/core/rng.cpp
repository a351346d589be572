#include "core/rng.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace dnncast {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t bound) {
  DNNCAST_ASSERT(bound > 0);
  // [0, limit) holds a whole number of copies of [0, bound); rejecting the rest leaves no modulo bias.
  // limit is a multiple of bound below 2^64 - 1: for small bounds a rejection has odds bound / 2^64.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = kMax - kMax % bound;
  uint64_t value = next();
  while (value >= limit) value = next();
  return value % bound;
}

int64_t SplitMix64::int_between(int64_t low, int64_t high) {
  DNNCAST_ASSERT(high >= low);
  return low + static_cast<int64_t>(below(static_cast<uint64_t>(high - low) + 1));
}

double SplitMix64::unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

double SplitMix64::normal() {
  double u1 = std::max(unit(), 1e-300);
  double u2 = unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double SplitMix64::log_uniform(double low, double high) {
  DNNCAST_ASSERT(low > 0 && high >= low);
  return std::exp(std::log(low) + unit() * (std::log(high) - std::log(low)));
}

}  // namespace dnncast
