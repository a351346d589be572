// What `dnncast calibrate-gpus` prints: held-out errors by group beside the roofline, and every row.
#pragma once

#include <nlohmann/json.hpp>

#include "gpu/gpu_calibration.h"

namespace dnncast::cli {

// Mean relative errors of held-out forecasts and of the roofline, by the group's key (GPU or model), by
// framework and overall; printed when `print`, returned as calibrate-gpus --json has them.
nlohmann::ordered_json print_held_out(const gpu::CalibrationSet& set, const gpu::HeldOut& held, bool print);
// Every row: measured, the fit on all rows, the plain roofline.
void print_rows(const gpu::CalibrationSet& set, const gpu::GpuCalibration& calibration);

}  // namespace dnncast::cli
