// The CPU fingerprint of an environment record (docs/DATASET.md "CPU fingerprint"): what tells two
// hosts apart that /proc/cpuinfo's "model name" does not (an AVX-512 and an AVX2-only "AMD EPYC"
// both report that): the cpuid identity, the ISA the kernels dispatch to, the caches and the clock.
// No libtorch: cpuid, sysfs and /proc only, so the predict path can build it.
#pragma once

#include <cstdint>
#include <string>

#include "hardware/isa.h"

namespace dnncast::hardware {

// Caches as the OS reports them for one CPU; 0 = unknown.
struct CpuCaches {
  int64_t l2_bytes = 0;  // the level-2 data or unified cache of that CPU (per core on x86)
  int64_t l3_bytes =
      0;  // the level-3 cache that CPU sees (the slice its cores share: a CCX on AMD, the socket on Intel)
};
// From CACHE_DIR/index*/{level,type,size} (CACHE_DIR: /sys/devices/system/cpu/cpu0/cache);
// instruction caches are skipped. Missing files give 0.
CpuCaches read_cpu_caches(const std::string& cache_dir);
// A sysfs cache size: "512K" -> 524288, "32M" -> 33554432, "1024" -> 1024; 0 when not a size.
int64_t parse_cache_size(const std::string& text);

// The base clock, MHz, and where it came from; 0 and "" when unknown.
struct BaseClock {
  double mhz = 0;
  std::string source;  // "base_frequency", "cpuinfo_max_freq" or "cpu MHz"
};
// CPUFREQ_DIR/base_frequency (kHz; intel_pstate), else CPUFREQ_DIR/cpuinfo_max_freq (kHz), else
// `cpuinfo_mhz` (the first "cpu MHz" of /proc/cpuinfo: the current clock, which inside a VM is
// usually the nominal one). CPUFREQ_DIR: /sys/devices/system/cpu/cpu0/cpufreq.
BaseClock read_base_clock(const std::string& cpufreq_dir, double cpuinfo_mhz);

// What an environment record stores of the CPU. Names as isa_name() / aten_capability_name();
// "" and 0 where unknown (off x86, no sysfs).
struct CpuFingerprint {
  std::string vendor;  // cpuid vendor string, "AuthenticAMD"
  int family = 0, model = 0, stepping = 0;
  std::string isa;              // oneDNN's dispatch after ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA ("avx2")
  std::string aten_capability;  // ATen's after ATEN_CPU_CAPABILITY ("avx2")
  std::string isa_cap;          // the oneDNN cap as given ("" when none)
  CpuCaches caches;
  BaseClock base_clock;
};

// The fingerprint of these features and this dispatch, with this host's caches and clock.
CpuFingerprint cpu_fingerprint(const CpuFeatures& features, const IsaDispatch& dispatch);
// This process: detect_cpu_features() and host_dispatch() (cached).
const CpuFingerprint& host_cpu_fingerprint();

}  // namespace dnncast::hardware
