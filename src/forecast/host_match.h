// Was a predictor trained on this host? This host's fingerprint (cpu model, cores, memory and the
// CPU fingerprint of hardware/fingerprint.h: cpuid identity, dispatch ISA, caches) against the
// training environments a predictor's manifest records. `dnncast predict` and `dnncast memory`
// print one note when there is no exact match (docs/DATASET.md "CPU fingerprint"). No libtorch.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware/isa.h"
#include "records/records.h"

namespace dnncast::forecast {

struct FieldDifference {
  std::string field;      // "isa", "cpu_family", "memory_gib", ...
  std::string host;       // this host's value
  std::string predictor;  // the training environment's; "not recorded" where it has none
};

struct HostMatch {
  bool exact = false;
  std::string environment;  // hash of the matching (exact) or nearest training environment; "" when none
  // exact: empty. Else the fields that disagree (the ISA among them when it does), then the fields
  // this host records and the environment did not ("not recorded").
  std::vector<FieldDifference> differs;
  std::string remedy;  // what to run about it ("" when exact and the host check found nothing)
  // The host check (host_check.h) where it found this host off: its result, and the line it adds to the note.
  nlohmann::json speed;  // null: not checked, or in line with the data
  std::string speed_note;

  // {"match": "exact"|"nearest", "environment", "differs": [{"field", "host", "predictor"}], "remedy"}, and "speed"
  // (HostCheck::to_json) where the host check found this host off
  nlohmann::json to_json() const;
};

// This host as an environment record, without libtorch: cpu_model, cores and memory from /proc, the
// CPU fingerprint from cpuid and sysfs (hardware::host_cpu_fingerprint()). `isa` != Unknown states
// the ISA instead of detecting it ("as if oneDNN dispatched to it", `predict --host-isa`: a what-if,
// and how tests are independent of the machine they run on); ATen's capability then follows it.
records::EnvironmentRecord host_environment(hardware::CpuIsa isa = hardware::CpuIsa::Unknown);

// The text of an environment's ISA: its recorded one, else "(not recorded; an AVX-512 level, assumed avx512_core)"
// (features::kUnrecordedIsa, what the featurizer and the simulator assume for it).
std::string isa_text(const records::EnvironmentRecord& environment);

// HOST against TRAINED: exact when some environment agrees on every field both record and on the
// ISA (an unrecorded ISA counts as features::kUnrecordedIsa); else the nearest, the one with the
// fewest disagreeing fields (then the fewest unrecorded ones; then the first). Fields: cpu_model,
// cores, memory_gib, cpu_vendor, cpu_family, cpu_model_number, cpu_stepping, isa, aten_capability,
// l2_bytes, l3_bytes. Not threads (a training option), nor the software fields. An empty TRAINED
// (a manifest without environments) counts as one environment that recorded nothing.
// `remedy` is left "" here: see calibrate_remedy().
HostMatch match_host(const records::EnvironmentRecord& host, const std::vector<records::EnvironmentRecord>& trained);
// The same on the ISA alone (the memory simulator: its rules follow the ISA, nothing else of the host).
HostMatch match_isa(const std::string& isa, const std::vector<records::EnvironmentRecord>& trained);

// The command that carries the predictor to this host by timing the requested model here, with its cost
// (issue 36, forecast/host_calibration.h): "dnncast calibrate resnet50 --batch 32 --input 3x224x224 --minutes 5
// (5 minutes of this host's time: ...)". PREDICTOR_DIR: the set the user named (--predictor), "" for the
// shipped one, which calibrate finds alike.
inline constexpr int kCalibrateMinutes = 5;
std::string calibrate_remedy(const std::string& predictor_dir, const std::string& model, int64_t batch,
                             const std::string& input);

// The one line `predict` prints when not exact: "no predictor was trained on this host (isa avx2 vs
// ...); using the nearest, environment H. To adapt it: REMEDY".
std::string host_match_note(const HostMatch& match);

// `dnncast memory`: exact when the simulated ISA's convolution rules were checked on measured runs
// (kernels::conv_rules_evidence: AVX2 and the AVX-512 levels); else the remedy is MEASURE_COMMAND
// (the same command with --measure).
HostMatch simulator_isa_match(hardware::CpuIsa simulated, const std::string& measure_command);
// Its one line when not exact: "the simulator followed isa sse41 (...); its convolution rules were
// checked on measured runs under avx2 and AVX-512 only. To check it here: REMEDY".
std::string simulator_isa_note(const HostMatch& match, const std::string& source);

// The training environments of a predictor bundle's manifest.json (DIR, or DIR/time); empty when
// it has none or cannot be read.
std::vector<records::EnvironmentRecord> manifest_environments(const std::string& bundle_dir);

}  // namespace dnncast::forecast
