// The parts of `dnncast compare` after the forecasts (compare.h): which instances, their rows, the
// totals and the Pareto front. compare_run.cpp forecasts and calls these.
#include "decide/compare.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/units.h"

namespace dnncast::decide {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// The providers asked for, each checked against the catalogue's (any case).
std::set<std::string> wanted_providers(const CompareRequest& request, const hardware::Catalogue& catalogue) {
  std::set<std::string> known;
  for (const hardware::CloudInstance& instance : catalogue.instances()) known.insert(instance.provider);
  std::set<std::string> wanted;
  for (const std::string& provider : request.providers) {
    std::string key = provider;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!known.count(key))
      throw InputError("--provider " + quote(provider) + ": unknown provider (expected one of " +
                       joined({known.begin(), known.end()}) + ")");
    wanted.insert(key);
  }
  return wanted;
}

std::string plural(size_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

}  // namespace

memory::Sharding requested_sharding(const CompareRequest& request) {
  if (request.sharding.empty()) return memory::Sharding::Ddp;
  const memory::Sharding sharding = memory::parse_sharding(request.sharding, "--sharding");
  if (sharding == memory::Sharding::None)
    throw InputError("--sharding " + request.sharding + ": expected one of " + memory::sharding_names());
  if (!request.multi_gpu)
    throw InputError("--sharding " + request.sharding +
                     " needs --multi-gpu: it applies to the instances with more than one GPU");
  return sharding;
}

int64_t run_iterations(int64_t batch, int64_t gpu_count, int64_t epochs, int64_t epoch_samples) {
  DNNCAST_ASSERT(batch >= 1 && gpu_count >= 1 && epochs >= 1 && epoch_samples >= 0);
  if (epoch_samples == 0) return kIterationsWithoutEpochs;
  const int64_t samples_per_iteration = batch * gpu_count;
  return epochs * ((epoch_samples + samples_per_iteration - 1) / samples_per_iteration);
}

std::vector<hardware::CloudInstance> select_instances(const CompareRequest& request,
                                                      const hardware::Catalogue& catalogue,
                                                      std::vector<std::string>& notes) {
  const std::set<std::string> providers = wanted_providers(request, catalogue);
  std::set<std::string> gpus;
  for (const std::string& gpu : request.gpus) gpus.insert(catalogue.gpu(gpu).name);  // unknown: throws
  size_t multi_gpu_left_out = 0, without_spot = 0;
  bool gcp = false;
  std::vector<hardware::CloudInstance> selected;
  for (const hardware::CloudInstance& instance : catalogue.instances()) {
    if (!providers.empty() && !providers.count(instance.provider)) continue;
    if (!gpus.empty() && !gpus.count(instance.gpu)) continue;
    if (instance.gpu_count != 1 && !request.multi_gpu) {
      ++multi_gpu_left_out;
      continue;
    }
    hardware::CloudInstance chosen = instance;
    if (request.spot) {
      if (!instance.spot_price_usd_per_hour) {
        ++without_spot;
        continue;
      }
      chosen.price_usd_per_hour = *instance.spot_price_usd_per_hour;
    }
    gcp = gcp || instance.instance_type.empty();
    selected.push_back(chosen);
  }
  if (selected.empty()) {
    std::string what = "no instance matches";
    if (!request.providers.empty()) what += " --provider " + joined(request.providers);
    if (!request.gpus.empty()) what += " --gpus " + joined(request.gpus);
    if (request.spot) what += " with a spot price";
    if (!request.multi_gpu && multi_gpu_left_out > 0) what += " with one GPU (--multi-gpu adds the others)";
    throw InputError(what + " (`dnncast devices --instances` lists them)");
  }
  if (multi_gpu_left_out > 0)
    notes.push_back(plural(multi_gpu_left_out, "instance") +
                    " with more than one GPU left out (--multi-gpu adds them)");
  if (request.multi_gpu && !request.parallel.empty()) {
    notes.push_back("multi-GPU instances: --batch is per GPU (batch x GPUs samples per iteration); --parallel " +
                    request.parallel +
                    (request.parallel == "auto" ? ": each instance's fastest plan that fits (tp and pp powers of two, "
                                                  "dp the rest)"
                                                : std::string()) +
                    ", timed as `predict --gpus N --parallel` times it (DDP's buckets overlapped with backward, "
                    "tensor-parallel all-reduces, a pipeline's bubble, micro-batches of --batch); shard: the plan, "
                    "comm_ms: the collectives left exposed (a model, not a measurement)");
  } else if (request.multi_gpu) {
    const memory::Sharding sharding = requested_sharding(request);
    notes.push_back(std::string("multi-GPU instances: --batch is per GPU; --sharding ") +
                    memory::sharding_name(sharding) +
                    ": one GPU's memory as `dnncast memory --gpus N --sharding` gives it, and an iteration is the "
                    "one-GPU compute plus the ring collectives timed by the collective model on the GPU's link "
                    "(data/hardware/collectives.csv, data/hardware/gpu_links.csv), not overlapped with compute (a "
                    "model, not a measurement)");
    if (sharding == memory::Sharding::Hsdp)
      notes.push_back("hsdp: an instance is one node, so it shards among its GPUs as fsdp does");
  }
  if (without_spot > 0) notes.push_back(plural(without_spot, "instance") + " without a spot price left out");
  if (request.spot) notes.push_back("spot prices: one zone at the catalogue's crawl time; they move by zone and hour");
  if (gcp)
    notes.push_back(
        "gcp rows price the GPUs alone: the host VM is priced apart and not included "
        "(data/hardware/instances.README.md)");
  return selected;
}

void mark_pareto_front(std::vector<CompareRow>& rows) {
  for (CompareRow& row : rows) {
    row.on_pareto_front = row.fits.value_or(false);
    if (!row.on_pareto_front) continue;
    for (const CompareRow& other : rows) {
      if (&other == &row || !other.fits.value_or(false)) continue;
      const bool no_worse = other.total_usd <= row.total_usd && other.total_hours <= row.total_hours;
      const bool better = other.total_usd < row.total_usd || other.total_hours < row.total_hours;
      if (no_worse && better) {
        row.on_pareto_front = false;
        break;
      }
    }
  }
}

namespace {

CompareRow make_row(const CompareRequest& request, const hardware::CloudInstance& instance,
                    const gpu::GpuForecast& forecast, const MultiGpuStep* step) {
  CompareRow row;
  row.provider = instance.provider;
  row.instance_type = instance.instance_type;
  row.gpu = instance.gpu;
  row.gpu_name = forecast.device_name;
  row.gpu_count = instance.gpu_count;
  row.price_usd_per_hour = instance.price_usd_per_hour;
  row.compute_ms = forecast.time_ms;
  row.required_bytes = forecast.required_bytes;
  row.gpu_memory_bytes = forecast.device_memory_bytes;
  row.fits = forecast.fits;
  row.max_batch = forecast.max_batch;
  row.collective_ms = 0;
  if (step) {
    // A sharding: the collectives run after the compute (no overlap); untimed ones (no link catalogued) are not
    // counted. A parallel plan: the iteration as gpu/parallel.h times it (exposed collectives, bubble included).
    row.sharding = step->time_ms ? step->plan : memory::sharding_name(step->sharding);
    if (step->time_ms) row.compute_ms = step->compute_ms;
    row.link = step->link;
    row.collective_bytes = step->collective_bytes;
    row.collective_ms = step->collective_ms;
    row.required_bytes = step->required_bytes;
    row.fits = step->fits;
    row.max_batch = step->max_batch;
  }
  const double collective_ms = row.collective_ms.value_or(0);
  row.time_ms = forecast.time_ms + collective_ms;
  row.time_ms_low = forecast.time_ms_low + collective_ms;
  row.time_ms_high = forecast.time_ms_high + collective_ms;
  if (step && step->time_ms) {
    row.time_ms = *step->time_ms;
    row.time_ms_low = row.time_ms * step->low_ratio;
    row.time_ms_high = row.time_ms * step->high_ratio;
  }
  row.iterations = run_iterations(request.forecast.model.spec.batch, instance.gpu_count, request.epochs,
                                  request.forecast.epoch_samples);
  if (request.forecast.epoch_samples > 0)
    row.epoch_s = static_cast<double>(row.iterations / request.epochs) * row.time_ms / 1e3;
  const double ms_to_hours = static_cast<double>(row.iterations) / 3.6e6;
  row.total_hours = row.time_ms * ms_to_hours;
  row.total_hours_low = row.time_ms_low * ms_to_hours;
  row.total_hours_high = row.time_ms_high * ms_to_hours;
  row.total_usd = row.total_hours * row.price_usd_per_hour;
  row.total_usd_low = row.total_hours_low * row.price_usd_per_hour;
  row.total_usd_high = row.total_hours_high * row.price_usd_per_hour;
  row.basis = forecast.basis;
  return row;
}

}  // namespace

Comparison assemble_comparison(const CompareRequest& request, const std::vector<hardware::CloudInstance>& instances,
                               const std::vector<gpu::GpuForecast>& forecasts,
                               const std::map<std::string, std::string>& failures, const MultiGpuSteps& steps) {
  if (request.forecast.model.spec.batch < 1)
    throw InputError("--batch " + std::to_string(request.forecast.model.spec.batch) + ": must be at least 1");
  std::map<std::string, const gpu::GpuForecast*> by_gpu;
  for (const gpu::GpuForecast& forecast : forecasts) by_gpu[forecast.device] = &forecast;
  Comparison comparison;
  comparison.model = request.forecast.model.name;
  comparison.batch = request.forecast.model.spec.batch;
  comparison.optimizer = request.forecast.optimizer;
  comparison.precision = request.forecast.precision;
  comparison.framework = request.forecast.framework;
  comparison.epochs = request.epochs;
  comparison.epoch_samples = request.forecast.epoch_samples;
  comparison.spot = request.spot;
  comparison.multi_gpu = request.multi_gpu;
  if (request.multi_gpu)
    comparison.sharding =
        request.parallel.empty() ? memory::sharding_name(requested_sharding(request)) : "parallel " + request.parallel;
  if (!forecasts.empty()) {
    comparison.graph = forecasts.front().graph;
    comparison.input = forecasts.front().input;
  }
  std::set<std::string> bases;
  for (const hardware::CloudInstance& instance : instances) {
    auto found = by_gpu.find(instance.gpu);
    if (found == by_gpu.end()) {
      auto failure = failures.find(instance.gpu);
      comparison.left_out.push_back({instance.provider, instance.instance_type, instance.gpu,
                                     failure == failures.end() ? "no forecast for this GPU" : failure->second});
      continue;
    }
    const MultiGpuStep* step = nullptr;
    if (instance.gpu_count > 1) {
      auto sharded = steps.find({instance.gpu, instance.gpu_count});
      DNNCAST_ASSERT(sharded != steps.end());  // compare() shards every multi-GPU instance it forecasts
      step = &sharded->second;
      if (!step->refused.empty()) {
        comparison.left_out.push_back({instance.provider, instance.instance_type, instance.gpu, step->refused});
        continue;
      }
    }
    comparison.rows.push_back(make_row(request, instance, *found->second, step));
    bases.insert(found->second->basis);
  }
  for (const char* basis : {"measured", "calibrated", "specs"})
    if (bases.erase(basis)) comparison.bases.push_back(basis);
  for (const std::string& basis : bases) comparison.bases.push_back(basis);
  std::stable_sort(comparison.rows.begin(), comparison.rows.end(), [](const CompareRow& a, const CompareRow& b) {
    if (a.total_usd != b.total_usd) return a.total_usd < b.total_usd;
    return a.total_hours < b.total_hours;
  });
  mark_pareto_front(comparison.rows);

  comparison.fits_nowhere = !comparison.rows.empty();
  for (const CompareRow& row : comparison.rows)
    comparison.fits_nowhere = comparison.fits_nowhere && !row.fits.value_or(false);
  // What one GPU needs on the instance that needs least (a sharded one may need less than one GPU alone).
  for (const CompareRow& row : comparison.rows) {
    if (row.required_bytes && (!comparison.required_bytes || *row.required_bytes < *comparison.required_bytes))
      comparison.required_bytes = row.required_bytes;
    if (row.gpu_memory_bytes &&
        (!comparison.largest_memory_bytes || *row.gpu_memory_bytes > *comparison.largest_memory_bytes))
      comparison.largest_memory_bytes = row.gpu_memory_bytes;
  }
  if (comparison.fits_nowhere) {
    std::string line = "fits on no instance compared";
    if (comparison.required_bytes)
      line += ": one GPU needs " + format_bytes(static_cast<double>(*comparison.required_bytes));
    if (comparison.largest_memory_bytes)
      line += ", the largest offered has " + format_bytes(static_cast<double>(*comparison.largest_memory_bytes));
    comparison.notes.push_back(line + " (a smaller --batch may fit: see max batch)");
  }
  if (request.forecast.epoch_samples == 0)
    comparison.notes.push_back("no --epoch-samples: totals are for " + std::to_string(kIterationsWithoutEpochs) +
                               " iterations");
  return comparison;
}

}  // namespace dnncast::decide
