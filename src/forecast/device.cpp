#include "forecast/device.h"

#include "core/error.h"
#include "core/text.h"

namespace dnncast::forecast {

ForecastDevice resolve_predict_device(const std::string& typed, const std::string& predictor_dir,
                                      const hardware::Catalogue& catalogue, const std::string& option) {
  check_printable_name(option, typed);
  ForecastDevice device;
  device.typed = typed;
  if (typed.empty() || typed == "cpu") return device;
  device.kind = ForecastDevice::Kind::PredictorSet;
  if (const hardware::GpuSpec* gpu = catalogue.find(typed)) {
    device.gpu = *gpu;  // with a predictor folder, the set measured on this GPU answers (its driver name matched)
    if (predictor_dir.empty()) device.kind = ForecastDevice::Kind::CatalogueGpu;
  }
  return device;
}

ForecastDevice resolve_inspect_device(const std::string& typed, const std::vector<std::string>& catalogue_files) {
  ForecastDevice device;
  device.typed = typed;
  if (typed.empty()) return device;
  check_printable_name("device", typed);
  std::optional<hardware::Catalogue> loaded;
  if (!catalogue_files.empty()) loaded = hardware::Catalogue::load(catalogue_files);
  device.kind = ForecastDevice::Kind::CatalogueGpu;
  device.gpu = (loaded ? *loaded : hardware::shipped_catalogue()).gpu(typed);
  return device;
}

ForecastDevice resolve_memory_device(const std::string& typed, const std::string& option) {
  check_printable_name(option, typed);
  ForecastDevice device;
  device.typed = typed;
  if (typed == "cpu") return device;
  if (typed == "cuda") {
    device.kind = ForecastDevice::Kind::Cuda;
    return device;
  }
  device.kind = ForecastDevice::Kind::CatalogueGpu;
  try {
    device.gpu =
        hardware::shipped_catalogue().gpu(typed);  // an unknown name throws, naming the closest catalogued GPUs
  } catch (const InputError& error) {
    throw InputError(option + " " + quote(typed) + ": expected cpu, cuda or a GPU of `dnncast devices`; " +
                     error.what());
  }
  return device;
}

}  // namespace dnncast::forecast
