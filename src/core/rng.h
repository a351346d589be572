// Deterministic pseudo-random numbers (SplitMix64): the same sequence on every platform, unlike std's
// distributions, so plans sample and learners split identically everywhere. (The synthetic model
// generator keeps std::mt19937_64, whose stream the standard fixes; models/synthetic.cpp.)
#pragma once

#include <cstdint>

namespace dnncast {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, bound), bound > 0, exactly: draws in the incomplete top block of 2^64 are
  // rejected and drawn again, so the result is next() % bound whenever no draw is rejected.
  uint64_t below(uint64_t bound);
  int64_t int_between(int64_t low, int64_t high);  // uniform in [low, high], inclusive
  double unit();                                   // uniform in [0, 1), 53 bits
  double normal();                                 // standard normal (Box-Muller)
  double log_uniform(double low, double high);     // low, high > 0
  uint64_t seed_for_child() { return next(); }

 private:
  uint64_t state_;
};

}  // namespace dnncast
