// calibrate-gpu-memory's tables, JSON and rows (print_gpu_memory.h).
#include "cli/print_gpu_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>

#include "cli/print_gpu_calibration.h"
#include "core/csv.h"
#include "core/error.h"

namespace dnncast::cli {

namespace {

using gpu::GpuMemorySample;

// The score of the samples (and their forecasts) for which keep(sample) holds.
gpu::GpuMemoryScore score_of(const std::vector<GpuMemorySample>& samples, const std::vector<int64_t>& forecast,
                             const std::function<bool(const GpuMemorySample&)>& keep) {
  std::vector<GpuMemorySample> kept;
  std::vector<int64_t> kept_forecast;
  for (size_t index = 0; index < samples.size(); ++index)
    if (keep(samples[index])) kept.push_back(samples[index]), kept_forecast.push_back(forecast[index]);
  return gpu::score(kept, kept_forecast);
}

bool is_mlp(const GpuMemorySample& s) { return s.source == "mlp"; }
bool is_timm(const GpuMemorySample& s) { return s.source == "timm"; }

std::string mib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", bytes / double(int64_t{1} << 20));
  return text;
}

size_t group_index(const gpu::GpuMemoryEvaluation& evaluation, const std::string& name) {
  return size_t(std::find(evaluation.groups.begin(), evaluation.groups.end(), name) - evaluation.groups.begin());
}

TextTable mlp_table(const gpu::GpuMemoryStudy& study) {
  const auto& s = study.samples;
  const gpu::GpuMemoryEvaluation& by_arch = study.by_arch;
  TextTable table = {
      {"model", "rows", "mean error", "under by >5%", "max under", "max over"},
      memory_score_row("MLPs, before: libtorch 1.13 step, peak reserved + 512 MiB context",
                       score_of(s, by_arch.before_forecast, is_mlp)),
      memory_score_row("MLPs, after, fitted on all rows (in sample)", score_of(s, study.in_sample, is_mlp)),
      memory_score_row("MLPs, after, leave one architecture out", score_of(s, by_arch.held_out_forecast, is_mlp))};
  for (size_t at = 0; at < by_arch.groups.size(); ++at) {
    const std::string& arch = by_arch.groups[at];
    table.push_back(memory_score_row(
        "MLPs, after, " + arch + " held out (context " + std::to_string(by_arch.fitted[at].context_bytes >> 20) +
            " MiB, fraction " + percent_text(by_arch.fitted[at].reserve_fraction) + ")",
        score_of(s, by_arch.held_out_forecast, [&](const GpuMemorySample& x) { return is_mlp(x) && x.arch == arch; })));
  }
  return table;
}

TextTable timm_table(const gpu::GpuMemoryStudy& study) {
  const auto& s = study.samples;
  TextTable table = {
      {"timm runs (A100 40GB, nvidia-smi)", "rows", "mean error", "under by >5%", "max under", "max over"},
      memory_score_row("issue 34's model (fitted to the MLPs alone)", score_of(s, study.issue34, is_timm)),
      memory_score_row("after, fitted on all rows (in sample)", score_of(s, study.in_sample, is_timm)),
      memory_score_row("after, leave one model out", score_of(s, study.by_model.held_out_forecast, is_timm)),
      memory_score_row("after, leave one family out", score_of(s, study.by_family.held_out_forecast, is_timm))};
  for (const std::string& family : study.by_family.groups)
    table.push_back(memory_score_row("after, " + family + " (each model held out)",
                                     score_of(s, study.by_model.held_out_forecast, [&](const GpuMemorySample& x) {
                                       return is_timm(x) && x.family == family;
                                     })));
  return table;
}

// The ten held-out runs furthest from their measurement, with the parts of their forecast.
TextTable worst_table(const gpu::GpuMemoryStudy& study) {
  const auto& s = study.samples;
  const std::vector<int64_t>& held = study.by_model.held_out_forecast;
  std::vector<size_t> order;
  for (size_t index = 0; index < s.size(); ++index)
    if (is_timm(s[index])) order.push_back(index);
  auto error_of = [&](size_t index) { return std::abs(double(held[index]) / s[index].measured_bytes - 1); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return error_of(a) > error_of(b); });
  TextTable table = {
      {"run", "measured MiB", "held out MiB", "error", "tensors", "reserve", "cuDNN ws", "what differs"}};
  for (size_t rank = 0; rank < std::min<size_t>(10, order.size()); ++rank) {
    const GpuMemorySample& sample = s[order[rank]];
    const gpu::GpuMemoryCalibration& fit = study.by_model.fitted[group_index(study.by_model, sample.arch)];
    const memory::CudaMemoryParts parts =
        memory::cuda_memory_parts(sample.peak_allocated_bytes, sample.peak_reserved_bytes,
                                  gpu::gpu_memory_config(fit, study.options.timm_optimizer), sample.cudnn);
    const double ratio = double(held[order[rank]]) / sample.measured_bytes;
    const std::string& differs = study.match_of.at(sample.arch).differs;
    table.push_back({sample.arch + " b" + std::to_string(sample.batch), mib_text(sample.measured_bytes),
                     mib_text(double(held[order[rank]])), (ratio >= 1 ? "+" : "") + percent_text(ratio - 1),
                     mib_text(double(parts.tensor_bytes)), mib_text(double(parts.reserve_bytes)),
                     mib_text(double(parts.cudnn_workspace_bytes)), differs.empty() ? "the same network" : differs});
  }
  return table;
}

TextTable fits_table(const gpu::GpuMemoryStudy& study) {
  const gpu::FitsCheck& check = study.fits;
  auto share = [](int64_t part, int64_t all) {
    char cell[96];
    std::snprintf(cell, sizeof cell, "%lld of %lld (%.1f%%)", (long long)part, (long long)all,
                  all ? 100.0 * double(part) / double(all) : 0.0);
    return std::string(cell);
  };
  char margin[96], pairs[96], capacity[96];
  std::snprintf(margin, sizeof margin, "%.1f%% at the %.0f%% quantile", 100 * study.margins.all,
                100 * study.margins.quantile);
  std::snprintf(pairs, sizeof pairs, "%lld (run, size) pairs; fits said for %lld", (long long)check.pairs,
                (long long)check.said_fits);
  const double limit = gpu::kTimmGpuMemoryMib * double(int64_t{1} << 20);
  const auto said = std::count_if(study.at_capacity_upper.begin(), study.at_capacity_upper.end(),
                                  [&](int64_t upper) { return double(upper) <= limit; });
  std::snprintf(capacity, sizeof capacity, "%zu; fits in 40 GiB said for %lld", study.timm.at_capacity.size(),
                (long long)said);
  return {{"upper bound (the margin without the run's own model)", "value"},
          {"shipped margin over the held-out forecast", margin},
          {"held-out runs at or under their upper bound", share(check.covered, check.rows)},
          {"runs within 25% of a GPU memory size (8-80 GiB)", pairs},
          {"fits said, measurement above the size", share(check.wrong, check.pairs)},
          {"runs at the A100's memory (>= 95% of 40 GiB: kept out)", capacity}};
}

}  // namespace

std::vector<TextTable> gpu_memory_tables(const gpu::GpuMemoryStudy& study) {
  if (!study.with_timm()) return {mlp_table(study), {}, {}, {}};
  return {mlp_table(study), timm_table(study), worst_table(study), fits_table(study)};
}

std::string tensors_per_sample_text(const gpu::GpuMemoryStudy& study) {
  double low = 0, high = 0, vit = 0;
  int64_t compared = 0;
  for (const auto& [model, ratio] : study.tensor_ratios) {
    if (study.match_of.at(model).attention == "sdpa") {
      vit = ratio;
      continue;
    }
    low = compared ? std::min(low, ratio) : ratio, high = compared ? std::max(high, ratio) : ratio;
    ++compared;
  }
  char line[200];
  std::snprintf(line, sizeof line, "%lld CNNs %.3f-%.3f; the ViT (fused attention) %.3f", (long long)compared, low,
                high, vit);
  return line;
}

nlohmann::ordered_json gpu_memory_json(const gpu::GpuMemoryStudy& study) {
  const auto& s = study.samples;
  const gpu::GpuMemoryCalibration& fitted = study.fitted;
  nlohmann::ordered_json doc = {
      {"data", study.options.mlp_csv},
      {"rows", study.mlp_rows},
      {"fitted",
       {{"context_bytes", fitted.context_bytes},
        {"workspace_bytes", fitted.workspace_bytes},
        {"reserve_fraction", fitted.reserve_fraction},
        {"cudnn_context_bytes", fitted.cudnn_context_bytes},
        {"conv_workspace_fraction", fitted.conv_workspace_fraction},
        {"upper_margin", fitted.upper_margin},
        {"upper_quantile", fitted.upper_quantile}}},
      {"before", memory_score_json(score_of(s, study.by_arch.before_forecast, is_mlp))},
      {"in_sample", memory_score_json(score_of(s, study.in_sample, is_mlp))},
      {"leave_one_arch_out", memory_score_json(score_of(s, study.by_arch.held_out_forecast, is_mlp))}};
  for (size_t at = 0; at < study.by_arch.groups.size(); ++at) {
    const std::string& arch = study.by_arch.groups[at];
    auto& held = doc["held_out"][arch];
    held = memory_score_json(
        score_of(s, study.by_arch.held_out_forecast, [&](const GpuMemorySample& x) { return mlp_arch(x) == arch; }));
    held["context_bytes"] = study.by_arch.fitted[at].context_bytes;
    held["reserve_fraction"] = study.by_arch.fitted[at].reserve_fraction;
  }
  if (!study.with_timm()) return doc;
  auto& timm = doc["timm"];
  timm = {{"data", study.options.timm_csv},
          {"rows_in_file", study.timm.rows},
          {"models_in_file", study.timm.models},
          {"mapped_models", study.timm.mapped_models},
          {"rows_fitted", study.timm.samples.size()},
          {"rows_at_capacity", study.timm.at_capacity.size()},
          {"optimizer", study.options.timm_optimizer == Optimizer::Adam ? "adam" : "sgd"},
          {"issue34", memory_score_json(score_of(s, study.issue34, is_timm))},
          {"in_sample", memory_score_json(score_of(s, study.in_sample, is_timm))},
          {"leave_one_model_out", memory_score_json(score_of(s, study.by_model.held_out_forecast, is_timm))},
          {"leave_one_family_out", memory_score_json(score_of(s, study.by_family.held_out_forecast, is_timm))},
          {"upper",
           {{"quantile", study.margins.quantile},
            {"margin", study.margins.all},
            {"covered", study.fits.covered},
            {"rows", study.fits.rows},
            {"near_limit_pairs", study.fits.pairs},
            {"said_fits", study.fits.said_fits},
            {"wrong", study.fits.wrong}}}};
  for (const std::string& family : study.by_family.groups)
    timm["by_family"][family] = memory_score_json(score_of(
        s, study.by_model.held_out_forecast, [&](const GpuMemorySample& x) { return timm_family(x) == family; }));
  for (const auto& [model, ratio] : study.tensor_ratios) timm["tensors_per_sample_vs_faketensor"][model] = ratio;
  for (size_t index = 0; index < study.timm.at_capacity.size(); ++index) {
    const gpu::TimmMemoryRow& row = study.timm.at_capacity[index];
    timm["at_capacity"].push_back({{"model", row.model},
                                   {"batch", row.batch},
                                   {"measured_mib", row.measured_mib},
                                   {"upper_bytes", study.at_capacity_upper[index]}});
  }
  return doc;
}

void write_gpu_memory_rows(const gpu::GpuMemoryStudy& study, const std::string& path) {
  std::ofstream file(path);
  if (!file) throw InputError("cannot write " + quote(path));
  write_csv_record(file, {"line", "source", "arch", "family", "batch", "parameters", "measured_bytes",
                          "peak_allocated_bytes", "peak_reserved_bytes", "cudnn", "conv_io_bytes", "before_bytes",
                          "issue34_bytes", "in_sample_bytes", "held_out_bytes", "held_out_family_bytes"});
  for (size_t index = 0; index < study.samples.size(); ++index) {
    const GpuMemorySample& s = study.samples[index];
    const int64_t held = is_mlp(s) ? study.by_arch.held_out_forecast[index] : study.by_model.held_out_forecast[index];
    write_csv_record(file, {std::to_string(s.line), s.source, s.arch, s.family, std::to_string(s.batch),
                            std::to_string(s.parameters), std::to_string(static_cast<int64_t>(s.measured_bytes)),
                            std::to_string(s.peak_allocated_bytes), std::to_string(s.peak_reserved_bytes),
                            s.cudnn.loaded ? "1" : "0", std::to_string(s.cudnn.conv_io_bytes),
                            std::to_string(study.by_arch.before_forecast[index]), std::to_string(study.issue34[index]),
                            std::to_string(study.in_sample[index]), std::to_string(held),
                            std::to_string(is_timm(s) ? study.by_family.held_out_forecast[index] : 0)});
  }
  if (!file) throw InputError("cannot write " + quote(path));
}

void write_gpu_memory_markdown(const gpu::GpuMemoryStudy& study, const std::string& path) {
  std::ofstream file(path);
  if (!file) throw InputError("cannot write " + quote(path));
  for (const TextTable& rows : gpu_memory_tables(study)) {
    for (size_t at = 0; at < rows.size(); ++at) {
      file << "|";
      for (const std::string& cell : rows[at]) file << " " << cell << " |";
      file << "\n";
      if (at > 0) continue;
      file << "| --- |";
      for (size_t column = 1; column < rows[at].size(); ++column) file << " ---: |";
      file << "\n";
    }
    if (!rows.empty()) file << "\n";
  }
  if (study.with_timm())
    file << "Tensors per sample, simulated / FakeTensor's (batch 32 - batch 8): " << tensors_per_sample_text(study)
         << "\n";
  if (!file) throw InputError("cannot write " + quote(path));
}

void print_gpu_memory_study(const gpu::GpuMemoryStudy& study) {
  const gpu::GpuMemoryCalibration& fitted = study.fitted;
  std::printf(
      "%zu GPUMemNet MLP rows from %s; fitted on all: context %.1f MiB, reserve fraction %.2f%%, workspace %.3f MiB "
      "(derived)\n",
      study.mlp_rows, study.options.mlp_csv.c_str(), double(fitted.context_bytes) / (1 << 20),
      100 * fitted.reserve_fraction, double(fitted.workspace_bytes) / (1 << 20));
  if (study.with_timm()) {
    std::printf(
        "%zu timm runs of %lld zoo models from %s (%lld rows, %lld models in the file; %zu at the GPU's memory kept "
        "out): cuDNN context %.1f MiB, cuDNN workspace %.1f%% of the largest dense convolution's I/O, upper margin "
        "%.1f%%\n",
        study.timm.samples.size(), (long long)study.timm.mapped_models, study.options.timm_csv.c_str(),
        (long long)study.timm.rows, (long long)study.timm.models, study.timm.at_capacity.size(),
        double(fitted.cudnn_context_bytes) / (1 << 20), 100 * fitted.conv_workspace_fraction,
        100 * fitted.upper_margin);
    std::printf("tensors per sample, simulated / FakeTensor's (batch 32 - batch 8): %s\n",
                tensors_per_sample_text(study).c_str());
  }
  for (const TextTable& rows : gpu_memory_tables(study)) {
    for (const auto& row : rows) {
      std::string line = " ";
      for (size_t column = 0; column < row.size(); ++column)
        line +=
            " " + (column == 0 ? row[0] + std::string(row[0].size() < 62 ? 62 - row[0].size() : 0, ' ') : row[column]);
      std::printf("%s\n", line.c_str());
    }
    if (!rows.empty()) std::printf("\n");
  }
}

}  // namespace dnncast::cli
