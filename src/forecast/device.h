// What a forecast runs on (issue 33: one device value), resolved once from what the user typed (`--device`, the
// field "device" of `serve`, the keyword device= of Python), the same way for predict, memory, compare, schedule,
// serve and Python: this host's CPU, a CPU (or measured GPU) environment of a predictor set, or a GPU of the
// catalogue that nobody profiled (the GPU time model, gpu/gpu_forecast.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hardware/catalogue.h"

namespace dnncast::forecast {

struct ForecastDevice {
  enum class Kind {
    ThisHost,      // "" or "cpu": this host's CPU (its predictor set, else the nearest CPU set)
    PredictorSet,  // a predictor set's folder, environment or measured GPU (data/predictors/), or --predictor DIR
    CatalogueGpu,  // a GPU of the catalogue (`dnncast devices`): the GPU time model and the CUDA allocator model
    Cuda,          // memory only: "cuda", a CUDA device of no given size (the allocator model alone)
  };
  Kind kind = Kind::ThisHost;
  std::string typed;  // as given ("" for this host)
  // CatalogueGpu: its catalogue row; PredictorSet: the catalogue's row of the name, if it names a GPU (a set measured
  // on it is found by its driver-reported name)
  std::optional<hardware::GpuSpec> gpu;
  bool catalogue_gpu() const { return kind == Kind::CatalogueGpu; }
};

// `predict`'s device: a catalogued GPU takes the GPU time model unless a predictor folder is given (a set
// measured on that GPU then answers); every other name is a predictor set's, checked when the set is chosen
// (an unknown one: UnknownDevice, which predict() extends with the closest catalogued GPUs).
ForecastDevice resolve_predict_device(const std::string& typed, const std::string& predictor_dir,
                                      const hardware::Catalogue& catalogue, const std::string& option);
// `memory`'s device: cpu, cuda, or a catalogued GPU (the CUDA allocator model, the GPU's CUDA context and its
// memory size as the limit `fits` is judged against; the shipped catalogue, read only for a name other than cpu
// and cuda). InputError naming the option (`option`) otherwise.
ForecastDevice resolve_memory_device(const std::string& typed, const std::string& option);
// `inspect`'s device: "" (no layer times) or a GPU of the catalogue (the shipped one and `catalogue_files`).
// InputError: an unknown GPU, naming the closest catalogued ones.
ForecastDevice resolve_inspect_device(const std::string& typed, const std::vector<std::string>& catalogue_files);

}  // namespace dnncast::forecast
