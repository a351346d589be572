#include "hardware/hardware.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"  // InputError only (header-only): hardware links no other module

namespace dnncast::hardware {

namespace {

constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;
constexpr int64_t kGiB = int64_t{1} << 30;

// Rows of ../shared/data/public/gpu_benchmarks/gpu_specs.csv (source letter in brackets) or the
// vendor datasheet named. FP32 peaks without tensor cores.
std::vector<DeviceSpec> make_catalogue() {
  const char* specs_csv = "gpu_specs.csv";
  std::vector<DeviceSpec> devices{
      {"a100-40gb", "gpu", "a100 40gb", 19.492 * kTera, 1555 * kGiga, 40 * kGiB, 108,
       std::string(specs_csv) + " [G] NVIDIA A100-SXM4-40GB (NeuSight device_config)", "2024-05"},
      {"a100-80gb-pcie", "gpu", "a100 80gb pcie", 19.492 * kTera, 1935 * kGiga, 80 * kGiB, 108,
       std::string(specs_csv) + " [G] NVIDIA A100 80GB PCIe (NeuSight device_config)", "2024-05"},
      {"h100-80gb", "gpu", "h100 80gb", 66.908 * kTera, 3430 * kGiga, 80 * kGiB, 132,
       std::string(specs_csv) + " [G] NVIDIA H100 80GB HBM3 (NeuSight device_config)", "2024-05"},
      {"h200", "gpu", "h200", 67 * kTera, 4800 * kGiga, 141 * kGiB, 132,
       "NVIDIA H200 Tensor Core GPU datasheet (SXM: FP32 67 TFLOPS, 4.8 TB/s, 141 GB)", "2024-11"},
      {"l4", "gpu", "l4", 31.334 * kTera, 300 * kGiga, 24 * kGiB, 60,
       std::string(specs_csv) + " [G] NVIDIA L4 (NeuSight device_config)", "2024-05"},
      {"p100", "gpu", "p100", 9.519 * kTera, 732 * kGiga, 16 * kGiB, 56,
       std::string(specs_csv) + " [G] Tesla P100-PCIE-16GB (NeuSight device_config)", "2024-05"},
      {"rtx3090", "gpu", "rtx 3090", 35.58 * kTera, 936.1 * kGiga, 24 * kGiB, 82,
       std::string(specs_csv) + " [F] GeForce RTX 3090 (bandwidth, SMs); FP32 from NVIDIA GA102 whitepaper",
       "2024-05"},
      {"t4", "gpu", "t4", 8.141 * kTera, 320 * kGiga, 16 * kGiB, 40,
       std::string(specs_csv) + " [G] Tesla T4 (NeuSight device_config), memory [D]", "2024-05"},
      {"v100-16gb", "gpu", "v100 16gb", 14.028 * kTera, 900 * kGiga, 16 * kGiB, 80,
       std::string(specs_csv) + " [D] V100 (Habitat devices.csv)", "2024-05"},
      {"v100-32gb", "gpu", "v100 32gb", 14.029 * kTera, 900 * kGiga, 32 * kGiB, 80,
       std::string(specs_csv) + " [G] Tesla V100-PCIE-32GB (NeuSight device_config)", "2024-05"},
  };
  std::sort(devices.begin(), devices.end(),
            [](const DeviceSpec& a, const DeviceSpec& b) { return a.name < b.name; });
  return devices;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::vector<std::string> tokens(const std::string& text) {
  std::vector<std::string> result;
  std::string current;
  for (char c : lower(text)) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      current += c;
    } else if (!current.empty()) {
      result.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) result.push_back(current);
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string value_after_colon(const std::string& line) {
  size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  size_t begin = line.find_first_not_of(" \t", colon + 1);
  return begin == std::string::npos ? "" : line.substr(begin);
}

}  // namespace

const std::vector<DeviceSpec>& device_catalogue() {
  static const std::vector<DeviceSpec> devices = make_catalogue();
  return devices;
}

const DeviceSpec& find_device(const std::string& name) {
  std::string key = lower(name);
  for (const DeviceSpec& device : device_catalogue())
    if (device.name == key) return device;
  std::string known;
  for (const DeviceSpec& device : device_catalogue()) known += (known.empty() ? "" : ", ") + device.name;
  throw InputError("unknown device " + quote(name) + " (known devices: " + known + ")");
}

const DeviceSpec* match_gpu_name(const std::string& gpu_name) {
  std::vector<std::string> name_tokens = tokens(gpu_name);
  const DeviceSpec* best = nullptr;
  size_t best_tokens = 0;
  for (const DeviceSpec& device : device_catalogue()) {
    std::vector<std::string> wanted = tokens(device.match);
    bool all = std::all_of(wanted.begin(), wanted.end(), [&](const std::string& token) {
      return std::find(name_tokens.begin(), name_tokens.end(), token) != name_tokens.end();
    });
    if (all && wanted.size() > best_tokens) {
      best = &device;
      best_tokens = wanted.size();
    }
  }
  return best;
}

int flops_per_cycle_from_flags(const std::string& flags_line) {
  std::vector<std::string> flags = tokens(flags_line);
  auto has = [&](const char* flag) { return std::find(flags.begin(), flags.end(), flag) != flags.end(); };
  int lanes = has("avx512f") ? 16 : (has("avx") || has("avx2")) ? 8 : has("sse2") ? 4 : 1;
  // One FMA unit counted: an FMA is 2 FLOPs per lane. Without FMA, one add or mul per lane.
  return lanes * (has("fma") ? 2 : 1);
}

double clock_mhz_from_model(const std::string& cpu_model) {
  std::string text = lower(cpu_model);
  size_t ghz = text.find("ghz");
  if (ghz == std::string::npos) return 0;
  size_t begin = ghz;
  while (begin > 0 && (std::isdigit(static_cast<unsigned char>(text[begin - 1])) || text[begin - 1] == '.')) --begin;
  if (begin == ghz) return 0;
  try {
    return std::stod(text.substr(begin, ghz - begin)) * 1000.0;
  } catch (const std::exception&) {
    return 0;
  }
}

HostInfo parse_host(const std::string& cpuinfo_text, const std::string& meminfo_text) {
  HostInfo host;
  std::istringstream cpuinfo(cpuinfo_text);
  std::string line, flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("processor", 0) == 0) {
      ++host.logical_cores;
    } else if (line.rfind("model name", 0) == 0 && host.cpu_model.empty()) {
      host.cpu_model = value_after_colon(line);
    } else if (line.rfind("cpu MHz", 0) == 0 && host.clock_mhz == 0) {
      try {
        host.clock_mhz = std::stod(value_after_colon(line));
      } catch (const std::exception&) {
        host.clock_mhz = 0;
      }
    } else if (line.rfind("flags", 0) == 0 && flags.empty()) {
      flags = value_after_colon(line);
    }
  }
  if (host.clock_mhz == 0) host.clock_mhz = clock_mhz_from_model(host.cpu_model);
  if (!flags.empty()) host.flops_per_cycle_f32 = flops_per_cycle_from_flags(flags);
  host.peak_flops_f32 = static_cast<double>(host.logical_cores) * host.clock_mhz * 1e6 * host.flops_per_cycle_f32;

  std::istringstream meminfo(meminfo_text);
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream fields(value_after_colon(line));
      int64_t kib = 0;
      fields >> kib;
      host.memory_bytes = kib * 1024;
    }
  }
  return host;
}

const HostInfo& detect_host() {
  static const HostInfo host = parse_host(read_file("/proc/cpuinfo"), read_file("/proc/meminfo"));
  return host;
}

}  // namespace dnncast::hardware
