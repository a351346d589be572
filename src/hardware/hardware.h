// Hardware descriptors for features and predictor lookup: the host, read from /proc, and a small
// catalogue of GPUs with their published peaks (DESIGN.md "Hardware catalogue"). Peaks are
// single-precision, dense, without tensor cores; 0 means unknown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dnncast::hardware {

struct DeviceSpec {
  std::string name;   // lookup key, lower case ("a100-sxm4-40gb")
  std::string kind;   // "gpu" or "cpu"
  std::string match;  // lower-case text that a driver-reported name contains ("a100-sxm4-40gb")
  double peak_flops_f32 = 0;           // FLOP/s
  double memory_bandwidth_bytes_s = 0;  // bytes/s
  int64_t memory_bytes = 0;
  int64_t compute_units = 0;  // streaming multiprocessors (GPU)
  std::string source;  // where the numbers come from
  std::string date;    // when they were read
};

// The catalogue, sorted by name.
const std::vector<DeviceSpec>& device_catalogue();
// By catalogue name (case-insensitive); throws InputError listing the known names.
const DeviceSpec& find_device(const std::string& name);
// The catalogue entry whose `match` text occurs in a driver-reported GPU name, or nullptr.
const DeviceSpec* match_gpu_name(const std::string& gpu_name);

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
