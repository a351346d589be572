// `dnncast profile`'s summary of a measurement (built with libtorch only).
#pragma once

#ifdef DNNCAST_HAVE_TORCH

#include <string>
#include <vector>

#include "graph/graph.h"
#include "profile/measure.h"

namespace dnncast::cli {

// Relative spread of the repeats' medians: (max - min) / median; 0 below 2 repeats.
double spread(const std::vector<double>& values);
// Status, time per iteration with its spread, normalised time, peak memory, parameters, energy,
// other load, the repeats, and per-layer times when measured.
void print_summary(const std::string& model, const Graph& graph, const profile::TrainConfig& config,
                   const profile::Measurement& m, const std::vector<profile::Measurement>& repeats);

}  // namespace dnncast::cli

#endif
