#include "forecast/extrapolation.h"

#include <algorithm>
#include <cmath>

namespace dnncast::forecast {

std::optional<int64_t> bound_from(int64_t batch, int64_t trained_min, int64_t trained_max) {
  if (batch <= trained_max || trained_max <= trained_min || trained_min < 1) return std::nullopt;
  return trained_max;
}

double bounded_past_range(int64_t high, double at_high, double own, int64_t batch) {
  const double proportional = at_high * static_cast<double>(batch) / static_cast<double>(high);
  return std::clamp(own, std::min(at_high, proportional), std::max(at_high, proportional));
}

bool layer_ratio_plausible(double layer_ratio, int64_t high, int64_t batch) {
  return std::isfinite(layer_ratio) && layer_ratio >= 1 &&
         layer_ratio <= static_cast<double>(batch) / static_cast<double>(high);
}

double carried_past_range(int64_t high, double at_high, double own, double layer_ratio, int64_t batch) {
  return bounded_past_range(high, at_high,
                            layer_ratio_plausible(layer_ratio, high, batch) ? at_high * layer_ratio : own, batch);
}

Estimate time_forecast(const Predictor& time, const Estimate& own, const features::GraphFeatures& graph,
                       const features::TrainingConfig& config, const features::HardwareFeatures& hardware,
                       int64_t* bounded_at, LayerScaling* layers) {
  const nlohmann::json& training = time.manifest().training;
  std::optional<int64_t> high;
  if (training.contains("batch_max") && training.contains("batch_min"))
    high = bound_from(config.batch, training["batch_min"].get<int64_t>(), training["batch_max"].get<int64_t>());
  if (bounded_at) *bounded_at = high ? *high : 0;
  if (!high) return own;
  features::TrainingConfig at = config;
  at.batch = *high;
  const Estimate at_high = time.predict_one(features::featurize(graph, at, hardware));
  double ratio = 0;
  if (layers != nullptr && layers->model != nullptr && layers->sites != nullptr) {
    const double at_b = layers->model->iteration_ms(*layers->sites, config, layers->gpu);
    const double at_b_high = layers->model->iteration_ms(*layers->sites, at, layers->gpu);
    if (at_b > 0 && at_b_high > 0) ratio = at_b / at_b_high;
    layers->ratio = ratio;
    layers->used = layer_ratio_plausible(ratio, *high, config.batch);
  }
  Estimate out;
  out.value = carried_past_range(*high, at_high.value, own.value, ratio, config.batch);
  const double scale = own.value > 0 ? out.value / own.value : 1.0;
  out.low = own.low * scale;
  out.high = own.high * scale;
  return out;
}

}  // namespace dnncast::forecast
