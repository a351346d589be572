// The host check's cache and what a forecast says with it (host_check.h).
#include "forecast/host_check.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_limits.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

bool HostCheck::off() const {
  return ratio > kHostCheckTolerance || ratio < 1 / kHostCheckTolerance ||
         high / low > kHostCheckTolerance * kHostCheckTolerance;
}

void HostCheck::summarize() {
  double log_sum = 0;
  low = high = 1;
  int counted = 0;
  for (const HostProbe& probe : probes) {
    if (!(probe.measured_ms > 0 && probe.forecast_ms > 0)) continue;
    const double r = probe.measured_ms / probe.forecast_ms;
    low = counted == 0 ? r : std::min(low, r);
    high = counted == 0 ? r : std::max(high, r);
    log_sum += std::log(r);
    ++counted;
  }
  ratio = counted > 0 ? std::exp(log_sum / counted) : 1;
}

nlohmann::json HostCheck::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const HostProbe& probe : probes)
    list.push_back({{"model", probe.model},
                    {"batch", probe.batch},
                    {"input", probe.input},
                    {"optimizer", probe.optimizer},
                    {"measured_ms", probe.measured_ms},
                    {"forecast_ms", probe.forecast_ms},
                    {"wait_share", probe.wait_share}});
  return {{"format", "dnncast-host-check/1"},
          {"key", key},
          {"checked", checked},
          {"predictor", predictor},
          {"ratio", ratio},
          {"low", low},
          {"high", high},
          {"off", off()},
          {"probes", list}};
}

HostCheck HostCheck::from_json(const nlohmann::json& document) {
  HostCheck check;
  try {
    if (document.at("format") != "dnncast-host-check/1") throw InputError("not a dnncast-host-check/1 document");
    check.key = document.at("key").get<std::string>();
    check.checked = document.at("checked").get<std::string>();
    check.predictor = document.at("predictor").get<std::string>();
    for (const nlohmann::json& item : document.at("probes")) {
      HostProbe probe;
      probe.model = item.at("model").get<std::string>();
      probe.batch = item.at("batch").get<int64_t>();
      probe.input = item.at("input").get<std::string>();
      probe.optimizer = item.at("optimizer").get<std::string>();
      probe.measured_ms = item.at("measured_ms").get<double>();
      probe.forecast_ms = item.at("forecast_ms").get<double>();
      probe.wait_share = item.value("wait_share", 0.0);  // a cache written before it was recorded
      check.probes.push_back(probe);
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(std::string("host check: ") + error.what());
  }
  check.summarize();
  return check;
}

const std::vector<HostProbe>& host_check_probes() {
  // Configurations of the shipped data (dnncast-cpu2.db) whose forecast on the data's host is within 10% of its
  // recorded runs; each runs a few hundred milliseconds an iteration there.
  static const std::vector<HostProbe> probes = {
      {"resnet18", "3x64x64", "sgd", 4},
      {"mnasnet0_75", "3x32x32", "sgd", 4},
      {"squeezenet1_1", "3x32x32", "sgd", 4},
      {"resnet18", "3x32x32", "sgd", 1},
  };
  return probes;
}

std::string host_check_key(const records::EnvironmentRecord& host) {
  std::string boot = first_line("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) boot = "no-boot-id";
  return host.hash() + "/" + boot + "/" + fixed(host.base_mhz, 0) + "MHz";
}

std::string host_check_cache_path() {
  std::string dir;
  if (const char* given = std::getenv("DNNCAST_CACHE_DIR"); given != nullptr && *given != '\0')
    dir = given;
  else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    dir = std::string(xdg) + "/dnncast";
  else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    dir = std::string(home) + "/.cache/dnncast";
  return dir.empty() ? "" : dir + "/host-check.json";
}

bool host_check_enabled() {
  const char* value = std::getenv("DNNCAST_HOST_CHECK");
  if (value == nullptr) return true;
  const std::string text = value;
  return !(text == "off" || text == "0" || text == "false" || text == "no");
}

std::optional<HostCheck> cached_host_check(const std::string& key) {
  const std::string path = host_check_cache_path();
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    check_json_nesting(text.str(), path);
    const HostCheck check = HostCheck::from_json(nlohmann::json::parse(text.str()));
    if (check.key != key) return std::nullopt;
    return check;
  } catch (const std::exception&) {
    return std::nullopt;  // a damaged cache is checked again, not trusted
  }
}

void save_host_check(const HostCheck& check) {
  const std::string path = host_check_cache_path();
  if (path.empty()) throw InputError("no cache folder for the host check: set DNNCAST_CACHE_DIR or HOME");
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  // Written beside and renamed: a reader never sees half a file.
  const std::string partial = path + ".partial." + std::to_string(::getpid());
  {
    std::ofstream out(partial);
    out << check.to_json().dump(2) << "\n";
    if (!out) throw InputError("cannot write the host check to " + quote(partial));
  }
  fs::rename(partial, path, error);
  if (error) throw InputError("cannot write the host check to " + quote(path) + ": " + error.message());
}

std::string host_check_note(const HostCheck& check, double widen) {
  return "this host ran " + std::to_string(check.probes.size()) + " configurations of the shipped data at " +
         fixed(check.low, 2) + "-" + fixed(check.high, 2) + "x their forecast time (mean " + fixed(check.ratio, 2) +
         "x; checked " + check.checked + "): a CPU's fingerprint is not its speed. The forecast is scaled by " +
         fixed(check.ratio, 2) + " and its 90% interval widened " + fixed(widen, 1) + "x each way";
}

}  // namespace dnncast::forecast
