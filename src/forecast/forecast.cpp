// Time and memory of training from a predictor set: the set for the device, the checks against
// what it was trained on, the featurized graph, and peak memory from the simulator where it models
// the configuration (the learned memory predictor otherwise).
#include "forecast/forecast.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "features/featurizer.h"
#include "features/layer_features.h"
#include "forecast/extrapolation.h"
#include "forecast/host_calibration.h"
#include "forecast/host_check.h"
#include "forecast/predictor.h"
#include "graph/checkpoint.h"
#include "graph/op_registry.h"
#include "import/model_source.h"
#include "records/records.h"

namespace dnncast::forecast {

namespace {

using nlohmann::json;

bool contains(const json& list, const json& value) {
  return list.is_array() && std::find(list.begin(), list.end(), value) != list.end();
}

// The predictor set's folder: the given one (which must match the device when one is given), or
// the shipped set for the device (a note when it is a fallback).
std::string predictor_set_dir(const ForecastRequest& request, std::vector<std::string>& notes,
                              std::optional<HostCalibration>& calibration) {
  // A calibration folder given, or made on this host (`dnncast calibrate MODEL --minutes M`): its source set,
  // adapted below. A what-if ISA (--host-isa) is not this host: no calibration of it.
  if (!request.predictor_dir.empty() && is_host_calibration(request.predictor_dir)) {
    calibration.emplace(HostCalibration::load(request.predictor_dir));
    calibration->report["dir"] = request.predictor_dir;
    return calibration->source_dir;
  }
  if (request.predictor_dir.empty() && request.use_calibration && request.host_isa == hardware::CpuIsa::Unknown &&
      request.device.kind == ForecastDevice::Kind::ThisHost) {
    if (std::optional<std::string> dir = find_host_calibration(default_calibration_root(), host_environment())) {
      calibration.emplace(HostCalibration::load(*dir));
      calibration->report["dir"] = *dir;
      return calibration->source_dir;
    }
  }
  if (!request.predictor_dir.empty()) {
    if (!request.device.typed.empty())  // the given set must match
      choose_predictor_set({request.predictor_dir}, request.device, hardware::detect_host());
    return request.predictor_dir;
  }
  std::string root = default_predictor_root();
  std::vector<std::string> sets = shipped_predictor_sets(root);
  if (sets.empty())
    throw InputError("no shipped predictors found" + (root.empty() ? std::string() : " in " + root) +
                     "; train one with `dnncast train --db DATA --out DIR` and pass --predictor DIR");
  SetChoice choice = choose_predictor_set(sets, request.device, hardware::detect_host());
  if (!choice.note.empty()) notes.push_back(choice.note);
  return choice.dir;
}

// Optimizer and precision must be among the trained ones; threads default to the environment's
// (or the largest trained count below it); notes where threads or batch lie outside the training.
void check_trained_range(const ForecastRequest& request, const json& training,
                         const records::EnvironmentRecord& environment, Forecast& result) {
  const std::string& set_dir = result.predictor;
  if (training.contains("optimizers") && !contains(training["optimizers"], name(result.optimizer)))
    throw InputError("predictor " + set_dir + " was trained on optimizers " + training["optimizers"].dump() + ", not " +
                     quote(name(result.optimizer)));
  result.precision = request.precision;
  if (training.contains("precisions") && !contains(training["precisions"], name(result.precision)))
    throw InputError("predictor " + set_dir + " was trained on precisions " + training["precisions"].dump() + ", not " +
                     quote(name(result.precision)));
  int64_t threads = request.threads;
  if (threads == 0) {
    // The environment's thread count, or the largest one the predictor was trained on below it.
    threads = std::max<int64_t>(1, environment.threads);
    if (training.contains("threads") && training["threads"].is_array() && !training["threads"].empty() &&
        !contains(training["threads"], threads)) {
      int64_t best = 0;
      for (const json& trained : training["threads"])
        if (trained.get<int64_t>() <= threads) best = std::max(best, trained.get<int64_t>());
      threads = best > 0 ? best : training["threads"].front().get<int64_t>();
    }
  }
  result.threads = threads;
  if (training.contains("threads") && !contains(training["threads"], threads))
    result.notes.push_back("threads " + std::to_string(threads) + " not among the trained " +
                           training["threads"].dump());
  const int64_t batch = result.batch;
  if (training.contains("batch_max") && batch < training["batch_min"].get<int64_t>())
    result.notes.push_back("batch " + std::to_string(batch) + " is below the trained range " +
                           std::to_string(training["batch_min"].get<int64_t>()) + "-" +
                           std::to_string(training["batch_max"].get<int64_t>()) + ": extrapolated");
}

// Pixels per sample of an image input ("3x224x224"); 0 for anything else.
int64_t image_pixels(const std::string& input) {
  std::vector<int64_t> dims;
  try {
    dims = records::parse_input_text(input);
  } catch (const InputError&) {
    return 0;
  }
  return dims.size() == 3 ? dims[1] * dims[2] : 0;
}

// The largest image input among the trained ones (manifest training.inputs), pixels; 0 when none.
int64_t largest_trained_pixels(const json& training) {
  int64_t largest = 0;
  if (training.contains("inputs") && training["inputs"].is_array())
    for (const json& input : training["inputs"])
      if (input.is_string()) largest = std::max(largest, image_pixels(input.get<std::string>()));
  return largest;
}

// At image inputs as large as the largest trained one, the whole-network learner has the fewest
// runs (56 of 5,099 at 224 px in the shipped set) and the corrected layer-wise model forecasts
// better (`evaluate --split input`: docs/RESULTS.md); past the trained batches too (`--split batch`).
// Inside both the whole-network learner stays: as good or better on the random and family splits,
// and ten times faster (docs/RESULTS.md "Benchmarks"). The corrected forecast: the corrected
// predictor on the featurized row with the layer-wise sum in est.layers_ms; past the trained batches
// held within [t(B), t(B) b / B] of its own forecast at the largest trained batch B.
bool use_corrected(const PredictorSet& set, const std::string& input) {
  if (!set.corrected || !set.layers) return false;
  const int64_t largest = largest_trained_pixels(set.time->manifest().training);
  const int64_t pixels = image_pixels(input);
  return largest > 0 && pixels >= largest;
}

Estimate corrected_forecast(const PredictorSet& set, std::vector<double> row, const features::LayerSites& sites,
                            const features::GraphFeatures& graph, const features::TrainingConfig& config,
                            const features::HardwareFeatures& hardware, Forecast& result) {
  const Predictor& corrected = *set.corrected;
  const bool gpu = !set.environment().gpu_name.empty();
  const int column = features::feature_index("est.layers_ms");
  const double sum = set.layers->iteration_ms(sites, config, gpu);
  row[static_cast<size_t>(column)] = sum;
  Estimate out = corrected.predict_one(row);
  const json& training = corrected.manifest().training;
  std::optional<int64_t> high;
  if (training.contains("batch_max") && training.contains("batch_min"))
    high = bound_from(config.batch, training["batch_min"].get<int64_t>(), training["batch_max"].get<int64_t>());
  const bool largest_input = use_corrected(set, result.input);
  if (high) {
    features::TrainingConfig at = config;
    at.batch = *high;
    std::vector<double> at_row = features::featurize(graph, at, hardware);
    // Below the largest input the forecast at B is the whole-network learner's t(B): held within
    // [t(B), t(B) b / B] too, so that it neither falls nor rises per sample across B (evaluate scores
    // the same).
    const double anchor = largest_input ? 0 : set.time->predict_one(at_row).value;
    at_row[static_cast<size_t>(column)] = set.layers->iteration_ms(sites, at, gpu);
    const double at_high = corrected.predict_one(at_row).value;
    double value = bounded_past_range(*high, at_high, out.value, config.batch);
    if (anchor > 0) value = bounded_past_range(*high, anchor, value, config.batch);
    const double scale = out.value > 0 ? value / out.value : 1.0;
    out = {value, out.low * scale, out.high * scale};
    result.extrapolated_from = *high;
  }
  result.time_model = "corrected layer-wise";
  char text[64];
  std::snprintf(text, sizeof text, "%.4g ms", sum);
  const std::string why = largest_input ? "input " + result.input + " is as large as the largest trained input"
                                        : "batch " + std::to_string(config.batch) + " is past the trained batches";
  result.notes.push_back(why + ": the layer-wise sum (" + text +
                         ") times the learned correction (time_model \"corrected layer-wise\")");
  if (high)
    result.notes.push_back("batch " + std::to_string(config.batch) + " is past the trained range " +
                           training["batch_min"].dump() + "-" + training["batch_max"].dump() +
                           ": held between the forecast at batch " + std::to_string(*high) +
                           " and its time per sample" +
                           (largest_input ? "" : " (the whole-network learner's there, and the corrected model's)"));
  return out;
}

// Past the time predictor's trained batches (forecast/extrapolation.h bound_from).
bool past_trained_batches(const PredictorSet& set, int64_t batch) {
  const json& training = set.time->manifest().training;
  return training.contains("batch_max") && training.contains("batch_min") &&
         bound_from(batch, training["batch_min"].get<int64_t>(), training["batch_max"].get<int64_t>());
}

}  // namespace

Estimate set_time_forecast(const PredictorSet& set, const std::vector<double>& row, const features::LayerSites& sites,
                           const features::GraphFeatures& graph, const features::TrainingConfig& config,
                           const features::HardwareFeatures& hardware, Forecast& result) {
  const Predictor& time = *set.time;
  const json& training = time.manifest().training;
  const bool past_range = past_trained_batches(set, config.batch);
  // The corrected layer-wise model at the largest inputs, and past the trained batches where it
  // scores better than `scaled` (`evaluate --split batch`, docs/RESULTS.md).
  if (use_corrected(set, result.input) || (past_range && set.corrected && set.layers))
    return corrected_forecast(set, row, sites, graph, config, hardware, result);
  int64_t bounded_at = 0;
  LayerScaling scaling;
  if (set.layers && past_range) {
    scaling.model = &*set.layers;
    scaling.sites = &sites;
    scaling.gpu = !set.environment().gpu_name.empty();
  }
  Estimate out = time_forecast(time, time.predict_one(row), graph, config, hardware, &bounded_at,
                               scaling.model != nullptr ? &scaling : nullptr);
  result.time_model = "whole";
  if (bounded_at > 0) {
    result.extrapolated_from = bounded_at;
    const std::string range = training["batch_min"].dump() + "-" + training["batch_max"].dump();
    if (scaling.used) {
      result.time_model = "whole, carried past the trained batches by the layer-wise model";
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.3g", scaling.ratio);
      result.notes.push_back("batch " + std::to_string(config.batch) + " is past the trained range " + range +
                             ": the forecast at batch " + std::to_string(bounded_at) +
                             " times the layer-wise model's ratio between the two batches (" + ratio +
                             "), held between that forecast and its time per sample");
    } else {
      std::string why;
      if (scaling.model != nullptr) {
        char text[96];
        std::snprintf(text, sizeof text, "%.3g, lies outside 1-%.3g", scaling.ratio,
                      static_cast<double>(config.batch) / static_cast<double>(bounded_at));
        why = " (the layer-wise model's ratio between the two batches, " + std::string(text) + ": not used)";
      }
      result.notes.push_back("batch " + std::to_string(config.batch) + " is past the trained range " + range +
                             ": extrapolated, held between the forecast at batch " + std::to_string(bounded_at) +
                             " and its time per sample" + why);
    }
  }
  return out;
}

namespace {

// Notes where the model's input or family lie outside the training.
void check_trained_model(const json& training, const Graph& graph, Forecast& result) {
  if (training.contains("inputs") && !contains(training["inputs"], result.input))
    result.notes.push_back("input " + result.input + " was not among the trained inputs " + training["inputs"].dump());
  if (training.contains("families") && !graph.family.empty() && !contains(training["families"], graph.family))
    result.notes.push_back("family " + graph.family + " is not among the trained families " +
                           training["families"].dump() + ": a zero-shot forecast");
}

// Peak memory: the allocator-exact simulator (docs/MEMORY.md) where it models the configuration;
// the learned memory predictor otherwise. peak_bytes is what `dnncast profile` reports (above the
// parameters, buffers and inputs held before training); peak_total_bytes includes them.
void forecast_peak(const ForecastRequest& request, const Graph& graph, const PredictorSet& set,
                   const std::vector<double>& row, Forecast& result) {
  const bool gpu_environment = !set.environment().gpu_name.empty();
  try {
    memory::MemoryConfig memory_config;
    memory_config.optimizer = result.optimizer;
    memory_config.precision = result.precision;
    memory_config.device = gpu_environment ? Device::Cuda : Device::Cpu;
    memory_config.threads = result.threads;
    memory_config.isa = request.host_isa;  // Unknown: this host's
    memory_config.grad_accum = request.grad_accum;
    memory::MemoryReport report = memory::simulate_memory(graph, memory_config);
    if (!gpu_environment) result.memory_isa = hardware::isa_name(memory::resolve_isa(request.host_isa));
    result.peak_bytes = report.peak_bytes;
    result.peak_bytes_low = report.peak_bytes;
    result.peak_bytes_high = report.peak_bytes;
    result.peak_total_bytes = report.required_bytes;
    result.memory_source = "simulator";
    return;
  } catch (const InputError& error) {
    result.notes.push_back(std::string("memory simulator: ") + error.what() +
                           "; peak memory from the learned predictor");
  }
  if (!set.memory) {
    result.notes.push_back("no memory predictor in " + set.dir);
    return;
  }
  Estimate memory = set.memory->predict_one(row);
  result.peak_bytes = std::llround(memory.value);
  result.peak_bytes_low = std::llround(memory.low);
  result.peak_bytes_high = std::llround(memory.high);
  result.memory_source = set.memory->manifest().learner;
}

constexpr const char* kUnmatchedWidenNote = "the 90% interval is widened ";

// The source set's forecast carried to this host by its calibration (host_calibration.h), its interval
// at least the calibration's spread each way.
Estimate calibrated_time(const HostCalibration& calibration, const PredictorSet& set, const Graph& graph,
                         const features::LayerSites& sites, const features::TrainingConfig& config, Estimate time,
                         Forecast& result) {
  if (!set.layers)
    throw InputError("the calibration at " + calibration.report.value("dir", std::string("?")) + " adapts " + set.dir +
                     ", which has no layer-wise model (time/layers): calibrate again");
  // A configuration timed here: its own measurement, whatever was calibrated after it.
  const auto measured = calibration.whole_ms.find(whole_key(graph, config));
  if (measured != calibration.whole_ms.end()) {
    const double value = measured->second, spread = std::exp(kMeasuredLogSpread);
    result.time_model += ", measured on this host";
    result.calibration = calibration.report.value("dir", std::string());
    char text[160];
    std::snprintf(text, sizeof text,
                  "%.1f ms, the median of its real iterations timed by calibrate (x%.2f each way: "
                  "the noise floor between processes)",
                  value, spread);
    result.notes.push_back("this configuration was measured on this host (" + result.calibration + "): " + text);
    return {value, value / spread, value * spread};
  }
  double covered = 0;
  const double layer_factor =
      calibration.layer_factor(graph, sites, set.layers->row_ms(sites, config, false), &covered);
  // The model's own shift where its iterations were timed here, else the one fitted over every model calibrated.
  const auto own = calibration.model_log_shift.find(graph.architecture_hash());
  const bool own_shift = own != calibration.model_log_shift.end();
  double value =
      own_shift ? time.value * layer_factor * std::exp(own->second) : calibration.shifted(time.value * layer_factor);
  // Whole runs timed here at other sizes (the host check's, the calibrated configurations') carry the share of the
  // configuration's time whose layers were not timed here, the layers timed here the rest, blended in log
  // (host_calibration.h size_anchors).
  const bool anchored = !calibration.size_anchors.empty() && time.value > 0 && value > 0;
  const double intensity = anchored ? arithmetic_intensity(graph) : 0;
  const HostCalibration::Anchoring anchoring = calibration.anchoring(intensity);
  const double anchor = anchored ? calibration.anchored_ratio(time.value, intensity) : 1.0;
  const double share = std::clamp(covered, 0.0, 1.0);
  if (anchored) value = time.value * std::exp(share * std::log(value / time.value) + (1 - share) * std::log(anchor));
  const double scale = time.value > 0 ? value / time.value : 1.0;
  const double spread = std::exp(calibration.log_spread);
  const double widen = anchored ? 1.0 : std::pow(kUnmatchedHostWiden, 1.0 - share);
  if (anchored && anchoring.plane()) {
    // The plane's own error measured on three hosts (kMixLogSpread, kMixFarLogSpread far from every anchor) for the
    // share not timed here, the calibration's spread for the rest: the source's interval, made for the data's host,
    // says nothing of this one.
    const double plane_spread = calibration.plane_log_spread(time.value);
    const double width = std::max(calibration.log_spread, share * calibration.log_spread + (1 - share) * plane_spread);
    time = {value, value * std::exp(-width), value * std::exp(width)};
  } else {
    // What the calibration has not seen keeps the uncertainty of carrying the data to this host: the share of the
    // configuration's time whose layers were not timed here widens the interval as for an unknown host
    // (kUnmatchedHostWiden to the power of that share; issue 52: another model's configurations, layers of other
    // sizes, run 2-3x off the kind scales on a VM whose large layers gained more than its small ones).
    // Where whole runs of this host anchor the rest by the size line, the source's own interval (scaled) held 43 of
    // 48 configurations on two VMs (90%; docs/RESULTS.md): no widening.
    time = {value, std::min(time.low * scale, value / spread) / widen,
            std::max(time.high * scale, value * spread) * widen};
  }
  result.time_model += ", calibrated on this host";
  result.calibration = calibration.report.value("dir", std::string());
  char text[400];
  if (anchored && covered < 0.005)
    std::snprintf(text, sizeof text,
                  "none of its layers timed here: measured / forecast x%.3g, by its %s from %zu whole runs of this "
                  "host (the host check's and the calibrated configurations')",
                  anchor, anchoring.by, anchoring.runs);
  else if (anchored)
    std::snprintf(text, sizeof text,
                  "layers x%.3g with the shift %s for the %.0f%% of its time timed here; for the rest measured / "
                  "forecast x%.3g, by its %s from %zu whole runs of this host: x%.3g in all",
                  layer_factor, own_shift ? "of this model's own runs" : calibration.shift.c_str(), 100 * covered,
                  anchor, anchoring.by, anchoring.runs, scale);
  else
    std::snprintf(text, sizeof text,
                  "layers x%.3g (%.0f%% of their time timed here), whole-iteration shift %s: x%.3g in all; interval "
                  "widened x%.2g each way for the rest",
                  layer_factor, 100 * covered, own_shift ? "this model's own" : calibration.shift.c_str(), scale,
                  widen);
  std::string note = "calibrated on this host (" + result.calibration + ", " +
                     calibration.report.value("created", std::string("undated")) + "): " + text;
  if (anchored && anchoring.plane()) {
    std::snprintf(text, sizeof text, "; interval x%.2f each way (the plane's error where it was measured)",
                  time.high / time.value);
    note += text;
  }
  result.notes.push_back(note);
  return time;
}

// Activation checkpointing (graph/checkpoint.h) for a CPU predictor set, which was trained without it: the
// checkpointed blocks' forward, run once more in the backward pass, as its share of the iteration's FLOPs (forward
// and backward of every node). 0 without checkpointed blocks.
double recompute_share(const Graph& graph) {
  double recomputed = 0, total = 0;
  for (int index = 0; index < graph.size(); ++index) {
    const OpCost cost = node_cost(graph, index);
    total += static_cast<double>(cost.flops_fwd + cost.flops_bwd);
    if (checkpoint_block(graph.node(index)) >= 0) recomputed += static_cast<double>(cost.flops_fwd);
  }
  return total > 0 ? recomputed / total : 0;
}

}  // namespace

Forecast forecast(const ForecastRequest& request) {
  if (request.model.spec.batch < 1)
    throw InputError("--batch must be a positive integer, got " + std::to_string(request.model.spec.batch));
  if (request.epoch_samples < 0) throw InputError("--epoch-samples must be positive");
  if (request.threads < 0) throw InputError("--threads must be positive");
  Forecast result;
  result.model = request.model.name;
  result.batch = request.model.spec.batch;
  result.optimizer = request.optimizer;
  result.epoch_samples = request.epoch_samples;
  std::vector<std::string> choice_notes;  // a fallback set for this host: said by the host match when it is not exact
  std::optional<HostCalibration> calibration;
  result.predictor = predictor_set_dir(request, choice_notes, calibration);

  const std::shared_ptr<const PredictorSet> loaded = cached_predictor_set(result.predictor);
  const PredictorSet& set = *loaded;
  const records::EnvironmentRecord& environment = set.environment();
  const Manifest& time_manifest = set.time->manifest();
  check_trained_range(request, time_manifest.training, environment, result);

  // The model at this batch, built once: featurized for the time forecast, simulated for memory.
  Graph graph = request.model.build();
  result.graph = graph.name;
  result.notes.insert(result.notes.end(), graph.notes.begin(), graph.notes.end());
  features::TrainingConfig config;
  config.batch = result.batch;
  config.optimizer = result.optimizer;
  config.precision = result.precision;
  config.threads = result.threads;
  const features::GraphFeatures graph_part = features::graph_features(graph);
  const features::HardwareFeatures hardware = hardware_of(environment);
  std::vector<double> row = features::featurize(graph_part, config, hardware);
  const std::string input_shape = graph.node(graph.inputs().front()).shape.to_string();
  result.input = input_shape.substr(input_shape.find('x') + 1);
  check_trained_model(time_manifest.training, graph, result);

  // The layer sites, only where a layer-wise model reads them (the forecast past the trained batches, the corrected
  // model, a host calibration): a forecast inside the trained range skips them.
  const bool needs_sites =
      set.layers && (calibration || use_corrected(set, result.input) || past_trained_batches(set, config.batch));
  const features::LayerSites sites = needs_sites ? features::layer_sites(graph) : features::LayerSites{};
  Estimate time = set_time_forecast(set, row, sites, graph_part, config, hardware, result);
  if (calibration) time = calibrated_time(*calibration, set, graph, sites, config, time, result);
  if (const double share = recompute_share(graph); share > 0) {
    time.value *= 1 + share;
    time.low *= 1 + share;
    time.high *= 1 + share;
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100 * share);
    result.notes.push_back(std::string("checkpointing: the predictor was trained without it; the recomputed forward of "
                                       "the checkpointed blocks is added as their share of the iteration's FLOPs (+") +
                           percent + ")");
  }
  if (request.grad_accum > 1) {
    const auto micro_batches = static_cast<double>(request.grad_accum);
    time.value *= micro_batches;
    time.low *= micro_batches;
    time.high *= micro_batches;
    result.notes.push_back("gradient accumulation: " + std::to_string(request.grad_accum) +
                           " times the forecast iteration (the predictor was trained without it and does not separate "
                           "the optimizer step, which runs once: an upper bound by " +
                           std::to_string(request.grad_accum - 1) + " steps)");
  }
  result.time_ms = time.value;
  result.time_ms_low = time.low;
  result.time_ms_high = time.high;
  const Manifest& used = result.time_model == "corrected layer-wise" ? set.corrected->manifest() : time_manifest;
  result.learner = used.learner;
  result.cv_mre = used.cv.value("mre", 0.0);
  result.env = environment_label(environment);
  result.env_hash = environment.hash();
  result.feature_version = features::kFeatureVersion;
  // Was the predictor trained on this host? A CPU set forecasts for this host: a note when not
  // exactly (a GPU set forecasts for its GPU, whatever the host).
  if (calibration) {
    result.env = environment_label(calibration->environment) + ", calibrated from " + result.env;
    result.env_hash = calibration->environment.hash();
    result.host_match = match_host(host_environment(request.host_isa), {calibration->environment});
  } else if (environment.gpu_name.empty()) {
    const records::EnvironmentRecord host = host_environment(request.host_isa);
    result.host_match = match_host(host, time_manifest.environments);
    if (!result.host_match->exact) {
      // The forecast is for this host, from another CPU's predictor: the header says both.
      if (request.device.kind == ForecastDevice::Kind::ThisHost) {
        // The same CPU under another dispatch (ONEDNN_MAX_CPU_ISA, --host-isa) reads the same label twice: the ISA
        // is what differs, so each side says its own.
        std::string here = environment_label(host);
        if (here == result.env) {
          here += " with ISA " + isa_text(host);
          result.env += " with ISA " + isa_text(environment);
        }
        result.env = here + ", from the predictor of " + result.env;
      }
      result.host_match->remedy =
          calibrate_remedy(request.predictor_dir, request.model.name, result.batch, result.input);
      // Carried as is to a CPU it was not trained on, the forecast can be 3x off (docs/RESULTS.md "Intervals
      // on an unmatched host"): its interval says so.
      result.time_ms_low /= kUnmatchedHostWiden;
      result.time_ms_high *= kUnmatchedHostWiden;
      char widen[32];
      std::snprintf(widen, sizeof widen, "%g", kUnmatchedHostWiden);
      result.notes.push_back(std::string(kUnmatchedWidenNote) + widen +
                             "x each way: the predictor was trained on another CPU");
    }
  }
  // Is this host as fast as the data's? The host check's cached result (host_check.h), where it found it off.
  if (!calibration && result.host_match && request.host_check && host_check_enabled() &&
      request.host_isa == hardware::CpuIsa::Unknown && request.device.kind == ForecastDevice::Kind::ThisHost) {
    if (const std::optional<HostCheck> check = cached_host_check(host_check_key(host_environment()));
        check && check->off() && check->predictor == result.predictor) {  // the set the probes were set beside
      // kHostCheckWiden each way, in place of an unknown CPU's widening where that was applied above.
      const double widen = result.host_match->exact ? kHostCheckWiden : kHostCheckWiden / kUnmatchedHostWiden;
      if (!result.host_match->exact)
        result.notes.erase(
            std::remove_if(result.notes.begin(), result.notes.end(),
                           [](const std::string& note) { return note.rfind(kUnmatchedWidenNote, 0) == 0; }),
            result.notes.end());
      result.time_ms *= check->ratio;
      result.time_ms_low *= check->ratio / widen;
      result.time_ms_high *= check->ratio * widen;
      result.host_match->speed = check->to_json();
      result.host_match->speed_note = host_check_note(*check, kHostCheckWiden);
      if (result.host_match->remedy.empty())
        result.host_match->remedy =
            calibrate_remedy(request.predictor_dir, request.model.name, result.batch, result.input);
    }
  }
  // The fallback's note says less than the host match's (which names the fields and the environment used).
  if (!result.host_match || result.host_match->exact)
    result.notes.insert(result.notes.begin(), choice_notes.begin(), choice_notes.end());
  if (request.epoch_samples > 0) {
    const int64_t samples = result.batch * request.grad_accum;  // per optimizer step
    result.epoch_iterations = (request.epoch_samples + samples - 1) / samples;
    result.epoch_s = result.time_ms * static_cast<double>(result.epoch_iterations) / 1000.0;
  }
  forecast_peak(request, graph, set, row, result);
  return result;
}

}  // namespace dnncast::forecast
