// `dnncast calibrate-gpu-memory --data FILE [--timm FILE] [--out FILE] [--table FILE] [--rows FILE] [--json]`:
// fits the nvidia-smi memory model's constants (gpu/gpu_memory.h) to GPUMemNet's A100 measurements (the MLPs,
// and the timm runs of models the zoo builds), judges it holding out one MLP architecture, one timm model and one
// timm family at a time, measures the upper bound's margin and how often "fits" would be wrong near a GPU's
// memory (gpu/gpu_memory_study.h; docs/GPU.md, docs/RESULTS.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_gpu_memory.h"
#include "gpu/gpu_memory_study.h"

namespace dnncast::cli {

int run_calibrate_gpu_memory(const Args& args) {
  CLI::App app(
      "Fit the GPU memory model (what nvidia-smi shows: simulated tensors and allocator reserve, a fitted extra\n"
      "reserve fraction, cuBLAS's workspace and cuDNN's fitted workspaces, the fitted CUDA and cuDNN contexts) to\n"
      "GPUMemNet's A100 40GB measurements (../shared/data/public/gpu_memory, decompressed), judge it holding out one\n"
      "MLP architecture, one timm model and one timm family at a time, and measure the upper bound's margin.",
      "dnncast calibrate-gpu-memory");
  gpu::GpuMemoryStudyOptions options;
  std::string out, table_file, rows_file, timm_optimizer = "sgd";
  bool as_json = false;
  app.add_option("--data", options.mlp_csv, "GPUMemNet's MLP table as CSV (xz -dk gpumemnet_mlp_a100_40gb.csv.xz)")
      ->required();
  app.add_option("--timm", options.timm_csv,
                 "GPUMemNet's timm runs as CSV (xz -dk timm_a100_40gb.csv.xz): fitted and judged too");
  app.add_option("--timm-map", options.timm_map, "timm's names to the zoo's (default data/hardware/timm_zoo_map.csv)");
  app.add_option("--timm-optimizer", timm_optimizer, "the optimizer the timm runs are simulated with (sgd | adam)")
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--quantile", options.quantile, "the upper bound's quantile of measured / forecast on held-out runs")
      ->check(CLI::Range(0.5, 1.0));
  app.add_option("--under-weight", options.fit.under_weight,
                 "how much more an under-forecast weighs in the fit than an over-forecast (default 4)")
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--out", out, "write the fitted constants here (data/hardware/gpu_memory_calibration.csv)");
  app.add_option("--table", table_file, "write the tables as Markdown (docs/RESULTS.md)");
  app.add_option("--rows", rows_file, "write every row: measured, simulated parts, forecasts before and held out");
  app.add_flag("--libtorch-step", options.libtorch_step,
               "ablation: simulate libtorch 1.13's step (zero_grad in place, per-parameter Adam), not PyTorch 2's");
  app.add_flag("--json", as_json, "print JSON");
  if (!parse_args(app, args, "calibrate-gpu-memory")) return 0;
  options.timm_optimizer = timm_optimizer == "adam" ? Optimizer::Adam : Optimizer::Sgd;

  const gpu::GpuMemoryStudy study = gpu::run_gpu_memory_study(options);
  if (!rows_file.empty()) write_gpu_memory_rows(study, rows_file);
  if (!table_file.empty()) write_gpu_memory_markdown(study, table_file);
  if (!out.empty())
    gpu::write_gpu_memory_calibration(study.fitted, out,
                                      "dnncast GPU memory calibration (docs/GPU.md, \"Memory\"): written by "
                                      "`dnncast calibrate-gpu-memory --data " +
                                          options.mlp_csv +
                                          (options.timm_csv.empty() ? "" : " --timm " + options.timm_csv) + " --out " +
                                          out + "` (scripts/gpu-memory-eval.sh runs it)");
  if (as_json) {
    std::cout << gpu_memory_json(study).dump(2) << "\n";
    return 0;
  }
  print_gpu_memory_study(study);
  for (const std::string& path : {out, table_file, rows_file})
    if (!path.empty()) std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace dnncast::cli
