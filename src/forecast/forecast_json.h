// The forecast API's results as the CLI's --json prints them (`predict`, `memory`, `inspect`):
// the fields and their values are part of the CLI's interface (tests/cli/forecast_fixture).
#pragma once

#include <nlohmann/json.hpp>

#include "forecast/forecast.h"
#include "gpu/gpu_forecast.h"

namespace dnncast::forecast {

nlohmann::json to_json(const Forecast& forecast);
// Without "measured" (`memory --measure` adds it: a real run is the CLI's, not the forecast's).
nlohmann::json to_json(const MemoryForecast& forecast);
nlohmann::json to_json(const Inspection& inspection);
nlohmann::json to_json(const memory::MemoryBreakdown& breakdown);
// One GPU's memory under a multi-GPU plan, and each collective's bytes and time at the link's peak
// (`link_gbs` per direction; 0: not timed).
nlohmann::json to_json(const memory::ShardedMemory& sharded, const std::string& link, double link_gbs);
// `predict --device GPU` (gpu_forecast.h): the same time fields as a Forecast, plus basis and roofline,
// in reading order: what was forecast (model, device, configuration), its time, its memory, what the
// forecast rests on, notes.
nlohmann::ordered_json to_json(const gpu::GpuForecast& forecast);

}  // namespace dnncast::forecast
