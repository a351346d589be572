#include "cli/print_memory.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/units.h"
#include "graph/checkpoint.h"
#include "study/memory_check.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::cli {

namespace {

using nlohmann::json;

void print_row(const char* label, int64_t bytes, int64_t total) {
  double share = total > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(total) : 0;
  std::printf("  %-30s %14lld B  %11s  %5.1f%%\n", label, static_cast<long long>(bytes), format_bytes(bytes).c_str(),
              share);
}

std::string config_text(const study::MemoryCheckRow& row) {
  return row.network + " b" + std::to_string(row.config.batch) + " " +
         (row.config.input.empty() ? "seq " + std::to_string(row.config.seq_len) : row.config.input_text()) + " " +
         name(row.config.optimizer) + " t" + std::to_string(row.config.threads);
}

}  // namespace

Measured measure_real_run(const Graph& graph, const memory::MemoryConfig& config, double timeout_s) {
#ifdef DNNCAST_HAVE_TORCH
  profile::TrainConfig train;
  train.set_setup(config);
  train.threads = config.threads;
  train.grad_accum = config.grad_accum;
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

int64_t simulated_profiler_peak(const memory::MemoryReport& report) {
  return report.device == Device::Cuda ? report.peak_allocated_bytes - report.baseline_allocated_bytes
                                       : report.peak_bytes;
}

// What nvidia-smi would show, part by part (gpu/gpu_memory.h), and where each part not simulated comes from.
static void print_cuda_parts(const forecast::MemoryForecast& forecast) {
  const memory::CudaMemoryParts& parts = forecast.report.cuda;
  std::printf("cuda memory    %s in all (as nvidia-smi would show it):\n", format_bytes(parts.total_bytes()).c_str());
  std::printf("  tensors             %10s  peak allocated, simulated\n", format_bytes(parts.tensor_bytes).c_str());
  std::printf("  allocator reserve   %10s  peak reserved %s - allocated, simulated%s\n",
              format_bytes(parts.reserve_bytes).c_str(), format_bytes(forecast.report.peak_reserved_bytes).c_str(),
              forecast.gpu_memory ? ", + the fitted fraction" : "");
  std::printf("  workspaces          %10s  cuBLAS's\n", format_bytes(parts.workspace_bytes).c_str());
  if (parts.cudnn_workspace_bytes > 0)
    std::printf("  cuDNN workspaces    %10s  convolutions' (cudnn.benchmark), fitted\n",
                format_bytes(parts.cudnn_workspace_bytes).c_str());
  std::printf("  context             %10s  %s\n", format_bytes(parts.context_bytes).c_str(),
              forecast.gpu_memory ? (forecast.context_measured ? "measured (--cuda-context)" : "fitted")
                                  : "--cuda-context (default 0)");
  if (parts.cudnn_context_bytes > 0)
    std::printf("  cuDNN's kernels     %10s  loaded for convolutions and BatchNorm, fitted\n",
                format_bytes(parts.cudnn_context_bytes).c_str());
  if (parts.margin_bytes > 0)
    std::printf("upper bound    %s: the forecast + %s, the margin measured on held-out runs (fits is judged on it)\n",
                format_bytes(parts.upper_bytes()).c_str(), format_bytes(parts.margin_bytes).c_str());
  if (forecast.report.cuda.paged_bytes > 0)
    std::printf(
        "paged states   %s of optimizer state in CUDA unified memory (--paged-optimizer): not in the total; "
        "paged to host RAM when the GPU is short (a model, not measured)\n",
        format_bytes(forecast.report.cuda.paged_bytes).c_str());
  for (const std::string& note : forecast.memory_notes) std::printf("  note: %s\n", note.c_str());
}

// One GPU's share under a multi-GPU plan (memory/sharding.h), and the collectives of a step.
static void print_part(const char* label, int64_t bytes) {
  std::printf("  %-34s %11s\n", label, format_bytes(bytes).c_str());
}

static void print_sharded(const memory::ShardedMemory& sharded, const std::string& link, double link_gbs) {
  std::printf("%s over %lld GPUs (%lld per node): one GPU holds %s (a model, not a measurement)\n",
              memory::sharding_name(sharded.plan.strategy), static_cast<long long>(sharded.plan.gpus),
              static_cast<long long>(sharded.plan.gpus_per_node), format_bytes(sharded.required_bytes).c_str());
  print_part("parameters", sharded.parameter_bytes);
  print_part("gradients", sharded.gradient_bytes);
  print_part("optimizer state", sharded.optimizer_state_bytes);
  print_part("activations, inputs, temporaries", sharded.other_bytes);
  print_part("gathered from other GPUs", sharded.gathered_bytes);
  print_part("communication buckets", sharded.bucket_bytes);
  for (const std::string& note : sharded.notes) std::printf("  note: %s\n", note.c_str());
  for (const memory::Collective& collective : sharded.collectives) {
    if (collective.seconds)
      std::printf("  step: %-44s %11s per GPU, %8.2f ms on %s's %.0f GB/s%s (collective model)\n",
                  collective.what.c_str(), format_bytes(collective.bytes).c_str(), 1e3 * *collective.seconds,
                  link.c_str(), link_gbs, collective.crosses_nodes ? " and InfiniBand between nodes" : "");
    else
      std::printf("  step: %-44s %11s per GPU, (no link catalogued for this GPU: not timed)\n", collective.what.c_str(),
                  format_bytes(collective.bytes).c_str());
  }
}

// One GPU's share under a data, tensor or pipeline parallel plan (gpu/parallel.h).
static void print_parallel(const gpu::ParallelMemory& memory, const gpu::ParallelPlan& plan) {
  std::printf(
      "%s over %lld GPUs: one GPU holds %s (stage %d, %lld micro-batch%s in flight; a model, not a "
      "measurement)\n",
      gpu::describe(plan).c_str(), static_cast<long long>(plan.gpus()), format_bytes(memory.required_bytes).c_str(),
      memory.stage, static_cast<long long>(memory.in_flight), memory.in_flight == 1 ? "" : "es");
  print_part("parameters", memory.parameter_bytes);
  print_part("gradients", memory.gradient_bytes);
  print_part("optimizer state", memory.optimizer_state_bytes);
  print_part("activations, inputs, temporaries", memory.activation_bytes);
  print_part("DDP's gradient buckets", memory.bucket_bytes);
}

void print_memory(const forecast::MemoryForecast& forecast, const Measured& measured) {
  const memory::MemoryReport& report = forecast.report;
  const int64_t simulated_peak = simulated_profiler_peak(report);
  std::printf("%s  batch %lld  input %s  optimizer %s  precision %s  device %s  threads %lld\n", forecast.model.c_str(),
              static_cast<long long>(forecast.batch), forecast.input.c_str(), name(forecast.config.optimizer).c_str(),
              name(forecast.config.precision).c_str(), name(report.device).c_str(),
              static_cast<long long>(forecast.config.threads));
  const size_t checkpointed = checkpoint_segments(forecast.graph).size();
  if (checkpointed > 0 || forecast.config.grad_accum > 1)
    std::printf(
        "training       %s%s%s\n",
        checkpointed > 0 ? (std::to_string(checkpointed) + " checkpointed blocks (recomputed in backward)").c_str()
                         : "",
        checkpointed > 0 && forecast.config.grad_accum > 1 ? ", " : "",
        forecast.config.grad_accum > 1
            ? ("gradient accumulation over " + std::to_string(forecast.config.grad_accum) + " micro-batches").c_str()
            : "");
  if (!forecast.gpu.empty())
    std::printf("gpu            %s (%s): memory as nvidia-smi would show it; fits is judged against its memory\n",
                forecast.gpu.c_str(), forecast.gpu_name.c_str());
  std::printf("parameters     %lld, %lld of them trained\n", static_cast<long long>(forecast.parameters),
              static_cast<long long>(forecast.trainable_parameters));
  std::printf("peak memory    %s above a baseline of %s (parameters, buffers, inputs): %s in all\n",
              format_bytes(report.peak_bytes).c_str(), format_bytes(report.baseline_bytes).c_str(),
              format_bytes(report.peak_total_bytes).c_str());
  if (report.device == Device::Cuda) print_cuda_parts(forecast);
  if (report.device == Device::Cpu)
    std::printf("kernels        isa %s (%s)\n", hardware::isa_name(forecast.simulated_isa),
                forecast.isa_source.c_str());
  std::printf("at the peak    iteration %d, %s%s%s\n", report.peak_iteration, memory::phase_name(report.peak_phase),
              report.peak_node_name.empty() ? "" : " of ", report.peak_node_name.c_str());
  const memory::MemoryBreakdown& b = report.at_peak;
  print_row("parameters", b.parameter_bytes, report.peak_total_bytes);
  print_row("buffers + inputs + labels", b.state_bytes, report.peak_total_bytes);
  print_row("gradients", b.gradient_bytes, report.peak_total_bytes);
  print_row("optimizer state", b.optimizer_state_bytes, report.peak_total_bytes);
  print_row("activations (kept for backward)", b.activation_bytes, report.peak_total_bytes);
  print_row("transient (grads, workspaces)", b.transient_bytes, report.peak_total_bytes);
  if (forecast.sharded) print_sharded(*forecast.sharded, forecast.link, forecast.link_gbs);
  if (forecast.parallel) print_parallel(*forecast.parallel, forecast.parallel_plan);
  const int64_t required = forecast.parallel  ? forecast.parallel->required_bytes
                           : forecast.sharded ? forecast.sharded->required_bytes
                                              : report.required_bytes;
  const char* per = forecast.sharded || forecast.parallel ? " per GPU" : "";
  if (forecast.fits_limit > 0)
    std::printf("fits in %s%s: %s (needs %s)\n", format_bytes(forecast.fits_limit).c_str(), per,
                forecast.fits ? "yes" : "no", format_bytes(required).c_str());
  if (forecast.batch_limit > 0) {
    // Under a parallel plan the batch is each replica's, a whole number of micro-batches, and the bytes per GPU.
    const int64_t step = forecast.parallel ? forecast.parallel_plan.micro_batches : 1;
    const std::string what = forecast.parallel
                                 ? "largest batch per replica in " + format_bytes(forecast.batch_limit) + " per GPU"
                                 : "largest batch in " + format_bytes(forecast.batch_limit);
    const std::string next =
        step == 1 ? std::string("one more") : "batch " + std::to_string(forecast.max_batch.batch + step);
    if (forecast.max_batch.batch == 0)
      std::printf("%s: none (batch %lld needs %s)\n", what.c_str(), static_cast<long long>(step),
                  format_bytes(forecast.max_batch.next_required_bytes).c_str());
    else
      std::printf("%s: %lld (needs %s%s)\n", what.c_str(), static_cast<long long>(forecast.max_batch.batch),
                  format_bytes(forecast.max_batch.required_bytes).c_str(),
                  forecast.max_batch.next_required_bytes > 0
                      ? ("; " + next + " needs " + format_bytes(forecast.max_batch.next_required_bytes)).c_str()
                      : "");
  }
  if (forecast.seq_limit > 0) {
    const memory::MaxBatchResult& seq = forecast.max_seq;
    const bool refused =
        !forecast.max_seq_refused.empty() && seq.next_required_bytes == std::numeric_limits<int64_t>::max();
    if (seq.batch == 0)
      std::printf("longest sequence in %s%s: none (sequence 1 needs %s)\n", format_bytes(forecast.seq_limit).c_str(),
                  per, format_bytes(seq.next_required_bytes).c_str());
    else if (refused)
      std::printf("longest sequence in %s%s: %lld (needs %s); longer: %s\n", format_bytes(forecast.seq_limit).c_str(),
                  per, static_cast<long long>(seq.batch), format_bytes(seq.required_bytes).c_str(),
                  forecast.max_seq_refused.c_str());
    else
      std::printf("longest sequence in %s%s: %lld at batch %lld (needs %s%s%s)\n",
                  format_bytes(forecast.seq_limit).c_str(), per, static_cast<long long>(seq.batch),
                  static_cast<long long>(forecast.batch), format_bytes(seq.required_bytes).c_str(),
                  seq.next_required_bytes > 0 ? "; one more needs " : "",
                  seq.next_required_bytes > 0 ? format_bytes(seq.next_required_bytes).c_str() : "");
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
  if (forecast.config.keep_events) {
    std::printf("\n");
    for (const memory::LoggedEvent& e : report.event_log)
      std::printf("%c %lld %lld %d %s %s %s\n", e.alloc ? '+' : '-', static_cast<long long>(e.bytes),
                  static_cast<long long>(e.live_bytes), e.iteration, memory::phase_name(e.phase),
                  e.node >= 0 ? forecast.graph.node(e.node).name.c_str() : "-", e.what);
  }
  if (forecast.config.keep_timeline) {
    std::printf("\n%-4s %-9s %-40s %14s %14s\n", "iter", "phase", "node", "max above base", "end above base");
    for (const memory::TimelineEntry& entry : report.timeline)
      std::printf("%-4d %-9s %-40s %14lld %14lld\n", entry.iteration, memory::phase_name(entry.phase),
                  entry.node >= 0 ? forecast.graph.node(entry.node).name.c_str() : "-",
                  static_cast<long long>(entry.max_bytes - report.baseline_bytes),
                  static_cast<long long>(entry.end_bytes - report.baseline_bytes));
  }
}

int check_dataset(const std::string& db, int64_t show, bool as_json, hardware::CpuIsa isa) {
  study::MemoryCheck check = study::check_memory_simulator(db, isa);
  const int64_t off = check.configurations - check.within_1pct;
  const size_t listed = std::min(check.rows.size(), static_cast<size_t>(show));
  if (as_json) {
    json worst = json::array();
    for (size_t k = 0; k < listed; ++k) {
      const study::MemoryCheckRow& row = check.rows[k];
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
    for (const study::CheckedEnvironment& environment : check.environments) {
      json entry{{"env_hash", environment.hash},
                 {"recorded_isa", environment.recorded_isa},
                 {"simulated_isa", hardware::isa_name(environment.simulated)},
                 {"inferred", environment.inferred}};
      if (environment.inferred)
        entry["exact_by_rules"] = {{"avx512_core", environment.exact_avx512}, {"avx2", environment.exact_avx2}};
      environments.push_back(entry);
    }
    std::cout
        << json{{"dataset", db},        {"environments", environments},     {"configurations", check.configurations},
                {"exact", check.exact}, {"within_1pct", check.within_1pct}, {"not_modelled", check.not_modelled},
                {"worst", worst}}
               .dump(2)
        << "\n";
  } else {
    std::printf("memory simulator vs profiler on %s: %lld configurations with a measured peak\n", db.c_str(),
                static_cast<long long>(check.configurations));
    std::printf("  byte-exact %lld, within 1%% %lld, more than 1%% off %lld; not modelled %lld\n",
                static_cast<long long>(check.exact), static_cast<long long>(check.within_1pct),
                static_cast<long long>(off), static_cast<long long>(check.not_modelled));
    for (const study::CheckedEnvironment& environment : check.environments) {
      if (environment.inferred)
        std::printf(
            "  environment %s: isa not recorded; its peaks follow the %s rules (%lld byte-exact under avx2, "
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
      const study::MemoryCheckRow& row = check.rows[k];
      std::printf("    %+9.4f%%  %-44s measured %14lld  simulated %14lld\n", 100 * row.relative_error(),
                  config_text(row).c_str(), static_cast<long long>(row.measured_bytes),
                  static_cast<long long>(row.simulated_bytes));
    }
  }
  return off > 0 ? 1 : 0;
}

}  // namespace dnncast::cli
