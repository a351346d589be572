// Features of each timed unit of a training iteration, for the layer-wise time model (docs/MEASUREMENT.md
// "Layer benchmarks"): one row per node (its forward and backward, as
// `dnncast profile --per-layer` times them, alone and inside real iterations) and one row for the
// rest of an iteration (optimizer step + zero_grad + loss).
// A learner fitted on per-layer timings (dataset table layer_times) forecasts each row; their sum
// is the layer-wise estimate of an iteration (forecast/layer_model.h).
//
// Like GraphFeatures, the graph part is computed once at one sample (LayerSites) and scaled per
// configuration: a row is a handful of multiplies, plus the convolution's implementation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "features/featurizer.h"
#include "graph/graph.h"

namespace dnncast::features {

// One node of a graph at one sample.
struct LayerSite {
  std::string node;                     // node name (matches layer_times.node)
  std::string op;                       // op name
  int kind = 0;                         // kind_index() of the node
  double flops_fwd = 0, flops_bwd = 0;  // per sample
  double bytes_in = 0, bytes_out = 0;   // activations read and written, per sample
  double params = 0;
  double weight_bytes = 0;
  int inputs = 0;
  // Matrix-like ops (Conv2d, Linear): channels in/out (features for Linear), kernel area, stride,
  // groups, output and input positions per sample (H x W; tokens for Linear).
  double in_channels = 0, out_channels = 0, kernel = 0, stride = 0, groups = 0, out_positions = 0, in_positions = 0;
  bool conv = false;  // a Conv2d with a ConvSite (implementation depends on the configuration)
  ConvSite conv_site;
};

struct LayerSites {
  std::vector<LayerSite> nodes;  // graph order, Input nodes left out (they are not timed)
  double params = 0;             // trainable parameters of the whole graph (the optimizer row)
};

// From a shape-inferred graph with an Input node (InputError otherwise); per-sample quantities are
// the graph's at its batch divided by the batch.
LayerSites layer_sites(const Graph& graph);

// Names of the columns of a layer row, in order (versioned with kFeatureVersion).
const std::vector<std::string>& layer_feature_names();
size_t layer_feature_count();

// Writes (nodes + 1) rows of layer_feature_count() floats, row-major, into `rows` (resized): one per
// node in order, then the optimizer row. Throws InputError on a batch or thread count < 1.
// isa: what oneDNN dispatches to on the CPU (Unknown: kUnrecordedIsa, as for the per-layer data so far).
void layer_rows(const LayerSites& sites, const TrainingConfig& config, bool gpu, std::vector<float>& rows,
                hardware::CpuIsa isa = hardware::CpuIsa::Unknown);

}  // namespace dnncast::features
