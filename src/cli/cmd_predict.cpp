// `dnncast predict MODEL --batch N`: time per iteration with its interval, time per epoch, and
// peak memory, from a shipped (data/predictors/) or given predictor set. No profiling, no DL
// framework: the graph is featurized and the learned model evaluated.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/host_match.h"
#include "apps/model_source.h"
#include "apps/predictor.h"
#include "core/checked.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "memory/simulator.h"

namespace dnncast::cli {

namespace {

using nlohmann::json;

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", bytes, units[unit]);
  return text;
}

bool contains(const json& list, const json& value) {
  return list.is_array() && std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace

int run_predict(const Args& args) {
  CLI::App app(
      "Forecast time per iteration (with a 90% interval), time per epoch and peak memory of training MODEL,\n"
      "from a trained predictor: no profiling. MODEL: a zoo name, a graph JSON file, or synthetic:SEED.",
      "dnncast predict");
  std::string model, optimizer = "sgd", precision = "fp32", device, predictor_dir;
  int64_t batch = 0, threads = 0, epoch_samples = 0;
  bool as_json = false;
  app.add_option("MODEL", model, "zoo name, graph JSON file, or synthetic:SEED")->required();
  app.add_option("--batch", batch, "batch size")->required();
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", optimizer, "sgd (default), adam, ...: one the predictor was trained on");
  app.add_option("--precision", precision, "fp32 (default)");
  app.add_option("--threads", threads, "CPU threads of training (default: the environment's)")->check(thread_count());
  app.add_option("--device", device, "environment to forecast for: a predictor set's name, its GPU, or cpu");
  app.add_option("--epoch-samples", epoch_samples, "samples per epoch: also forecast time per epoch")
      ->check(positive_at_most(kMaxTensorElements));
  app.add_option("--predictor", predictor_dir, "predictor set or bundle folder (default: data/predictors/)");
  app.add_flag("--json", as_json, "print JSON");
  std::string host_isa_text;
  app.add_option("--host-isa", host_isa_text,
                 "forecast as if this host's oneDNN dispatched to this ISA (" + isa_list() +
                     "; default: detected, after ONEDNN_MAX_CPU_ISA): the host match and the simulated memory follow it");
  if (!parse_args(app, args, "predict")) return 0;
  const hardware::CpuIsa host_isa =
      host_isa_text.empty() ? hardware::CpuIsa::Unknown : parse_isa_option(host_isa_text, "--host-isa");
  if (batch < 1) throw InputError("--batch must be a positive integer, got " + std::to_string(batch));
  if (epoch_samples < 0) throw InputError("--epoch-samples must be positive");
  if (threads < 0) throw InputError("--threads must be positive");
  std::vector<std::string> notes;

  // Which predictor set.
  std::string set_dir = predictor_dir;
  if (set_dir.empty()) {
    std::string root = apps::default_predictor_root();
    std::vector<std::string> sets = apps::shipped_predictor_sets(root);
    if (sets.empty())
      throw InputError("no shipped predictors found" + (root.empty() ? std::string() : " in " + root) +
                       "; train one with `dnncast train --db DATA --out DIR` and pass --predictor DIR");
    apps::SetChoice choice = apps::choose_predictor_set(sets, device, hardware::detect_host());
    set_dir = choice.dir;
    if (!choice.note.empty()) notes.push_back(choice.note);
  } else if (!device.empty()) {
    apps::choose_predictor_set({set_dir}, device, hardware::detect_host());  // the given set must match
  }
  apps::PredictorSet set = apps::load_predictor_set(set_dir);
  const data::EnvironmentRecord& environment = set.environment();
  const apps::Manifest& time_manifest = set.time->manifest();
  const json& training = time_manifest.training;
  TrainingSetup setup;
  setup.optimizer = parse_optimizer(optimizer, "--optimizer");
  setup.precision = parse_precision(precision, "--precision");
  optimizer = name(setup.optimizer);  // the stored names: checked against the manifest, printed
  precision = name(setup.precision);
  if (training.contains("optimizers") && !contains(training["optimizers"], optimizer))
    throw InputError("predictor " + set_dir + " was trained on optimizers " + training["optimizers"].dump() +
                     ", not " + quote(optimizer));
  if (training.contains("precisions") && !contains(training["precisions"], precision))
    throw InputError("predictor " + set_dir + " was trained on precisions " + training["precisions"].dump() +
                     ", not " + quote(precision));
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
  if (training.contains("threads") && !contains(training["threads"], threads))
    notes.push_back("threads " + std::to_string(threads) + " not among the trained " + training["threads"].dump());
  if (training.contains("batch_max") && (batch > training["batch_max"].get<int64_t>() || batch < training["batch_min"].get<int64_t>()))
    notes.push_back("batch " + std::to_string(batch) + " is outside the trained range " +
                    std::to_string(training["batch_min"].get<int64_t>()) + "-" +
                    std::to_string(training["batch_max"].get<int64_t>()) + ": extrapolated");

  // The model at this batch, built once: featurized for the time forecast, simulated for memory.
  Graph graph = load_model(model, model_options.spec(model, batch));
  features::TrainingConfig config;
  config.batch = batch;
  config.optimizer = setup.optimizer;
  config.precision = setup.precision;
  config.threads = threads;
  std::vector<double> row = features::featurize_graph(graph, config, apps::hardware_of(environment));
  std::string input_shape = graph.node(graph.inputs().front()).shape.to_string();
  if (training.contains("inputs")) {
    std::string used = input_shape.substr(input_shape.find('x') + 1);
    if (!contains(training["inputs"], used))
      notes.push_back("input " + used + " was not among the trained inputs " + training["inputs"].dump());
  }

  if (training.contains("families") && !graph.family.empty() && !contains(training["families"], graph.family))
    notes.push_back("family " + graph.family + " is not among the trained families " + training["families"].dump() +
                    ": a zero-shot forecast");

  apps::Forecast time = set.time->predict_one(row);
  json result{{"model", model},
              {"graph", graph.name},
              {"batch", batch},
              {"input", input_shape.substr(input_shape.find('x') + 1)},
              {"optimizer", optimizer},
              {"precision", precision},
              {"threads", threads},
              {"time_ms", time.value},
              {"time_ms_low", time.low},
              {"time_ms_high", time.high},
              {"epoch_s", nullptr},
              {"peak_bytes", nullptr},
              {"predictor", set_dir},
              {"learner", time_manifest.learner},
              {"env", apps::environment_label(environment)},
              {"env_hash", environment.hash()},
              {"feature_version", features::kFeatureVersion}};
  // Was the predictor trained on this host? A CPU set forecasts for this host: a note when not
  // exactly (a GPU set forecasts for its GPU, whatever the host).
  std::optional<apps::HostMatch> host_match;
  if (environment.gpu_name.empty()) {
    host_match = apps::match_host(apps::host_environment(host_isa), time_manifest.environments);
    if (!host_match->exact) host_match->remedy = apps::calibrate_remedy(set_dir);
    result["host_match"] = host_match->to_json();
  }
  int64_t iterations = 0;
  if (epoch_samples > 0) {
    iterations = (epoch_samples + batch - 1) / batch;
    result["epoch_s"] = time.value * static_cast<double>(iterations) / 1000.0;
    result["epoch_iterations"] = iterations;
  }
  // Peak memory: the allocator-exact simulator (docs/MEMORY.md) where it models the configuration;
  // the learned memory predictor otherwise. peak_bytes is what `dnncast profile` reports (above the
  // parameters, buffers and inputs held before training); peak_total_bytes includes them.
  bool simulated = false;
  const bool gpu_environment = !environment.gpu_name.empty();
  try {
    memory::MemoryConfig memory_config;
    memory_config.optimizer = setup.optimizer;
    memory_config.precision = setup.precision;
    memory_config.device = gpu_environment ? Device::Cuda : Device::Cpu;
    memory_config.threads = threads;
    memory_config.isa = host_isa;  // Unknown: this host's
    memory::MemoryReport report = memory::simulate_memory(graph, memory_config);
    if (!gpu_environment) result["memory_isa"] = hardware::isa_name(memory::resolve_isa(host_isa));
    result["peak_bytes"] = report.peak_bytes;
    result["peak_bytes_low"] = report.peak_bytes;
    result["peak_bytes_high"] = report.peak_bytes;
    result["peak_total_bytes"] = report.required_bytes;
    result["memory_source"] = "simulator";
    simulated = true;
  } catch (const InputError& error) {
    notes.push_back(std::string("memory simulator: ") + error.what() + "; peak memory from the learned predictor");
  }
  if (!simulated && set.memory) {
    apps::Forecast memory = set.memory->predict_one(row);
    result["peak_bytes"] = std::llround(memory.value);
    result["peak_bytes_low"] = std::llround(memory.low);
    result["peak_bytes_high"] = std::llround(memory.high);
    result["memory_source"] = set.memory->manifest().learner;
  } else if (!simulated) {
    notes.push_back("no memory predictor in " + set_dir);
  }
  result["notes"] = notes;
  // Always said, --json or not (stdout keeps the JSON): one line.
  if (host_match && !host_match->exact) std::fprintf(stderr, "note: %s\n", apps::host_match_note(*host_match).c_str());

  if (as_json) {
    std::cout << result.dump(2) << "\n";
    return 0;
  }
  for (const std::string& note : notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::printf("%s  batch %lld  input %s  %s %s  %lld thread%s  on %s\n", model.c_str(), static_cast<long long>(batch),
              result["input"].get<std::string>().c_str(), optimizer.c_str(), precision.c_str(),
              static_cast<long long>(threads), threads == 1 ? "" : "s", apps::environment_label(environment).c_str());
  std::printf("  time per iteration  %.1f ms   (90%% interval %.1f - %.1f ms)\n", time.value, time.low, time.high);
  if (epoch_samples > 0)
    std::printf("  time per epoch      %.1f s    (%lld samples = %lld iterations)\n", result["epoch_s"].get<double>(),
                static_cast<long long>(epoch_samples), static_cast<long long>(iterations));
  if (simulated)
    std::printf("  peak memory         %s in total: %s held before the first iteration + %s while training (simulated)\n",
                human_bytes(result["peak_total_bytes"].get<double>()).c_str(),
                human_bytes(result["peak_total_bytes"].get<double>() - result["peak_bytes"].get<double>()).c_str(),
                human_bytes(result["peak_bytes"].get<double>()).c_str());
  else if (!result["peak_bytes"].is_null())
    std::printf("  peak memory         %s   (90%% interval %s - %s, learned)\n",
                human_bytes(result["peak_bytes"].get<double>()).c_str(),
                human_bytes(result["peak_bytes_low"].get<double>()).c_str(),
                human_bytes(result["peak_bytes_high"].get<double>()).c_str());
  std::printf("  predictor           %s (%s, CV MRE %.1f%%)\n", set_dir.c_str(), time_manifest.learner.c_str(),
              100 * time_manifest.cv.value("mre", 0.0));
  return 0;
}

}  // namespace dnncast::cli
