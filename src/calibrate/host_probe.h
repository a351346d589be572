// The host check's measuring half (forecast/host_check.h): each probe configuration trained here with the profiler
// (its own child process, one thread) and forecast by the shipped predictor set, the result cached for this host.
#pragma once

#include <functional>
#include <string>

#include "forecast/host_check.h"

namespace dnncast::calibrate {

// Measures every probe (about 10 s in all on the data's host) and forecasts it; `progress` hears one line per probe.
// InputError when the build has no profiler (DNNCAST_WITH_TORCH=OFF) or a probe does not measure ok.
forecast::HostCheck run_host_check(const std::function<void(const std::string&)>& progress = {});

}  // namespace dnncast::calibrate
