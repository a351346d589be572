// `dnncast predict MODEL --batch N`: time per iteration with its interval, time per epoch, and
// peak memory, from a shipped (data/predictors/) or given predictor set. The model is not profiled: the graph
// is featurized and the learned model evaluated. For this host's CPU, the host check (forecast/host_check.h) first
// measures a few small configurations of the shipped data here, once per boot.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/host_check_command.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "cli/print_predict.h"
#include "core/checked.h"
#include "core/error.h"
#include "forecast/host_calibration.h"
#include "forecast/host_check.h"
#include "forecast/predict.h"

namespace dnncast::cli {

int run_predict(const Args& args) {
  CLI::App app(
      "Forecast time per iteration (with a 90% interval), time per epoch and peak memory of training MODEL,\n"
      "from a trained predictor: no profiling. MODEL: a zoo name, a graph JSON file, or synthetic:SEED.",
      "dnncast predict");
  std::string model, optimizer = "sgd", precision = "fp32", device, predictor_dir;
  int64_t batch = 0, threads = 0, epoch_samples = 0;
  bool as_json = false;
  app.add_option("MODEL", model, "zoo name, graph JSON file, ONNX file (.onnx), or synthetic:SEED")->required();
  app.add_option("--batch", batch, "batch size")->required();
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", optimizer, optimizer_help() + "; for a predictor set, one it was trained on");
  app.add_option("--precision", precision, "fp32 (default); on a catalogued GPU also tf32, amp (fp16), bf16");
  app.add_option("--threads", threads, "CPU threads of training (default: the environment's)")->check(thread_count());
  app.add_option("--device", device,
                 "environment to forecast for: a predictor set's name, its GPU, or cpu; a GPU of `dnncast devices`: "
                 "the GPU time model (docs/GPU.md)");
  std::string framework = "pytorch", calibration_file;
  std::vector<std::string> catalogue_files;
  bool max_batch = false;
  app.add_option("--framework", framework, "GPU model: pytorch (default) or tensorflow");
  std::string phase = "train";
  app.add_option("--phase", phase,
                 "GPU model: what one iteration is: train (a full step with the optimizer; default), forward-backward "
                 "(no optimizer step, what NeuSight times) or inference (forward under no_grad)");
  app.add_option("--catalogue", catalogue_files, "GPU model: an extra catalogue file (docs/DEVICES.md)");
  app.add_option("--calibration", calibration_file,
                 "GPU model: a calibration file (default: data/hardware/gpu_calibration.csv)");
  app.add_flag("--max-batch", max_batch, "GPU model: also the largest batch that fits in the GPU's memory");
  app.add_option("--epoch-samples", epoch_samples, "samples per epoch: also forecast time per epoch")
      ->check(positive_at_most(kMaxTensorElements));
  int64_t epoch_tokens = 0;
  app.add_option("--epoch-tokens", epoch_tokens,
                 "tokens per epoch (sequence models, with --seq): the epoch as ceil(tokens / seq) samples")
      ->check(positive_at_most(int64_t{1} << 50));
  app.add_option("--predictor", predictor_dir, "predictor set or bundle folder (default: data/predictors/)");
  int64_t grad_accum = 1;
  app.add_option("--grad-accum", grad_accum,
                 "gradient accumulation: K forward-backward passes of the batch per optimizer step (default 1)");
  ParallelFlags parallel;
  parallel.add_to(app, "GPU model: train on this many GPUs (with --parallel)");
  bool no_host_check = false;
  app.add_flag("--no-host-check", no_host_check,
               "this host's CPU: do not measure the shipped data's probe configurations here (once per boot; "
               "DNNCAST_HOST_CHECK=off alike), nor apply a cached check");
  app.add_flag("--json", as_json, "print JSON");
  std::string host_isa_text;
  app.add_option(
      "--host-isa", host_isa_text,
      "forecast as if this host's oneDNN dispatched to this ISA (" + isa_list() +
          "; default: detected, after ONEDNN_MAX_CPU_ISA): the host match and the simulated memory follow it");
  if (!parse_args(app, args, "predict")) return 0;
  check_name_option(app, "--device", device);
  const hardware::CpuIsa host_isa =
      host_isa_text.empty() ? hardware::CpuIsa::Unknown : parse_isa_option(host_isa_text, "--host-isa");
  if (epoch_samples < 0) throw InputError("--epoch-samples must be positive");
  if (threads < 0) throw InputError("--threads must be positive");
  forecast::PredictOptions options;
  options.forecast = {optimizer, precision, threads, device, epoch_samples, predictor_dir, host_isa};
  options.forecast.grad_accum = grad_accum;
  options.forecast.host_check = !no_host_check;
  // The host check, where the forecast is for this host's CPU from the shipped sets and no calibration of this host
  // adapts them: measured here once per boot by `dnncast host-check` (libtorch runs in dnncast-measure), then cached.
  if (!no_host_check && (device.empty() || device == "cpu") && predictor_dir.empty() && host_isa_text.empty() &&
      forecast::host_check_enabled() &&
      !forecast::cached_host_check(forecast::host_check_key(forecast::host_environment())) &&
      !forecast::find_host_calibration(forecast::default_calibration_root(), forecast::host_environment()))
    run_host_check_command();
  options.framework = framework;
  options.phase = phase;
  options.max_batch = max_batch;
  options.epoch_tokens = epoch_tokens;
  options.calibration_file = calibration_file;
  options.catalogue_files = catalogue_files;
  options.gpus = parallel.gpus, options.micro_batches = parallel.micro_batches;
  options.gpus_per_node = parallel.gpus_per_node, options.parallel = parallel.parallel;
  const forecast::Prediction result = forecast::predict(model_options.source(model, batch), options, OptionStyle::Flag);
  // Always said, --json or not (stdout keeps the JSON): one line.
  const std::string note = forecast::prediction_note(result);
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (as_json) {
    std::cout << forecast::prediction_json(result);
    return 0;
  }
  if (result.gpu)
    print_gpu_forecast(*result.gpu);
  else
    print_forecast(*result.cpu);
  return 0;
}

}  // namespace dnncast::cli
