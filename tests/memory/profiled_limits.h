// The profiler's limits for the simulator-versus-profiler tests of tests/memory: the shortest run that reaches
// the peak (2 warm-up iterations and 1 timed: the peak is reached by iteration 2), in its own child process.
#pragma once

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"

namespace dnncast::memory_test {

inline profile::Limits quick_limits(double timeout_s = 120) {
  profile::Limits limits;
  limits.time_budget_s = 0.01;
  limits.warmup_budget_s = 0.01;
  limits.min_iterations = 1;
  limits.timeout_s = timeout_s;
  return limits;
}

}  // namespace dnncast::memory_test
#endif
