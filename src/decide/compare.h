// `dnncast compare`: which cloud instance trains a model fastest and which cheapest (issue 19,
// docs/COMPARE.md). One GPU forecast (gpu_forecast.h) per distinct GPU, then one row per instance of
// the catalogue (hardware/catalogue.h): time and cost of the run, whether it fits, and the
// cost-versus-time Pareto front among the rows that fit.
//
// The run: with epoch_samples > 0, `epochs` epochs of ceil(epoch_samples / (batch x gpu_count))
// iterations each; without, kIterationsWithoutEpochs iterations (a unit to compare by, not a run).
// Multi-GPU instances (multi_gpu): `batch` is per GPU and the GPUs train under `sharding` (ddp by default;
// memory/sharding.h): one GPU's memory is the sharded per-GPU peak (what `dnncast memory --gpus N --sharding S`
// gives), and an iteration is the one-GPU forecast's compute plus the step's ring collectives on the instance
// GPU's link (gpu/collectives.h; data/hardware/gpu_links.csv), with no overlap between the two: a model, not a
// measurement. An instance is one node: hsdp shards within it, as fsdp. One-GPU instances are as without multi_gpu.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_forecast.h"
#include "hardware/catalogue.h"
#include "memory/sharding.h"

namespace dnncast::decide {

inline constexpr int64_t kIterationsWithoutEpochs = 1000;

struct CompareRequest {
  // What every GPU's forecast is asked: model, batch (per GPU) and input, optimizer, precision,
  // framework, epoch_samples (0: kIterationsWithoutEpochs iterations), catalogue and calibration
  // files. Its device and max_batch are set per GPU.
  gpu::GpuForecastRequest forecast;
  int64_t epochs = 1;                  // >= 1; more than 1 needs forecast.epoch_samples
  std::vector<std::string> providers;  // empty: every provider of the catalogue
  std::vector<std::string> gpus;       // catalogue names or aliases; empty: every GPU rented
  bool spot = false;                   // spot prices; instances without one are left out
  bool multi_gpu = false;              // also instances with more than one GPU
  std::string sharding;                // with multi_gpu: "ddp", "zero3"... (memory/sharding.h); "": ddp
  // With multi_gpu, in place of sharding: how each multi-GPU instance's GPUs train (gpu/parallel_plan.h): "dp", "tp",
  // "pp", degrees ("tp=2", dp the rest), or "auto": every plan of the instance's GPU count, the fastest that fits.
  // The samples per iteration stay batch x GPUs; a pipeline runs micro-batches of `batch`.
  std::string parallel;
};

struct CompareRow {
  std::string provider, instance_type;  // instance_type "" for gcp (the GPU alone)
  std::string gpu, gpu_name;            // catalogue name, full name
  int64_t gpu_count = 1;
  double price_usd_per_hour = 0;  // on-demand, or spot with request.spot
  // Forecast per iteration with its 90% interval (each GPU runs `batch` samples): compute_ms + collective_ms.
  double time_ms = 0, time_ms_low = 0, time_ms_high = 0;
  double compute_ms = 0;  // one GPU's step (the GPU forecast)
  // Several GPUs: how they share the model ("" on one GPU), the bytes each GPU sends per step in the ring
  // collectives, and their time by the collective model (none when gpu_links.csv lacks the GPU's link: not counted).
  std::string sharding, link;
  int64_t collective_bytes = 0;
  std::optional<double> collective_ms;
  std::optional<int64_t> required_bytes;  // what one GPU must hold (sharded on several)
  std::optional<double> epoch_s;          // with epoch_samples
  int64_t iterations = 0;                 // of the whole run
  double total_hours = 0, total_hours_low = 0, total_hours_high = 0;
  double total_usd = 0, total_usd_low = 0, total_usd_high = 0;
  std::optional<int64_t> gpu_memory_bytes;  // of one GPU, as catalogued
  std::optional<bool> fits;                 // unknown when the GPU's memory is not catalogued
  std::optional<int64_t> max_batch;         // per GPU; 0: batch 1 does not fit
  std::string basis;                        // "measured", "calibrated", "specs" (gpu_forecast.h)
  bool on_pareto_front = false;
};

// An instance selected but not compared: its GPU could not be forecast (a peak the precision needs is
// not catalogued, ...).
struct LeftOutInstance {
  std::string provider, instance_type, gpu;
  std::string reason;  // the forecast's error message
};

struct Comparison {
  std::string model, graph;  // as requested; the built graph's name
  int64_t batch = 0;
  std::string input;
  Optimizer optimizer = Optimizer::Sgd;
  gpu::GpuPrecision precision = gpu::GpuPrecision::Fp32;
  gpu::Framework framework = gpu::Framework::PyTorch;
  int64_t epochs = 1, epoch_samples = 0;
  bool spot = false, multi_gpu = false;
  std::string sharding;                   // of the multi-GPU rows; "" without multi_gpu
  std::vector<CompareRow> rows;           // sorted by total_usd, then total_hours
  std::vector<LeftOutInstance> left_out;  // in catalogue order
  // Every row's GPU is too small (or of unknown memory): what one GPU would need, the largest offered.
  bool fits_nowhere = false;
  std::optional<int64_t> required_bytes, largest_memory_bytes;
  std::vector<std::string> bases;  // the bases the rows use, in the order measured, calibrated, specs
  std::vector<std::string> notes;  // assumptions and what was left out, one line each
};

// Throws InputError: an unknown provider or GPU (naming the known ones), batch below 1, epochs below
// 1 or above 1 without epoch_samples, no instance left by the filters, a model no GPU can forecast.
Comparison compare(const CompareRequest& request);
Comparison compare(const CompareRequest& request, const hardware::Catalogue& catalogue);

// The instances `request` selects from `catalogue` (filters, prices, multi-GPU); notes what was left
// out. Throws InputError as compare() does for the filters.
std::vector<hardware::CloudInstance> select_instances(const CompareRequest& request,
                                                      const hardware::Catalogue& catalogue,
                                                      std::vector<std::string>& notes);

// One GPU of a multi-GPU instance under the request's sharding: its memory, whether that fits the GPU, the
// largest per-GPU batch that does, and the collectives' time at the GPU's link.
struct MultiGpuStep {
  memory::Sharding sharding = memory::Sharding::Ddp;
  std::optional<int64_t> required_bytes;  // memory/sharding.h's per-GPU peak; none when it could not be simulated
  int64_t collective_bytes = 0;           // sent by each GPU per step, every collective together
  std::optional<bool> fits;               // unknown when the GPU's memory is not catalogued
  std::optional<int64_t> max_batch;       // per GPU; 0: batch 1 does not fit
  std::string link;                       // "nvlink3", "pcie4"; "" not catalogued
  double link_gbs = 0;                    // per direction; 0: not catalogued
  std::optional<double> collective_ms;
  // Under a parallel plan (CompareRequest::parallel): the plan ("tp4", "tp2pp2dp2"), the iteration's time by
  // gpu/parallel.h (compute, bubble, exposed collectives, optimizer), its compute part, and the interval's ratios.
  std::string plan;
  std::optional<double> time_ms;
  std::string refused;  // why no plan runs on the instance (its rows are left out with it)
  double compute_ms = 0, low_ratio = 1, high_ratio = 1;
};
using MultiGpuSteps = std::map<std::pair<std::string, int64_t>, MultiGpuStep>;  // (GPU, GPUs) -> step

// The sharding `request` applies to its multi-GPU instances (ddp when not named). Throws InputError: an
// unknown name, a sharding without multi_gpu.
memory::Sharding requested_sharding(const CompareRequest& request);

// The rows of `instances`, given one forecast per GPU name, with totals, the Pareto front and the
// fits-nowhere verdict; the parts of compare() after forecasting. An instance whose GPU has no forecast
// is left out, with the reason `failures` gives for its GPU. An instance of several GPUs takes its memory
// and collectives from `steps` (it is left out when `steps` lacks it).
Comparison assemble_comparison(const CompareRequest& request, const std::vector<hardware::CloudInstance>& instances,
                               const std::vector<gpu::GpuForecast>& forecasts,
                               const std::map<std::string, std::string>& failures = {},
                               const MultiGpuSteps& steps = {});

// Marks on_pareto_front: a row that fits and that no other fitting row beats, i.e. none costs at most
// as much and takes at most as long while being strictly better in one of the two.
void mark_pareto_front(std::vector<CompareRow>& rows);

// The run's iterations on `gpu_count` GPUs (the rule above).
int64_t run_iterations(int64_t batch, int64_t gpu_count, int64_t epochs, int64_t epoch_samples);

}  // namespace dnncast::decide
