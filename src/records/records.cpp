#include "records/records.h"

#include <cstdio>
#include <ctime>
#include <sstream>

#include "core/error.h"

namespace dnncast::records {

std::string fnv1a_hex(const std::string& text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

std::string EnvironmentRecord::hash() const {
  std::ostringstream text;
  // Memory enters in whole GiB: identical nodes may differ by a few MiB the kernel reserves.
  int64_t memory_gib = (memory_bytes + (int64_t{1} << 29)) >> 30;
  text << "cpu=" << cpu_model << "\ncores=" << cores << "\nthreads=" << threads << "\nmemory_gib=" << memory_gib
       << "\ngpu=" << gpu_name << "\ndriver=" << gpu_driver << "\ntorch=" << torch_version << "\nbuild=" << build_type
       << "\n";
  // The fingerprint only where recorded: an environment without it keeps the hash it had before.
  if (!cpu_vendor.empty())
    text << "cpu_vendor=" << cpu_vendor << "\ncpu_family=" << cpu_family << "\ncpu_model=" << cpu_model_number
         << "\ncpu_stepping=" << cpu_stepping << "\n";
  if (!isa.empty()) text << "isa=" << isa << "\n";
  if (!aten_capability.empty()) text << "aten=" << aten_capability << "\n";
  if (l2_bytes > 0) text << "l2_bytes=" << l2_bytes << "\n";
  if (l3_bytes > 0) text << "l3_bytes=" << l3_bytes << "\n";
  return fnv1a_hex(text.str());
}

std::string RunConfig::input_text() const {
  std::string text;
  for (size_t dim = 0; dim < input.size(); ++dim) text += (dim ? "x" : "") + std::to_string(input[dim]);
  return text;
}

std::vector<int64_t> parse_input_text(const std::string& text) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, 'x')) {
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || value <= 0)
      throw InputError("input " + quote(text) + ": expected positive sizes joined by 'x', like 3x64x64");
    dims.push_back(value);
  }
  if (text.back() == 'x')
    throw InputError("input " + quote(text) + ": expected positive sizes joined by 'x', like 3x64x64");
  return dims;
}

bool RunConfig::operator<(const RunConfig& other) const {
  // The setup orders by its names, as when these were strings.
  return std::tie(batch, input, seq_len, name(optimizer), name(precision), threads, name(device)) <
         std::tie(other.batch, other.input, other.seq_len, name(other.optimizer), name(other.precision), other.threads,
                  name(other.device));
}

bool RunConfig::operator==(const RunConfig& other) const { return !(*this < other) && !(other < *this); }

void set_cpu_fingerprint(EnvironmentRecord& environment, const hardware::CpuFingerprint& cpu) {
  environment.cpu_vendor = cpu.vendor;
  environment.cpu_family = cpu.family;
  environment.cpu_model_number = cpu.model;
  environment.cpu_stepping = cpu.stepping;
  environment.isa = cpu.isa;
  environment.aten_capability = cpu.aten_capability;
  environment.isa_cap = cpu.isa_cap;
  environment.l2_bytes = cpu.caches.l2_bytes;
  environment.l3_bytes = cpu.caches.l3_bytes;
  environment.base_mhz = cpu.base_clock.mhz;
}

nlohmann::json environment_json(const EnvironmentRecord& environment, bool with_host) {
  nlohmann::json document = {{"cpu_model", environment.cpu_model},
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
  if (with_host) document["host"] = environment.host;
  return document;
}

EnvironmentRecord environment_from_json(const nlohmann::json& document) {
  EnvironmentRecord environment;
  try {
    environment.cpu_model = document.at("cpu_model").get<std::string>();
    environment.cores = document.at("cores").get<int64_t>();
    environment.threads = document.at("threads").get<int64_t>();
    environment.memory_bytes = document.at("memory_bytes").get<int64_t>();
    environment.gpu_name = document.at("gpu_name").get<std::string>();
    environment.gpu_driver = document.value("gpu_driver", "");
    environment.torch_version = document.value("torch_version", "");
    environment.build_type = document.value("build_type", "");
    environment.host = document.value("host", "");
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
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("environment: ") + error.what());
  }
  return environment;
}

}  // namespace dnncast::records
