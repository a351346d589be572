// The fingerprint of the machine a campaign measures on (CPU, cores, memory, GPU, libtorch, and the
// CPU's cpuid identity, dispatch ISA, caches and clock),
// read from /proc and the profiler; stored once per environment in the dataset.
#pragma once

#include <string>

#include "records/records.h"

namespace dnncast::measure {

// Detects this machine. `device` is the device the runs use ("cpu" or "cuda"): the GPU fields
// are filled only for "cuda" (from the profiler, or nvidia-smi's files under /proc/driver).
records::EnvironmentRecord detect_environment(Device device = Device::Cpu);

// The libtorch version this build measures with, "" when built without libtorch.
std::string torch_version();

}  // namespace dnncast::measure
