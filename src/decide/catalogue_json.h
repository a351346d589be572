// The catalogue's answers as the CLI's --json prints them: `dnncast compare --json` and
// `dnncast devices [--instances] --json`, for the CLI and `dnncast serve` alike. Unknown values are null.
#pragma once

#include <nlohmann/json.hpp>

#include "decide/compare.h"
#include "hardware/catalogue.h"

namespace dnncast::decide {

// Every field of the comparison.
nlohmann::ordered_json to_json(const Comparison& comparison);
// One GPU of the catalogue with its sources; one cloud instance with its prices.
nlohmann::ordered_json to_json(const hardware::GpuSpec& gpu);
nlohmann::ordered_json to_json(const hardware::CloudInstance& instance);
// `devices --json`: {"files": [...], "gpus": [...]}, or "instances" in place of "gpus".
nlohmann::ordered_json devices_json(const hardware::Catalogue& catalogue, bool instances);

}  // namespace dnncast::decide
