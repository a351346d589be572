// The host this process runs on, read from /proc, for features and predictor lookup. Peaks are
// single-precision; 0 means unknown. GPUs are in the catalogue (catalogue.h, data/hardware/gpus.csv).
#pragma once

#include <cstdint>
#include <string>

namespace dnncast::hardware {

// The machine this process runs on.
struct HostInfo {
  std::string cpu_model;        // "AMD EPYC 7B13" ("" when /proc/cpuinfo has none)
  int64_t logical_cores = 0;    // processors listed in /proc/cpuinfo
  int64_t memory_bytes = 0;     // MemTotal
  double clock_mhz = 0;         // first "cpu MHz", 0 when absent
  int flops_per_cycle_f32 = 0;  // per core, from the SIMD flags (FMA counts 2)
  double peak_flops_f32 = 0;    // logical_cores * clock * flops_per_cycle; 0 when the clock is unknown
};

// Parses the text of /proc/cpuinfo and /proc/meminfo (either may be empty).
HostInfo parse_host(const std::string& cpuinfo_text, const std::string& meminfo_text);
// Reads /proc once per process and caches the answer.
const HostInfo& detect_host();

// Single-precision FLOPs per cycle and core implied by x86 SIMD flags ("avx512f", "avx2", "fma").
int flops_per_cycle_from_flags(const std::string& flags_line);
// Clock in MHz from a model name that states it ("Intel(R) Xeon(R) CPU @ 2.20GHz" -> 2200); 0 if none.
double clock_mhz_from_model(const std::string& cpu_model);

}  // namespace dnncast::hardware
