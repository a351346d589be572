// Wall-clock intervals on the monotonic clock, for budgets and progress (not for measurements: the
// profiler times with its own clock around synchronised device work).
#pragma once

#include <chrono>

namespace dnncast {

using SteadyClock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace dnncast
