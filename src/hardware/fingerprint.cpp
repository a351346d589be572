#include "hardware/fingerprint.h"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "hardware/hardware.h"

namespace dnncast::hardware {

namespace {

std::string first_word(const std::string& path) {
  std::ifstream file(path);
  std::string word;
  file >> word;
  return word;
}

}  // namespace

int64_t parse_cache_size(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto parsed = std::from_chars(text.data(), end, value);
  if (parsed.ec != std::errc() || value < 0) return 0;
  std::string unit(parsed.ptr, end);
  if (unit.empty()) return value;
  char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
  if (unit.size() > 1 && !(unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b'))) return 0;
  if (suffix == 'K') return value << 10;
  if (suffix == 'M') return value << 20;
  if (suffix == 'G') return value << 30;
  return 0;
}

CpuCaches read_cpu_caches(const std::string& cache_dir) {
  CpuCaches caches;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    const std::string dir = entry.path().string();
    if (first_word(dir + "/type") == "Instruction") continue;
    const std::string level = first_word(dir + "/level");
    const int64_t bytes = parse_cache_size(first_word(dir + "/size"));
    if (level == "2") caches.l2_bytes = bytes;
    if (level == "3") caches.l3_bytes = bytes;
  }
  return caches;
}

BaseClock read_base_clock(const std::string& cpufreq_dir, double cpuinfo_mhz) {
  for (const char* name : {"base_frequency", "cpuinfo_max_freq"}) {
    const std::string khz_text = first_word(cpufreq_dir + "/" + name);
    int64_t khz = 0;
    auto parsed = std::from_chars(khz_text.data(), khz_text.data() + khz_text.size(), khz);
    if (parsed.ec == std::errc() && khz > 0) return {static_cast<double>(khz) / 1000.0, name};
  }
  if (cpuinfo_mhz > 0) return {cpuinfo_mhz, "cpu MHz"};
  return {};
}

CpuFingerprint cpu_fingerprint(const CpuFeatures& features, const IsaDispatch& dispatch) {
  CpuFingerprint fingerprint;
  fingerprint.vendor = features.vendor;
  fingerprint.family = features.family;
  fingerprint.model = features.model;
  fingerprint.stepping = features.stepping;
  fingerprint.isa = isa_name(dispatch.onednn);
  fingerprint.aten_capability = aten_capability_name(dispatch.aten);
  fingerprint.isa_cap = dispatch.onednn_cap;
  fingerprint.caches = read_cpu_caches("/sys/devices/system/cpu/cpu0/cache");
  fingerprint.base_clock = read_base_clock("/sys/devices/system/cpu/cpu0/cpufreq", detect_host().clock_mhz);
  return fingerprint;
}

const CpuFingerprint& host_cpu_fingerprint() {
  static const CpuFingerprint fingerprint = cpu_fingerprint(detect_cpu_features(), host_dispatch());
  return fingerprint;
}

}  // namespace dnncast::hardware
