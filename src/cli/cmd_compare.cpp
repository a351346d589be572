// `dnncast compare MODEL --batch N [...]`: per cloud instance, the forecast time per iteration and
// epoch, the run's total time and cost, whether it fits and the largest batch that would, the basis
// of the forecast, and the cost-versus-time Pareto front (decide/compare.h, docs/COMPARE.md).
// --html FILE writes the self-contained report (report/html_report.h). Notes go to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "cli/print_compare.h"
#include "core/checked.h"
#include "core/error.h"
#include "decide/compare.h"
#include "forecast/predict.h"
#include "report/html_report.h"

namespace dnncast::cli {

namespace {

constexpr int64_t kMaxEpochs = 1000000;

}  // namespace

int run_compare(const Args& args) {
  CLI::App app(
      "Which cloud instance trains MODEL fastest, which cheapest: per instance of data/hardware/instances.csv the\n"
      "forecast time per iteration and epoch, total time and cost of the run, whether it fits and the largest batch\n"
      "that would, and the basis of the forecast; '*' marks the cost-versus-time Pareto front. Without\n"
      "--epoch-samples the totals are for 1000 iterations. docs/COMPARE.md states the assumptions.",
      "dnncast compare");
  std::string model, precision = "fp32", framework = "pytorch", optimizer = "sgd", providers, gpus, html;
  int64_t batch = 0, epochs = 1, epoch_samples = 0;
  bool spot = false, multi_gpu = false, as_json = false;
  std::vector<std::string> catalogue_files;
  app.add_option("MODEL", model, "zoo name, graph JSON file, ONNX file (.onnx), or synthetic:SEED")->required();
  app.add_option("--batch", batch, "batch size (per GPU with --multi-gpu)")->required();
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--precision", precision, "fp32 | tf32 | amp (fp16) | bf16 (default fp32)");
  app.add_option("--framework", framework, "pytorch | tensorflow (default pytorch)");
  std::string phase = "train";
  app.add_option("--phase", phase, "train (default) | forward-backward | inference: what one iteration is");
  app.add_option("--optimizer", optimizer, optimizer_help());
  app.add_option("--epochs", epochs, "epochs of the run (default 1; more need --epoch-samples)")
      ->check(positive_at_most(kMaxEpochs));
  app.add_option("--epoch-samples", epoch_samples, "samples in one epoch (default none: totals for 1000 iterations)")
      ->check(positive_at_most(kMaxTensorElements));
  app.add_option("--provider", providers, "only these providers, comma-separated (aws,gcp,azure,lambda,runpod)");
  app.add_option("--gpus", gpus, "only these GPUs, comma-separated catalogue names or aliases (t4,a100-80gb)");
  app.add_flag("--spot", spot, "spot prices; instances without one are left out");
  app.add_flag("--multi-gpu", multi_gpu, "also instances with several GPUs (--batch per GPU; see --sharding)");
  std::string sharding, parallel;
  app.add_option("--parallel", parallel,
                 "with --multi-gpu, in place of --sharding: dp, tp, pp, degrees (tp=2: dp the rest) or auto (each "
                 "instance's fastest plan that fits), timed as `predict --parallel`");
  app.add_option("--sharding", sharding,
                 memory::sharding_names() +
                     " (default ddp): how a multi-GPU instance's GPUs share the model; "
                     "per-GPU memory and collectives as `memory --sharding` (a model, not a measurement)");
  app.add_option("--catalogue", catalogue_files, "a CSV in gpus.csv's or instances.csv's format; may repeat");
  app.add_flag("--json", as_json, "print JSON instead of a table");
  app.add_option("--html", html, "also write the self-contained HTML report to this file");
  if (!parse_args(app, args, "compare")) return 0;
  check_name_option(app, "--gpus", gpus);
  check_name_option(app, "--provider", providers);

  if (app.count("--html") > 0) check_writable("--html", html);
  decide::CompareRequest request;
  forecast::PredictOptions options;
  options.forecast.optimizer = optimizer;
  options.forecast.precision = precision;
  options.forecast.epoch_samples = epoch_samples;
  options.framework = framework;
  options.phase = phase;
  options.catalogue_files = catalogue_files;
  request.forecast = forecast::make_gpu_request(model_options.source(model, batch), options, OptionStyle::Flag);
  request.epochs = epochs;
  request.providers = split_list(providers);
  request.gpus = split_list(gpus);
  request.spot = spot;
  request.multi_gpu = multi_gpu;
  request.sharding = sharding;
  request.parallel = parallel;

  const decide::Comparison comparison = decide::compare(request);
  if (app.count("--html") > 0) report::write_html(comparison, html);
  if (as_json)
    std::cout << comparison_json(comparison).dump(2) << "\n";
  else
    print_comparison(comparison);
  std::cout.flush();
  std::fflush(stdout);  // the table before the notes when both go to one terminal
  for (const std::string& note : comparison.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (app.count("--html") > 0) std::fprintf(stderr, "wrote %s\n", html.c_str());
  return 0;
}

}  // namespace dnncast::cli
