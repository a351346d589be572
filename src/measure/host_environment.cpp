#include "measure/host_environment.h"

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::measure {

namespace {

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// The value of the first "key : value" line of a /proc file.
std::string proc_field(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    size_t colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

[[maybe_unused]] std::string first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return trim(line);
}

}  // namespace

std::string torch_version() {
#ifdef DNNCAST_HAVE_TORCH
  profile::TrainConfig config;
  return profile::detect_environment(config).torch_version;
#else
  return "";
#endif
}

records::EnvironmentRecord detect_environment(Device device) {
  records::EnvironmentRecord environment;
  environment.cpu_model = proc_field("/proc/cpuinfo", "model name");
  if (environment.cpu_model.empty()) environment.cpu_model = proc_field("/proc/cpuinfo", "Model");  // ARM boards
  if (environment.cpu_model.empty()) environment.cpu_model = "unknown";
  environment.cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  environment.threads = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : environment.cores;
  environment.memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
#ifdef DNNCAST_HAVE_TORCH
  // The profiler's fingerprint (GPU from the CUDA runtime, libtorch and build type of this build);
  // `threads` stays the CPUs this process may use, not one measurement's thread count.
  profile::TrainConfig config;
  config.device = device;
  profile::Environment measured = profile::detect_environment(config);
  // The profiler's record, with this process's view of cores, threads and memory (the hash as it always was).
  const records::EnvironmentRecord own = environment;
  environment = measured;
  environment.cores = own.cores;
  environment.threads = own.threads;
  environment.memory_bytes = own.memory_bytes;
  if (environment.cpu_model.empty()) environment.cpu_model = own.cpu_model;
  char host[256] = {};
  if (environment.host.empty() && gethostname(host, sizeof host - 1) == 0) environment.host = host;
#else
  if (device == Device::Cuda) {
    // The NVIDIA driver publishes its version and each GPU's model under /proc/driver/nvidia.
    std::string version = first_line("/proc/driver/nvidia/version");
    size_t kernel_module = version.find("Kernel Module");
    if (kernel_module != std::string::npos) {
      std::istringstream words(version.substr(kernel_module + 13));
      words >> environment.gpu_driver;
    }
    std::error_code error;
    for (const auto& gpu : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", error)) {
      std::string model = proc_field(gpu.path().string() + "/information", "Model");
      if (!model.empty()) {
        environment.gpu_name = model;
        break;
      }
    }
    if (environment.gpu_name.empty()) environment.gpu_name = "unknown";
  }
#ifdef NDEBUG
  environment.build_type = "release";
#else
  environment.build_type = "debug";
#endif
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) environment.host = host;
  records::set_cpu_fingerprint(environment, hardware::host_cpu_fingerprint());
#endif
  return environment;
}

}  // namespace dnncast::measure
