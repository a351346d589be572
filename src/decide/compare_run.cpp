// `dnncast compare` (compare.h): one GPU forecast per distinct GPU of the selected instances, then
// the rows (compare.cpp). Apart from compare.cpp so that the row logic links without the forecaster.
#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "decide/compare.h"
#include "gpu/parallel.h"
#include "import/model_source.h"

namespace dnncast::decide {

namespace {

// One GPU's memory under `sharding` on each multi-GPU instance that has a forecast, and its step's collectives
// at the GPU's link. The one-GPU step is simulated once per batch, for every GPU and GPU count alike (the
// simulation does not depend on either: gpu_forecast_memory_config).
MultiGpuSteps shard_instances(const CompareRequest& request, memory::Sharding sharding,
                              const std::vector<hardware::CloudInstance>& instances,
                              const hardware::Catalogue& catalogue, const std::vector<gpu::GpuForecast>& forecasts) {
  struct Simulated {
    Graph graph;
    memory::MemoryReport report;
  };
  std::map<int64_t, Simulated> by_batch;
  std::optional<memory::MemoryConfig> config;
  auto per_gpu_bytes = [&](int64_t batch, const memory::ShardingPlan& plan) {
    auto found = by_batch.find(batch);
    if (found == by_batch.end()) {
      if (!config) {
        config = gpu::gpu_forecast_memory_config(request.forecast);
        config->keep_timeline = false;
        config->keep_events = false;
      }
      Graph graph = request.forecast.model.build_at_batch(batch);
      memory::MemoryReport report = memory::simulate_memory(graph, *config);
      found = by_batch.emplace(batch, Simulated{std::move(graph), std::move(report)}).first;
    }
    return memory::shard_memory(found->second.report, found->second.graph, plan, *config);
  };
  MultiGpuSteps steps;
  for (const hardware::CloudInstance& instance : instances) {
    if (instance.gpu_count < 2 || steps.count({instance.gpu, instance.gpu_count})) continue;
    auto forecast = std::find_if(forecasts.begin(), forecasts.end(),
                                 [&](const gpu::GpuForecast& one) { return one.device == instance.gpu; });
    if (forecast == forecasts.end()) continue;  // left out, with the forecast's reason
    MultiGpuStep step;
    step.sharding = sharding;
    const hardware::GpuSpec& gpu = catalogue.gpu(instance.gpu);
    step.link = gpu.link;
    step.link_gbs = gpu.link_gbs.value_or(0);
    // One instance is one node: hsdp shards among its GPUs.
    const memory::ShardingPlan plan{sharding, instance.gpu_count, instance.gpu_count};
    try {
      const memory::ShardedMemory sharded = per_gpu_bytes(request.forecast.model.spec.batch, plan);
      step.required_bytes = sharded.required_bytes;
      // Each collective by the collective model (gpu/collectives.h) on the instance's one node.
      std::vector<memory::Collective> collectives = sharded.collectives;
      gpu::time_collectives(collectives, gpu, instance.gpu_count);
      double seconds = 0;
      bool timed = true;
      for (const memory::Collective& collective : collectives) {
        step.collective_bytes += collective.bytes;
        timed = timed && collective.seconds.has_value();
        seconds += collective.seconds.value_or(0);
      }
      if (timed) step.collective_ms = 1e3 * seconds;
      if (forecast->device_memory_bytes) {
        step.fits = sharded.required_bytes <= *forecast->device_memory_bytes;
        step.max_batch =
            memory::largest_fitting([&](int64_t batch) { return per_gpu_bytes(batch, plan).required_bytes; },
                                    *forecast->device_memory_bytes, int64_t{1} << 16)
                .batch;
      }
    } catch (const InputError&) {
      // As the one-GPU forecast's memory: not forecast (its note says why); the collectives are then unknown too.
    }
    steps[{instance.gpu, instance.gpu_count}] = step;
  }
  return steps;
}

// The plans of `gpus` GPUs that `parallel` names: itself, or for "auto" every tensor-parallel degree (a power of two,
// at most 8) and pipeline degree (a power of two) that divide them, data parallel the rest.
std::vector<std::string> candidate_plans(const std::string& parallel, int64_t gpus) {
  if (parallel != "auto") return {parallel};
  std::vector<std::string> plans;
  for (int64_t tp = 1; tp <= std::min<int64_t>(gpus, 8); tp *= 2)
    for (int64_t pp = 1; tp * pp <= gpus; pp *= 2)
      if (gpus % (tp * pp) == 0) plans.push_back("tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp));
  return plans;
}

std::string short_plan(const gpu::ParallelPlan& plan) {
  std::string text;
  if (plan.tp > 1) text += "tp" + std::to_string(plan.tp);
  if (plan.pp > 1) text += "pp" + std::to_string(plan.pp);
  if (plan.dp > 1) text += "dp" + std::to_string(plan.dp);
  return text;
}

// Each multi-GPU instance under the request's parallel plan (or, for "auto", the fastest of its plans that fits):
// the iteration as gpu/parallel.h times it at batch x GPUs samples, a pipeline's micro-batches of `batch`.
MultiGpuSteps plan_instances(const CompareRequest& request, const std::vector<hardware::CloudInstance>& instances,
                             const hardware::Catalogue& catalogue, const std::vector<gpu::GpuForecast>& forecasts,
                             const gpu::GpuCalibration& calibration) {
  MultiGpuSteps steps;
  const int64_t batch = request.forecast.model.spec.batch;
  for (const hardware::CloudInstance& instance : instances) {
    const int64_t gpus = instance.gpu_count;
    if (gpus < 2 || steps.count({instance.gpu, gpus})) continue;
    if (std::none_of(forecasts.begin(), forecasts.end(),
                     [&](const gpu::GpuForecast& one) { return one.device == instance.gpu; }))
      continue;  // left out, with the forecast's reason
    const hardware::GpuSpec& gpu = catalogue.gpu(instance.gpu);
    // The plan `text` on this instance, at `batch` samples per GPU.
    auto request_for = [&](const std::string& text) {
      gpu::GpuForecastRequest one = request.forecast;
      one.gpu = gpu;
      one.max_batch = false;
      one.parallel = gpu::parse_parallel(text, gpus, 1, gpus, {"GPUs", "--parallel"});  // one node
      one.parallel.micro_batches = one.parallel.pp > 1 ? one.parallel.tp * one.parallel.pp : 1;
      one.model.spec.batch = batch * one.parallel.tp * one.parallel.pp;
      return one;
    };
    MultiGpuStep best;
    std::string best_text;
    for (const std::string& text : candidate_plans(request.parallel, gpus)) {
      try {
        const gpu::GpuForecastRequest one = request_for(text);
        const gpu::GpuForecast forecast = gpu::forecast_gpu(one, calibration);
        const gpu::ParallelTiming& timing = *forecast.parallel;
        MultiGpuStep step;
        step.plan = short_plan(one.parallel);
        step.time_ms = forecast.time_ms;
        step.low_ratio = forecast.time_ms > 0 ? forecast.time_ms_low / forecast.time_ms : 1;
        step.high_ratio = forecast.time_ms > 0 ? forecast.time_ms_high / forecast.time_ms : 1;
        step.compute_ms = timing.compute_ms + timing.optimizer_ms + timing.bubble_ms;
        if (timing.links_known) step.collective_ms = timing.exposed_comm_ms;
        for (const gpu::CollectiveCost& collective : timing.collectives)
          step.collective_bytes += static_cast<int64_t>(collective.bytes * static_cast<double>(collective.count));
        step.required_bytes = forecast.required_bytes;
        step.fits = forecast.fits;
        step.link = gpu.link;
        step.link_gbs = gpu.link_gbs.value_or(0);
        const bool fits = step.fits.value_or(true), best_fits = best.fits.value_or(true);
        if (!best.time_ms || (fits && !best_fits) || (fits == best_fits && *step.time_ms < *best.time_ms))
          best = step, best_text = text;
      } catch (const InputError& error) {
        if (best.refused.empty()) best.refused = error.what();
      }
    }
    if (best.time_ms) {
      best.refused.clear();
      // The largest batch per GPU under the plan kept: its replica's largest over the replica's GPUs (tp x pp).
      gpu::GpuForecastRequest one = request_for(best_text);
      one.max_batch = true;
      try {
        const gpu::GpuForecast forecast = gpu::forecast_gpu(one, calibration);
        if (forecast.max_batch) best.max_batch = *forecast.max_batch / (one.parallel.tp * one.parallel.pp);
      } catch (const InputError&) {
        // Left unknown ("-"), as where memory is not forecast.
      }
    }
    steps[{instance.gpu, gpus}] = best;
  }
  return steps;
}

}  // namespace

Comparison compare(const CompareRequest& request) {
  return compare(request, hardware::Catalogue::load(request.forecast.catalogue_files));
}

Comparison compare(const CompareRequest& request, const hardware::Catalogue& catalogue) {
  if (request.forecast.model.spec.batch < 1)
    throw InputError("--batch " + std::to_string(request.forecast.model.spec.batch) + ": must be at least 1");
  if (request.epochs < 1) throw InputError("--epochs " + std::to_string(request.epochs) + ": must be at least 1");
  if (request.epochs > 1 && request.forecast.epoch_samples == 0)
    throw InputError("--epochs " + std::to_string(request.epochs) +
                     " needs --epoch-samples (the samples of one epoch)");
  if (request.forecast.epoch_samples < 0)
    throw InputError("--epoch-samples " + std::to_string(request.forecast.epoch_samples) + ": must be at least 1");
  const memory::Sharding sharding = requested_sharding(request);
  std::vector<std::string> notes;
  const std::vector<hardware::CloudInstance> instances = select_instances(request, catalogue, notes);
  const bool several = std::any_of(instances.begin(), instances.end(),
                                   [](const hardware::CloudInstance& instance) { return instance.gpu_count > 1; });
  if (!request.sharding.empty() && sharding != memory::Sharding::Ddp && !several)
    throw InputError("--sharding " + request.sharding +
                     " divides the model among GPUs and needs 2 or more, but no instance selected has more than one");
  // Read once for all the GPUs (a bad file is the request's error, the same on every GPU).
  const gpu::GpuCalibration calibration = gpu::load_gpu_calibration(request.forecast.calibration_file);

  std::vector<gpu::GpuForecast> forecasts;
  std::map<std::string, std::string> failures;  // GPU -> the forecast's error
  std::optional<InputError> first_failure;
  std::set<std::string> done;
  for (const hardware::CloudInstance& instance : instances) {
    if (!done.insert(instance.gpu).second) continue;
    gpu::GpuForecastRequest one = request.forecast;
    one.max_batch = true;
    try {
      one.gpu = catalogue.gpu(instance.gpu);
      forecasts.push_back(gpu::forecast_gpu(one, calibration));
    } catch (const InputError& error) {
      if (!first_failure) first_failure = error;
      failures[instance.gpu] = error.what();
    }
  }
  // The same error on every GPU is the model's or the request's: report it as it is.
  if (forecasts.empty()) throw *first_failure;
  if (!request.parallel.empty() && !request.multi_gpu)
    throw InputError("--parallel " + request.parallel +
                     " needs --multi-gpu: it applies to the instances with more "
                     "than one GPU");
  if (!request.parallel.empty() && !request.sharding.empty())
    throw InputError("give --sharding or --parallel, not both");
  const MultiGpuSteps steps = !request.multi_gpu ? MultiGpuSteps{}
                              : request.parallel.empty()
                                  ? shard_instances(request, sharding, instances, catalogue, forecasts)
                                  : plan_instances(request, instances, catalogue, forecasts, calibration);
  if (!steps.empty() &&
      std::all_of(steps.begin(), steps.end(), [](const auto& step) { return !step.second.refused.empty(); }))
    throw InputError(steps.begin()->second.refused);
  Comparison comparison = assemble_comparison(request, instances, forecasts, failures, steps);
  for (const auto& failure : failures) {
    const std::string& gpu = failure.first;  // a named copy: C++17 lambdas cannot capture structured bindings
    const auto count = std::count_if(comparison.left_out.begin(), comparison.left_out.end(),
                                     [&gpu](const LeftOutInstance& left) { return left.gpu == gpu; });
    notes.push_back("left out " + std::to_string(count) + " instance" + (count == 1 ? "" : "s") + " of " + gpu +
                    ", not forecast: " + failure.second);
  }
  std::set<std::string> untimed;
  for (const auto& [key, step] : steps)
    if (step.link_gbs <= 0) untimed.insert(key.first);
  if (!untimed.empty()) {
    std::string gpus;
    for (const std::string& gpu : untimed) gpus += (gpus.empty() ? "" : ", ") + gpu;
    notes.push_back("collectives not timed on " + gpus +
                    ": data/hardware/gpu_links.csv lacks the link, so those rows are compute alone (a lower bound)");
  }
  comparison.notes.insert(comparison.notes.begin(), notes.begin(), notes.end());
  return comparison;
}

}  // namespace dnncast::decide
