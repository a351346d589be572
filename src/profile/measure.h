// Measuring real training iterations with libtorch (docs/MEASUREMENT.md). This header is torch-free:
// anything may include it; only the .cpp files of src/profile see libtorch.
//
// One measurement = one child process (fork): build the graph as a libtorch module, warm up until
// iteration times stop falling, time iterations until the median is tight or the budget runs out,
// time a fixed reference probe before and after, and send the result back as JSON over a pipe.
// Out of memory, a crash, a timeout become a status; the calling process carries on.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "graph/graph.h"
#include "records/records.h"

namespace dnncast::profile {

// What to train. The batch and input size are the graph's own (build the graph at the batch and
// input you want measured: build_zoo_model(name, {batch, input, ...})).
// Optimizer (sgd has momentum 0.9), precision and device: TrainingSetup.
struct TrainConfig : TrainingSetup {
  int64_t threads = 1;     // intra-op threads; the child is pinned to this many CPUs; 0 = all allowed
  bool per_layer = false;  // also time forward and backward of each node (LayerTime)
  uint64_t seed = 0;       // parameters, inputs and labels are drawn from this seed
  // Gradient accumulation: an iteration is zero_grad, grad_accum micro-batches of forward + loss + backward (the
  // same batch each time; the loss is not divided by grad_accum), and one optimizer step.
  int64_t grad_accum = 1;
};

// Throws InputError naming what is wrong: threads < 0 or more
// than the CPUs this process may use, cuda without a CUDA libtorch or GPU, a precision the device
// lacks (fp16 on cpu).
void validate_config(const TrainConfig& config);

struct Limits {
  int64_t memory_bytes = 0;    // CPU: live bytes the tracking allocator grants (above it: status
                               // oom); also caps the child's address space. 0 = 90% of MemAvailable
  double timeout_s = 300;      // the child is killed after this: status timeout
  double time_budget_s = 5;    // timing stops when the CI target is reached or this runs out
  double warmup_budget_s = 0;  // warm-up stops when times stop falling or this runs out; 0 = time_budget_s
  double ci_target = 0.02;     // relative half-width of the 95% confidence interval of the median
  int64_t min_iterations = 5;  // timed iterations at least (even past the budget; the timeout still holds)
  int64_t max_iterations = 100000;
};

// Statistics of timed training iterations, milliseconds per iteration.
struct TimeStats {
  double median = 0, p10 = 0, p90 = 0, mean = 0;
  int64_t n = 0;      // timed iterations
  double rel_ci = 0;  // achieved relative half-width of the median's 95% CI
};

// Per-layer mode: each node benchmarked alone (fresh inputs of its producers' shapes, its own
// parameters), forward and backward (grad of its inputs and parameters) timed separately.
struct LayerTime {
  std::string node;  // node name
  std::string op;    // op name
  double forward_ms = 0;
  double backward_ms = 0;  // 0 for ops without a backward (Input)
  // The same node inside real training iterations (warm caches of a real pass, the engine's own
  // scheduling): its forward call, and its share of backward() (from its output's gradient being
  // complete to the next node's). Over all nodes these add up to the iteration but for the loss,
  // zero_grad and the optimizer step.
  double iteration_forward_ms = 0;
  double iteration_backward_ms = 0;
};

// Where the measurement ran.
// The machine a measurement ran on, as the child reports it: the dataset's environment record (records/records.h;
// `threads` here is the measurement's intra-op thread count) and the CPUs the child was pinned to.
struct Environment : records::EnvironmentRecord {
  std::string cpus;  // "0-1"
};

struct Measurement {
  std::string status = "ok";  // ok | oom | error | timeout
  std::string message;        // why it was not ok ("" when ok)

  TimeStats time_ms;                 // iteration = zero_grad + forward + loss + backward + optimizer step
  std::vector<double> iteration_ms;  // every timed iteration, in order
  int64_t warmup_iterations = 0;
  double probe_before_ms = 0, probe_after_ms = 0;  // reference probe (run_probe_ms) around the timing
  double time_ms_normalised = 0;  // median * reference_probe_ms() / mean(probe_before_ms, probe_after_ms)

  // Memory. CPU: live bytes of the tracking allocator. baseline = before the first iteration
  // (parameters, inputs, labels; optimizer state is created lazily so it is in the peak);
  // peak_bytes = highest live bytes during the iterations minus the baseline.
  // CUDA: the caching allocator's peak allocated (peak_bytes) and reserved, same baseline rule.
  int64_t baseline_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t peak_reserved_bytes = 0;  // CUDA only
  // Parameters and training state, bytes (exact, from the module's tensors after one step).
  int64_t params = 0;  // parameter count; equals the sum of the IR's OpCost::params (checked)
  int64_t param_bytes = 0, grad_bytes = 0, optimizer_state_bytes = 0;

  std::optional<double> energy_j;  // joules per iteration, where the hardware measures it
  std::string energy_note;         // where it came from, or why it is null

  std::vector<LayerTime> layers;      // per_layer only, graph order
  double layer_sum_ms = 0;            // sum of forward + backward over layers
  double optimizer_step_ms = 0;       // per_layer only: optimizer.step() alone, median
  double zero_grad_ms = 0;            // per_layer only: optimizer.zero_grad() alone, median
  double iteration_step_ms = 0;       // per_layer only: optimizer.step() inside the timed-by-node iterations
  double iteration_zero_grad_ms = 0;  // per_layer only: zero_grad() there
  double iteration_loss_ms = 0;       // per_layer only: the loss, forward and backward, there
  double layer_gap_ms = 0;            // time_ms.median - layer_sum_ms - optimizer_step_ms - zero_grad_ms
                                      // (loss, gradient accumulation, dispatch between layers)

  // Load: CPUs kept busy by other processes while timing (from /proc/stat, ours subtracted),
  // and /proc/loadavg's 1-minute value before and after.
  double load_other_cpus = 0;
  // Of the time the timed iterations' threads were runnable, the share they waited for a CPU another task held
  // (/proc/self/task/*/schedstat): where it is large the times are another process's as much as the network's.
  double cpu_wait_share = 0;
  double loadavg_before = 0, loadavg_after = 0;
  double wall_s = 0;  // whole child: start, build, warm-up, timing, probes

  Environment env;
};

// Ops the executor can run, sorted.
std::vector<std::string> supported_ops();
// Throws InputError "graph 'g': the executor lacks op 'Foo' (node 'x'); it runs: ..." when a node's op
// is not supported. Call it before measuring to turn a bad graph into exit code 2.
void check_supported(const Graph& graph);

// One measurement in a forked child process with the limits. Never throws for failures inside the
// child: they come back as status oom / error / timeout. Throws InputError for a bad config or an
// unsupported graph (checked before forking).
Measurement measure_isolated(const Graph& graph, const TrainConfig& config, const Limits& limits);
// `repeats` measurements, each in its own child, one after the other.
std::vector<Measurement> measure_repeats(const Graph& graph, const TrainConfig& config, const Limits& limits,
                                         int64_t repeats);
// The same measurement in this process (no isolation; an OOM or crash is this process's). For the
// child itself and for tests. Failures are returned as a status as far as they can be caught.
Measurement measure_in_process(const Graph& graph, const TrainConfig& config, const Limits& limits);

// Single-layer benchmarks (`dnncast bench-layers`, docs/MEASUREMENT.md "Layer benchmarks"): a graph
// of Input nodes and one node to time, the last. Its training work is timed alone: the forward, the
// whole backward (gradients of the float inputs and of the parameters), and, where a node has both,
// the backward for the input gradients alone (backward-data) and for the parameter gradients alone
// (backward-weight), libtorch's output mask doing only that part. Warm: the same tensors pass after
// pass (caches hold what fits); cold: a buffer of twice the last-level cache written before each
// pass, as inside a real iteration where the previous layers evicted this one's tensors.
struct LayerBench {
  std::string status = "ok";  // ok | oom | error | timeout
  std::string message;
  double forward_ms = 0, backward_ms = 0;                      // warm medians
  std::optional<double> backward_data_ms, backward_weight_ms;  // only where both parts exist
  double cold_forward_ms = 0, cold_backward_ms = 0;            // medians, caches flushed before each pass
  int64_t reps = 0;                                            // warm passes timed
  int64_t peak_bytes = 0;  // tracked live bytes above the baseline (inputs, parameters) in a pass
  double wall_s = 0;
};
// Throws InputError unless the graph is Input nodes followed by exactly one other node.
void check_layer_case(const Graph& graph);
// In this process (the child's side, and tests). limits.time_budget_s bounds the warm passes.
LayerBench bench_layer_in_process(const Graph& graph, const TrainConfig& config, const Limits& limits);
// Every case in child processes, many per child (a process start costs more than most layers):
// on_result(i, result) as each finishes, in order. A case that kills its child (a crash, the kernel's
// OOM killer, limits.timeout_s without a result) is recorded with that status, and the cases after
// it go on in a new child. Throws InputError for a bad config or case, before any is run.
void bench_layers_isolated(const std::vector<Graph>& cases, const TrainConfig& config, const Limits& limits,
                           const std::function<void(size_t, const LayerBench&)>& on_result);
nlohmann::json to_json(const LayerBench& bench);
LayerBench layer_bench_from_json(const nlohmann::json& document);

// Combines repeats: status = first non-ok (else ok); time statistics = medians of the repeats'
// statistics; peak_bytes = the largest; probes and load = means; env and per-layer of the first ok.
Measurement combine_repeats(const std::vector<Measurement>& repeats);

// Builds the module only (no training) and returns its parameter count. Throws InputError for an
// unsupported op.
int64_t module_param_count(const Graph& graph);
// Sum of OpCost::params over the graph (what module_param_count must equal).
int64_t graph_param_count(const Graph& graph);

// Numerical fidelity (docs/MEASUREMENT.md "Numerical fidelity"): one zero_grad + forward + loss +
// backward of the executor exactly as a training iteration runs it (the same module, in-place
// activations, loss and inputs), fp32 on the CPU with one thread, with every Dropout p and attention
// dropout_p set to 0 so that the step is deterministic (the zoo models no stochastic depth).
// Parameters, inputs and targets are drawn from `seed`; with `load_parameters`, parameter values
// are then read by name from the manifest.json already in `dir` (a dump's layout). Float inputs get
// gradients too. Writes into the existing folder `dir`:
//   graph.json     the graph run (dnncast-graph/1, dropout 0)
//   manifest.json  format dnncast-step/1: loss; parameters (name = node name + ".weight"/".bias"/...,
//                  as PyTorch names them; a tied weight once), inputs, targets (per graph output, the
//                  loss kind: cross_entropy | token_cross_entropy | mse | loss_node) and buffers after
//                  the step (running stats, loss-node targets), each {file, shape, dtype f32|i64|bool}
//                  plus "grad" (file of the gradient, same shape) for parameters and float inputs
//   *.bin          raw little-endian tensors, C order, no header
// Throws InputError for an unsupported op, an unwritable folder, a missing or misshapen parameter.
struct StepDump {
  double loss = 0;
  int64_t parameters = 0;  // elements
};
// keep_dropout: the graph's dropout as it is (not for a PyTorch comparison: the two RNG streams differ; for the
// executor against itself, e.g. checkpointing's restored RNG state).
StepDump dump_training_step(const Graph& graph, const std::string& dir, uint64_t seed, bool load_parameters = false,
                            bool keep_dropout = false);

// The drift probe: a fixed GEMM + convolution workload on one thread (~30 ms here), median of
// several passes, in this process. reference_probe_ms() is the constant of this build that
// normalised times are scaled to (the probe's median on the machine this build was tuned on).
double run_probe_ms();
double reference_probe_ms();

// Fingerprint of this machine and build (no child process).
Environment detect_environment(const TrainConfig& config);

nlohmann::json to_json(const Measurement& measurement);
Measurement measurement_from_json(const nlohmann::json& document);  // inverse of to_json
nlohmann::json to_json(const Environment& environment);

}  // namespace dnncast::profile
