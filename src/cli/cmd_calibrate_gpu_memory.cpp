// `dnncast calibrate-gpu-memory --data FILE [--out FILE] [--table FILE] [--rows FILE] [--json]`: fits the
// nvidia-smi memory model's context and reserve fraction (gpu/gpu_memory.h) to GPUMemNet's A100 measurements,
// judges it leaving one MLP architecture out at a time, beside the old model (docs/GPU.md, docs/RESULTS.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_gpu_calibration.h"
#include "core/csv.h"
#include "core/error.h"
#include "gpu/gpu_memory_calibration.h"

namespace dnncast::cli {

namespace {

using nlohmann::ordered_json;

std::vector<gpu::GpuMemorySample> of_arch(const std::vector<gpu::GpuMemorySample>& samples,
                                          const std::vector<int64_t>& forecast, const std::string& arch,
                                          std::vector<int64_t>& forecast_out) {
  std::vector<gpu::GpuMemorySample> out;
  for (size_t index = 0; index < samples.size(); ++index)
    if (samples[index].arch == arch) out.push_back(samples[index]), forecast_out.push_back(forecast[index]);
  return out;
}

}  // namespace

int run_calibrate_gpu_memory(const Args& args) {
  CLI::App app(
      "Fit the GPU memory model (what nvidia-smi shows: simulated tensors and allocator reserve, a fitted extra\n"
      "reserve fraction, cuBLAS's workspace, a fitted CUDA context) to GPUMemNet's A100 40GB MLP measurements\n"
      "(../shared/data/public/gpu_memory, decompressed), and judge it leaving one architecture out at a time.",
      "dnncast calibrate-gpu-memory");
  std::string data, out, table_file, rows_file;
  bool as_json = false, libtorch_step = false;
  app.add_option("--data", data, "GPUMemNet's MLP table as CSV (xz -dk gpumemnet_mlp_a100_40gb.csv.xz)")->required();
  app.add_option("--out", out, "write the fitted constants here (data/hardware/gpu_memory_calibration.csv)");
  app.add_option("--table", table_file, "write the before/after table as Markdown (docs/RESULTS.md)");
  app.add_option("--rows", rows_file, "write every row: measured, simulated parts, forecasts before and held out");
  app.add_flag("--libtorch-step", libtorch_step,
               "ablation: simulate libtorch 1.13's step (zero_grad in place, per-parameter Adam), not PyTorch 2's");
  app.add_flag("--json", as_json, "print JSON");
  if (!parse_args(app, args, "calibrate-gpu-memory")) return 0;

  const std::vector<gpu::GpuMemNetRow> rows = gpu::load_gpumemnet_rows(data);
  const std::vector<gpu::GpuMemorySample> samples = gpu::simulate_gpumemnet(rows, libtorch_step);
  gpu::GpuMemoryCalibration fitted = gpu::fit_gpu_memory(samples);
  fitted.fitted_on = "fitted: a100-40gb, " + std::to_string(samples.size()) +
                     " GPUMemNet MLPs (Adam, fp32; nvidia-smi peak memory.used)";
  const gpu::GpuMemoryEvaluation evaluation = gpu::leave_one_arch_out(samples);
  std::vector<int64_t> in_sample;
  for (const gpu::GpuMemorySample& sample : samples) in_sample.push_back(gpu::forecast_bytes(sample, fitted));

  std::vector<std::vector<std::string>> table = {
      {"model", "rows", "mean error", "under by >5%", "max under", "max over"},
      memory_score_row("before: libtorch 1.13 step, peak reserved + 512 MiB context",
                       gpu::score(samples, evaluation.before_forecast)),
      memory_score_row("after, fitted on all rows (in sample)", gpu::score(samples, in_sample)),
      memory_score_row("after, leave one architecture out", gpu::score(samples, evaluation.held_out_forecast))};
  ordered_json doc = {{"data", data},
                      {"rows", samples.size()},
                      {"fitted",
                       {{"context_bytes", fitted.context_bytes},
                        {"workspace_bytes", fitted.workspace_bytes},
                        {"reserve_fraction", fitted.reserve_fraction}}},
                      {"before", memory_score_json(gpu::score(samples, evaluation.before_forecast))},
                      {"in_sample", memory_score_json(gpu::score(samples, in_sample))},
                      {"leave_one_arch_out", memory_score_json(gpu::score(samples, evaluation.held_out_forecast))}};
  for (size_t at = 0; at < evaluation.archs.size(); ++at) {
    const std::string& arch = evaluation.archs[at];
    std::vector<int64_t> forecast;
    const auto held = of_arch(samples, evaluation.held_out_forecast, arch, forecast);
    table.push_back(memory_score_row("after, " + arch + " held out (context " +
                                         std::to_string(evaluation.fitted[at].context_bytes >> 20) + " MiB, fraction " +
                                         percent_text(evaluation.fitted[at].reserve_fraction) + ")",
                                     gpu::score(held, forecast)));
    doc["held_out"][arch] = memory_score_json(gpu::score(held, forecast));
    doc["held_out"][arch]["context_bytes"] = evaluation.fitted[at].context_bytes;
    doc["held_out"][arch]["reserve_fraction"] = evaluation.fitted[at].reserve_fraction;
  }

  if (!rows_file.empty()) {
    std::ofstream file(rows_file);
    if (!file) throw InputError("cannot write " + quote(rows_file));
    write_csv_record(file, {"line", "arch", "batch", "parameters", "measured_bytes", "peak_allocated_bytes",
                            "peak_reserved_bytes", "before_bytes", "held_out_bytes"});
    for (size_t index = 0; index < samples.size(); ++index) {
      const gpu::GpuMemorySample& s = samples[index];
      write_csv_record(file,
                       {std::to_string(s.line), s.arch, std::to_string(s.batch), std::to_string(s.parameters),
                        std::to_string(static_cast<int64_t>(s.measured_bytes)), std::to_string(s.peak_allocated_bytes),
                        std::to_string(s.peak_reserved_bytes), std::to_string(evaluation.before_forecast[index]),
                        std::to_string(evaluation.held_out_forecast[index])});
    }
  }
  if (!table_file.empty()) {
    std::ofstream file(table_file);
    if (!file) throw InputError("cannot write " + quote(table_file));
    for (size_t at = 0; at < table.size(); ++at) {
      file << "|";
      for (const std::string& cell : table[at]) file << " " << cell << " |";
      file << "\n";
      if (at == 0) file << "| --- | ---: | ---: | ---: | ---: | ---: |\n";
    }
  }
  if (!out.empty())
    gpu::write_gpu_memory_calibration(fitted, out,
                                      "dnncast GPU memory calibration (docs/GPU.md, \"Memory\"): written by "
                                      "`dnncast calibrate-gpu-memory --data " +
                                          data + " --out " + out + "` (scripts/gpu-memory-eval.sh runs it)");
  if (as_json) {
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "%zu GPUMemNet rows from %s; fitted on all: context %.1f MiB, reserve fraction %.2f%%, workspace %.3f MiB "
      "(derived)\n",
      samples.size(), data.c_str(), double(fitted.context_bytes) / (1 << 20), 100 * fitted.reserve_fraction,
      double(fitted.workspace_bytes) / (1 << 20));
  for (const auto& row : table)
    std::printf("  %-62s %5s %10s %13s %10s %9s\n", row[0].c_str(), row[1].c_str(), row[2].c_str(), row[3].c_str(),
                row[4].c_str(), row[5].c_str());
  for (const std::string& path : {out, table_file, rows_file})
    if (!path.empty()) std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace dnncast::cli
