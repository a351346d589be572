// The forecast API (issue 17): what `dnncast predict`, `memory` and `inspect` compute, as plain
// structs, for the CLI, the Python module and `serve` alike. The CLI commands parse flags, call
// these and print; nothing here prints or knows about JSON (forecast_json.h writes the CLI's).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "features/layer_features.h"
#include "forecast/device.h"
#include "forecast/host_match.h"
#include "forecast/predictor.h"
#include "gpu/gpu_memory.h"
#include "gpu/parallel_plan.h"
#include "graph/graph.h"
#include "hardware/isa.h"
#include "import/model_source.h"
#include "memory/sharding.h"
#include "memory/simulator.h"
#include "models/zoo.h"

namespace dnncast::forecast {

// ---------------------------------------------------------------------------------------------
// Time and memory of training, from a predictor set (`dnncast predict`)

struct ForecastRequest {
  import::ModelSource model;  // at its batch (>= 1), input or sequence length, classes (import/model_source.h)
  Optimizer optimizer = Optimizer::Sgd;
  Precision precision = Precision::Fp32;
  int64_t threads = 0;  // 0: the environment's, or the largest trained count below it
  // Resolved where the request is made (forecast/device.h): this host's CPU, or a predictor set by the name given
  // (its folder, environment or measured GPU), which the set's choice matches against the sets' environments.
  ForecastDevice device;
  int64_t epoch_samples = 0;  // > 0: also forecast time per epoch
  std::string predictor_dir;  // a set or bundle folder; "": the shipped sets (data/predictors)
  hardware::CpuIsa host_isa = hardware::CpuIsa::Unknown;  // Unknown: this host's (detected)
  // Gradient accumulation: an iteration is grad_accum micro-batches of `batch` and one optimizer step; the
  // predictors were trained without it, so the forecast iteration is counted grad_accum times (said in a note).
  int64_t grad_accum = 1;
  // Apply this host's cached host check (host_check.h) where the forecast is for this host's CPU; the check itself
  // switches off with DNNCAST_HOST_CHECK=off. The probes' own forecasts are made without it.
  bool host_check = true;
  // Follow this host's calibration (`dnncast calibrate`, found in DNNCAST_CALIBRATIONS) where one exists; false: the
  // shipped set as it is (the host check's probes compare this host with the data, not with its calibration).
  bool use_calibration = true;
};

struct Forecast {
  std::string model, graph;  // as requested; the built graph's name
  int64_t batch = 0;
  std::string input;  // the input's shape without the batch: "3x224x224", "128"
  Optimizer optimizer = Optimizer::Sgd;
  Precision precision = Precision::Fp32;
  int64_t threads = 0;
  double time_ms = 0, time_ms_low = 0, time_ms_high = 0;  // per iteration, with its 90% interval
  int64_t extrapolated_from = 0;  // > 0: the batch past the trained range the time was continued from
  // Which time model made the forecast: "whole" (the whole-network learner), or past the trained
  // batches with a layer-wise model in the set, "whole, carried past the trained batches by the
  // layer-wise model" (forecast/extrapolation.h), or at image inputs as large as the largest trained one
  // with a corrected layer-wise model in the set, "corrected layer-wise" (forecast/forecast.cpp).
  std::string time_model;
  std::optional<double> epoch_s;  // with epoch_samples
  int64_t epoch_samples = 0, epoch_iterations = 0;
  // Peak memory above what is held before training (as `dnncast profile` reports it), with its
  // interval (a point for the simulator); total includes parameters, buffers and inputs (simulator).
  std::optional<int64_t> peak_bytes, peak_bytes_low, peak_bytes_high, peak_total_bytes;
  std::string memory_source;  // "simulator", the memory predictor's learner, or "" (none)
  std::string memory_isa;     // the ISA simulated, CPU environments only; "" otherwise
  std::string predictor;      // the set's folder
  std::string learner;        // the time predictor's
  double cv_mre = 0;          // the time predictor's cross-validated mean relative error
  // The set's environment: label (this host's first where the set was not trained on it or was calibrated here), hash
  std::string env, env_hash;
  int feature_version = 0;
  std::optional<HostMatch> host_match;  // CPU sets: was the predictor trained on this host
  std::string calibration;              // the host calibration folder applied (host_calibration.h); "" none
  std::vector<std::string> notes;       // fallbacks, extrapolations, what was not forecast
  bool simulated() const { return memory_source == "simulator"; }
};

// Throws InputError: no predictor set found or matching the device, an optimizer, precision the
// set was not trained on, a bad model or input (model_source.h).
Forecast forecast(const ForecastRequest& request);

// The time of one featurized configuration from a loaded set, as `forecast` makes it before any host
// calibration: the whole-network learner, carried past the trained batches by the layer-wise model, or the
// corrected layer-wise model (time_model, extrapolated_from and notes of `result` filled; result.input names
// the input without the batch, "3x224x224"). `sites`: the graph's layer sites where the set has a layer-wise
// model (empty otherwise).
Estimate set_time_forecast(const PredictorSet& set, const std::vector<double>& row, const features::LayerSites& sites,
                           const features::GraphFeatures& graph, const features::TrainingConfig& config,
                           const features::HardwareFeatures& hardware, Forecast& result);

// ---------------------------------------------------------------------------------------------
// Simulated memory (`dnncast memory`)

struct MemoryRequest {
  import::ModelSource model;             // at its batch, input or sequence length (import/model_source.h)
  memory::MemoryConfig config;           // optimizer, precision, device, threads, isa, timeline, events
  int64_t fits_limit = 0;                // > 0: does training fit in this many bytes
  int64_t batch_limit = 0;               // > 0: the largest batch that fits in this many bytes
  int64_t batch_cap = int64_t{1} << 20;  // the largest batch that search tries
  std::string measure_command;           // the command that would measure this run (the ISA match's remedy)
  ForecastDevice device;                 // cpu, cuda or a catalogued GPU, resolved (forecast/device.h)
  std::optional<gpu::GpuMemoryCalibration> gpu_memory;  // a catalogued GPU: the overheads config holds
  bool context_measured = false;                        // the context was given (--cuda-context), not fitted
  memory::ShardingPlan sharding;                        // several GPUs: the memory of one (memory/sharding.h)
  // Several GPUs under data, tensor or pipeline parallelism (gpu/parallel_plan.h): the batch is each data-parallel
  // replica's, simulated one micro-batch at a time.
  gpu::ParallelPlan parallel;
  int64_t seq_limit = 0;               // > 0: the longest sequence that fits in this many bytes
  int64_t seq_cap = int64_t{1} << 20;  // the longest sequence that search tries
};

struct MemoryForecast {
  std::string model;
  int64_t batch = 0;
  memory::MemoryConfig config;                       // as requested
  Graph graph;                                       // the model at the requested batch
  std::string input;                                 // the input's shape without the batch
  memory::MemoryReport report;                       // peak, breakdown at the peak, timeline and events when asked
  int64_t parameters = 0, trainable_parameters = 0;  // of the graph (tied weights once; LoRA: the adapters train)
  // CPU: the ISA whose kernels were simulated, why, and whether measured runs checked its rules.
  hardware::CpuIsa simulated_isa = hardware::CpuIsa::Unknown;
  std::string isa_source;
  std::optional<HostMatch> isa_match;
  int64_t fits_limit = 0;
  bool fits = false;  // with fits_limit
  int64_t batch_limit = 0;
  // With batch_limit. Under a parallel plan: each data-parallel replica's batch (a whole number of micro-batches),
  // its bytes per GPU, and next_required_bytes at one more sample per micro-batch.
  memory::MaxBatchResult max_batch;
  std::string gpu, gpu_name;  // as the request's
  std::optional<gpu::GpuMemoryCalibration> gpu_memory;
  bool context_measured = false;
  // cuda on a catalogued GPU: which parts are fitted, derived or measured, and to what (gpu_memory_notes)
  std::vector<std::string> memory_notes;
  // What the simulation rests on beyond the graph (bf16 on the CPU: whose oneDNN sized the scratchpads, or why none
  // are counted); --json "simulation_notes", the CLI's stderr.
  std::vector<std::string> simulation_notes;
  std::optional<memory::ShardedMemory> sharded;  // with a sharding plan: one GPU's memory, which fits is judged on
  std::optional<gpu::ParallelMemory> parallel;   // with a parallel plan: the same (gpu/parallel.h)
  gpu::ParallelPlan parallel_plan;
  std::string link;     // the catalogued GPU's link between GPUs ("nvlink4"), "" unknown
  double link_gbs = 0;  // GB/s per direction; 0 unknown
  int64_t seq = 0;      // the sequence length simulated (sequence models), else 0
  int64_t seq_limit = 0;
  memory::MaxBatchResult max_seq;  // with seq_limit: batch = the longest sequence
  std::string max_seq_refused;     // why a longer sequence was refused by the model itself, "" none
};

// Throws InputError: a bad model, input or configuration the simulator does not model.
MemoryForecast forecast_memory(const MemoryRequest& request);

// ---------------------------------------------------------------------------------------------
// Requests from the options as a user gives them (the CLI's flags, the Python module's keywords), filled
// one way for both. Each caller checks its numbers' ranges first, under its own names; these parse the
// names and byte sizes, and a message names the option as the caller spells it.

// `predict`'s options besides the model and its size.
struct ForecastOptions {
  std::string optimizer = "sgd", precision = "fp32";  // names, parsed here
  int64_t threads = 0;
  std::string device;
  int64_t epoch_samples = 0;
  std::string predictor_dir;
  hardware::CpuIsa host_isa = hardware::CpuIsa::Unknown;
  int64_t grad_accum = 1;  // gradient accumulation: micro-batches per optimizer step (checked here)
  bool host_check = true;  // ForecastRequest::host_check
};

// Throws InputError: an optimizer or precision that is not one. `device` is options.device resolved
// (resolve_predict_device; predict() does it once for every front end).
ForecastRequest make_forecast_request(const import::ModelSource& model, const ForecastOptions& options,
                                      const ForecastDevice& device, OptionStyle style);

// `memory`'s options besides the model and its size (not --measure, --check-db).
struct MemoryOptions {
  std::string optimizer = "sgd", precision = "fp32", device = "cpu";  // names, parsed here
  int64_t threads = 1;
  hardware::CpuIsa isa = hardware::CpuIsa::Unknown;
  bool timeline = false, events = false;
  std::string cuda_context, fits, max_batch;  // bytes with units ("24GiB"), or "" (not given)
  int64_t batch_cap = int64_t{1} << 20;
  std::string measure_command;  // "": memory_measure_command()'s
  std::string sharding;         // "" none, "ddp", "zero1"... (memory/sharding.h)
  std::string parallel;         // "" none, "dp", "tp", "pp", "tp=2,pp=2" (gpu/parallel_plan.h)
  int64_t micro_batches = 1;    // with parallel: a pipeline's micro-batches
  int64_t gpus = 1, gpus_per_node = 8;
  std::string max_seq;           // bytes with units, or "": the longest sequence that fits
  int64_t grad_accum = 1;        // gradient accumulation: micro-batches per optimizer step (checked here)
  bool paged_optimizer = false;  // memory::MemoryConfig::paged_optimizer (a GPU device only: checked here)
};

// The command that measures this configuration (`dnncast memory ... --measure`, the ISA match's remedy): the
// model as given and every option whose value is not the default, in one order whatever front end was used.
std::string memory_measure_command(const import::ModelSource& model, const MemoryOptions& options);

// Throws InputError: an optimizer, precision or device that is not one, a byte size that is not one. The
// measure command is memory_measure_command()'s unless `options` gives one.
MemoryRequest make_memory_request(const import::ModelSource& model, const MemoryOptions& options, OptionStyle style);

// ---------------------------------------------------------------------------------------------
// Per-layer costs (`dnncast inspect`)

struct LayerRow {
  std::string name, op, kind;
  TensorShape shape;
  int64_t params = 0, param_bytes = 0, buffers = 0, macs = 0, flops_fwd = 0, flops_bwd = 0;
  int64_t activation_bytes = 0;  // the layer's output tensor
  int64_t saved_bytes = 0;       // tensors it keeps from forward to backward
  // With a GPU (`inspect --device GPU`): the per-kernel model's time of the layer's kernels, fp32.
  double gpu_forward_ms = 0, gpu_backward_ms = 0;
  double gpu_recompute_ms = 0;  // of gpu_backward_ms: the forward run again for activation checkpointing
  std::string gpu_kind;         // gpu::node_time_kind: gemm, attention, norm, ... ("" without a GPU)
  // Its kernels as the GPU model lists them (gpu::node_kernels): family, work, traffic and time of each.
  struct Kernel {
    std::string family;  // gemm, conv, norm, softmax, elementwise
    double flops = 0, bytes = 0;
    double ms = 0;  // the per-kernel model's time, at least the calibrated launch cost
  };
  std::vector<Kernel> gpu_forward_kernels, gpu_backward_kernels;
};

struct Inspection {
  std::string model, family, hash;  // the graph's name, family, architecture hash
  int64_t batch = 0;
  std::vector<int64_t> input;  // the first input's shape without the batch
  int64_t layer_count = 0;
  std::vector<LayerRow> layers;
  LayerRow total;  // sums; name/op/kind/shape unused
  // Saved tensors counted once each: a layer's output kept by itself and by its consumers
  // (a conv's input is the ReLU output the ReLU also keeps) is one tensor in memory.
  int64_t saved_bytes_distinct = 0;
  // The parameters one token meets: all of them but, in a mixture of experts, only top-k of each layer's experts
  // (Mixtral-8x7B: 12.9B of 46.7B). Equal to total.params for a dense model.
  int64_t active_params = 0;
  std::vector<std::string> import_notes;  // the graph's notes (Graph::notes): an ONNX file exported for inference
  std::string gpu;                        // the catalogued GPU the layer times are for; "" for none
  // With a GPU: forward and backward milliseconds summed by LayerRow::gpu_kind.
  std::map<std::string, std::array<double, 2>> gpu_by_kind;
};

Inspection inspect(const Graph& graph);
// The same with each layer's forward and backward time on the device's catalogued GPU (resolve_inspect_device), fp32,
// from the per-kernel model (gpu/kernel_model.h; each kernel at least the calibrated launch cost); no GPU:
// inspect(graph). InputError: a GPU without the peaks the model needs, no shipped per-kernel model. `training` false:
// the model in eval mode, as inference runs it (no dropout kernel, no backward).
Inspection inspect(const Graph& graph, const ForecastDevice& device, bool training = true);

}  // namespace dnncast::forecast
