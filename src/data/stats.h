// `dnncast dataset stats`: what a dataset holds (counts by environment, family, status, plan;
// the range of every configuration option; the noise floor between repeats).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "data/store.h"

namespace dnncast::data {

nlohmann::json dataset_stats(Store& store);
// The same as readable text (tables), for a terminal.
std::string format_stats(const nlohmann::json& stats);

}  // namespace dnncast::data
