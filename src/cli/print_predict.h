// What `dnncast predict` prints without --json: a predictor set's forecast, or the GPU time model's.
#pragma once

#include "forecast/predict.h"

namespace dnncast::cli {

// Notes on stderr, then the forecast's lines on stdout.
void print_forecast(const forecast::Forecast& result);
void print_gpu_forecast(const gpu::GpuForecast& result);

}  // namespace dnncast::cli
