// Forecasts past the largest batch a predictor was trained on. A learned model has seen nothing
// bigger there: trees are flat in their features beyond the last split, and the residual over the
// roofline drifts with whatever else grows with the batch, so nothing in the model keeps the time
// from falling, or the time per sample from rising, past the trained batches. Measured time per
// sample does rise with the batch in places (12% of the adjacent measured pairs of the shipped data),
// but past the trained batches no measurement says where. There the forecast is the model's own,
// held within [t(B), t(B) b / B] of the forecast t(B) at the largest trained batch B: time never
// falls, time per sample never rises (docs/RESULTS.md "Forecasts past the trained batches").
//
// Continuing t(B) with the slope between B/2 and B instead was measured worse on the batch split
// (43.6% MRE, against 36.7% for the model's own extrapolation and 33.5% for the bound): below batch
// 16 libtorch's slow path for 1x1 convolutions makes that slope meaningless.
//
// Where the predictor set has a layer-wise model (time/layers/, `dnncast train --layer-bench`), fitted
// on single layers timed alone up to batch 256, that model says where: the forecast past B is
// t(B) L(b) / L(B), L the sum of the layer-wise model's forecasts for every layer of the network at
// that batch, held within the same bounds (`evaluate --model scaled` scores it; docs/RESULTS.md).
#pragma once

#include <cstdint>
#include <optional>

#include "features/featurizer.h"
#include "forecast/predictor.h"

namespace dnncast::forecast {

// The largest trained batch when `batch` lies past it and the range spans two batches; nullopt
// otherwise (a forecast inside the range, or below it, is the model's own, unbounded).
std::optional<int64_t> bound_from(int64_t batch, int64_t trained_min, int64_t trained_max);

// The model's own forecast at `batch` (`own`) held within [at_high, at_high * batch / high].
double bounded_past_range(int64_t high, double at_high, double own, int64_t batch);

// Past the trained batches with a layer-wise model: at_high * layer_ratio (layer_ratio = L(batch) /
// L(high)) where that ratio lies within [1, batch / high]; outside it (time falling, or time per
// sample rising, by the layer-wise model's sum) that model extrapolates its own layer data badly for
// this network, and the forecast is the model's own, bounded as above.
double carried_past_range(int64_t high, double at_high, double own, double layer_ratio, int64_t batch);
// Whether carried_past_range uses `layer_ratio`: finite and within [1, batch / high].
bool layer_ratio_plausible(double layer_ratio, int64_t high, int64_t batch);

// The layer-wise model's view of one network, for carrying a forecast past the trained batches.
struct LayerScaling {
  const LayerModel* model = nullptr;
  const features::LayerSites* sites = nullptr;
  bool gpu = false;
  double ratio = 0;   // out: L(b) / L(B) past the trained batches, else 0
  bool used = false;  // out: that ratio carried the forecast (carried_past_range)
};

// A time predictor's forecast of one configuration as `predict` makes it, from its own forecast
// `own` there: that inside and below the trained batches (manifest training.batch_min, batch_max);
// past them, bounded as above (the forecast at the largest trained batch made here), its interval
// scaled alike; with `layers` (a model and the network's sites), carried_past_range.
// `bounded_at` (optional): the largest trained batch when past it, else 0.
Estimate time_forecast(const Predictor& time, const Estimate& own, const features::GraphFeatures& graph,
                       const features::TrainingConfig& config, const features::HardwareFeatures& hardware,
                       int64_t* bounded_at = nullptr, LayerScaling* layers = nullptr);

}  // namespace dnncast::forecast
