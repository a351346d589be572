// Stored environments as predictors see them: hardware features, labels, slugs, JSON.
#include <cctype>

#include "forecast/predictor.h"
#include "hardware/catalogue.h"
#include "hardware/hardware.h"

namespace dnncast::forecast {

using nlohmann::json;

features::HardwareFeatures hardware_of(const records::EnvironmentRecord& environment) {
  features::HardwareFeatures hardware;
  hardware.cores = environment.cores;
  hardware.memory_bytes = environment.memory_bytes;
  if (!environment.gpu_name.empty()) {
    hardware.gpu = true;
    // The catalogue's peaks (data/hardware/gpus.csv); an unknown value stays 0, unknown.
    if (const hardware::GpuSpec* gpu = hardware::shipped_catalogue().match_driver_name(environment.gpu_name)) {
      hardware.peak_flops_f32 = gpu->fp32_tflops.value_or(0) * 1e12;
      hardware.memory_bandwidth_bytes_s = gpu->bandwidth_gbs.value_or(0) * 1e9;
      if (gpu->memory_gib) hardware.memory_bytes = static_cast<int64_t>(*gpu->memory_gib * double(int64_t{1} << 30));
    }
  }
  // CPU peaks depend on SIMD flags the dataset does not record: unknown (0) rather than guessed.
  // The dispatch ISA where the environment recorded it (Unknown: features::kUnrecordedIsa).
  hardware.isa = hardware::parse_isa(environment.isa);
  return hardware;
}

std::string environment_label(const records::EnvironmentRecord& environment) {
  if (!environment.gpu_name.empty()) return environment.gpu_name;
  std::string model = environment.cpu_model.empty() ? "unknown CPU" : environment.cpu_model;
  return model + " (" + std::to_string(environment.cores) + " CPUs)";
}

std::string environment_slug(const records::EnvironmentRecord& environment) {
  std::string base = environment.gpu_name.empty() ? (environment.cpu_model.empty() ? "cpu" : environment.cpu_model) +
                                                        " " + std::to_string(environment.cores) + "cpu"
                                                  : environment.gpu_name;
  std::string slug;
  for (char c : base) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug;
}

json environment_to_json(const records::EnvironmentRecord& environment) {
  json document = {
      {"hash", environment.hash()}, {"label", environment_label(environment)}, {"slug", environment_slug(environment)}};
  document.update(records::environment_json(environment, false));
  return document;
}

}  // namespace dnncast::forecast
