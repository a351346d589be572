#include "hardware/hardware.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

namespace dnncast::hardware {

namespace {

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
