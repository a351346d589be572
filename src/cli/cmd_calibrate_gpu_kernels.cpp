// `dnncast calibrate-gpu-kernels [--ops DIR] [--deepbench FILE|none] [--deepbench-gemm FILE|none] [--leave-one-out]
// [--held-out-rows FILE] [--labels FILE] [--configs DIR] [--out DIR]`: fits the per-kernel GPU time model
// (gpu/kernel_model.h) to NeuSight's per-kernel measurements and DeepBench's training convolutions (forward and both
// gradients) and GEMMs and judges it as NeuSight was judged: per kernel with each GPU held out, and end to end on its
// transformer labels (the training GPUs' rows with their GPU held out, the test GPUs' rows with the fit that never
// saw them).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_gpu_calibration.h"
#include "core/error.h"
#include "gpu/gpu_calibration.h"
#include "gpu/half_kernels.h"
#include "gpu/kernel_evaluation.h"
#include "gpu/kernel_model.h"

namespace dnncast::cli {

using nlohmann::ordered_json;

int run_calibrate_gpu_kernels(const Args& args) {
  CLI::App app(
      std::string("Fit the per-kernel GPU time model to NeuSight's per-kernel measurements "
                  "(../shared/data/public/neusight/ops)\nand judge it per kernel (each GPU held out) and end to end on "
                  "NeuSight's transformer labels. The rows of\nits test GPUs (") +
          gpu::kTestGpusInWords + ") are never fitted on. --out writes the model `predict --device` reads.",
      "dnncast calibrate-gpu-kernels");
  std::string ops_dir, labels, configs, out, deepbench, deepbench_gemm, held_out_rows;
  std::vector<std::string> catalogue_files;
  std::string vidur_dir;
  bool leave_out = false, as_json = false, show_rows = false, score_test_gpus = false, half = false;
  int rounds = 200, stride = 1;
  double gemm_vector_share = -1;
  app.add_option("--ops", ops_dir, "NeuSight's ops/train folder (default: ../shared/data/public/neusight/ops/train)");
  app.add_option("--deepbench", deepbench,
                 "DeepBench's training convolutions, forward and both gradients (default: "
                 "../shared/data/public/gpu_benchmarks/deepbench_conv_train_fp32.csv), or none");
  app.add_option("--deepbench-gemm", deepbench_gemm,
                 "DeepBench's training GEMMs (default: "
                 "../shared/data/public/gpu_benchmarks/deepbench_gemm_train_fp32.csv), or none");
  app.add_option("--catalogue", catalogue_files, "extra catalogue file (docs/DEVICES.md)");
  app.add_flag("--leave-one-out", leave_out, "judge per kernel with each GPU held out (and the labels of those GPUs)");
  app.add_option("--held-out-rows", held_out_rows,
                 "with --leave-one-out: write every held-out kernel row's measured, model and roofline seconds (CSV)");
  app.add_option("--labels", labels,
                 "end-to-end labels (gpu_benchmarks/neusight_transformer_latency_labels.csv); with --configs");
  app.add_option("--configs", configs, "the labels' model configs (neusight/model_configs)");
  app.add_option("--rounds", rounds, "boosting rounds per kernel family (default 200)")->check(CLI::Range(1, 5000));
  app.add_option("--stride", stride, "fit on every Nth row (a quicker check; default 1)")->check(CLI::Range(1, 1000));
  app.add_option("--out", out, "write the model fitted on every row here (data/hardware/gpu_kernels)");
  app.add_flag("--rows", show_rows, "print every label row");
  app.add_flag("--score-test-gpus", score_test_gpus,
               std::string("also score the labels of NeuSight's test GPUs (") + gpu::kTestGpusInWords +
                   "): once, when asked; never tune on them");
  app.add_flag("--half", half,
               "the half-precision model instead, from Vidur's fp16 kernels: judged per family (the A40 with each "
               "model held out), --out writes data/hardware/gpu_kernels_fp16");
  app.add_option("--gemm-vector-share", gemm_vector_share,
                 "with --half: a GEMM's share of its FLOPs at the FP32 rate on top of the tensor-core peak, which the "
                 "model keeps (docs/GPU.md; default: the shipped model's)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--vidur", vidur_dir, "Vidur's compute folder (default: ../shared/data/public/vidur/compute)");
  app.add_flag("--json", as_json, "print JSON");
  if (!parse_args(app, args, "calibrate-gpu-kernels")) return 0;
  if (half) {
    if (!labels.empty() || leave_out || !ops_dir.empty() || !deepbench.empty() || !deepbench_gemm.empty())
      throw InputError(
          "--half judges Vidur's fp16 kernels: --ops, --deepbench, --deepbench-gemm, --labels and --leave-one-out are "
          "fp32's");
    if (gemm_vector_share < 0) {
      const gpu::GpuKernelModel* shipped = gpu::shipped_half_kernel_model();
      gemm_vector_share = shipped ? shipped->gemm_vector_share() : 0;
    }
    return calibrate_half_kernels(vidur_dir, hardware::Catalogue::load(catalogue_files), rounds, score_test_gpus, out,
                                  as_json, gemm_vector_share);
  }
  if (gemm_vector_share >= 0) throw InputError("--gemm-vector-share is the half-precision model's: use it with --half");
  if (!held_out_rows.empty() && !leave_out) throw InputError("--held-out-rows needs --leave-one-out");
  if (!labels.empty() && configs.empty()) throw InputError("--labels needs --configs (neusight/model_configs)");
  const hardware::Catalogue catalogue = hardware::Catalogue::load(catalogue_files);
  gpu::KernelTables tables = gpu::load_kernel_tables(catalogue, ops_dir);
  const size_t neusight_rows = tables.rows.size();
  const bool print = !as_json;
  ordered_json result = {{"ops", tables.dir}, {"rows", tables.rows.size()}};
  if (print)
    std::printf("%zu kernel measurements from %s (%lld rows of the test GPUs H100, L4, A100 80GB left out)\n",
                neusight_rows, tables.dir.c_str(), static_cast<long long>(tables.held_out));
  const gpu::DeepBenchLoad deep = add_deepbench(deepbench, catalogue, tables, print, result);
  const gpu::DeepBenchLoad deep_gemms = add_deepbench_gemms(deepbench_gemm, catalogue, tables, print, result);
  result["held_out_test_gpu_rows"] = tables.held_out;
  gpu::KernelLeaveOneOut held;
  if (leave_out) {
    held = gpu::leave_one_gpu_out(tables, catalogue, rounds, stride, !held_out_rows.empty());
    if (!held_out_rows.empty()) gpu::write_held_out_rows(held, held_out_rows);
    result["leave_one_gpu_out"] = print_kernel_errors(held, print);
    result["deepbench_conv_passes"] = print_conv_passes(held, print);
  }
  gpu::GpuKernelModel full;
  if (!out.empty() || !labels.empty()) {
    std::vector<gpu::KernelMeasurement> rows;
    std::array<int64_t, gpu::kKernelFamilies> seen{};
    for (const gpu::KernelMeasurement& row : tables.rows)
      if (seen[static_cast<size_t>(row.shape.family)]++ % stride == 0) rows.push_back(row);
    full = gpu::GpuKernelModel::fit(rows, catalogue, rounds);
  }
  if (!labels.empty()) {
    // Kept in a local: a range-for over items() of a temporary would iterate a destroyed object (it crashed).
    const ordered_json judged =
        print_transformer_labels(labels, configs, catalogue, full, held, print, show_rows, score_test_gpus);
    for (const auto& [key, value] : judged.items()) result[key] = value;
  }
  if (!out.empty()) {
    full.save(out, "dnncast per-kernel GPU model (docs/GPU.md): written by `dnncast calibrate-gpu-kernels --out " +
                       out + "` from " + std::to_string(neusight_rows) +
                       " NeuSight kernel rows (P4, P100, T4, V100, A100 40GB) and " + std::to_string(deep.rows) +
                       " DeepBench convolution passes and " + std::to_string(deep_gemms.rows) +
                       " GEMMs (V100, P100, T4, GTX 1080 Ti, TITAN Xp, TITAN X Pascal); no row of H100, L4 or A100 "
                       "80GB");
    if (print) std::printf("wrote %s\n", out.c_str());
  }
  if (as_json) std::cout << result.dump(2) << "\n";
  return 0;
}

}  // namespace dnncast::cli
