#include "cli/print_predict.h"

#include <cstdio>

#include "core/units.h"

namespace dnncast::cli {

void print_forecast(const forecast::Forecast& result) {
  for (const std::string& note : result.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::printf("%s  batch %lld  input %s  %s %s  %lld thread%s  on %s\n", result.model.c_str(),
              static_cast<long long>(result.batch), result.input.c_str(), name(result.optimizer).c_str(),
              name(result.precision).c_str(), static_cast<long long>(result.threads), result.threads == 1 ? "" : "s",
              result.env.c_str());
  std::printf("  time per iteration  %.1f ms   (90%% interval %.1f - %.1f ms)\n", result.time_ms, result.time_ms_low,
              result.time_ms_high);
  if (result.epoch_s)
    std::printf("  time per epoch      %.1f s    (%lld samples = %lld iterations)\n", *result.epoch_s,
                static_cast<long long>(result.epoch_samples), static_cast<long long>(result.epoch_iterations));
  if (result.simulated()) {
    const double total = static_cast<double>(*result.peak_total_bytes), peak = static_cast<double>(*result.peak_bytes);
    std::printf(
        "  peak memory         %s in total: %s held before the first iteration + %s while training (simulated)\n",
        format_bytes(total, ByteStyle::TwoDecimals).c_str(), format_bytes(total - peak, ByteStyle::TwoDecimals).c_str(),
        format_bytes(peak, ByteStyle::TwoDecimals).c_str());
  } else if (result.peak_bytes) {
    std::printf("  peak memory         %s   (90%% interval %s - %s, learned)\n",
                format_bytes(static_cast<double>(*result.peak_bytes), ByteStyle::TwoDecimals).c_str(),
                format_bytes(static_cast<double>(*result.peak_bytes_low), ByteStyle::TwoDecimals).c_str(),
                format_bytes(static_cast<double>(*result.peak_bytes_high), ByteStyle::TwoDecimals).c_str());
  }
  std::printf("  predictor           %s (%s, CV MRE %.1f%%)\n", result.predictor.c_str(), result.learner.c_str(),
              100 * result.cv_mre);
}

namespace {

// Several GPUs: the iteration on the busiest GPU, its parts, each kind of collective.
void print_parallel(const gpu::GpuForecast& result) {
  const gpu::ParallelTiming& timing = *result.parallel;
  std::printf("  GPUs                %lld (%s), micro-batch %lld, %lld samples per iteration\n",
              static_cast<long long>(timing.plan.gpus()), gpu::describe(timing.plan).c_str(),
              static_cast<long long>(timing.micro_batch), static_cast<long long>(timing.global_batch));
  std::printf("  time per iteration  %.1f ms   (90%% interval %.1f - %.1f ms; %s)\n", result.time_ms,
              result.time_ms_low, result.time_ms_high, result.time_model.c_str());
  std::printf("    compute %.1f ms, pipeline bubble %.1f ms, exposed communication %.1f ms, optimizer %.1f ms\n",
              timing.compute_ms, timing.bubble_ms, timing.exposed_comm_ms, timing.optimizer_ms);
  if (timing.memory) {
    const gpu::ParallelMemory& memory = *timing.memory;
    auto bytes = [](int64_t value) { return format_bytes(static_cast<double>(value), ByteStyle::TwoDecimals); };
    std::printf(
        "    memory per GPU (stage %d, %lld micro-batch%s in flight): parameters %s, gradients %s, optimizer "
        "states %s, activations %s, DDP buckets %s\n",
        memory.stage, static_cast<long long>(memory.in_flight), memory.in_flight == 1 ? "" : "es",
        bytes(memory.parameter_bytes).c_str(), bytes(memory.gradient_bytes).c_str(),
        bytes(memory.optimizer_state_bytes).c_str(), bytes(memory.activation_bytes).c_str(),
        bytes(memory.bucket_bytes).c_str());
  }
  for (const gpu::CollectiveCost& collective : timing.collectives)
    std::printf("    %-86s %6lld x %s over %lld GPUs: %.1f ms\n", collective.what.c_str(),
                static_cast<long long>(collective.count),
                format_bytes(collective.bytes, ByteStyle::TwoDecimals).c_str(), static_cast<long long>(collective.gpus),
                collective.ms);
}

}  // namespace

void print_gpu_forecast(const gpu::GpuForecast& result) {
  for (const std::string& note : result.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::printf("%s  batch %lld  input %s  %s %s  %s  on %s (%s)\n", result.model.c_str(),
              static_cast<long long>(result.batch), result.input.c_str(), name(result.optimizer).c_str(),
              gpu::name(result.precision).c_str(), gpu::name(result.framework).c_str(), result.device.c_str(),
              result.device_name.c_str());
  if (result.parallel) {
    print_parallel(result);
  } else {
    std::printf("  time per iteration  %.1f ms   (%s; 90%% interval %.1f - %.1f ms; plain roofline %.1f ms; %s)\n",
                result.time_ms, gpu::name(result.phase).c_str(), result.time_ms_low, result.time_ms_high,
                result.roofline_ms, result.time_model.c_str());
  }
  if (result.epoch_s)
    std::printf("  time per epoch      %.1f s    (%lld samples = %lld iterations)\n", *result.epoch_s,
                static_cast<long long>(result.epoch_samples), static_cast<long long>(result.epoch_iterations));
  if (result.required_bytes) {
    std::printf(
        "  memory              %s needed (upper bound of %s as nvidia-smi would show it: simulated CUDA "
        "caching allocator + contexts, workspaces and the measured margin)",
        format_bytes(static_cast<double>(*result.required_bytes), ByteStyle::TwoDecimals).c_str(),
        format_bytes(static_cast<double>(result.memory_forecast_bytes.value_or(*result.required_bytes)),
                     ByteStyle::TwoDecimals)
            .c_str());
    if (result.fits)
      std::printf(" of %s: %s",
                  format_bytes(static_cast<double>(*result.device_memory_bytes), ByteStyle::TwoDecimals).c_str(),
                  *result.fits ? "fits" : "does NOT fit");
    std::printf("\n");
  }
  if (result.max_batch) std::printf("  largest batch       %lld\n", static_cast<long long>(*result.max_batch));
  std::printf("  basis               %s: %s\n", result.basis.c_str(), result.basis_detail.c_str());
}

}  // namespace dnncast::cli
