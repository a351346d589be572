// `dnncast memory MODEL --batch N`: simulated peak memory of training (src/memory/simulator.h),
// its breakdown at the peak, whether it fits in a given size (--fits) and the largest batch that
// does (--max-batch). Loads no DL framework; resnet50 simulates in well under a millisecond.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "apps/host_match.h"
#include "apps/memory_check.h"
#include "apps/model_source.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "memory/cpu_conv.h"
#include "memory/simulator.h"
#include "models/zoo.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::cli {

namespace {

using nlohmann::json;

json breakdown_json(const memory::MemoryBreakdown& b) {
  return {{"parameter_bytes", b.parameter_bytes},         {"buffer_and_input_bytes", b.state_bytes},
          {"gradient_bytes", b.gradient_bytes},           {"optimizer_state_bytes", b.optimizer_state_bytes},
          {"activation_bytes", b.activation_bytes},       {"transient_bytes", b.transient_bytes}};
}

// --measure: one real training run of the same graph (src/profile: a child process, 2 warm-up
// iterations and 1 timed, enough for the peak, which iteration 2 reaches) beside the simulation.
struct Measured {
  bool ran = false;
  std::string status, message;
  int64_t baseline_bytes = 0, peak_bytes = 0, peak_reserved_bytes = 0;
};

Measured measure_real_run(const Graph& graph, const memory::MemoryConfig& config, double timeout_s) {
#ifdef DNNCAST_HAVE_TORCH
  profile::TrainConfig train;
  TrainingSetup& setup = train;
  setup = config;
  train.threads = config.threads;
  profile::Limits limits;
  limits.time_budget_s = 0.01;
  limits.warmup_budget_s = 0.01;
  limits.min_iterations = 1;
  limits.timeout_s = timeout_s;
  profile::Measurement measurement = profile::measure_isolated(graph, train, limits);
  Measured measured;
  measured.ran = true;
  measured.status = measurement.status;
  measured.message = measurement.message;
  measured.baseline_bytes = measurement.baseline_bytes;
  measured.peak_bytes = measurement.peak_bytes;
  measured.peak_reserved_bytes = measurement.peak_reserved_bytes;
  return measured;
#else
  (void)graph;
  (void)config;
  (void)timeout_s;
  throw InputError("--measure: this dnncast was built without libtorch (configured with -DDNNCAST_WITH_TORCH=OFF)");
#endif
}

double relative_error(int64_t simulated, int64_t measured) {
  return measured > 0 ? static_cast<double>(simulated - measured) / static_cast<double>(measured) : 0.0;
}

void print_row(const char* label, int64_t bytes, int64_t total) {
  double share = total > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(total) : 0;
  std::printf("  %-30s %14lld B  %11s  %5.1f%%\n", label, static_cast<long long>(bytes), memory::format_bytes(bytes).c_str(), share);
}

std::string config_text(const apps::MemoryCheckRow& row) {
  return row.network + " b" + std::to_string(row.config.batch) + " " +
         (row.config.input.empty() ? "seq " + std::to_string(row.config.seq_len) : row.config.input_text()) + " " +
         name(row.config.optimizer) + " t" + std::to_string(row.config.threads);
}

// --check-db: the simulator against every measured peak of a dataset.
int check_dataset(const std::string& db, int64_t show, bool as_json, hardware::CpuIsa isa) {
  apps::MemoryCheck check = apps::check_memory_simulator(db, isa);
  const int64_t off = check.configurations - check.within_1pct;
  const size_t listed = std::min(check.rows.size(), static_cast<size_t>(show));
  if (as_json) {
    json worst = json::array();
    for (size_t k = 0; k < listed; ++k) {
      const apps::MemoryCheckRow& row = check.rows[k];
      worst.push_back({{"network", row.network},
                       {"family", row.family},
                       {"env_hash", row.environment_hash},
                       {"batch", row.config.batch},
                       {"input", row.config.input_text()},
                       {"seq_len", row.config.seq_len},
                       {"optimizer", name(row.config.optimizer)},
                       {"threads", row.config.threads},
                       {"measured_bytes", row.measured_bytes},
                       {"simulated_bytes", row.simulated_bytes},
                       {"relative_error", row.relative_error()}});
    }
    json environments = json::array();
    for (const apps::CheckedEnvironment& environment : check.environments) {
      json entry{{"env_hash", environment.hash},
                 {"recorded_isa", environment.recorded_isa},
                 {"simulated_isa", hardware::isa_name(environment.simulated)},
                 {"inferred", environment.inferred}};
      if (environment.inferred)
        entry["exact_by_rules"] = {{"avx512_core", environment.exact_avx512}, {"avx2", environment.exact_avx2}};
      environments.push_back(entry);
    }
    std::cout << json{{"dataset", db},
                      {"environments", environments},
                      {"configurations", check.configurations},
                      {"exact", check.exact},
                      {"within_1pct", check.within_1pct},
                      {"not_modelled", check.not_modelled},
                      {"worst", worst}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("memory simulator vs profiler on %s: %lld configurations with a measured peak\n", db.c_str(),
                static_cast<long long>(check.configurations));
    std::printf("  byte-exact %lld, within 1%% %lld, more than 1%% off %lld; not modelled %lld\n",
                static_cast<long long>(check.exact), static_cast<long long>(check.within_1pct),
                static_cast<long long>(off), static_cast<long long>(check.not_modelled));
    for (const apps::CheckedEnvironment& environment : check.environments) {
      if (environment.inferred)
        std::printf("  environment %s: isa not recorded; its peaks follow the %s rules (%lld byte-exact under avx2, "
                    "%lld under avx512_core): simulated as %s\n",
                    environment.hash.c_str(), environment.exact_avx2 > environment.exact_avx512 ? "AVX2" : "AVX-512",
                    static_cast<long long>(environment.exact_avx2), static_cast<long long>(environment.exact_avx512),
                    hardware::isa_name(environment.simulated));
      else
        std::printf("  environment %s: simulated as %s (%s)\n", environment.hash.c_str(),
                    hardware::isa_name(environment.simulated), isa == hardware::CpuIsa::Unknown ? "recorded" : "--isa");
    }
    if (listed > 0) std::printf("  largest differences (simulated - measured) / measured:\n");
    for (size_t k = 0; k < listed; ++k) {
      const apps::MemoryCheckRow& row = check.rows[k];
      std::printf("    %+9.4f%%  %-44s measured %14lld  simulated %14lld\n", 100 * row.relative_error(),
                  config_text(row).c_str(), static_cast<long long>(row.measured_bytes),
                  static_cast<long long>(row.simulated_bytes));
    }
  }
  return off > 0 ? 1 : 0;
}

}  // namespace

int run_memory(const Args& args) {
  CLI::App app(
      "Simulated peak memory of training MODEL (zero_grad, forward, loss, backward, optimizer step), allocation by\n"
      "allocation as libtorch 1.13 makes them, through an allocator model: cpu = the profiler's tracking allocator\n"
      "(peak_bytes equals `dnncast profile`'s), cuda = PyTorch's caching allocator (unverified, docs/MEMORY.md).\n"
      "Bytes accept units: 4096, 512MiB, 24GiB, 1.5GB.",
      "dnncast memory");
  std::string model, optimizer = "sgd", precision = "fp32", device = "cpu", fits_text, max_batch_text,
                                  context_text;
  int64_t batch = 1, threads = 1, batch_cap = int64_t{1} << 20;
  bool as_json = false, timeline = false, events = false, measure = false;
  double measure_timeout_s = 600;
  std::string check_db;
  int64_t show = 10;
  app.add_option("MODEL", model, "zoo name, graph JSON file, or synthetic:SEED (not with --check-db)");
  app.add_option("--batch", batch, "batch size (default 1)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", optimizer, "sgd (momentum 0.9) | adam | adamw (default sgd)");
  app.add_option("--precision", precision, "fp32 (the only precision modelled)");
  app.add_option("--device", device, "cpu | cuda (default cpu; the cuda model is unverified)");
  app.add_option("--threads", threads, "intra-op threads of the run (default 1, as dnncast profile)")->check(thread_count());
  app.add_option("--fits", fits_text, "answer whether training fits in this many bytes (e.g. 24GiB)")->check(byte_size());
  app.add_option("--max-batch", max_batch_text, "largest batch whose training fits in this many bytes")->check(byte_size());
  app.add_option("--batch-cap", batch_cap, "largest batch --max-batch tries (default 1048576)");
  app.add_option("--cuda-context", context_text, "cuda: bytes the CUDA context takes on the device (default 0)")->check(byte_size());
  app.add_flag("--timeline", timeline, "also print the highest live bytes of every node's forward and backward");
  app.add_flag("--events", events,
               "print every simulated allocation and release (\"+|- BYTES LIVE iter phase node what\"), to diff "
               "against a profiled run's DNNCAST_ALLOC_TRACE file");
  app.add_flag("--measure", measure,
               "also train the graph for real (libtorch, a child process, 3 iterations) and print the measured peak\n"
               "beside the simulated one; exit code 1 when the run failed");
  app.add_option("--measure-timeout", measure_timeout_s, "--measure: seconds before the run is killed (default 600)");
  app.add_flag("--json", as_json, "print JSON instead of a summary");
  app.add_option("--check-db", check_db,
                 "instead of MODEL: simulate every configuration of this dataset that has a measured peak and compare "
                 "(exit code 1 when any is more than 1% off)");
  app.add_option("--show", show, "--check-db: the worst configurations listed (default 10)");
  std::string isa_text;
  app.add_option("--isa", isa_text,
                 "the CPU ISA oneDNN dispatches to, whose kernels and allocations to simulate: " + isa_list() +
                     " (default: this host's, after ONEDNN_MAX_CPU_ISA; with --check-db, each environment's recorded one)");

  if (!parse_args(app, args, "memory")) return 0;
  const hardware::CpuIsa isa = isa_text.empty() ? hardware::CpuIsa::Unknown : parse_isa_option(isa_text, "--isa");
  if (!check_db.empty()) {
    if (!model.empty()) throw InputError("give MODEL or --check-db DB, not both");
    if (show < 0) throw InputError("--show must be 0 or more, got " + std::to_string(show));
    return check_dataset(check_db, show, as_json, isa);
  }
  if (model.empty()) throw InputError("MODEL is required (a zoo name, graph JSON file or synthetic:SEED), or --check-db DB");

  if (batch <= 0) throw InputError("--batch must be a positive integer, got " + std::to_string(batch));
  if (threads <= 0) throw InputError("--threads must be a positive integer, got " + std::to_string(threads));
  if (!(measure_timeout_s > 0))
    throw InputError("--measure-timeout must be a positive number of seconds, got " + std::to_string(measure_timeout_s));
  if (batch_cap <= 0) throw InputError("--batch-cap must be a positive integer, got " + std::to_string(batch_cap));
  memory::MemoryConfig config;
  config.optimizer = parse_optimizer(optimizer, "--optimizer");
  config.precision = parse_precision(precision, "--precision");
  config.device = parse_device(device, "--device");
  config.threads = threads;
  config.isa = isa;
  config.keep_timeline = timeline;
  config.keep_events = events;
  if (!context_text.empty()) config.cuda_context_bytes = memory::parse_bytes(context_text, "--cuda-context");
  const int64_t fits_limit = fits_text.empty() ? 0 : memory::parse_bytes(fits_text, "--fits");
  const int64_t batch_limit = max_batch_text.empty() ? 0 : memory::parse_bytes(max_batch_text, "--max-batch");

  const ModelSpec spec = model_options.spec(model, batch);
  Graph graph = load_model(model, spec);
  memory::MemoryReport report = memory::simulate_memory(graph, config);

  memory::MaxBatchResult best;
  if (batch_limit > 0) {
    memory::MemoryConfig search = config;
    search.keep_timeline = false;
    search.keep_events = false;
    best = memory::max_batch(
        [&](int64_t candidate) {
          ModelSpec candidate_spec = spec;
          candidate_spec.batch = candidate;
          return load_model(model, candidate_spec);
        },
        search, batch_limit, batch_cap);
  }

  // Which ISA's kernels and allocations were simulated, and whether measured runs check them.
  const hardware::CpuIsa simulated_isa = memory::resolve_isa(config.isa);
  const std::string isa_source =
      isa != hardware::CpuIsa::Unknown ? "as --isa asked" : "this host's oneDNN dispatch, after ONEDNN_MAX_CPU_ISA";
  std::optional<apps::HostMatch> isa_match;
  if (report.device == "cpu") {
    std::string measure_command = "dnncast memory";
    for (const std::string& arg : args)
      if (arg != "--json") measure_command += " " + arg;
    if (!measure) measure_command += " --measure";
    isa_match = apps::simulator_isa_match(simulated_isa, measure_command);
    if (!isa_match->exact)
      std::fprintf(stderr, "note: %s\n", apps::simulator_isa_note(*isa_match, isa_source).c_str());
  }

  Measured measured;
  if (measure) measured = measure_real_run(graph, config, measure_timeout_s);
  const int exit_code = measured.ran && measured.status != "ok" && measured.status != "oom" ? 1 : 0;
  // On cuda the profiler's peak_bytes is the caching allocator's peak allocated above the baseline.
  const int64_t simulated_peak =
      report.device == "cuda" ? report.peak_allocated_bytes - report.baseline_allocated_bytes : report.peak_bytes;

  // The input's shape without the batch dimension (C x H x W, or the sequence length).
  std::string input_shape;
  if (!graph.inputs().empty()) {
    std::vector<int64_t> dims = graph.node(graph.inputs().front()).shape.dims;
    if (dims.size() > 1) dims.erase(dims.begin());
    input_shape = TensorShape(dims).to_string();
  }
  if (as_json) {
    json doc = {{"model", model},
                {"graph_hash", graph.architecture_hash()},
                {"config",
                 {{"batch", batch}, {"input", input_shape}, {"optimizer", name(config.optimizer)}, {"precision", "fp32"},
                  {"device", report.device}, {"threads", threads}}},
                {"baseline_bytes", report.baseline_bytes},
                {"peak_bytes", report.peak_bytes},
                {"peak_total_bytes", report.peak_total_bytes},
                {"required_bytes", report.required_bytes},
                {"breakdown", breakdown_json(report.at_peak)},
                {"peak",
                 {{"iteration", report.peak_iteration},
                  {"phase", memory::phase_name(report.peak_phase)},
                  {"node", report.peak_node_name.empty() ? json(nullptr) : json(report.peak_node_name)},
                  {"allocation", report.peak_what}}}};
    if (report.device == "cpu") {
      doc["isa"] = {{"simulated", hardware::isa_name(simulated_isa)},
                    {"source", isa_source},
                    {"rules_checked_on", memory::conv_rules_evidence(simulated_isa)}};
      doc["host_match"] = isa_match->to_json();
    }
    if (report.device == "cuda")
      doc["cuda"] = {{"peak_allocated_bytes", report.peak_allocated_bytes},
                     {"baseline_allocated_bytes", report.baseline_allocated_bytes},
                     {"peak_reserved_bytes", report.peak_reserved_bytes},
                     {"context_bytes", report.cuda_context_bytes},
                     {"verified", false}};
    if (fits_limit > 0) doc["fits"] = {{"limit_bytes", fits_limit}, {"fits", report.required_bytes <= fits_limit}};
    if (batch_limit > 0)
      doc["max_batch"] = {{"limit_bytes", batch_limit},
                          {"batch", best.batch},
                          {"required_bytes", best.required_bytes},
                          {"next_required_bytes", best.next_required_bytes},
                          {"simulations", best.simulations}};
    if (measured.ran) {
      doc["measured"] = {{"status", measured.status},
                         {"message", measured.message},
                         {"baseline_bytes", measured.baseline_bytes},
                         {"peak_bytes", measured.peak_bytes},
                         {"simulated_peak_bytes", simulated_peak},
                         {"relative_error", measured.status == "ok" ? json(relative_error(simulated_peak, measured.peak_bytes))
                                                                   : json(nullptr)}};
      if (report.device == "cuda") {  // peak reserved: totals, as the caching allocator counts them
        doc["measured"]["peak_reserved_bytes"] = measured.peak_reserved_bytes;
        doc["measured"]["simulated_peak_reserved_bytes"] = report.peak_reserved_bytes;
      }
    }
    if (timeline) {
      json entries = json::array();
      for (const memory::TimelineEntry& entry : report.timeline)
        entries.push_back({{"iteration", entry.iteration},
                           {"phase", memory::phase_name(entry.phase)},
                           {"node", entry.node >= 0 ? json(graph.node(entry.node).name) : json(nullptr)},
                           {"start_bytes", entry.start_bytes - report.baseline_bytes},
                           {"max_bytes", entry.max_bytes - report.baseline_bytes},
                           {"end_bytes", entry.end_bytes - report.baseline_bytes}});
      doc["timeline"] = entries;
    }
    std::cout << doc.dump(2) << std::endl;
    return exit_code;
  }

  std::printf("%s  batch %lld  input %s  optimizer %s  precision fp32  device %s  threads %lld\n", model.c_str(),
              static_cast<long long>(batch), input_shape.c_str(), name(config.optimizer).c_str(), report.device.c_str(),
              static_cast<long long>(threads));
  std::printf("peak memory    %s above a baseline of %s (parameters, buffers, inputs): %s in all\n",
              memory::format_bytes(report.peak_bytes).c_str(), memory::format_bytes(report.baseline_bytes).c_str(),
              memory::format_bytes(report.peak_total_bytes).c_str());
  if (report.device == "cuda")
    std::printf("cuda model     peak allocated %s, peak reserved %s, context %s (unverified: docs/MEMORY.md)\n",
                memory::format_bytes(report.peak_allocated_bytes).c_str(),
                memory::format_bytes(report.peak_reserved_bytes).c_str(),
                memory::format_bytes(report.cuda_context_bytes).c_str());
  if (report.device == "cpu")
    std::printf("kernels        isa %s (%s)\n", hardware::isa_name(simulated_isa), isa_source.c_str());
  std::printf("at the peak    iteration %d, %s%s%s\n", report.peak_iteration, memory::phase_name(report.peak_phase),
              report.peak_node_name.empty() ? "" : " of ", report.peak_node_name.c_str());
  const memory::MemoryBreakdown& b = report.at_peak;
  print_row("parameters", b.parameter_bytes, report.peak_total_bytes);
  print_row("buffers + inputs + labels", b.state_bytes, report.peak_total_bytes);
  print_row("gradients", b.gradient_bytes, report.peak_total_bytes);
  print_row("optimizer state", b.optimizer_state_bytes, report.peak_total_bytes);
  print_row("activations (kept for backward)", b.activation_bytes, report.peak_total_bytes);
  print_row("transient (grads, workspaces)", b.transient_bytes, report.peak_total_bytes);
  if (fits_limit > 0)
    std::printf("fits in %s: %s (needs %s)\n", memory::format_bytes(fits_limit).c_str(),
                report.required_bytes <= fits_limit ? "yes" : "no", memory::format_bytes(report.required_bytes).c_str());
  if (batch_limit > 0) {
    if (best.batch == 0)
      std::printf("largest batch in %s: none (batch 1 needs %s)\n", memory::format_bytes(batch_limit).c_str(),
                  memory::format_bytes(best.next_required_bytes).c_str());
    else
      std::printf("largest batch in %s: %lld (needs %s%s%s)\n", memory::format_bytes(batch_limit).c_str(),
                  static_cast<long long>(best.batch), memory::format_bytes(best.required_bytes).c_str(),
                  best.next_required_bytes > 0 ? "; one more needs " : "",
                  best.next_required_bytes > 0 ? memory::format_bytes(best.next_required_bytes).c_str() : "");
  }
  if (measured.ran) {
    if (measured.status != "ok")
      std::printf("measured       status %s: %s\n", measured.status.c_str(), measured.message.c_str());
    else
      std::printf("measured       peak %lld B above a baseline of %lld B; simulated %lld B: %+lld B (%+.4f%%)\n",
                  static_cast<long long>(measured.peak_bytes), static_cast<long long>(measured.baseline_bytes),
                  static_cast<long long>(simulated_peak), static_cast<long long>(simulated_peak - measured.peak_bytes),
                  100 * relative_error(simulated_peak, measured.peak_bytes));
  }
  if (events) {
    std::printf("\n");
    for (const memory::LoggedEvent& e : report.event_log)
      std::printf("%c %lld %lld %d %s %s %s\n", e.alloc ? '+' : '-', static_cast<long long>(e.bytes),
                  static_cast<long long>(e.live_bytes), e.iteration, memory::phase_name(e.phase),
                  e.node >= 0 ? graph.node(e.node).name.c_str() : "-", e.what);
  }
  if (timeline) {
    std::printf("\n%-4s %-9s %-40s %14s %14s\n", "iter", "phase", "node", "max above base", "end above base");
    for (const memory::TimelineEntry& entry : report.timeline)
      std::printf("%-4d %-9s %-40s %14lld %14lld\n", entry.iteration, memory::phase_name(entry.phase),
                  entry.node >= 0 ? graph.node(entry.node).name.c_str() : "-",
                  static_cast<long long>(entry.max_bytes - report.baseline_bytes),
                  static_cast<long long>(entry.end_bytes - report.baseline_bytes));
  }
  return exit_code;
}

}  // namespace dnncast::cli
