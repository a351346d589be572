// The memory simulator against every measured peak of a dataset (docs/MEMORY.md "Validation"):
// `dnncast memory --check-db DB`. One comparison per configuration (environment, network, batch,
// input, optimizer, precision, threads) with an ok run and a recorded peak, in one process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/isa.h"
#include "store/store.h"

namespace dnncast::study {

struct MemoryCheckRow {
  std::string network, family, environment_hash;
  records::RunConfig config;
  int64_t measured_bytes = 0;     // the profiler's peak above the baseline (mean of the repeats)
  int64_t simulated_bytes = 0;    // the simulator's peak_bytes
  double relative_error() const;  // (simulated - measured) / measured
};

// The ISA one environment's configurations were simulated under.
struct CheckedEnvironment {
  std::string hash;
  std::string recorded_isa;  // "" when the environment did not record one
  hardware::CpuIsa simulated = hardware::CpuIsa::Unknown;
  // Not recorded: the peaks decide. Byte-exact configurations under each rule set (AVX-512, AVX2);
  // the one with more is used (a tie keeps features::kUnrecordedIsa).
  bool inferred = false;
  int64_t exact_avx512 = 0, exact_avx2 = 0;
};

struct MemoryCheck {
  std::string dataset;
  std::vector<CheckedEnvironment> environments;
  int64_t configurations = 0;        // compared
  int64_t exact = 0;                 // byte-exact
  int64_t within_1pct = 0;           // |relative error| <= 1% (exact ones included)
  int64_t not_modelled = 0;          // configurations the simulator refuses (bf16, an unknown op)
  std::vector<MemoryCheckRow> rows;  // every compared configuration, largest |relative error| first
};

// Throws InputError when the file is not a dataset or holds no ok run with a peak.
// isa: simulate every run under this ISA. Unknown: each environment's recorded one, and for an
// environment that recorded none, the rule set (AVX-512 or AVX2) its measured peaks follow.
MemoryCheck check_memory_simulator(const std::string& db_path, hardware::CpuIsa isa = hardware::CpuIsa::Unknown);

}  // namespace dnncast::study
