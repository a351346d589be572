// `predict` for every front end (issue 33): the CLI, `serve` and Python hand what the user gave to predict(),
// which resolves the device once (forecast/device.h) and answers from a predictor set (forecast()) or, for a
// catalogued GPU, from the GPU time model (gpu/gpu_forecast.h); prediction_json() is the one --json text all
// three print or send, and prediction_note() the line the CLI writes on stderr and Python warns with.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "forecast/device.h"
#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"

namespace dnncast::forecast {

struct PredictOptions {
  ForecastOptions forecast;           // optimizer, precision, threads, device, epoch samples, predictor, host ISA
  std::string framework = "pytorch";  // a catalogued GPU only: pytorch | tensorflow
  std::string phase = "train";        // a catalogued GPU only: train | forward-backward | inference
  bool max_batch = false;             // a catalogued GPU only: also the largest batch that fits its memory
  int64_t epoch_tokens = 0;           // > 0: the epoch in tokens, as ceil(tokens / seq) samples (sequence models)
  std::string calibration_file;       // a catalogued GPU only: "" = the shipped calibration
  std::vector<std::string> catalogue_files;  // extra catalogue files (docs/DEVICES.md)
  // A catalogued GPU only: several GPUs (gpu/parallel_plan.h): "dp", "tp", "pp" or degrees "tp=2,pp=2".
  int64_t gpus = 1, micro_batches = 1, gpus_per_node = 8;
  std::string parallel;
};

struct Prediction {
  ForecastDevice device;
  std::optional<Forecast> cpu;          // from a predictor set
  std::optional<gpu::GpuForecast> gpu;  // from the GPU time model
};

// Throws InputError: a bad model, option or device (an unknown one names the known predictor sets and the
// closest catalogued GPUs), a GPU-only option without a catalogued GPU.
Prediction predict(const import::ModelSource& model, const PredictOptions& options, OptionStyle style);

// The GPU time model's request from the options as a user gives them (`predict --device GPU`, `compare`, serve,
// Python): optimizer, precision, framework, epoch samples and catalogue files parsed and named as `style` spells
// them; the device, max_batch and the calibration as given.
gpu::GpuForecastRequest make_gpu_request(const import::ModelSource& model, const PredictOptions& options,
                                         OptionStyle style);

// The answer as `predict --json` prints it (two-space indent, a final newline; bytes that are not UTF-8 replaced).
std::string prediction_json(const Prediction& prediction);
// "" or the one line said beside any answer: the predictor was not trained on this host's CPU.
std::string prediction_note(const Prediction& prediction);

}  // namespace dnncast::forecast
