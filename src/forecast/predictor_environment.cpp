// Stored environments as predictors see them: hardware features, labels, slugs, JSON.
#include "forecast/predictor.h"

#include <cctype>

#include "hardware/catalogue.h"
#include "hardware/hardware.h"

namespace dnncast::apps {

using nlohmann::json;

features::HardwareFeatures hardware_of(const data::EnvironmentRecord& environment) {
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

std::string environment_label(const data::EnvironmentRecord& environment) {
  if (!environment.gpu_name.empty()) return environment.gpu_name;
  std::string model = environment.cpu_model.empty() ? "unknown CPU" : environment.cpu_model;
  return model + " (" + std::to_string(environment.cores) + " CPUs)";
}

std::string environment_slug(const data::EnvironmentRecord& environment) {
  std::string base = environment.gpu_name.empty()
                         ? (environment.cpu_model.empty() ? "cpu" : environment.cpu_model) + " " +
                               std::to_string(environment.cores) + "cpu"
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

json environment_to_json(const data::EnvironmentRecord& environment) {
  return {{"hash", environment.hash()},
          {"label", environment_label(environment)},
          {"slug", environment_slug(environment)},
          {"cpu_model", environment.cpu_model},
          {"cores", environment.cores},
          {"threads", environment.threads},
          {"memory_bytes", environment.memory_bytes},
          {"gpu_name", environment.gpu_name},
          {"gpu_driver", environment.gpu_driver},
          {"torch_version", environment.torch_version},
          {"build_type", environment.build_type},
          {"cpu_vendor", environment.cpu_vendor},
          {"cpu_family", environment.cpu_family},
          {"cpu_model_number", environment.cpu_model_number},
          {"cpu_stepping", environment.cpu_stepping},
          {"isa", environment.isa},
          {"aten_capability", environment.aten_capability},
          {"isa_cap", environment.isa_cap},
          {"l2_bytes", environment.l2_bytes},
          {"l3_bytes", environment.l3_bytes},
          {"base_mhz", environment.base_mhz}};
}

data::EnvironmentRecord environment_from_json(const json& document) {
  data::EnvironmentRecord environment;
  environment.cpu_model = document.at("cpu_model").get<std::string>();
  environment.cores = document.at("cores").get<int64_t>();
  environment.threads = document.at("threads").get<int64_t>();
  environment.memory_bytes = document.at("memory_bytes").get<int64_t>();
  environment.gpu_name = document.at("gpu_name").get<std::string>();
  environment.gpu_driver = document.value("gpu_driver", "");
  environment.torch_version = document.value("torch_version", "");
  environment.build_type = document.value("build_type", "");
  // The CPU fingerprint: absent from manifests written before it (not recorded).
  environment.cpu_vendor = document.value("cpu_vendor", "");
  environment.cpu_family = document.value("cpu_family", int64_t{0});
  environment.cpu_model_number = document.value("cpu_model_number", int64_t{0});
  environment.cpu_stepping = document.value("cpu_stepping", int64_t{0});
  environment.isa = document.value("isa", "");
  environment.aten_capability = document.value("aten_capability", "");
  environment.isa_cap = document.value("isa_cap", "");
  environment.l2_bytes = document.value("l2_bytes", int64_t{0});
  environment.l3_bytes = document.value("l3_bytes", int64_t{0});
  environment.base_mhz = document.value("base_mhz", 0.0);
  return environment;
}

}  // namespace dnncast::apps
