// The dataset's records as plain values: where a measurement ran (EnvironmentRecord), what ran
// (NetworkRecord, RunConfig) and what it measured (RunRecord, LayerTiming, LayerBenchRecord). No SQLite
// here: the forecast library reads environments and layer timings from predictor bundles with these types,
// and store/store.h keeps them in a dataset file.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/training_setup.h"
#include "hardware/fingerprint.h"

namespace dnncast::records {

// Where a measurement ran. The hash covers every field except `host`, `isa_cap` and `base_mhz`, so
// identical machines of a cluster (Slurm nodes) share one environment; the host of each run is kept
// on the run. The CPU fingerprint (schema 3, hardware/fingerprint.h) enters the hash only where it is
// recorded, so environments stored before it keep their hash; "" and 0 mean "not recorded".
struct EnvironmentRecord {
  int64_t id = 0;  // row id in one database (0 = not stored)
  std::string cpu_model;
  int64_t cores = 0;         // logical CPUs of the machine
  int64_t threads = 0;       // CPUs this process may use (affinity mask)
  int64_t memory_bytes = 0;  // physical memory
  std::string gpu_name;      // "" on CPU-only machines
  std::string gpu_driver;
  std::string torch_version;  // "" when built without libtorch
  std::string build_type;     // "Release", ...
  std::string host;
  // CPU fingerprint. cpuid: vendor string ("AuthenticAMD"), displayed family / model / stepping
  // (recorded together, when cpu_vendor is not "").
  std::string cpu_vendor;
  int64_t cpu_family = 0, cpu_model_number = 0, cpu_stepping = 0;
  std::string isa;              // what oneDNN dispatches to after the cap ("avx2", "avx512_core")
  std::string aten_capability;  // what ATen dispatches to: "default", "avx2", "avx512"
  std::string isa_cap;          // ONEDNN_MAX_CPU_ISA (else DNNL_MAX_CPU_ISA) as given, "" when none;
                                // not hashed: its effect is `isa`
  int64_t l2_bytes = 0;         // level-2 cache of CPU 0 (per core)
  int64_t l3_bytes = 0;         // level-3 cache CPU 0 sees, as the OS reports it
  double base_mhz = 0;          // cpufreq base_frequency, else cpuinfo_max_freq, else /proc/cpuinfo "cpu MHz";
                                // not hashed: the last is the current clock

  std::string hash() const;  // 16 hex digits
};

struct NetworkRecord {
  int64_t id = 0;
  std::string hash;        // Graph::architecture_hash()
  std::string name;        // "resnet18", "synthetic:42"
  std::string family;      // "resnet", "synthetic"
  std::string source;      // how to rebuild it: "zoo:resnet18", "synthetic:42", "file:path/to/graph.json"
  std::string graph_json;  // the graph at batch 1 and the input it was first measured with
};

// The training configuration of a run (the options a campaign varies).
struct RunConfig : TrainingSetup {  // optimizer, precision, device: stored as name(x)
  int64_t batch = 1;
  std::vector<int64_t> input;  // C x H x W of image models; empty for sequence models
  int64_t seq_len = 0;         // tokens of sequence models; 0 for image models
  int64_t threads = 1;

  std::string input_text() const;  // "3x64x64", "" when empty
  bool operator<(const RunConfig& other) const;
  bool operator==(const RunConfig& other) const;
};
std::vector<int64_t> parse_input_text(const std::string& text);  // "3x64x64" -> {3,64,64}; throws InputError

inline const std::vector<std::string>& run_statuses() {
  static const std::vector<std::string> statuses{"ok", "oom", "error", "timeout"};
  return statuses;
}

// One node's forward and backward (campaign plans with "per_layer": true; the profiler's
// LayerTime), in the order of the graph: timed alone (forward_ms, backward_ms) and inside real
// training iterations (iteration_*; NULL in the file when not measured). Three rows after the
// nodes time the rest of an iteration: op "OptimizerStep" (optimizer.step()), "ZeroGrad"
// (zero_grad()) and "Loss" (the loss forward and backward; inside iterations only), with the time in
// forward_ms / iteration_forward_ms. Table layer_times, keyed by run and position.
struct LayerTiming {
  std::string node;  // node name; "optimizer.step", "optimizer.zero_grad", "loss" for the extra rows
  std::string op;    // op name, "OptimizerStep", "ZeroGrad", "Loss"
  double forward_ms = 0;
  double backward_ms = 0;
  std::optional<double> iteration_forward_ms, iteration_backward_ms;
};
inline constexpr const char* kOptimizerStepOp = "OptimizerStep";
inline constexpr const char* kZeroGradOp = "ZeroGrad";
inline constexpr const char* kLossOp = "Loss";

// A run whose threads waited for their CPU more than this share of their runnable time shared that CPU with another
// process (RunResult::cpu_wait_share): its times are the other process's as much as its own. 0.2 inflates a time by
// at most 1/(1 - 0.2) = 1.25x. The host check measures such a probe again (forecast/host_check.h), `calibrate` leaves
// such a whole run out of its fit, a campaign's progress line says so.
inline constexpr double kSharedCpuWaitShare = 0.2;

// What was measured (docs/MEASUREMENT.md "One measurement"). Unset optionals are NULL in the file.
struct RunResult {
  std::string status = "ok";  // ok | oom | error | timeout
  std::string message;        // why it failed, or notes
  std::optional<double> time_ms_median, time_ms_p10, time_ms_p90, time_ms_mean;
  int64_t iterations = 0;             // timed iterations behind the statistics
  std::optional<double> time_rel_ci;  // achieved relative half-width of the median's 95% CI
  int64_t warmup_iterations = 0;
  std::optional<double> time_ms_normalised;               // median scaled by the probe (machine speed drift removed)
  std::optional<double> probe_ms_before, probe_ms_after;  // fixed reference workload timed around the run
  std::optional<int64_t> peak_bytes;                      // highest live bytes during the iterations minus the baseline
  std::optional<int64_t> baseline_bytes;                  // live bytes before the first iteration (parameters, inputs)
  std::optional<double> energy_j;                         // per iteration, where the hardware measures it
  std::optional<double> load_other_cpus;                  // mean CPUs kept busy by other processes while measuring
  // Of its threads' runnable time while timing, the share they waited for a CPU another task held (about 0.5 with one
  // busy process on the same CPU; profile::Measurement::cpu_wait_share); none where not recorded (schema < 5).
  std::optional<double> cpu_wait_share;
  std::optional<double> wall_s;     // whole measurement including warm-up and process start
  std::vector<LayerTiming> layers;  // per-layer runs only; Store::runs() leaves it empty (Store::layer_times())
};

struct RunRecord {
  int64_t id = 0;
  int64_t network_id = 0;      // filled by Store::runs(); ignored on insert
  int64_t environment_id = 0;  // filled by Store::runs(); required on insert
  std::string network_hash;    // filled by Store::runs()
  std::string environment_hash;
  RunConfig config;
  int64_t repeat_index = 0;
  RunResult result;
  std::string cpus;  // CPUs the measurement was pinned to ("0-1")
  std::string host;
  std::string plan;         // name of the campaign plan that produced it
  std::string measured_at;  // UTC, ISO 8601 ("2024-05-01T12:00:00Z")
};

// One single-layer benchmark (schema 4, table layer_benchmarks; `dnncast bench-layers`,
// docs/MEASUREMENT.md "Layer benchmarks"): a layer case (models/layer_cases.h) timed alone, warm
// and cold, with the backward split into data and weight gradients where it has both. Identified
// by environment + key (the case graph's architecture hash) + threads; unset optionals are NULL.
struct LayerBenchRecord {
  int64_t id = 0;
  int64_t environment_id = 0;
  std::string kind;        // conv, dwconv, ... (models::layer_kinds())
  std::string op;          // the timed node's op
  std::string key;         // LayerCase::key: architecture hash of the case graph + its input shapes
  std::string origin;      // "sample", "zoo:<model>", "file:<path>:<row>"
  std::string graph_json;  // the case graph (Input nodes + the timed node), at its batch
  int64_t batch = 1;
  int64_t threads = 1;
  double flops_forward = 0;
  std::string status = "ok";  // ok | oom | error | timeout
  std::string message;
  std::optional<double> forward_ms, backward_ms, backward_data_ms, backward_weight_ms, cold_forward_ms,
      cold_backward_ms;
  int64_t reps = 0;
  std::optional<int64_t> peak_bytes;
  std::optional<double> wall_s;
  std::string cpus, host, plan, measured_at;
};

// Identity of a run inside one environment: network hash + configuration + repeat index.
using RunKey = std::tuple<std::string, RunConfig, int64_t>;

// The one JSON form of an environment (predictor manifests, the profiler's child reply, `--json`): every field by
// its name; `host` only when `with_host` (manifests leave the machine's name out). The reader needs cpu_model,
// cores, threads, memory_bytes and gpu_name; the rest default to "not recorded" (older manifests lack the CPU
// fingerprint). A wrong type or a missing key is an InputError.
nlohmann::json environment_json(const EnvironmentRecord& environment, bool with_host);
EnvironmentRecord environment_from_json(const nlohmann::json& document);

// Copies a CPU fingerprint into the record's fingerprint fields.
void set_cpu_fingerprint(EnvironmentRecord& environment, const hardware::CpuFingerprint& cpu);

// Current UTC time as ISO 8601 ("2024-05-01T12:00:00Z").
std::string utc_now();
// FNV-1a 64 of a text, 16 hex digits (the same hash family as Graph::architecture_hash).
std::string fnv1a_hex(const std::string& text);

}  // namespace dnncast::records
