// core/rng: the one SplitMix64, its published outputs, and below()'s bounds and uniformity.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace dnncast {
namespace {

TEST(SplitMix64, GivesThePublishedOutputs) {
  // First outputs of SplitMix64 seeded with 1234567, as Vigna's reference splitmix64.c gives them
  // (recomputed independently in Python with arbitrary-precision integers).
  SplitMix64 random(1234567);
  EXPECT_EQ(random.next(), 6457827717110365317ULL);
  EXPECT_EQ(random.next(), 3203168211198807973ULL);
  EXPECT_EQ(random.next(), 9817491932198370423ULL);
}

TEST(SplitMix64, BelowIsTheRawDrawModuloBoundWhenNothingIsRejected) {
  // The seeded streams of plans and learners were drawn as next() % bound: they stay the same.
  SplitMix64 raw(99), drawn(99);
  for (uint64_t bound : {1ULL, 2ULL, 3ULL, 7ULL, 1000ULL, 123456789ULL})
    EXPECT_EQ(drawn.below(bound), raw.next() % bound);
}

TEST(SplitMix64, BelowStaysInBoundsEvenForHugeBounds) {
  SplitMix64 random(5);
  const uint64_t huge = (UINT64_MAX / 3) * 2;  // rejects about a third of the draws
  for (int draw = 0; draw < 10000; ++draw) {
    EXPECT_LT(random.below(huge), huge);
    EXPECT_EQ(random.below(1), 0u);
  }
  for (int draw = 0; draw < 1000; ++draw) {
    int64_t value = random.int_between(-3, 3);
    EXPECT_GE(value, -3);
    EXPECT_LE(value, 3);
  }
}

// Chi-square of below(n) for n not dividing 2^64: modulo reduction of a draw in [0, 2^64) would
// favour the low residues by (2^64 mod n) / 2^64, too little to see here, so the test checks
// uniformity of the whole range and, with a bound near 2^64 * 2/3, the bias rejection removes.
double chi_square(SplitMix64& random, uint64_t bound, int buckets, int draws, bool by_top_bucket) {
  std::vector<int64_t> counts(static_cast<size_t>(buckets), 0);
  for (int draw = 0; draw < draws; ++draw) {
    uint64_t value = random.below(bound);
    size_t bucket = by_top_bucket ? static_cast<size_t>(value / (bound / static_cast<uint64_t>(buckets) + 1))
                                  : static_cast<size_t>(value);
    ++counts[bucket];
  }
  double expected = static_cast<double>(draws) / buckets, sum = 0;
  for (int64_t count : counts)
    sum += (static_cast<double>(count) - expected) * (static_cast<double>(count) - expected) / expected;
  return sum;
}

TEST(SplitMix64, BelowIsUniform) {
  SplitMix64 random(2026);
  // 6 residues (5 degrees of freedom): the 0.999 quantile of chi-square is 20.5.
  EXPECT_LT(chi_square(random, 6, 6, 600000, false), 20.5);
  // bound = 2^64 * 2/3: modulo would put [0, bound/2) twice as often as [bound/2, bound) (as the
  // draws in [bound, 2^64) fold onto the first half). Two halves, 1 degree of freedom: 0.999 -> 10.8.
  const uint64_t bound = (UINT64_MAX / 3) * 2;
  EXPECT_LT(chi_square(random, bound, 2, 200000, true), 10.8);
}

}  // namespace
}  // namespace dnncast
