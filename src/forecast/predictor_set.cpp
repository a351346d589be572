// Predictor sets: loading one, the shipped ones, and the one to use for a device (predictor.h).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/json_limits.h"
#include "forecast/predictor.h"
#include "hardware/catalogue.h"
#include "hardware/hardware.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;
using nlohmann::json;

const records::EnvironmentRecord& PredictorSet::environment() const {
  DNNCAST_ASSERT(time.has_value());
  return time->manifest().environments.front();
}

PredictorSet load_predictor_set(const std::string& dir) {
  PredictorSet set;
  set.dir = dir;
  if (fs::exists(dir + "/manifest.json")) {
    Predictor predictor = Predictor::load(dir);
    if (predictor.manifest().target == "time")
      set.time.emplace(std::move(predictor));
    else
      throw InputError("predictor " + dir + " forecasts " + predictor.manifest().target +
                       ", not time; give its set's folder");
    return set;
  }
  if (!fs::exists(dir + "/time/manifest.json"))
    throw InputError("no predictor at " + dir + " (expected " + dir + "/manifest.json or " + dir +
                     "/time/manifest.json)");
  set.time.emplace(Predictor::load(dir + "/time"));
  if (fs::exists(dir + "/time/layers/layers.json")) {
    set.layers.emplace(LayerModel::load(dir + "/time/layers"));
    if (fs::exists(dir + "/time/corrected/manifest.json"))
      set.corrected.emplace(Predictor::load(dir + "/time/corrected"));
  }
  if (fs::exists(dir + "/memory/manifest.json")) set.memory.emplace(Predictor::load(dir + "/memory"));
  return set;
}

namespace {

// What a loaded set was read from: every regular file under it with its size and modification time.
std::string set_signature(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> entries;
  for (fs::recursive_directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    const auto size = it->file_size(error);
    const auto time = it->last_write_time(error).time_since_epoch().count();
    entries.push_back(it->path().string() + "|" + std::to_string(size) + "|" + std::to_string(time));
  }
  std::sort(entries.begin(), entries.end());
  std::string signature;
  for (const std::string& entry : entries) signature += entry + "\n";
  return signature;
}

}  // namespace

std::shared_ptr<const PredictorSet> cached_predictor_set(const std::string& dir) {
  struct Entry {
    std::string signature;
    std::shared_ptr<const PredictorSet> set;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> cache;
  const std::string signature = set_signature(dir);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(dir);
    if (found != cache.end() && found->second.signature == signature) return found->second.set;
  }
  auto set = std::make_shared<const PredictorSet>(load_predictor_set(dir));  // outside the lock: loading takes long
  std::lock_guard<std::mutex> lock(mutex);
  cache[dir] = {signature, set};
  return set;
}

std::vector<std::string> shipped_predictor_sets(const std::string& root) {
  std::vector<std::string> sets;
  std::error_code error;
  if (root.empty() || !fs::is_directory(root, error)) return sets;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, error))
    if (entry.is_directory() &&
        (fs::exists(entry.path() / "time" / "manifest.json") || fs::exists(entry.path() / "manifest.json")))
      sets.push_back(entry.path().string());
  std::sort(sets.begin(), sets.end());
  return sets;
}

namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

records::EnvironmentRecord read_set_environment(const std::string& path) {
  std::ifstream in(path);
  const std::string text = read_all(in);
  check_json_nesting(text, path);
  try {
    json document = json::parse(text);
    return records::environment_from_json(document.at("environments").at(0));
  } catch (const json::exception& error) {
    throw InputError(path + ": " + error.what());
  }
}

// The environment of a set's manifest, read once per process and again only when the file changes: every
// forecast chooses a set, and parsing the manifests was a sixth of a distinct forecast's time (issue 37).
records::EnvironmentRecord set_environment(const std::string& dir) {
  const std::string path =
      fs::exists(dir + "/time/manifest.json") ? dir + "/time/manifest.json" : dir + "/manifest.json";
  std::error_code error;
  const std::string stamp = std::to_string(fs::file_size(path, error)) + "|" +
                            std::to_string(fs::last_write_time(path, error).time_since_epoch().count());
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::string, records::EnvironmentRecord>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(path);
    if (found != cache.end() && found->second.first == stamp) return found->second.second;
  }
  records::EnvironmentRecord environment = read_set_environment(path);
  std::lock_guard<std::mutex> lock(mutex);
  cache[path] = {stamp, environment};
  return environment;
}

}  // namespace

SetChoice choose_predictor_set(const std::vector<std::string>& sets, const ForecastDevice& device,
                               const hardware::HostInfo& host) {
  const std::string wanted = lower(device.typed);
  std::vector<records::EnvironmentRecord> environments;
  for (const std::string& dir : sets) environments.push_back(set_environment(dir));
  auto known = [&] {
    std::string text;
    for (size_t index = 0; index < sets.size(); ++index)
      text += (text.empty() ? "" : ", ") + fs::path(sets[index]).filename().string() + " (" +
              environment_label(environments[index]) + ")";
    return text.empty() ? std::string("none") : text;
  };
  if (device.kind == ForecastDevice::Kind::ThisHost) {
    int fallback = -1;
    for (size_t index = 0; index < sets.size(); ++index) {
      const records::EnvironmentRecord& environment = environments[index];
      if (!environment.gpu_name.empty()) continue;
      if (environment.cpu_model == host.cpu_model && environment.cores == host.logical_cores) return {sets[index], ""};
      if (fallback < 0) fallback = static_cast<int>(index);
    }
    if (fallback >= 0)
      return {sets[static_cast<size_t>(fallback)],
              "no predictor was trained on this machine (" + (host.cpu_model.empty() ? "unknown CPU" : host.cpu_model) +
                  ", " + std::to_string(host.logical_cores) + " CPUs); forecasting for " +
                  environment_label(environments[static_cast<size_t>(fallback)]) + " instead"};
    throw InputError("no CPU predictor is known (known predictors: " + known() + ")");
  }
  // A catalogued GPU (by name or alias, resolved with the device) also finds the sets measured on it under its
  // driver-reported name.
  const bool any_gpu_set =
      std::any_of(environments.begin(), environments.end(),
                  [](const records::EnvironmentRecord& environment) { return !environment.gpu_name.empty(); });
  const hardware::Catalogue* catalogue = any_gpu_set && device.gpu ? &hardware::shipped_catalogue() : nullptr;
  for (size_t index = 0; index < sets.size(); ++index) {
    const records::EnvironmentRecord& environment = environments[index];
    std::vector<std::string> names{lower(fs::path(sets[index]).filename().string()), environment_slug(environment),
                                   lower(environment_label(environment)), environment.hash(),
                                   lower(environment.gpu_name)};
    if (std::find(names.begin(), names.end(), wanted) != names.end()) return {sets[index], ""};
    if (catalogue != nullptr && !environment.gpu_name.empty()) {
      const hardware::GpuSpec* measured = catalogue->match_driver_name(environment.gpu_name);
      if (measured != nullptr && measured->name == device.gpu->name) return {sets[index], ""};
    }
  }
  throw UnknownDevice("no predictor for device " + quote(device.typed) + " (known predictors: " + known() +
                      "; train one with `dnncast train --db DATA --out data/predictors/NAME`)");
}

std::string default_predictor_root() {
  if (const char* override_root = std::getenv("DNNCAST_PREDICTORS")) return override_root;
  // Walk up from the executable (build/dnncast -> the source tree's data/predictors).
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::is_directory(dir / "data" / "predictors", error)) return (dir / "data" / "predictors").string();
      if (dir == dir.root_path()) break;
    }
  }
  return "";
}

}  // namespace dnncast::forecast
