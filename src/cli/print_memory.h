// `dnncast memory`'s output beside the forecast API (forecast/forecast.h): its summary, its --check-db
// report, and its --measure run (src/profile, where built with libtorch).
#pragma once

#include <cstdint>
#include <string>

#include "forecast/forecast.h"

namespace dnncast::cli {

// --measure: one real training run of the same graph (src/profile: a child process, 2 warm-up
// iterations and 1 timed, enough for the peak, which iteration 2 reaches) beside the simulation.
struct Measured {
  bool ran = false;
  std::string status, message;
  int64_t baseline_bytes = 0, peak_bytes = 0, peak_reserved_bytes = 0;
};

// Throws InputError when dnncast was built without libtorch.
Measured measure_real_run(const Graph& graph, const memory::MemoryConfig& config, double timeout_s);
// The profiler's peak_bytes as the simulation has it (on cuda: peak allocated above the baseline).
int64_t simulated_profiler_peak(const memory::MemoryReport& report);
double relative_error(int64_t simulated, int64_t measured);

// The human-readable summary of a memory forecast (and of the measured run, when it ran).
void print_memory(const forecast::MemoryForecast& forecast, const Measured& measured);
// --check-db: the simulator against every measured peak of a dataset; the exit code (1 when any
// configuration is more than 1% off).
int check_dataset(const std::string& db, int64_t show, bool as_json, hardware::CpuIsa isa);

}  // namespace dnncast::cli
