#include "measure/layer_bench.h"

#include <gtest/gtest.h>

namespace dnncast::measure {
namespace {

// `bench-layers --stop-after S`: no slice starts after S. `calibrate` shares its budget with what comes after the
// layers, so there S is a deadline: no slice starts that would end past it were it as slow as the slowest so far
// (issue 52: a 20-s slice started at 39 s of 48 left `make demo` too little time for its batch's real run).
TEST(LayerBench, AStopIsWhenNoSliceStartsOrWithADeadlineWhenNoneEndsPastIt) {
  LayerBenchOptions options;
  EXPECT_TRUE(starts_another_slice(options, 1e9, 1e9)) << "no stop: every slice";
  options.stop_after_s = 48;
  EXPECT_TRUE(starts_another_slice(options, 0, 0));
  EXPECT_TRUE(starts_another_slice(options, 39, 20)) << "a stop is when no slice starts";
  EXPECT_FALSE(starts_another_slice(options, 48, 0));
  options.stop_is_deadline = true;
  EXPECT_TRUE(starts_another_slice(options, 0, 0)) << "the first slice always starts";
  EXPECT_FALSE(starts_another_slice(options, 39, 20)) << "it would end at 59 s";
  EXPECT_TRUE(starts_another_slice(options, 20, 20)) << "it would end at 40 s";
  EXPECT_FALSE(starts_another_slice(options, 28, 20)) << "28 + 20 s is not before the deadline";
}

}  // namespace
}  // namespace dnncast::measure
