// Host calibrations: the fit of what is host-specific, its file, and finding the one of this host
// (host_calibration.h).
#include "forecast/host_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_limits.h"
#include "forecast/host_match.h"
#include "forecast/predictor.h"
#include "graph/op_registry.h"
#include "models/layer_cases.h"

namespace dnncast::forecast {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The plane of mix_anchors at (log intensity u, log source ms v), clamped to the anchors' range; nullopt where they
// do not make one (too few, or less than a factor of 2 between the lowest and highest intensity).
std::optional<double> mix_plane(const std::vector<MixAnchor>& anchors, double source_ms, double intensity) {
  if (anchors.size() < kMinMixAnchors || !(intensity > 0) || !(source_ms > 0)) return std::nullopt;
  double u_low = INFINITY, u_high = -INFINITY, v_low = INFINITY, v_high = -INFINITY;
  for (const MixAnchor& anchor : anchors) {
    if (!(anchor.intensity > 0) || !(anchor.source_ms > 0) || !(anchor.ratio > 0)) return std::nullopt;
    u_low = std::min(u_low, std::log(anchor.intensity)), u_high = std::max(u_high, std::log(anchor.intensity));
    v_low = std::min(v_low, std::log(anchor.source_ms)), v_high = std::max(v_high, std::log(anchor.source_ms));
  }
  if (u_high - u_low < std::log(2.0)) return std::nullopt;
  // Normal equations of y = a + b u + c v with kMixRidge added to the slopes' diagonal; u and v centred.
  double mean_u = 0, mean_v = 0, mean_y = 0;
  const double n = static_cast<double>(anchors.size());
  for (const MixAnchor& anchor : anchors)
    mean_u += std::log(anchor.intensity) / n, mean_v += std::log(anchor.source_ms) / n,
        mean_y += std::log(anchor.ratio) / n;
  double suu = kMixRidge, svv = kMixRidge, suv = 0, suy = 0, svy = 0;
  for (const MixAnchor& anchor : anchors) {
    const double u = std::log(anchor.intensity) - mean_u, v = std::log(anchor.source_ms) - mean_v,
                 y = std::log(anchor.ratio) - mean_y;
    suu += u * u, svv += v * v, suv += u * v, suy += u * y, svy += v * y;
  }
  const double det = suu * svv - suv * suv;
  if (!(det > 1e-12)) return std::nullopt;
  const double b = (suy * svv - svy * suv) / det, c = (svy * suu - suy * suv) / det;
  const double u = std::clamp(std::log(intensity), u_low, u_high) - mean_u;
  const double v = std::clamp(std::log(source_ms), v_low, v_high) - mean_v;
  return std::exp(mean_y + b * u + c * v);
}

// document[key]: [[source_ms, ratio, intensity], ...], each positive (ratio below 100); none where absent.
std::vector<MixAnchor> mix_anchors_from(const json& document, const char* key, const std::string& where) {
  std::vector<MixAnchor> anchors;
  if (!document.contains(key)) return anchors;
  for (const json& item : document.at(key)) {
    const bool triple =
        item.is_array() && item.size() == 3 && item[0].is_number() && item[1].is_number() && item[2].is_number();
    const MixAnchor anchor =
        triple ? MixAnchor{item[0].get<double>(), item[1].get<double>(), item[2].get<double>()} : MixAnchor{0, 0, 0};
    if (!triple || !(anchor.source_ms > 0) || !std::isfinite(anchor.source_ms) || !(anchor.ratio > 0) ||
        !(anchor.ratio < 100) || !(anchor.intensity > 0) || !std::isfinite(anchor.intensity))
      throw InputError(where + ": " + key + "[" + std::to_string(anchors.size()) +
                       "] is not [source ms, ratio below 100, intensity], each positive");
    anchors.push_back(anchor);
  }
  return anchors;
}

// Leave-one-out mean |log(measured / fitted)| of a ratio (slope false) or a log-linear map.
double loo_log_error(const std::vector<WholeRatio>& runs, bool slope) {
  double total = 0;
  for (size_t out = 0; out < runs.size(); ++out) {
    double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t k = 0; k < runs.size(); ++k) {
      if (k == out) continue;
      const double x = std::log(runs[k].adjusted_ms), y = std::log(runs[k].measured_ms);
      n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double x = std::log(runs[out].adjusted_ms), y = std::log(runs[out].measured_ms);
    double fitted = 0;
    if (slope && n * sxx - sx * sx > 1e-12) {
      const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      fitted = (sy - b * sx) / n + b * x;
    } else {
      fitted = x + (sy - sx) / n;
    }
    total += std::abs(y - fitted);
  }
  return total / static_cast<double>(runs.size());
}

// Each key's ratios pooled by their geometric mean (given as logs), in key order: emit(key, ratio).
template <typename Key, typename Emit>
void pool_ratios(const std::map<Key, std::vector<double>>& logs, Emit emit) {
  for (const auto& [key, values] : logs) {
    double sum = 0;
    for (double value : values) sum += value;
    emit(key, std::exp(sum / static_cast<double>(values.size())));
  }
}

// size_anchors (host_calibration.h): the host check's pooled probes and every run with a source forecast; runs of the
// same source time (a configuration timed twice) pooled by the geometric mean of their ratios.
void fit_size_anchors(const std::vector<WholeRatio>& runs, HostCalibration& calibration) {
  auto usable = [](const WholeRatio& run) {
    return run.source_ms > 0 && run.measured_ms > 0 && std::isfinite(run.source_ms) && std::isfinite(run.measured_ms);
  };
  std::map<double, std::vector<double>> logs;  // source ms -> log(measured / source)
  if (calibration.host_check_ratio > 0 && calibration.host_check_source_ms > 0)
    logs[calibration.host_check_source_ms].push_back(std::log(calibration.host_check_ratio));
  for (const WholeRatio& run : runs)
    if (usable(run)) logs[run.source_ms].push_back(std::log(run.measured_ms / run.source_ms));
  calibration.size_anchors.clear();
  pool_ratios(logs, [&](double source_ms, double ratio) { calibration.size_anchors.emplace_back(source_ms, ratio); });
  // The mix anchors: each probe apart, and the runs of known intensity (one configuration's runs pooled).
  calibration.mix_anchors = calibration.host_check_probes;
  std::map<std::pair<double, double>, std::vector<double>> mixed;  // (source ms, intensity) -> log ratios
  for (const WholeRatio& run : runs)
    if (usable(run) && run.intensity > 0)
      mixed[{run.source_ms, run.intensity}].push_back(std::log(run.measured_ms / run.source_ms));
  pool_ratios(mixed, [&](const std::pair<double, double>& at, double ratio) {
    calibration.mix_anchors.push_back({at.first, ratio, at.second});
  });
}

}  // namespace

double HostCalibration::scale_of(const std::string& kind) const {
  auto found = kind_scale.find(kind);
  if (found != kind_scale.end()) return found->second;
  auto any = kind_scale.find(kAnyKind);
  return any != kind_scale.end() ? any->second : 1.0;
}

double HostCalibration::layer_factor(const features::LayerSites& sites, const std::vector<double>& row_ms) const {
  DNNCAST_ASSERT(row_ms.size() == sites.nodes.size() + 1);
  const std::vector<std::string> kinds = site_kinds(sites);
  double source = 0, scaled = 0;
  for (size_t row = 0; row < row_ms.size(); ++row) {
    const double ms = std::max(row_ms[row], 0.0);
    source += ms;
    scaled += ms * scale_of(row < kinds.size() ? kinds[row] : std::string());
  }
  return source > 0 ? scaled / source : scale_of(kAnyKind);
}

double HostCalibration::layer_factor(const Graph& graph, const features::LayerSites& sites,
                                     const std::vector<double>& row_ms, double* covered) const {
  DNNCAST_ASSERT(row_ms.size() == sites.nodes.size() + 1);
  if (covered != nullptr) *covered = 0;
  if (layer_ms.empty()) return layer_factor(sites, row_ms);
  const std::vector<std::string> kinds = site_kinds(sites);
  double source = 0, scaled = 0, replaced = 0;
  size_t row = 0;
  for (int node = 0; node < graph.size() && row < sites.nodes.size(); ++node) {
    if (graph.node(node).op == "Input") continue;
    const double ms = std::max(row_ms[row], 0.0);
    source += ms;
    auto measured = kinds[row].empty() ? layer_ms.end() : layer_ms.find(models::case_of_node(graph, node, "").key);
    if (measured != layer_ms.end()) {
      scaled += measured->second;
      replaced += ms;
    } else {
      scaled += ms * scale_of(kinds[row]);
    }
    ++row;
  }
  const double optimizer_ms = std::max(row_ms.back(), 0.0);
  source += optimizer_ms;
  scaled += optimizer_ms * scale_of(kAnyKind);
  if (covered != nullptr && source > 0) *covered = replaced / source;
  return source > 0 ? scaled / source : scale_of(kAnyKind);
}

double HostCalibration::shifted(double adjusted_ms) const {
  if (shift == "none" || adjusted_ms <= 0) return adjusted_ms;
  return std::exp(log_intercept + log_slope * std::log(adjusted_ms));
}

HostCalibration::Anchoring HostCalibration::anchoring(double intensity) const {
  // The plane's existence depends on the anchors and a known intensity, not on the point asked about.
  if (mix_plane(mix_anchors, 1, intensity)) return {"size and intensity", mix_anchors.size()};
  return {"size", size_anchors.size()};
}

double HostCalibration::plane_log_spread(double source_ms) const {
  if (!(source_ms > 0)) return kMixFarLogSpread;
  for (const MixAnchor& anchor : mix_anchors)
    if (anchor.source_ms > 0 && std::abs(std::log(source_ms / anchor.source_ms)) <= kMixNearLogDistance)
      return kMixLogSpread;
  return kMixFarLogSpread;
}

double HostCalibration::anchored_ratio(double source_ms, double intensity) const {
  if (const std::optional<double> plane = mix_plane(mix_anchors, source_ms, intensity)) return *plane;
  if (size_anchors.empty() || !(source_ms > 0)) return 1;
  const double low = std::log(size_anchors.front().first), high = std::log(size_anchors.back().first);
  const double x = std::clamp(std::log(source_ms), low, high);
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [anchor_ms, ratio] : size_anchors) {
    const double ax = std::log(anchor_ms), ay = std::log(ratio);
    n += 1, sx += ax, sy += ay, sxx += ax * ax, sxy += ax * ay;
  }
  const double det = n * sxx - sx * sx;
  const double slope = det > 1e-12 ? (n * sxy - sx * sy) / det : 0;
  return std::exp((sy - slope * sx) / n + slope * x);
}

double arithmetic_intensity(const Graph& graph) {
  double flops = 0, bytes = 0;
  for (int index = 0; index < graph.size(); ++index) {
    const OpCost cost = node_cost(graph, index);
    flops += static_cast<double>(cost.flops_fwd + cost.flops_bwd);
    bytes += static_cast<double>(graph.node(index).shape.numel() * dtype_bytes(graph.node(index).dtype));
  }
  return bytes > 0 ? flops / bytes : 0;
}

std::string whole_key(const Graph& graph, const features::TrainingConfig& config) {
  std::string inputs;  // every input's shape, batch included (the architecture hash leaves sizes out)
  for (int index : graph.inputs()) inputs += graph.node(index).shape.to_string() + ";";
  return graph.architecture_hash() + ":" + inputs + ":batch=" + std::to_string(config.batch) + ":" +
         name(config.optimizer) + ":" + name(config.precision) + ":threads=" + std::to_string(config.threads);
}

json HostCalibration::to_json() const {
  json document = {{"format", kHostCalibrationFormat},
                   {"environment", environment_to_json(environment)},
                   {"source", source_dir},
                   {"kind_scale", kind_scale},
                   {"kind_layers", kind_layers},
                   {"layer_ms", layer_ms},
                   {"whole_ms", whole_ms},
                   {"model_log_shift", model_log_shift},
                   {"shift", {{"map", shift}, {"log_intercept", log_intercept}, {"log_slope", log_slope}}},
                   {"log_spread", log_spread},
                   {"report", report}};
  auto triples = [](const std::vector<MixAnchor>& anchors) {
    json list = json::array();
    for (const MixAnchor& anchor : anchors) list.push_back({anchor.source_ms, anchor.ratio, anchor.intensity});
    return list;
  };
  if (host_check_ratio > 0) {
    document["host_check"] = {
        {"ratio", host_check_ratio}, {"source_ms", host_check_source_ms}, {"checked", host_check_checked}};
    if (!host_check_probes.empty()) document["host_check"]["probes"] = triples(host_check_probes);
  }
  if (!size_anchors.empty()) document["size_anchors"] = size_anchors;
  if (!mix_anchors.empty()) document["mix_anchors"] = triples(mix_anchors);
  return document;
}

HostCalibration HostCalibration::from_json(const json& document, const std::string& where) {
  try {
    if (document.value("format", "") != kHostCalibrationFormat)
      throw InputError(where + ": not a host calibration (format " + quote(document.value("format", "")) +
                       ", expected " + kHostCalibrationFormat + ")");
    HostCalibration calibration;
    calibration.environment = records::environment_from_json(document.at("environment"));
    calibration.source_dir = document.at("source").get<std::string>();
    calibration.kind_scale = document.at("kind_scale").get<std::map<std::string, double>>();
    calibration.kind_layers = document.value("kind_layers", std::map<std::string, int64_t>{});
    calibration.layer_ms = document.value("layer_ms", std::map<std::string, double>{});
    for (const auto& [key, ms] : calibration.layer_ms)
      if (!(ms > 0) || !std::isfinite(ms))
        throw InputError(where + ": layer_ms " + quote(key) + " is not a positive number");
    calibration.whole_ms = document.value("whole_ms", std::map<std::string, double>{});
    calibration.model_log_shift = document.value("model_log_shift", std::map<std::string, double>{});
    for (const auto& [key, shift] : calibration.model_log_shift)
      if (!std::isfinite(shift) || std::abs(shift) > 10)
        throw InputError(where + ": model_log_shift " + quote(key) + " is not a log ratio within +-10");
    for (const auto& [key, ms] : calibration.whole_ms)
      if (!(ms > 0) || !std::isfinite(ms))
        throw InputError(where + ": whole_ms " + quote(key) + " is not a positive number");
    const json& shift = document.at("shift");
    calibration.shift = shift.at("map").get<std::string>();
    calibration.log_intercept = shift.at("log_intercept").get<double>();
    calibration.log_slope = shift.at("log_slope").get<double>();
    calibration.log_spread = document.value("log_spread", 0.0);
    calibration.report = document.value("report", json::object());
    if (document.contains("host_check")) {
      calibration.host_check_ratio = document["host_check"].at("ratio").get<double>();
      calibration.host_check_source_ms = document["host_check"].at("source_ms").get<double>();
      calibration.host_check_checked = document["host_check"].value("checked", std::string());
      if (!(calibration.host_check_ratio > 0) || !(calibration.host_check_ratio < 100) ||
          !(calibration.host_check_source_ms > 0) || !std::isfinite(calibration.host_check_source_ms))
        throw InputError(where + ": host_check ratio or source_ms is not a positive number (ratio below 100)");
      calibration.host_check_probes = mix_anchors_from(document["host_check"], "probes", where + ": host_check");
    }
    calibration.size_anchors = document.value("size_anchors", std::vector<std::pair<double, double>>{});
    for (size_t index = 0; index < calibration.size_anchors.size(); ++index) {
      const auto [source_ms, ratio] = calibration.size_anchors[index];
      if (!(source_ms > 0) || !std::isfinite(source_ms) || !(ratio > 0) || !(ratio < 100) ||
          (index > 0 && source_ms < calibration.size_anchors[index - 1].first))
        throw InputError(where + ": size_anchors[" + std::to_string(index) +
                         "] is not a positive source time (rising) with a positive ratio below 100");
    }
    calibration.mix_anchors = mix_anchors_from(document, "mix_anchors", where);
    if (calibration.shift != "none" && calibration.shift != "ratio" && calibration.shift != "lms")
      throw InputError(where + ": unknown shift " + quote(calibration.shift) + " (known: none, ratio, lms)");
    if (!calibration.kind_scale.count(kAnyKind)) throw InputError(where + ": kind_scale has no \"*\" entry");
    for (const auto& [kind, scale] : calibration.kind_scale)
      if (!(scale > 0) || !std::isfinite(scale))
        throw InputError(where + ": kind_scale " + quote(kind) + " is not a positive number");
    if (!std::isfinite(calibration.log_intercept) || !std::isfinite(calibration.log_slope) ||
        !(calibration.log_slope > 0) || !std::isfinite(calibration.log_spread) || calibration.log_spread < 0)
      throw InputError(where + ": shift or log_spread out of range");
    return calibration;
  } catch (const json::exception& error) {
    throw InputError(where + ": " + error.what());
  }
}

HostCalibration HostCalibration::load(const std::string& dir) {
  const std::string path = dir + "/host.json";
  std::ifstream in(path);
  if (!in) throw InputError("no host calibration at " + dir + " (expected " + path + ")");
  const std::string text = read_all(in);
  check_json_nesting(text, path);
  json document = json::parse(text, nullptr, false);
  if (document.is_discarded()) throw InputError(path + ": not JSON");
  HostCalibration calibration = from_json(document, path);
  // A shipped source set of a checkout that moved: the set of that name in this checkout's data/predictors.
  std::error_code error;
  if (!fs::is_directory(calibration.source_dir, error)) {
    const fs::path shipped = fs::path(default_predictor_root()) / fs::path(calibration.source_dir).filename();
    if (!default_predictor_root().empty() && fs::is_directory(shipped, error))
      calibration.source_dir = shipped.string();
  }
  return calibration;
}

void HostCalibration::save(const std::string& dir) const {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw InputError("cannot create " + dir + ": " + error.message());
  const std::string path = dir + "/host.json";
  std::ofstream out(path);
  out << to_json().dump(1) << "\n";
  if (!out) throw InputError("cannot write " + path);
}

void fit_kind_scales(const std::vector<LayerRatio>& ratios, HostCalibration& calibration) {
  // Time-weighted mean of log(measured / source): the layers that make most of an iteration's time
  // decide its scale, and one tiny layer's 10x (timer resolution, a cold start) does not.
  struct Sum {
    double weight = 0, weighted_log = 0;
    int64_t layers = 0;
  };
  std::map<std::string, Sum> sums;
  for (const LayerRatio& ratio : ratios) {
    if (!(ratio.measured_ms > 0) || !(ratio.source_ms > 0) || !std::isfinite(ratio.measured_ms) ||
        !std::isfinite(ratio.source_ms))
      continue;
    const double log_ratio = std::log(ratio.measured_ms / ratio.source_ms);
    for (const std::string& key : {ratio.kind, std::string(kAnyKind)}) {
      Sum& sum = sums[key];
      sum.weight += ratio.measured_ms;
      sum.weighted_log += ratio.measured_ms * log_ratio;
      sum.layers += 1;
    }
  }
  if (sums[kAnyKind].layers == 0) throw InputError("no layer measured ok on this host: nothing to calibrate from");
  calibration.kind_scale.clear();
  calibration.kind_layers.clear();
  for (const auto& [kind, sum] : sums) {
    if (kind.empty() || (kind != kAnyKind && sum.layers < kMinKindLayers)) continue;
    calibration.kind_scale[kind] = std::exp(sum.weighted_log / sum.weight);
    calibration.kind_layers[kind] = sum.layers;
  }
}

void fit_whole_shift(const std::vector<WholeRatio>& all_runs, HostCalibration& calibration) {
  fit_size_anchors(all_runs, calibration);
  std::vector<WholeRatio> runs;
  for (const WholeRatio& run : all_runs)
    if (run.measured_ms > 0 && run.adjusted_ms > 0 && std::isfinite(run.measured_ms) && std::isfinite(run.adjusted_ms))
      runs.push_back(run);
  calibration.log_slope = 1;
  calibration.log_intercept = 0;
  calibration.log_spread = kCalibratedLogSpread;
  if (runs.empty()) {
    calibration.shift = "none";
    return;
  }
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const WholeRatio& run : runs) {
    const double x = std::log(run.adjusted_ms), y = std::log(run.measured_ms);
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  calibration.shift = "ratio";
  calibration.log_intercept = (sy - sx) / n;
  if (runs.size() >= 3) {
    const double ratio_error = loo_log_error(runs, false);
    calibration.log_spread = std::max(ratio_error * 2, 0.10);
    if (runs.size() >= 5 && n * sxx - sx * sx > 1e-12) {
      const double lms_error = loo_log_error(runs, true);
      if (lms_error < ratio_error / 1.10 - 0.005) {
        calibration.shift = "lms";
        calibration.log_slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        calibration.log_intercept = (sy - calibration.log_slope * sx) / n;
        calibration.log_spread = std::max(lms_error * 2, 0.10);
      }
    }
  }
}

std::vector<std::string> site_kinds(const features::LayerSites& sites) {
  std::vector<std::string> kinds;
  kinds.reserve(sites.nodes.size());
  for (const features::LayerSite& site : sites.nodes)
    kinds.push_back(models::layer_kind_of(site.op, static_cast<int64_t>(site.groups),
                                          static_cast<int64_t>(site.in_channels),
                                          static_cast<int64_t>(site.out_channels)));
  return kinds;
}

std::string default_calibration_root() {
  if (const char* root = std::getenv("DNNCAST_CALIBRATIONS")) return root;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/dnncast/calibrations";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.local/share/dnncast/calibrations";
  return "";
}

bool is_host_calibration(const std::string& dir) {
  std::error_code error;
  return fs::is_regular_file(fs::path(dir) / "host.json", error);
}

std::optional<std::string> find_host_calibration(const std::string& root, const records::EnvironmentRecord& host) {
  std::error_code error;
  if (root.empty() || !fs::is_directory(root, error)) return std::nullopt;
  std::optional<std::string> best;
  fs::file_time_type best_time;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, error)) {
    if (!is_host_calibration(entry.path().string())) continue;
    std::ifstream in(entry.path() / "host.json");
    const std::string text = read_all(in);
    if (json_nesting(text) > kMaxJsonNesting) continue;
    json document = json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.contains("environment")) continue;
    records::EnvironmentRecord environment;
    try {
      environment = records::environment_from_json(document["environment"]);
    } catch (const std::exception&) {
      continue;  // not ours to judge here: `predict --predictor DIR` names the problem
    }
    if (!match_host(host, {environment}).exact) continue;
    const fs::file_time_type time = fs::last_write_time(entry.path() / "host.json", error);
    if (!best || time > best_time) best = entry.path().string(), best_time = time;
  }
  return best;
}

}  // namespace dnncast::forecast
