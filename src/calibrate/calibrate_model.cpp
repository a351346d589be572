// Calibrating on this host from the user's own layers, and the same fit on recorded measurements of
// another host (calibrate_model.h).
#include "calibrate/calibrate_model.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "calibrate/host_probe.h"
#include "core/error.h"
#include "features/featurizer.h"
#include "forecast/forecast.h"
#include "forecast/host_calibration.h"
#include "forecast/host_check.h"
#include "hardware/hardware.h"
#include "import/graph_json.h"
#include "measure/campaign.h"
#include "measure/layer_bench.h"
#include "measure/plan.h"
#include "models/layer_cases.h"
#include "models/zoo.h"
#include "store/store.h"
#include "study/evaluate.h"
#include "study/training.h"

namespace dnncast::calibrate {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The probe sample every host shares: the shapes of the shipped layer benchmarks (docs/DATASET.md), in order.
models::SampleOptions probe_sample_options() {
  models::SampleOptions sample;
  sample.count = 4000;
  sample.seed = 20261202;
  sample.max_gflops = 0.5;
  return sample;
}

forecast::PredictorSet load_source_set(const std::string& predictor_dir) {
  std::string dir = predictor_dir;
  if (dir.empty()) {
    std::vector<std::string> sets = forecast::shipped_predictor_sets(forecast::default_predictor_root());
    if (sets.empty()) throw InputError("no shipped predictors found; pass --predictor DIR");
    dir = forecast::choose_predictor_set(sets, forecast::ForecastDevice{}, hardware::detect_host()).dir;
  } else if (forecast::is_host_calibration(dir)) {
    throw InputError("--predictor " + dir + " is a host calibration: give the predictor set it adapts (" +
                     forecast::HostCalibration::load(dir).source_dir + ")");
  }
  forecast::PredictorSet set = forecast::load_predictor_set(dir);
  if (!set.layers)
    throw InputError("predictor " + dir + " has no layer-wise model (time/layers, `dnncast train --layer-bench`): " +
                     "a host calibration scales its layers");
  if (!set.environment().gpu_name.empty()) throw InputError("predictor " + dir + " forecasts a GPU, not a CPU");
  set.dir = fs::absolute(dir).lexically_normal().string();
  return set;
}

// The source set's forecast of one configuration as `predict` makes it, and its layer rows.
struct SourceForecast {
  double time_ms = 0, low_ms = 0, high_ms = 0;  // with its 90% interval
  features::LayerSites sites;
  std::vector<double> row_ms;  // the layer-wise model's rows (nodes, then the optimizer)
};

SourceForecast source_forecast(const forecast::PredictorSet& set, const features::LayerSites& sites,
                               const features::GraphFeatures& graph, const features::TrainingConfig& config,
                               const std::string& input) {
  const features::HardwareFeatures hardware = forecast::hardware_of(set.environment());
  std::vector<double> row = features::featurize(graph, config, hardware);
  forecast::Forecast scratch;
  scratch.input = input;
  SourceForecast result;
  const forecast::Estimate time = forecast::set_time_forecast(set, row, sites, graph, config, hardware, scratch);
  result.time_ms = time.value;
  result.low_ms = time.low;
  result.high_ms = time.high;
  result.sites = sites;
  result.row_ms = set.layers->row_ms(sites, config, false);
  return result;
}

// Each ok layer benchmark of `records` beside the source layer model's forecast of it.
std::vector<forecast::LayerRatio> layer_ratios(const std::vector<records::LayerBenchRecord>& records,
                                               const forecast::LayerModel& layers) {
  std::vector<features::LayerSites> sites;
  std::vector<forecast::LayerExample> examples = forecast::bench_examples(records, "warm", sites);
  std::vector<forecast::LayerRatio> ratios;
  for (const forecast::LayerExample& example : examples) {
    if (example.sites->nodes.empty()) continue;
    forecast::LayerRatio ratio;
    ratio.kind = forecast::site_kinds(*example.sites).front();
    ratio.measured_ms = example.ms.front();
    ratio.source_ms = layers.row_ms(*example.sites, example.config, false).front();
    ratios.push_back(ratio);
  }
  return ratios;
}

std::string input_without_batch(const Graph& graph) {
  const std::string shape = graph.node(graph.inputs().front()).shape.to_string();
  const size_t cut = shape.find('x');
  return cut == std::string::npos ? shape : shape.substr(cut + 1);
}

void pin_to(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw InputError("--cpus: cannot pin to " + measure::format_cpu_list(cpus));
}

// Measures `batch` of the model (its graph JSON at `graph_path`) with the campaign runner into `db_path` (the fit
// reads every run there back).
void measure_whole(const std::string& graph_path, int64_t batch, int64_t timed, const ModelCalibrateOptions& options,
                   const std::string& db_path, double timeout_s) {
  json plan_document = {
      {"format", "dnncast-plan/1"},
      {"name", "calibrate-whole"},
      {"repeats", 1},
      {"measure",
       {{"time_budget_s", 1},
        {"warmup_budget_s", 1},
        {"target_rel_ci", 0.05},
        {"min_iterations", timed},
        {"timeout_s", std::max(30.0, timeout_s)}}},
      {"optimizers", {name(options.optimizer)}},
      {"precisions", {"fp32"}},
      {"threads", {options.threads}},
      {"groups",
       {{{"name", "the model calibrated"}, {"models", {graph_path}}, {"batches", {batch}}, {"sampling", "grid"}}}}};
  measure::Plan plan = measure::parse_plan(plan_document, "calibrate", "");
  measure::CampaignOptions campaign;
  campaign.db_path = db_path;
  campaign.cpus = options.cpus;
  campaign.out = options.out;
  campaign.progress_bar = 0;
  measure::run_campaign(plan, campaign);
}

// Whether the host check set its probes beside `set` (the same predictor folder, however named).
bool checked_against(const forecast::HostCheck& check, const forecast::PredictorSet& set) {
  std::error_code error;
  return fs::weakly_canonical(check.predictor, error) == fs::weakly_canonical(set.dir, error);
}

// This host's check (forecast/host_check.h), cached per boot or timed now (seconds; not under a budget below a
// minute, which it would take a large part of), where it set its probes beside `set`: it carries the models this
// calibration does not time. nullopt where it is switched off or cannot run.
std::optional<forecast::HostCheck> host_check_for(const forecast::PredictorSet& set, double minutes, std::FILE* out) {
  if (!forecast::host_check_enabled()) return std::nullopt;
  std::optional<forecast::HostCheck> check =
      forecast::cached_host_check(forecast::host_check_key(forecast::host_environment()));
  if (!check && minutes < 1) return std::nullopt;
  if (!check) {
    try {
      std::fprintf(out, "host check: timing %zu small configurations of the shipped data here (once per boot)\n",
                   forecast::host_check_probes().size());
      check = run_host_check();
    } catch (const InputError& error) {
      std::fprintf(out, "host check: %s; other models keep the calibrated model's layer scales\n", error.what());
      return std::nullopt;
    }
    try {
      forecast::save_host_check(*check);
    } catch (const InputError& error) {
      std::fprintf(out, "host check: not cached (%s)\n", error.what());
    }
  }
  if (!checked_against(*check, set)) return std::nullopt;
  return check;
}

// The host check's fields of a calibration (host_calibration.h): its ratio and its probes' geometric-mean forecast.
void record_host_check(const forecast::HostCheck& check, forecast::HostCalibration& calibration) {
  double log_sum = 0;
  int64_t count = 0;
  for (const forecast::HostProbe& probe : check.probes)
    if (probe.forecast_ms > 0) log_sum += std::log(probe.forecast_ms), ++count;
  if (count == 0 || !(check.ratio > 0)) return;
  calibration.host_check_ratio = check.ratio;
  calibration.host_check_source_ms = std::exp(log_sum / static_cast<double>(count));
  calibration.host_check_checked = check.checked;
  // Each probe apart with its network's arithmetic intensity (the mix anchors); none where a probe will not build.
  calibration.host_check_probes.clear();
  for (const forecast::HostProbe& probe : check.probes) {
    if (!(probe.forecast_ms > 0 && probe.measured_ms > 0)) continue;
    try {
      models::ModelSpec spec;
      spec.batch = probe.batch;
      spec.input = records::parse_input_text(probe.input);
      const double intensity = forecast::arithmetic_intensity(import::load_model(probe.model, spec));
      if (intensity > 0)
        calibration.host_check_probes.push_back({probe.forecast_ms, probe.measured_ms / probe.forecast_ms, intensity});
    } catch (const InputError&) {
      calibration.host_check_probes.clear();
      return;
    }
  }
}

// The folder a calibration is kept in: OUT, else the host's under the calibrations root; created.
std::string calibration_dir(const std::string& out, const records::EnvironmentRecord& host) {
  std::string out_dir = out;
  if (out_dir.empty()) {
    if (forecast::default_calibration_root().empty())
      throw InputError("no folder for calibrations: set HOME or DNNCAST_CALIBRATIONS, or give --out");
    out_dir = forecast::default_calibration_root() + "/" + host.hash();
  }
  std::error_code error;
  fs::create_directories(out_dir, error);
  if (error) throw InputError("cannot create " + out_dir + ": " + error.message());
  return out_dir;
}

// The kind scales of `calibration` from the layers timed in DB_PATH: the model's own layers first; the probe
// layers only for kinds it has too few of (the cross-host evaluation: probes of other shapes carry a host's
// layer speed less well than the model's own).
void fit_layer_scales(const std::string& db_path, const forecast::PredictorSet& set,
                      forecast::HostCalibration& calibration) {
  store::Store store = store::Store::open(db_path, store::Database::Mode::ReadOnly);
  std::vector<records::LayerBenchRecord> own, probe;
  for (records::LayerBenchRecord& record : store.layer_benchmarks())
    (record.plan == "calibrate-probes" ? probe : own).push_back(std::move(record));
  const std::vector<forecast::LayerRatio> own_ratios = layer_ratios(own, *set.layers);
  const std::vector<forecast::LayerRatio> probe_ratios = layer_ratios(probe, *set.layers);
  if (own_ratios.empty()) {
    forecast::fit_kind_scales(probe_ratios, calibration);
    return;
  }
  forecast::fit_kind_scales(own_ratios, calibration);
  if (probe_ratios.empty()) return;
  forecast::HostCalibration probes;
  forecast::fit_kind_scales(probe_ratios, probes);
  for (const auto& [kind, scale] : probes.kind_scale)
    if (!calibration.kind_scale.count(kind)) {
      calibration.kind_scale[kind] = scale;
      calibration.kind_layers[kind] = probes.kind_layers[kind];
    }
}

// calibration.layer_ms: every layer timed ok in DB_PATH, by its case key.
void load_layer_ms(const std::string& db_path, forecast::HostCalibration& calibration) {
  store::Store store = store::Store::open(db_path, store::Database::Mode::ReadOnly);
  for (const records::LayerBenchRecord& record : store.layer_benchmarks(false))
    if (record.status == "ok" && record.forward_ms && record.backward_ms)
      calibration.layer_ms[record.key] = *record.forward_ms + *record.backward_ms;
}

// Every real iteration timed in DB_PATH beside the source forecast scaled by the layer factor, for the
// whole-iteration shift; each also as a row of `report`. Fills calibration.layer_ms with every timed layer. A run that
// shared its CPU with another process (records::kSharedCpuWaitShare) is left out, a row of `left_out`.
std::vector<forecast::WholeRatio> whole_ratios(const std::string& db_path, const forecast::PredictorSet& set,
                                               forecast::HostCalibration& calibration, json& report, json& left_out) {
  std::vector<forecast::WholeRatio> whole;
  std::map<std::string, std::vector<double>> model_logs;  // architecture hash -> log(measured / adjusted)
  load_layer_ms(db_path, calibration);
  store::Store store = store::Store::open(db_path, store::Database::Mode::ReadOnly);
  std::map<std::string, std::string> sources;  // network hash -> its graph file
  for (const records::NetworkRecord& network : store.networks(false)) sources[network.hash] = network.source;
  for (const records::RunRecord& run : store.runs()) {
    if (run.plan != "calibrate-whole" || run.result.status != "ok" || !run.result.time_ms_median) continue;
    if (run.result.cpu_wait_share.value_or(0) > records::kSharedCpuWaitShare) {
      left_out.push_back({{"network", run.network_hash},
                          {"batch", run.config.batch},
                          {"input", run.config.input_text()},
                          {"measured_ms", *run.result.time_ms_median},
                          {"cpu_wait_share", *run.result.cpu_wait_share}});
      continue;
    }
    const std::string& source = sources[run.network_hash];
    if (source.rfind("file:", 0) != 0) continue;
    models::ModelSpec spec;
    spec.batch = run.config.batch;
    // The graph file calibrate wrote beside its dataset; found there again when the folder has moved (a copy kept).
    std::string graph_file = source.substr(5);
    if (const fs::path beside = fs::path(db_path).parent_path() / fs::path(graph_file).filename();
        !fs::exists(graph_file) && fs::exists(beside))
      graph_file = beside.string();
    const Graph at = import::load_model(graph_file, spec);
    features::TrainingConfig at_config = study::training_config_of(run.config);
    const SourceForecast forecast = source_forecast(set, features::layer_sites(at), features::graph_features(at),
                                                    at_config, run.config.input_text());
    double covered = 0;
    const double factor = calibration.layer_factor(at, forecast.sites, forecast.row_ms, &covered);
    whole.push_back(
        {*run.result.time_ms_median, forecast.time_ms * factor, forecast.time_ms, forecast::arithmetic_intensity(at)});
    calibration.whole_ms[forecast::whole_key(at, at_config)] = *run.result.time_ms_median;  // the latest run
    model_logs[at.architecture_hash()].push_back(std::log(*run.result.time_ms_median / (forecast.time_ms * factor)));
    report.push_back({{"model", at.name},
                      {"batch", run.config.batch},
                      {"input", run.config.input_text()},
                      {"measured_ms", *run.result.time_ms_median},
                      {"source_ms", forecast.time_ms},
                      {"layer_factor", factor},
                      {"layers_timed_share", covered}});
  }
  for (const auto& [hash, logs] : model_logs) {
    double sum = 0;
    for (double value : logs) sum += value;
    calibration.model_log_shift[hash] = sum / static_cast<double>(logs.size());
  }
  return whole;
}

// The fit on everything DB_PATH holds (the layers and real iterations of every model calibrated into its folder so
// far): the kind scales, then the whole-iteration shift and the size anchors. Returns the whole runs, one report row
// each; the runs left out for sharing their CPU go into `report` ("whole_runs_left_out") where there are any.
json fit_from_dataset(const std::string& db_path, const forecast::PredictorSet& set,
                      forecast::HostCalibration& calibration, json& report) {
  fit_layer_scales(db_path, set, calibration);
  json whole_report = json::array(), left_out = json::array();
  forecast::fit_whole_shift(whole_ratios(db_path, set, calibration, whole_report, left_out), calibration);
  report.erase("whole_runs_left_out");
  if (!left_out.empty()) report["whole_runs_left_out"] = left_out;
  return whole_report;
}

// The report's note where no real iteration carries the fit (none where one does).
void note_whole_runs(const json& whole_runs, json& report) {
  report.erase("note");
  if (!whole_runs.empty()) return;
  report["note"] = report.contains("whole_runs_left_out")
                       ? "every real iteration timed shared its CPU with another process and is left out: the "
                         "forecast carries the layers' scale alone (calibrate again when the CPU is free)"
                       : "no real iteration fitted the budget: the forecast carries the layers' scale alone (give "
                         "more --minutes)";
}

// What a fitted calibration adds to the report printed (not kept in its file's report).
void add_fitted(const forecast::HostCalibration& calibration, json& report) {
  // Which rule carries the others (a network's intensity given: the plane needs no particular one).
  const forecast::HostCalibration::Anchoring anchoring = calibration.anchoring(100);
  report["anchors"] = {{"by", anchoring.by},
                       {"whole_runs", anchoring.runs},
                       {"host_check_probes", calibration.host_check_probes.size()}};
  report["kind_scale"] = calibration.kind_scale;
  report["kind_layers"] = calibration.kind_layers;
  report["shift"] = {
      {"map", calibration.shift}, {"log_intercept", calibration.log_intercept}, {"log_slope", calibration.log_slope}};
}

}  // namespace

json calibrate_model(const ModelCalibrateOptions& options) {
  if (!(options.minutes >= 0.1) || options.minutes > 240)
    throw InputError("--minutes must be from 0.1 to 240, got " + json(options.minutes).dump());
  if (options.threads < 1) throw InputError("--threads must be at least 1");
  if (options.spec.batch < 1) throw InputError("--batch must be a positive integer");
  const Clock::time_point start = Clock::now();
  const double budget_s = options.minutes * 60;
  forecast::PredictorSet set = load_source_set(options.predictor_dir);
  const Graph graph = import::load_model(options.model, options.spec);
  const records::EnvironmentRecord host = forecast::host_environment();
  const std::string out_dir = calibration_dir(options.out_dir, host);
  const std::string db_path = out_dir + "/calibration.db";
  const std::string graph_path = out_dir + "/model-" + graph.architecture_hash() + ".json";
  {
    std::ofstream graph_file(graph_path);
    graph_file << import::write_graph_json(graph);
    if (!graph_file) throw InputError("cannot write " + graph_path);
  }
  pin_to(options.cpus);
  const std::optional<forecast::HostCheck> check = host_check_for(set, options.minutes, options.out);

  // 1. The model's own layers.
  std::vector<models::LayerCase> cases;
  for (int node = 0; node < graph.size(); ++node)
    if (!models::layer_kind(graph, node).empty())
      cases.push_back(models::case_of_node(graph, node, "calibrate:" + graph.name));
  cases = models::unique_cases(std::move(cases));
  measure::LayerBenchOptions bench;
  bench.db_path = db_path;
  bench.threads = options.threads;
  bench.plan = "calibrate-layers";
  bench.out = options.out;
  bench.slice = 5;
  // 40% of the budget at most, no slice past it: at batch 32 and 224 px a slice of 5 layers takes 20 s on the Intel
  // Xeon, and one started at 39 s of 48 left `make demo`'s 2 minutes too little for a real iteration of its batch
  // (issue 52, session 40).
  bench.stop_after_s = 0.4 * budget_s;
  bench.stop_is_deadline = true;
  const measure::LayerBenchSummary model_layers = measure::run_layer_bench(cases, bench);

  // What the source says of the requested configuration, and the layers measured so far scaled.
  features::TrainingConfig config;
  config.batch = options.spec.batch;
  config.optimizer = options.optimizer;
  config.threads = options.threads;
  const std::string input = input_without_batch(graph);
  const features::GraphFeatures graph_part = features::graph_features(graph);
  const SourceForecast requested = source_forecast(set, features::layer_sites(graph), graph_part, config, input);
  // The kind scales from the model's own layers; the probe layers only for kinds it has too few of (the
  // cross-host evaluation: probes of other shapes carry a host's layer speed less well than the model's own).
  forecast::HostCalibration calibration;
  calibration.environment = host;
  calibration.source_dir = set.dir;
  fit_layer_scales(db_path, set, calibration);

  // 2. Real iterations: the requested batch when at least one timed iteration of it fits what is left, else the
  // largest smaller batch that does (the requested batch's own run makes its forecast its measurement: `make demo`'s
  // 2 minutes on a host where an iteration takes 17 s, issue 52); three timed iterations where they fit. An iteration
  // is estimated from the model's layers just timed here (their measured times, the source's rows they do not cover
  // scaled) times 1.3 for what a real iteration adds to its layers (1.10x on the EPYC, 1.29x on the Intel Xeon), and
  // sized at 1.3x that again: a real iteration has run at up to 1.71x its layers (the Zen 4's AVX2 dispatch, 15.2 s
  // against 8.9 s), and a run cut by its timeout is lost whole (`make demo` there, session 34). A measurement adds
  // two warm-up iterations and about 7 s (process start, the first iteration's page faults, the probes: 91.7 s for
  // 5 iterations of 17.05 s on the Zen 4). It may take what is left of the budget: the probe layers after it are
  // what gives way.
  load_layer_ms(db_path, calibration);
  const double iteration_s =
      requested.time_ms * calibration.layer_factor(graph, requested.sites, requested.row_ms) * 1.3 * 1.3 / 1000;
  const double left_s = budget_s - seconds_since(start);
  int64_t batch = options.spec.batch;
  auto timed_fitting = [&](int64_t at) {
    const double each_s = iteration_s * static_cast<double>(at) / static_cast<double>(options.spec.batch);
    return each_s > 0 ? static_cast<int64_t>(std::floor((0.95 * left_s - 7) / each_s)) - 2 : 3;
  };
  while (batch > 1 && timed_fitting(batch) < 1) batch = std::max<int64_t>(1, batch / 2);
  if (const int64_t timed = std::min<int64_t>(3, timed_fitting(batch)); timed >= 1)
    measure_whole(graph_path, batch, timed, options, db_path, left_s);

  // 3. The shared probe layers with the time left (a slice of 5 takes a few seconds).
  const double probe_left_s = budget_s - seconds_since(start) - 10;
  measure::LayerBenchSummary probes;
  if (probe_left_s > 5) {
    bench.plan = "calibrate-probes";
    bench.stop_after_s = probe_left_s;
    probes = measure::run_layer_bench(models::sample_layer_cases(probe_sample_options()), bench);
  }

  if (check) record_host_check(*check, calibration);
  // The fit, on everything this calibration's dataset holds (a later `calibrate` of another model adds to it).
  json left_out = json::object();
  const json whole_report = fit_from_dataset(db_path, set, calibration, left_out);
  double covered = 0;
  const double factor = calibration.layer_factor(graph, requested.sites, requested.row_ms, &covered);
  json report = {
      {"created", records::utc_now()},
      {"model", options.model},
      {"batch", options.spec.batch},
      {"input", input},
      {"threads", options.threads},
      {"minutes", options.minutes},
      {"wall_s", seconds_since(start)},
      {"source", set.dir},
      {"model_layers", {{"cases", cases.size()}, {"measured", model_layers.measured + model_layers.done_before}}},
      {"probe_layers", probes.measured + probes.done_before},
      {"whole_runs", whole_report},
      {"requested",
       {{"source_ms", requested.time_ms},
        {"layer_factor", factor},
        {"layers_timed_share", covered},
        {"calibrated_ms", calibration.shifted(requested.time_ms * factor)}}},
      {"db", db_path}};
  if (check)
    report["host_check"] = {{"ratio", check->ratio},
                            {"low", check->low},
                            {"high", check->high},
                            {"source_ms", calibration.host_check_source_ms},
                            {"checked", check->checked}};
  report.update(left_out);
  note_whole_runs(whole_report, report);
  calibration.report = report;
  calibration.save(out_dir);
  report["dir"] = out_dir;
  add_fitted(calibration, report);
  return report;
}

json refit_calibration(const std::string& dir) {
  const forecast::HostCalibration before = forecast::HostCalibration::load(dir);
  const std::string db_path = dir + "/calibration.db";
  if (!fs::exists(db_path))
    throw InputError("--refit " + dir + ": no calibration.db there (nothing measured to refit)");
  forecast::PredictorSet set = load_source_set(before.source_dir);
  forecast::HostCalibration calibration;
  calibration.environment = before.environment;
  calibration.source_dir = set.dir;
  calibration.host_check_ratio = before.host_check_ratio;
  calibration.host_check_source_ms = before.host_check_source_ms;
  calibration.host_check_checked = before.host_check_checked;
  calibration.host_check_probes = before.host_check_probes;
  // A calibration made before it recorded the host check (or its probes one by one), refitted on its own host: this
  // boot's cached check (for the probes, the same check it recorded).
  if (calibration.host_check_probes.empty() && forecast::host_check_enabled() &&
      forecast::host_environment().hash() == before.environment.hash()) {
    const std::optional<forecast::HostCheck> check =
        forecast::cached_host_check(forecast::host_check_key(forecast::host_environment()));
    if (check && checked_against(*check, set) &&
        (calibration.host_check_ratio == 0 || check->checked == calibration.host_check_checked))
      record_host_check(*check, calibration);
  }
  calibration.report = before.report;
  json whole_runs = fit_from_dataset(db_path, set, calibration, calibration.report);
  note_whole_runs(whole_runs, calibration.report);
  calibration.report["whole_runs"] = std::move(whole_runs);
  calibration.report["refitted"] = records::utc_now();
  calibration.report.erase("dir");
  calibration.save(dir);
  json report = calibration.report;
  report["dir"] = fs::absolute(dir).lexically_normal().string();
  add_fitted(calibration, report);
  return report;
}

namespace {

// What one cross-host calibration took of the target's recorded measurements.
struct CrossHostDraw {
  std::vector<size_t> whole;  // samples measured as whole runs
  int64_t probe_layers = 0;
  double layers_s = 0, whole_s = 0;
};

// Mean |predicted - measured| / measured over the samples not taken, percent.
double mre_pct(const std::vector<double>& predicted, const std::vector<double>& measured,
               const std::vector<char>& taken) {
  double sum = 0;
  int64_t count = 0;
  for (size_t k = 0; k < measured.size(); ++k) {
    if (taken[k]) continue;
    sum += std::abs(predicted[k] - measured[k]) / measured[k];
    ++count;
  }
  return count > 0 ? 100 * sum / static_cast<double>(count) : 0;
}

// Whole runs spanning the source forecast's range within `budget_s` of recorded wall time: the samples
// nearest the median, then the quartiles, the octiles, ... of log forecast, each the nearest one that fits.
std::vector<size_t> spanning_runs(const std::vector<double>& forecast_ms, const std::vector<double>& cost_s,
                                  double budget_s, double& spent_s) {
  std::vector<size_t> order(forecast_ms.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return forecast_ms[a] < forecast_ms[b]; });
  std::vector<size_t> picked;
  std::vector<char> used(order.size(), 0);
  spent_s = 0;
  for (int level = 1; level <= 6; ++level) {
    const int parts = 1 << level;
    for (int part = 1; part < parts; part += 2) {
      const double target = static_cast<double>(part) / parts * static_cast<double>(order.size() - 1);
      int best = -1;
      for (size_t rank = 0; rank < order.size(); ++rank) {
        if (used[rank] || spent_s + cost_s[order[rank]] > budget_s) continue;
        if (best < 0 || std::abs(static_cast<double>(rank) - target) < std::abs(static_cast<double>(best) - target))
          best = static_cast<int>(rank);
      }
      if (best < 0) return picked;
      used[static_cast<size_t>(best)] = 1;
      spent_s += cost_s[order[static_cast<size_t>(best)]];
      picked.push_back(order[static_cast<size_t>(best)]);
    }
  }
  return picked;
}

// Warm forward + backward of every ok benchmark of a dataset, by case key; empty for "".
std::map<std::string, double> bench_ms_by_key(const std::string& path) {
  std::map<std::string, double> result;
  if (path.empty()) return result;
  store::Store store = store::Store::open(path, store::Database::Mode::ReadOnly);
  for (const records::LayerBenchRecord& record : store.layer_benchmarks(false))
    if (record.status == "ok" && record.forward_ms && record.backward_ms)
      result[record.key] = *record.forward_ms + *record.backward_ms;
  return result;
}

// The share of a configuration's layer time the target must have timed for the own-layers score.
constexpr double kOwnCovered = 0.8;

std::string run_key(const std::string& network_hash, const records::RunConfig& config) {
  return network_hash + "|" + std::to_string(config.batch) + "|" + config.input_text() + "|" +
         std::to_string(config.seq_len) + "|" + name(config.optimizer) + "|" + std::to_string(config.threads);
}

}  // namespace

namespace {

// What the cross-host evaluation knows of the target's configurations: measured and source times, the cost of
// measuring each, the source forecast (with its layer sites), each zoo configuration's graph, and the target's
// layer benchmarks (probes in the order every host measured them; every layer's time by case key).
struct CrossHostRows {
  size_t count = 0;
  std::vector<double> measured, source, cost;
  std::vector<SourceForecast> forecasts;
  std::vector<std::optional<Graph>> graphs;
  std::map<std::string, double> target_bench;
  std::vector<records::LayerBenchRecord> probe_records;
};

// One budget of the cross-host evaluation: probe layers with half of it, real runs with the rest, and the
// forecasts of the configurations not measured scored with none, each part, and both.
json budget_result(const forecast::PredictorSet& set, const CrossHostRows& rows, double minutes) {
  const size_t count = rows.count;
  const double budget_s = minutes * 60;
  // Probe layers first (half the budget), in the order every host measured them.
  std::vector<records::LayerBenchRecord> taken_layers;
  double layers_s = 0;
  for (const records::LayerBenchRecord& record : rows.probe_records) {
    if (layers_s + *record.wall_s > budget_s / 2) break;
    layers_s += *record.wall_s;
    taken_layers.push_back(record);
  }
  forecast::HostCalibration calibration;
  forecast::fit_kind_scales(layer_ratios(taken_layers, *set.layers), calibration);
  std::vector<double> factor(count), layered(count);
  for (size_t k = 0; k < count; ++k) {
    factor[k] = calibration.layer_factor(rows.forecasts[k].sites, rows.forecasts[k].row_ms);
    layered[k] = rows.source[k] * factor[k];
  }
  double whole_s = 0;
  const std::vector<size_t> whole = spanning_runs(rows.source, rows.cost, budget_s - layers_s, whole_s);
  std::vector<char> taken(count, 0);
  std::vector<forecast::WholeRatio> shift_runs, both_runs;
  std::vector<double> intensity(count, 0);  // 0 where the configuration is not a zoo network's
  for (size_t k = 0; k < count; ++k)
    if (rows.graphs[k]) intensity[k] = forecast::arithmetic_intensity(*rows.graphs[k]);
  for (size_t k : whole) {
    taken[k] = 1;
    shift_runs.push_back({rows.measured[k], rows.source[k], rows.source[k], intensity[k]});
    both_runs.push_back({rows.measured[k], layered[k]});
  }
  forecast::HostCalibration shift_only = calibration;
  forecast::fit_whole_shift(shift_runs, shift_only);
  // The whole runs as size anchors (host_calibration.h size_anchors), as `calibrate MODEL` carries the configurations
  // none of whose layers it timed: measured / source from the line through them (log-log) at each one's source
  // forecast.
  // The same runs as mix anchors (a plane in arithmetic intensity and size, host_calibration.h mix_anchors) where
  // they make one, else the size line.
  std::vector<double> anchored(count), mixed(count);
  for (size_t k = 0; k < count; ++k) {
    anchored[k] = rows.source[k] * shift_only.anchored_ratio(rows.source[k]);
    mixed[k] = rows.source[k] * shift_only.anchored_ratio(rows.source[k], intensity[k]);
  }
  forecast::fit_whole_shift(both_runs, calibration);
  // Each configuration's own layers, as `calibrate MODEL` times them for the model asked about: the probe scales
  // with every layer the target timed in place of its kind's scale (HostCalibration::layer_factor), shifted by
  // the whole runs; scored on the configurations whose layers the target timed (at least 80% of their time).
  json own_report = json::object();
  {
    forecast::HostCalibration own = calibration;
    own.layer_ms = rows.target_bench;
    std::vector<double> own_factor(count, 0), covered(count, 0);
    for (size_t k = 0; k < count; ++k)
      if (rows.graphs[k])
        own_factor[k] =
            own.layer_factor(*rows.graphs[k], rows.forecasts[k].sites, rows.forecasts[k].row_ms, &covered[k]);
    std::vector<forecast::WholeRatio> runs;
    for (size_t k : whole)
      if (covered[k] >= kOwnCovered) runs.push_back({rows.measured[k], rows.source[k] * own_factor[k]});
    forecast::fit_whole_shift(runs, own);
    forecast::HostCalibration shift_alone;
    forecast::fit_whole_shift(shift_runs, shift_alone);
    std::vector<double> predicted(count), untouched(count), shifted_source(count);
    std::vector<char> skip(count, 1);
    for (size_t k = 0; k < count; ++k) {
      if (covered[k] < kOwnCovered || taken[k]) continue;
      skip[k] = 0;
      predicted[k] = own.shifted(rows.source[k] * own_factor[k]);
      untouched[k] = rows.source[k];
      shifted_source[k] = shift_alone.shifted(rows.source[k]);
    }
    const int64_t scored = std::count(skip.begin(), skip.end(), 0);
    if (scored > 0)
      own_report = {{"scored", scored},
                    {"shift_runs", runs.size()},
                    {"mre_pct", mre_pct(predicted, rows.measured, skip)},
                    {"none_mre_pct", mre_pct(untouched, rows.measured, skip)},
                    {"shift_only_mre_pct", mre_pct(shifted_source, rows.measured, skip)}};
  }
  std::vector<double> shifted(count), both(count);
  int64_t inside = 0, evaluated = 0;
  for (size_t k = 0; k < count; ++k) {
    shifted[k] = shift_only.shifted(rows.source[k]);
    both[k] = calibration.shifted(layered[k]);
    if (taken[k]) continue;
    ++evaluated;
    const double spread = std::exp(calibration.log_spread);
    inside += rows.measured[k] >= both[k] / spread && rows.measured[k] <= both[k] * spread;
  }
  return {{"minutes", minutes},
          {"probe_layers", taken_layers.size()},
          {"layers_s", layers_s},
          {"whole_runs", whole.size()},
          {"whole_s", whole_s},
          {"kind_scale", calibration.kind_scale},
          {"shift",
           {{"map", calibration.shift},
            {"log_intercept", calibration.log_intercept},
            {"log_slope", calibration.log_slope}}},
          {"evaluated", evaluated},
          {"mre_pct",
           {{"none", mre_pct(rows.source, rows.measured, taken)},
            {"shift_only", whole.empty() ? json(nullptr) : json(mre_pct(shifted, rows.measured, taken))},
            {"anchored", whole.empty() ? json(nullptr) : json(mre_pct(anchored, rows.measured, taken))},
            {"mixed", whole.empty() ? json(nullptr) : json(mre_pct(mixed, rows.measured, taken))},
            {"layers_only", mre_pct(layered, rows.measured, taken)},
            {"both", mre_pct(both, rows.measured, taken)}}},
          {"own_layers", own_report},
          {"within_interval_pct",
           evaluated > 0 ? 100.0 * static_cast<double>(inside) / static_cast<double>(evaluated) : 0.0}};
}

}  // namespace

json calibrate_cross_host(const CrossHostOptions& options) {
  if (options.minutes.empty()) throw InputError("--minutes: give at least one budget");
  for (double minutes : options.minutes)
    if (!(minutes > 0) || minutes > 240) throw InputError("--minutes must be in (0, 240], got " + json(minutes).dump());
  forecast::PredictorSet set = load_source_set(options.predictor_dir);
  const records::EnvironmentRecord& source_environment = set.environment();
  // The target's runs, featurized as `predict` featurizes them (with the source's environment), and what each took.
  study::TableOptions table_options;
  table_options.environment = options.environment;
  table_options.all_layer_sites = true;
  CrossHostRows rows;
  std::map<std::string, double> wall_s;
  std::vector<records::LayerBenchRecord>& probe_records = rows.probe_records;
  {
    store::Store store = store::Store::open(options.db_path, store::Database::Mode::ReadOnly);
    for (const records::EnvironmentRecord& environment : store.environments())
      table_options.featurize_as[environment.hash()] = source_environment;
    std::map<std::string, int64_t> counts;
    for (const records::RunRecord& run : store.runs()) {
      if (run.result.status != "ok" || !run.result.wall_s) continue;
      const std::string key = run_key(run.network_hash, run.config);
      wall_s[key] += *run.result.wall_s;
      ++counts[key];
    }
    for (auto& [key, total] : wall_s) total /= static_cast<double>(counts[key]);
    store::Store layers = store::Store::open(options.layers_path, store::Database::Mode::ReadOnly);
    for (records::LayerBenchRecord& record : layers.layer_benchmarks())
      if (record.origin == "sample" && record.status == "ok" && record.wall_s)
        probe_records.push_back(std::move(record));
  }
  if (probe_records.empty()) throw InputError(options.layers_path + ": no sampled layer benchmark measured ok");
  study::TrainingTable table = study::load_training_table(options.db_path, table_options);
  const size_t count = rows.count = table.samples.size();
  std::vector<double>&measured = rows.measured, &source = rows.source, &cost = rows.cost, low(count), high(count);
  measured.resize(count), source.resize(count), cost.resize(count);
  std::vector<SourceForecast>& forecasts = rows.forecasts;
  forecasts.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    const study::Sample& sample = table.samples[k];
    const features::LayerSites& sites = table.layer_sites[static_cast<size_t>(sample.layer_sites)];
    const features::TrainingConfig config = study::training_config_of(sample.config);
    forecasts.push_back(source_forecast(set, sites, table.graphs[static_cast<size_t>(sample.graph)], config,
                                        sample.config.input_text()));
    measured[k] = sample.time_ms();
    source[k] = forecasts.back().time_ms;
    low[k] = forecasts.back().low_ms / forecast::kUnmatchedHostWiden;
    high[k] = forecasts.back().high_ms * forecast::kUnmatchedHostWiden;
    auto found = wall_s.find(run_key(sample.network_hash, sample.config));
    cost[k] = found != wall_s.end() ? found->second : 7 * measured[k] / 1000 + 3;
  }
  // The noise floor, as `evaluate` and `calibrate --from-db` report it (apps::noise_floor: each repeat against the
  // mean of the configuration's other repeats, scaled by sqrt((k - 1) / k)).
  std::vector<std::vector<double>> repeats;
  int64_t noise_count = 0;
  for (const study::Sample& sample : table.samples)
    if (sample.times_ms.size() >= 2)
      repeats.push_back(sample.times_ms), noise_count += static_cast<int64_t>(sample.times_ms.size());
  // Each zoo configuration's graph, to look its layers up among the target's benchmarks.
  rows.target_bench = bench_ms_by_key(options.layers_path);
  std::vector<std::optional<Graph>>& graphs = rows.graphs;
  graphs.resize(count);
  for (size_t k = 0; k < count; ++k) {
    const study::Sample& sample = table.samples[k];
    if (sample.config.input.empty()) continue;
    models::ModelSpec spec;
    spec.batch = sample.config.batch;
    spec.input = sample.config.input;
    try {
      graphs[k] = models::build_zoo_model(sample.network_name, spec);
    } catch (const InputError&) {
      continue;  // not a zoo network: no benchmarks of its layers
    }
  }
  int64_t inside_uncalibrated = 0;
  for (size_t k = 0; k < count; ++k) inside_uncalibrated += measured[k] >= low[k] && measured[k] <= high[k];
  // The share inside the source's own 90% interval widened by each factor (forecast::kUnmatchedHostWiden is chosen
  // here).
  json by_widen = json::object();
  for (double widen : {1.0, 1.5, 2.0, 2.2, 2.5, 3.0, 4.0}) {
    int64_t inside = 0;
    for (size_t k = 0; k < count; ++k)
      inside += measured[k] >= forecasts[k].low_ms / widen && measured[k] <= forecasts[k].high_ms * widen;
    char key[16];
    std::snprintf(key, sizeof key, "%.1f", widen);
    by_widen[key] = 100.0 * static_cast<double>(inside) / static_cast<double>(count);
  }
  json report = {
      {"source", set.dir},
      {"db", options.db_path},
      {"layers", options.layers_path},
      {"samples", count},
      {"noise_floor_pct", noise_count > 0 ? 100 * study::noise_floor(repeats).mre : 0.0},
      {"noise_floor_repeats", noise_count},
      {"uncalibrated",
       {{"mre_pct", mre_pct(source, measured, std::vector<char>(count, 0))},
        {"within_interval_pct", 100.0 * static_cast<double>(inside_uncalibrated) / static_cast<double>(count)},
        {"within_interval_pct_by_widen", by_widen}}},
      {"budgets", json::array()},
      {"configurations", json::array()}};
  for (size_t k = 0; k < count; ++k) {
    const study::Sample& sample = table.samples[k];
    report["configurations"].push_back({{"network", sample.network_name},
                                        {"batch", sample.config.batch},
                                        {"input", sample.config.input_text()},
                                        {"optimizer", name(sample.config.optimizer)},
                                        {"measured_ms", measured[k]},
                                        {"source_ms", source[k]},
                                        {"cost_s", cost[k]}});
  }
  for (double minutes : options.minutes) report["budgets"].push_back(budget_result(set, rows, minutes));
  return report;
}

}  // namespace dnncast::calibrate
