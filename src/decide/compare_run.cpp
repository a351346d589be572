// `dnncast compare` (compare.h): one GPU forecast per distinct GPU of the selected instances, then
// the rows (compare.cpp). Apart from compare.cpp so that the row logic links without the forecaster.
#include <algorithm>
#include <map>
#include <set>

#include "decide/compare.h"
#include "core/error.h"

namespace dnncast::apps {

Comparison compare(const CompareRequest& request) {
  return compare(request, hardware::Catalogue::load(request.forecast.catalogue_files));
}

Comparison compare(const CompareRequest& request, const hardware::Catalogue& catalogue) {
  if (request.forecast.spec.batch < 1)
    throw InputError("--batch " + std::to_string(request.forecast.spec.batch) + ": must be at least 1");
  if (request.epochs < 1) throw InputError("--epochs " + std::to_string(request.epochs) + ": must be at least 1");
  if (request.epochs > 1 && request.forecast.epoch_samples == 0)
    throw InputError("--epochs " + std::to_string(request.epochs) +
                     " needs --epoch-samples (the samples of one epoch)");
  if (request.forecast.epoch_samples < 0)
    throw InputError("--epoch-samples " + std::to_string(request.forecast.epoch_samples) + ": must be at least 1");
  std::vector<std::string> notes;
  const std::vector<hardware::CloudInstance> instances = select_instances(request, catalogue, notes);
  // Read once for all the GPUs (a bad file is the request's error, the same on every GPU).
  const GpuCalibration calibration = load_gpu_calibration(request.forecast.calibration_file);

  std::vector<GpuForecast> forecasts;
  std::map<std::string, std::string> failures;  // GPU -> the forecast's error
  std::optional<InputError> first_failure;
  std::set<std::string> done;
  for (const hardware::CloudInstance& instance : instances) {
    if (!done.insert(instance.gpu).second) continue;
    GpuForecastRequest one = request.forecast;
    one.device = instance.gpu;
    one.max_batch = true;
    try {
      forecasts.push_back(forecast_gpu(one, catalogue, calibration));
    } catch (const InputError& error) {
      if (!first_failure) first_failure = error;
      failures[instance.gpu] = error.what();
    }
  }
  // The same error on every GPU is the model's or the request's: report it as it is.
  if (forecasts.empty()) throw *first_failure;
  Comparison comparison = assemble_comparison(request, instances, forecasts, failures);
  for (const auto& failure : failures) {
    const std::string& gpu = failure.first;  // a named copy: C++17 lambdas cannot capture structured bindings
    const auto count = std::count_if(comparison.left_out.begin(), comparison.left_out.end(),
                                     [&gpu](const LeftOutInstance& left) { return left.gpu == gpu; });
    notes.push_back("left out " + std::to_string(count) + " instance" + (count == 1 ? "" : "s") + " of " + gpu +
                    ", not forecast: " + failure.second);
  }
  comparison.notes.insert(comparison.notes.begin(), notes.begin(), notes.end());
  return comparison;
}

}  // namespace dnncast::apps
