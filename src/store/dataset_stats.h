// `dnncast dataset stats`: what a dataset holds (counts by environment, family, status, plan;
// the range of every configuration option; the noise floor between repeats).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/store.h"

namespace dnncast::store {

nlohmann::json dataset_stats(Store& store);

// The noise floor's per-run errors, for `dataset stats` and `dnncast evaluate` alike: every repeat
// x of a configuration measured k >= 2 times against the mean m of the other k - 1 repeats,
// |x - m| / x, scaled by sqrt((k-1)/k) since x - m has k/(k-1) times the variance of x - mean.
// The mean of these errors estimates the error a forecast that knew each configuration's true
// mean would make against single measurements (for Gaussian noise exactly), whatever the repeat
// count; unscaled, a configuration measured twice would count its noise sqrt(2) times.
// Configurations with one repeat, and non-positive values, are skipped.
std::vector<double> noise_floor_errors(const std::vector<std::vector<double>>& repeats);
// The same as readable text (tables), for a terminal.
std::string format_stats(const nlohmann::json& stats);

}  // namespace dnncast::store
