// The machine around a measurement: affinity, memory, CPU load, energy counters, fingerprint.
#include <dlfcn.h>
#include <sched.h>
#include <torch/version.h>  // macros only: TORCH_VERSION
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "hardware/fingerprint.h"
#include "profile/internal.h"

#ifndef DNNCAST_BUILD_TYPE
#define DNNCAST_BUILD_TYPE "unknown"
#endif

namespace dnncast::profile::detail {

namespace {

double monotonic_s() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double process_cpu_s() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Summed over this process's threads (/proc/self/task/*/schedstat: nanoseconds on a CPU, then waiting on a run queue
// while runnable): {run, wait} in seconds; {0, 0} where the kernel keeps no scheduler statistics.
std::pair<double, double> own_run_and_wait_s() {
  double run_ns = 0, wait_ns = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream file(task.path() / "schedstat");
    double run = 0, wait = 0;
    if (file >> run >> wait) {
      run_ns += run;
      wait_ns += wait;
    }
  }
  return {1e-9 * run_ns, 1e-9 * wait_ns};
}

int64_t meminfo_field(const std::string& key) {
  std::ifstream file("/proc/meminfo");
  std::string name;
  int64_t value_kb = 0;
  std::string unit;
  while (file >> name >> value_kb) {
    std::getline(file, unit);
    if (name == key + ":") return value_kb * 1024;
  }
  return 0;
}

std::string read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

}  // namespace

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    long count = sysconf(_SC_NPROCESSORS_ONLN);
    for (int cpu = 0; cpu < count; ++cpu) cpus.push_back(cpu);
    return cpus;
  }
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (size_t start = 0; start < cpus.size();) {
    size_t end = start;
    while (end + 1 < cpus.size() && cpus[end + 1] == cpus[end] + 1) ++end;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[start]);
    if (end > start) text += "-" + std::to_string(cpus[end]);
    start = end + 1;
  }
  return text;
}

int64_t mem_available_bytes() { return meminfo_field("MemAvailable"); }
int64_t mem_total_bytes() { return meminfo_field("MemTotal"); }

CpuSample sample_cpu() {
  CpuSample sample;
  std::ifstream file("/proc/stat");
  std::string label;
  file >> label;
  if (label == "cpu") {
    // user nice system idle iowait irq softirq steal (guest time is already inside user/nice)
    double fields[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (double& field : fields) file >> field;
    double busy_ticks = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7];
    sample.machine_busy_s = busy_ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  sample.own_cpu_s = process_cpu_s();
  std::tie(sample.own_run_s, sample.own_wait_s) = own_run_and_wait_s();
  sample.wall_s = monotonic_s();
  return sample;
}

double cpu_wait_share(const CpuSample& before, const CpuSample& after) {
  const double run = after.own_run_s - before.own_run_s, wait = after.own_wait_s - before.own_wait_s;
  return run + wait > 0 ? std::max(0.0, wait) / (run + wait) : 0;
}

double other_busy_cpus(const CpuSample& before, const CpuSample& after) {
  double wall = after.wall_s - before.wall_s;
  if (wall <= 0) return 0;
  double others = (after.machine_busy_s - before.machine_busy_s) - (after.own_cpu_s - before.own_cpu_s);
  // /proc/stat ticks at 100 Hz: short intervals are coarse, never below zero.
  return std::max(0.0, others / wall);
}

double loadavg_1min() {
  std::ifstream file("/proc/loadavg");
  double load = 0;
  file >> load;
  return load;
}

// --- NVML through dlopen -------------------------------------------------------------------------
namespace {

struct Nvml {
  using Device = void*;
  int (*init)() = nullptr;
  int (*handle_by_index)(unsigned, Device*) = nullptr;
  int (*total_energy)(Device, unsigned long long*) = nullptr;  // millijoules since driver load
  int (*name)(Device, char*, unsigned) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;
  Device device = nullptr;
  bool ok = false;
  std::string error;
};

Nvml& nvml() {
  static Nvml lib = [] {
    Nvml loaded;
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      loaded.error = "libnvidia-ml.so.1 not found";
      return loaded;
    }
    loaded.init = reinterpret_cast<int (*)()>(dlsym(handle, "nvmlInit_v2"));
    loaded.handle_by_index =
        reinterpret_cast<int (*)(unsigned, Nvml::Device*)>(dlsym(handle, "nvmlDeviceGetHandleByIndex_v2"));
    loaded.total_energy = reinterpret_cast<int (*)(Nvml::Device, unsigned long long*)>(
        dlsym(handle, "nvmlDeviceGetTotalEnergyConsumption"));
    loaded.name = reinterpret_cast<int (*)(Nvml::Device, char*, unsigned)>(dlsym(handle, "nvmlDeviceGetName"));
    loaded.driver = reinterpret_cast<int (*)(char*, unsigned)>(dlsym(handle, "nvmlSystemGetDriverVersion"));
    if (!loaded.init || !loaded.handle_by_index || loaded.init() != 0 ||
        loaded.handle_by_index(0, &loaded.device) != 0) {
      loaded.error = "NVML did not initialise";
      return loaded;
    }
    loaded.ok = true;
    return loaded;
  }();
  return lib;
}

}  // namespace

void nvml_gpu_info(std::string& name, std::string& driver) {
  Nvml& lib = nvml();
  if (lib.ok) {
    char buffer[256] = {0};
    if (lib.name && lib.name(lib.device, buffer, sizeof(buffer)) == 0) name = buffer;
    char version[128] = {0};
    if (lib.driver && lib.driver(version, sizeof(version)) == 0) driver = version;
  }
  if (driver.empty()) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..."
    std::string line = read_first_line("/proc/driver/nvidia/version");
    std::istringstream words(line);
    std::string word;
    while (words >> word)
      if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos) {
        driver = word;
        break;
      }
  }
}

EnergyMeter::EnergyMeter(Device device) : device_(device) {
  if (device == Device::Cuda) {
    Nvml& lib = nvml();
    unsigned long long millijoules = 0;
    if (!lib.ok) {
      note_ = "no GPU energy: " + lib.error;
    } else if (!lib.total_energy || lib.total_energy(lib.device, &millijoules) != 0) {
      note_ = "no GPU energy: nvmlDeviceGetTotalEnergyConsumption unsupported on this GPU";
    } else {
      available_ = true;
      note_ = "NVML total energy of GPU 0 (the GPU only, not the host)";
      last_raw_ = static_cast<double>(millijoules) * 1e-3;
    }
    return;
  }
  const std::string base = "/sys/class/powercap/intel-rapl:0/";
  std::ifstream file(base + "energy_uj");
  double microjoules = 0;
  if (!(file >> microjoules)) {
    std::ifstream probe(base + "name");
    note_ = probe ? "no CPU energy: " + base + "energy_uj is not readable (root only since Linux 5.10)"
                  : "no CPU energy: no RAPL powercap interface (" + base + " absent, e.g. inside a VM)";
    return;
  }
  available_ = true;
  note_ = "RAPL package 0 (whole socket, other processes included)";
  last_raw_ = microjoules * 1e-6;
  double range_uj = 0;
  std::ifstream range(base + "max_energy_range_uj");
  if (range >> range_uj) wrap_j_ = range_uj * 1e-6;
}

double EnergyMeter::read_j() {
  if (!available_) return 0;
  double raw = last_raw_;
  if (device_ == Device::Cuda) {
    unsigned long long millijoules = 0;
    if (nvml().total_energy(nvml().device, &millijoules) == 0) raw = static_cast<double>(millijoules) * 1e-3;
  } else {
    std::ifstream file("/sys/class/powercap/intel-rapl:0/energy_uj");
    double microjoules = 0;
    if (file >> microjoules) raw = microjoules * 1e-6;
  }
  if (raw < last_raw_ && wrap_j_ > 0) offset_j_ += wrap_j_;
  last_raw_ = raw;
  return raw + offset_j_;
}

std::string build_type() { return DNNCAST_BUILD_TYPE; }
std::string torch_version() { return TORCH_VERSION; }

}  // namespace dnncast::profile::detail

namespace dnncast::profile {

Environment detect_environment(const TrainConfig& config) {
  Environment env;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) env.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  env.cores = sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<int> cpus = detail::allowed_cpus();
  env.threads = config.threads > 0 ? config.threads : static_cast<int64_t>(cpus.size());
  if (static_cast<int64_t>(cpus.size()) > env.threads) cpus.resize(static_cast<size_t>(env.threads));
  env.cpus = detail::cpu_list_text(cpus);
  env.memory_bytes = detail::mem_total_bytes();
  if (config.device == dnncast::Device::Cuda) detail::nvml_gpu_info(env.gpu_name, env.gpu_driver);
  env.torch_version = detail::torch_version();
  env.build_type = detail::build_type();
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) env.host = host;
  records::set_cpu_fingerprint(env, hardware::host_cpu_fingerprint());
  return env;
}

}  // namespace dnncast::profile
