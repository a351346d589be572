// The GPU memory model's calibration run (gpu_memory_study.h).
#include "gpu/gpu_memory_study.h"

#include <cstdio>

#include "core/error.h"
#include "import/model_source.h"
#include "memory/simulator.h"

namespace dnncast::gpu {

std::string mlp_arch(const GpuMemorySample& sample) { return sample.source == "mlp" ? sample.arch : ""; }
std::string timm_model(const GpuMemorySample& sample) { return sample.source == "timm" ? sample.arch : ""; }
std::string timm_family(const GpuMemorySample& sample) { return sample.source == "timm" ? sample.family : ""; }

GpuMemoryStudy run_gpu_memory_study(const GpuMemoryStudyOptions& options) {
  GpuMemoryStudy study;
  study.options = options;
  study.samples = simulate_gpumemnet(load_gpumemnet_rows(options.mlp_csv), options.libtorch_step);
  study.mlp_rows = study.samples.size();
  if (!options.timm_csv.empty()) {
    const std::vector<TimmZooMatch> map = load_timm_zoo_map(options.timm_map);
    for (const TimmZooMatch& match : map) study.match_of[match.timm] = match;
    study.timm_rows = load_timm_memory_rows(options.timm_csv);
    study.timm = simulate_timm(study.timm_rows, map, options.timm_optimizer);
    if (study.timm.mapped_models < 2)
      throw InputError(options.timm_csv + ": " + std::to_string(study.timm.mapped_models) +
                       " of the map's models in it; holding one out needs at least 2 (is it GPUMemNet's timm file, "
                       "and the map data/hardware/timm_zoo_map.csv?)");
    study.samples.insert(study.samples.end(), study.timm.samples.begin(), study.timm.samples.end());
  }
  const std::vector<GpuMemorySample>& samples = study.samples;

  std::vector<bool> mlp_only(samples.size());
  for (size_t index = 0; index < samples.size(); ++index) mlp_only[index] = samples[index].source == "mlp";
  study.mlp_fit = fit_gpu_memory(samples, mlp_only, options.fit);
  for (const GpuMemorySample& sample : samples) study.issue34.push_back(forecast_bytes(sample, study.mlp_fit));

  GpuMemoryCalibration& fitted = study.fitted;
  fitted = fit_gpu_memory(samples, {}, options.fit);
  const std::string optimizer = options.timm_optimizer == Optimizer::Adam ? "adam" : "sgd";
  fitted.fitted_on =
      "fitted: a100-40gb, " + std::to_string(study.mlp_rows) + " GPUMemNet MLPs (Adam, fp32" +
      (study.with_timm() ? ") and " + std::to_string(study.timm.samples.size()) + " timm training runs of " +
                               std::to_string(study.timm.mapped_models) + " zoo models (" + optimizer + ", fp32)"
                         : ")") +
      "; nvidia-smi peak memory.used";
  study.by_arch = leave_group_out(samples, mlp_arch, options.fit);
  if (study.with_timm()) {
    study.by_model = leave_group_out(samples, timm_model, options.fit);
    study.by_family = leave_group_out(samples, timm_family, options.fit);
    study.margins = upper_margins(samples, study.by_model, timm_model, options.quantile);
    study.fits = check_fits(samples, study.by_model, study.margins, timm_model);
    fitted.upper_margin = study.margins.all;
    fitted.upper_quantile = options.quantile;
    char from[256];
    std::snprintf(from, sizeof from,
                  "measured: the %.0f%% quantile of measured / forecast - 1 over the %zu timm runs, each forecast by "
                  "the fit without its model",
                  100 * options.quantile, study.timm.samples.size());
    fitted.margin_from = from;
    study.tensor_ratios = tensors_per_sample_ratios(study.timm_rows, study.timm);
    const memory::MemoryConfig config = gpu_memory_config(fitted, options.timm_optimizer);
    for (const TimmMemoryRow& row : study.timm.at_capacity) {
      const TimmZooMatch& match = study.match_of.at(row.model);
      models::ModelSpec spec;
      spec.batch = row.batch;
      spec.input = match.input;
      spec.attention = match.attention;
      study.at_capacity_upper.push_back(
          memory::simulate_memory(import::load_model(match.zoo, spec), config).required_bytes);
    }
  }
  for (const GpuMemorySample& sample : samples) study.in_sample.push_back(forecast_bytes(sample, fitted));
  return study;
}

}  // namespace dnncast::gpu
