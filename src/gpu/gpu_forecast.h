// Training time and memory on a catalogued GPU that was never profiled (issue 19, docs/GPU.md).
//
// Time: per op of the graph, forward and backward, its compute time (FLOPs over the device's peak,
// hardware/catalogue.h, divided by an efficiency that grows with the op's work per SM -- the wave /
// occupancy regime of small problems -- up to a ceiling per op class; on tensor cores plus a fitted share
// of the FLOPs at the SM's FP32 rate, which a tensor peak alone does not see) plus its memory time (bytes
// over the bandwidth): a fitted soft maximum (c^p + m^p)^(1/p) came out at p = 1.00, no overlap. Plus
// a per-kernel launch cost (a kernel takes at least that), the optimizer step as a memory-bound pass
// over the parameters, and a per-iteration host overhead. The curves and overheads are calibrated on
// public end-to-end measurements (../shared/data/public/gpu_benchmarks) and shipped in
// data/hardware/gpu_calibration.csv, written by `dnncast calibrate-gpus`. Memory: the simulator's
// CUDA caching-allocator model plus the overheads of gpu_memory.h (what nvidia-smi shows).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "gpu/kernel_model.h"
#include "gpu/parallel_plan.h"
#include "graph/graph.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"
#include "memory/simulator.h"
#include "models/zoo.h"

namespace dnncast::gpu {

// What the matrix ops (conv, linear, attention) run in; fp16 / bf16 are autocast mixed precision
// ("amp" is fp16). tf32: fp32 storage, TF32 tensor cores for convolutions and GEMMs (Ampere and later).
enum class GpuPrecision { Fp32, Tf32, Fp16, Bf16 };
// Torch7 only appears in the calibration (jcjohnson's tables); users choose pytorch or tensorflow.
enum class Framework { PyTorch, TensorFlow, Torch7 };

// "fp32", "tf32", "amp" / "fp16", "bf16" (any case); throws InputError naming `what` and the choices.
GpuPrecision parse_gpu_precision(const std::string& text, const std::string& what = "precision");
// The memory simulation's precision for a GPU precision as the user named it: autocast for amp / fp16 and bf16,
// pure bf16 for "bf16-pure" / "pure-bf16" (the time curves take it as bf16), fp32 for fp32 and tf32.
Precision memory_precision_of(const std::string& text, const std::string& what = "precision");
const std::string& name(GpuPrecision precision);  // "fp32", "tf32", "fp16", "bf16"
Framework parse_framework(const std::string& text, const std::string& what = "framework");
const std::string& name(Framework framework);  // "pytorch", "tensorflow"

// The calibrated constants (gpu_calibration.csv). Tensor: the tf32/fp16/bf16 tensor-core peaks.
struct GpuCalibration {
  // Efficiency of an op class: ceiling * w / (w + half_work), w = FLOPs per SM of one kernel.
  struct Curve {
    double ceiling = 1, half_work = 0;
  };
  // conv3x3: 3x3 stride-1 dense convolutions at fp32, which cuDNN runs as Winograd (fewer FLOPs than
  // the direct count: their ceiling may exceed 1); conv: the other convolutions.
  // tf32: convolutions on TF32 tensor cores; tensor: on fp16 / bf16 ones (implicit GEMMs: ceiling at most 1).
  Curve conv3x3_fp32, conv_fp32, conv_tf32, conv_tensor, gemm_fp32, gemm_tensor;
  double memory_efficiency = 1;  // fraction of peak bandwidth that memory-bound kernels reach
  // A tensor-core kernel's share of its FLOPs priced at the SM's vector (FP32) rate on top of its tensor time: the
  // operand staging and epilogue its tensor cores wait on, which the tensor peak alone does not see.
  double tensor_vector_share = 0;
  double kernel_launch_us = 0;                      // host time per kernel: a kernel takes at least this long
  double iteration_us = 0;                          // per iteration: host work, loss, synchronisation (PyTorch, Torch7)
  double tensorflow_iteration_us = 0;               // the same in TensorFlow (tf_cnn_benchmarks' step)
  double tensorflow_factor = 1, torch7_factor = 1;  // time over PyTorch's at equal work
  // Ratios of measured to forecast time at the 5th and 95th percentile of the leave-one-GPU-out
  // residuals: the 90% interval of a forecast.
  double interval_low = 1, interval_high = 1;
  // GPUs whose public measurements the calibration was fitted to: catalogue name -> rows, tables.
  struct Coverage {
    int64_t rows = 0;
    std::string tables;
  };
  std::vector<std::pair<std::string, Coverage>> gpus;
  std::string source;  // the file read, or "uncalibrated"
};

// The shipped file (data/hardware/gpu_calibration.csv), or `path`; throws InputError for a missing or
// malformed file. write_gpu_calibration writes what load reads, with `header` as line 1.
GpuCalibration load_gpu_calibration(const std::string& path = "");
void write_gpu_calibration(const GpuCalibration& calibration, const std::string& path, const std::string& header);
std::string default_gpu_calibration_path();

// One iteration's kernels, independent of the GPU (the calibration computes them once per graph):
// forward and backward of every op (a conv or GEMM backward is two kernels: data and weight
// gradients), and the optimizer step as one memory-bound pass per parameter tensor.
struct GpuKernel {
  enum class Class { Conv3x3, Conv, Gemm, Memory };
  Class kind = Class::Memory;
  double flops = 0, bytes = 0;
  int64_t count = 1;  // identical kernels merged
};
// What one timed iteration runs: a full training step (with the optimizer), forward and backward (what
// NeuSight's and several public tables time), or the forward pass alone under no_grad.
enum class GpuPhase { Train, ForwardBackward, Inference };
GpuPhase parse_gpu_phase(const std::string& text, const std::string& what = "--phase");
const std::string& name(GpuPhase phase);  // "train", "forward-backward", "inference"

struct GpuWork {
  std::vector<GpuKernel> kernels;
  int64_t kernel_count = 0;
  // The same iteration as the per-kernel model sees it (kernel_model.h): identical kernels merged.
  std::vector<std::pair<KernelShape, int64_t>> shaped;
};
// One GPU's share of a graph under tensor / pipeline parallelism (gpu/parallel.h): each node's part (empty: every node
// whole) and the tensor-parallel degree a split part divides by; the optimizer steps the parameters of its share.
struct GraphShare {
  std::vector<NodePart> parts;
  double tp = 1;
};
GpuWork gpu_work(const Graph& graph, GpuPrecision precision, Optimizer optimizer, bool with_optimizer_step = true,
                 bool with_backward = true, const GraphShare& share = {});
GpuWork gpu_work(const Graph& graph, GpuPrecision precision, Optimizer optimizer, GpuPhase phase,
                 const GraphShare& share = {});
// The same iteration in one pass, apart: its forward kernels, its backward ones (a checkpointed block's forward again
// included) and its optimizer step's. gpu_work's phases are their unions.
std::array<GpuWork, 3> gpu_work_parts(const Graph& graph, GpuPrecision precision, Optimizer optimizer,
                                      const GraphShare& share = {});

struct GpuTiming {
  double time_ms = 0;      // calibrated forecast per iteration
  double roofline_ms = 0;  // plain roofline: peaks only, no efficiency, no overheads
  int64_t kernels = 0;
  bool per_kernel = false;  // the per-kernel model timed it (fp32); else the calibrated curves
};

// The catalogue columns (gpus.csv) that a forecast at `precision` needs and `gpu` leaves empty, in the
// order time_on_gpu checks them ("fp32_tflops", "bandwidth_gbs", "sm_count", then fp16 / bf16's tensor
// peak); none: it can be forecast. tf32 needs no tf32 peak (without TF32 tensor cores it runs at fp32).
std::vector<std::string> missing_peaks(const hardware::GpuSpec& gpu, GpuPrecision precision);

// Throws InputError when the catalogue lacks a peak the precision needs (naming the GPU and column).
// The per-kernel model's busy time of each kernel of `work` on `gpu` (calibration-independent, so a fit computes
// it once per row), and the iteration's time from it: each kernel at least the calibrated launch cost, plus the
// per-iteration overhead.
struct KernelBusy {
  std::vector<std::pair<double, int64_t>> kernels;  // busy seconds, count
  double roofline_s = 0;
};
KernelBusy kernel_busy(const GpuWork& work, const hardware::GpuSpec& gpu, const GpuKernelModel& model);
GpuTiming time_from_busy(const KernelBusy& busy, Framework framework, const GpuCalibration& calibration);
// Whether the per-kernel model times work at `precision` on `gpu` (fp32, or tf32 where it runs as fp32).
bool times_per_kernel(const hardware::GpuSpec& gpu, GpuPrecision precision);
// The shipped per-kernel model (data/hardware/gpu_kernels), read once per process; null when it is absent.
const GpuKernelModel* shipped_kernel_model();

// One compute-bound kernel's compute seconds by the calibrated curves (time_on_gpu's arithmetic, and the half-precision
// judge's curves column): its FLOPs at the `matrix` peak over the curve's efficiency at its work per SM, plus, on
// tensor cores, the calibration's share of them at the FP32 `vector` peak.
double curve_compute_seconds(double flops, const GpuCalibration::Curve& curve, double matrix, double vector, double sms,
                             bool tensor, const GpuCalibration& calibration);

// With `kernels`, fp32 work (and tf32 on a GPU without TF32 tensor cores) is timed kernel by kernel by the
// per-kernel model; the calibration gives the launch cost and the per-iteration overhead.
// With `half_kernels` too (half_kernels.h), tf32 / amp / bf16 work of a graph without convolutions is timed kernel
// by kernel: its GEMMs, norms and elementwise kernels by the half-precision model at the precision's tensor peak, its
// softmax by the fp32 model.
GpuTiming time_on_gpu(const GpuWork& work, const hardware::GpuSpec& gpu, GpuPrecision precision, Framework framework,
                      const GpuCalibration& calibration, const GpuKernelModel* kernels = nullptr,
                      const GpuKernelModel* half_kernels = nullptr);

// A catalogued GPU's memory in bytes; none when the catalogue has no size for it.
std::optional<int64_t> gpu_memory_bytes(const hardware::GpuSpec& gpu);

struct GpuForecastRequest {
  import::ModelSource model;  // at its batch and input (import/model_source.h)
  Optimizer optimizer = Optimizer::Sgd;
  GpuPrecision precision = GpuPrecision::Fp32;
  // The tensors' precision the memory simulation follows (autocast for fp16 / bf16, Bf16Pure for "bf16-pure", fp32
  // for fp32 and tf32); make_gpu_request sets it from the name given.
  Precision memory_precision = Precision::Fp32;
  Framework framework = Framework::PyTorch;
  GpuPhase phase = GpuPhase::Train;
  // The GPU, resolved where the request is made (forecast/device.h for predict, compare's instances, schedule's
  // cluster): the engine never looks a device name up again.
  hardware::GpuSpec gpu;
  int64_t epoch_samples = 0;                 // > 0: also time per epoch
  bool max_batch = false;                    // also the largest batch that fits in the GPU's memory
  std::vector<std::string> catalogue_files;  // --catalogue
  std::string calibration_file;              // "": the shipped calibration
  int64_t grad_accum = 1;  // train phase: grad_accum forward-backward passes and one optimizer step per iteration
  // Several GPUs (parallel_plan.h): the batch is each data-parallel replica's, cut into the plan's micro-batches.
  ParallelPlan parallel;
};

struct GpuForecast {
  std::string model, graph;         // as requested; the built graph's name
  std::string device, device_name;  // catalogue name, full name
  int64_t batch = 0;
  std::string input;  // without the batch: "3x224x224"
  Optimizer optimizer = Optimizer::Sgd;
  GpuPrecision precision = GpuPrecision::Fp32;
  Framework framework = Framework::PyTorch;
  GpuPhase phase = GpuPhase::Train;
  std::string time_model;                                 // "per-kernel" or "calibrated curves"
  double time_ms = 0, time_ms_low = 0, time_ms_high = 0;  // per iteration, with its 90% interval
  double roofline_ms = 0;                                 // the plain roofline, for comparison
  std::optional<double> epoch_s;
  int64_t epoch_samples = 0, epoch_iterations = 0;
  // What the forecast rests on: "measured" (our own runs on this GPU), "calibrated" (public
  // measurements of this GPU were in the calibration), "specs" (only its catalogue row).
  std::string basis;
  std::string basis_detail;  // one line: which tables, how many rows
  // Memory (gpu_memory.h: simulated caching allocator with fp32 tensors, plus the fitted contexts, workspaces and
  // extra reserve): the forecast as nvidia-smi would show it, its upper bound (what must fit: the forecast plus
  // the measured margin), the GPU's memory.
  std::optional<int64_t> memory_forecast_bytes, required_bytes, device_memory_bytes;
  std::optional<bool> fits;
  std::optional<int64_t> max_batch;        // with request.max_batch (0: batch 1 does not fit)
  std::optional<ParallelTiming> parallel;  // several GPUs: the iteration's parts on the busiest GPU
  std::vector<std::string> notes;
};

// The memory simulation a forecast runs (gpu_memory.h's calibrated CUDA overheads, the request's optimizer and
// memory precision): what `dnncast memory --device GPU` simulates. Throws InputError for a bad calibration file.
memory::MemoryConfig gpu_forecast_memory_config(const GpuForecastRequest& request);

// Throws InputError: a bad model or input, a peak missing. The first reads the calibration
// (request.calibration_file); a caller forecasting many GPUs loads it once and passes it.
GpuForecast forecast_gpu(const GpuForecastRequest& request);
GpuForecast forecast_gpu(const GpuForecastRequest& request, const GpuCalibration& calibration);

}  // namespace dnncast::gpu
