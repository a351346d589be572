// `dnncast memory MODEL --batch N`: simulated peak memory of training (src/memory/simulator.h),
// its breakdown at the peak, whether it fits in a given size (--fits) and the largest batch that
// does (--max-batch). Loads no DL framework; resnet50 simulates in well under a millisecond.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "cli/print_memory.h"
#include "core/error.h"
#include "core/units.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"

namespace dnncast::cli {

int run_memory(const Args& args) {
  CLI::App app(
      "Simulated peak memory of training MODEL (zero_grad, forward, loss, backward, optimizer step), allocation by\n"
      "allocation as libtorch 1.13 makes them, through an allocator model: cpu = the profiler's tracking allocator\n"
      "(peak_bytes equals `dnncast profile`'s), cuda = PyTorch's caching allocator (unverified, docs/MEMORY.md).\n"
      "Bytes accept units: 4096, 512MiB, 24GiB, 1.5GB.",
      "dnncast memory");
  forecast::MemoryOptions options;  // the flags below fill it
  std::string model;
  int64_t batch = 1;
  bool as_json = false, measure = false;
  double measure_timeout_s = 600;
  std::string check_db;
  int64_t show = 10;
  app.add_option("MODEL", model,
                 "zoo name, graph JSON file, ONNX file (.onnx), or synthetic:SEED (not with --check-db)");
  app.add_option("--batch", batch, "batch size (default 1)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", options.optimizer, optimizer_help());
  app.add_option(
      "--precision", options.precision,
      "fp32 (default) | bf16: autocast mixed precision | bf16-pure (alias pure-bf16): parameters, activations,\n"
      "gradients and optimizer states in bf16 | fp16: autocast, cuda only (unverified). bf16 and bf16-pure are\n"
      "byte-exact on cpu for Linear and attention models (MLPs, transformer encoders and decoders) while their\n"
      "matmuls stay in ATen; oneDNN's bf16 matmul scratchpads are not modelled; convolutions are refused");
  app.add_option(
      "--device", options.device,
      "cpu | cuda | a GPU of `dnncast devices` (memory as nvidia-smi shows it: the fitted context, workspace and "
      "reserve of docs/GPU.md, and its memory size; default cpu; the cuda model is unverified)");
  app.add_option("--threads", options.threads, "intra-op threads of the run (default 1, as dnncast profile)")
      ->check(thread_count());
  app.add_flag("--paged-optimizer", options.paged_optimizer,
               "GPU: optimizer states in CUDA unified memory (bitsandbytes' paged optimizers), not in what must fit");
  app.add_option("--grad-accum", options.grad_accum,
                 "gradient accumulation: K micro-batches of forward + backward per optimizer step (default 1)");
  app.add_option("--fits", options.fits, "answer whether training fits in this many bytes (e.g. 24GiB), or `gpu`")
      ->check(byte_size_or_gpu());
  app.add_option("--max-batch", options.max_batch,
                 "largest batch whose training fits in this many bytes, or `gpu`: the --device GPU's memory")
      ->check(byte_size_or_gpu());
  app.add_option("--max-seq", options.max_seq,
                 "longest sequence (at --batch) whose training fits in this many bytes, or `gpu` (sequence models)")
      ->check(byte_size_or_gpu());
  ParallelFlags parallel;
  parallel.add_to(app, "GPUs (with --sharding or --parallel; default 1): memory and collectives per GPU");
  app.add_option("--sharding", options.sharding, memory::sharding_names() + ": how --gpus replicas share the model");
  app.add_option("--batch-cap", options.batch_cap, "largest batch --max-batch tries (default 1048576)");
  app.add_option(
         "--cuda-context", options.cuda_context,
         "bytes the CUDA context takes on the device (cuda: default 0; a catalogued GPU: default the fitted one)")
      ->check(byte_size());
  app.add_flag("--timeline", options.timeline,
               "also print the highest live bytes of every node's forward and backward");
  app.add_flag("--events", options.events,
               "print every simulated allocation and release (\"+|- BYTES LIVE iter phase node what\"), to diff "
               "against a profiled run's DNNCAST_ALLOC_TRACE file");
  app.add_flag("--measure", measure,
               "also train the graph for real (libtorch, a child process, 3 iterations) and print the measured peak\n"
               "beside the simulated one; exit code 1 when the run failed");
  app.add_option("--measure-timeout", measure_timeout_s, "--measure: seconds before the run is killed (default 600)");
  app.add_flag("--json", as_json, "print JSON instead of a summary");
  app.add_option("--check-db", check_db,
                 "instead of MODEL: simulate every configuration of this dataset that has a measured peak and compare "
                 "(exit code 1 when any is more than 1% off)");
  app.add_option("--show", show, "--check-db: the worst configurations listed (default 10)");
  std::string isa_text;
  app.add_option(
      "--isa", isa_text,
      "the CPU ISA oneDNN dispatches to, whose kernels and allocations to simulate: " + isa_list() +
          " (default: this host's, after ONEDNN_MAX_CPU_ISA; with --check-db, each environment's recorded one)");

  if (!parse_args(app, args, "memory")) return 0;
  options.gpus = parallel.gpus, options.micro_batches = parallel.micro_batches;
  options.gpus_per_node = parallel.gpus_per_node, options.parallel = parallel.parallel;
  check_name_option(app, "--device", options.device);
  const hardware::CpuIsa isa = isa_text.empty() ? hardware::CpuIsa::Unknown : parse_isa_option(isa_text, "--isa");
  options.isa = isa;
  if (!check_db.empty()) {
    if (!model.empty()) throw InputError("give MODEL or --check-db DB, not both");
    if (show < 0) throw InputError("--show must be 0 or more, got " + std::to_string(show));
    return check_dataset(check_db, show, as_json, isa);
  }
  if (model.empty())
    throw InputError("MODEL is required (a zoo name, graph JSON file or synthetic:SEED), or --check-db DB");

  if (options.threads <= 0)
    throw InputError("--threads must be a positive integer, got " + std::to_string(options.threads));
  if (!(measure_timeout_s > 0))
    throw InputError("--measure-timeout must be a positive number of seconds, got " +
                     std::to_string(measure_timeout_s));
  if (options.batch_cap <= 0)
    throw InputError("--batch-cap must be a positive integer, got " + std::to_string(options.batch_cap));
  const forecast::MemoryRequest request =
      forecast::make_memory_request(model_options.source(model, batch), options, OptionStyle::Flag);
  const forecast::MemoryForecast result = forecast::forecast_memory(request);
  for (const std::string& note : result.graph.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  for (const std::string& note : result.simulation_notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (result.isa_match && !result.isa_match->exact)
    std::fprintf(stderr, "note: %s\n", forecast::simulator_isa_note(*result.isa_match, result.isa_source).c_str());

  Measured measured;
  if (measure) measured = measure_real_run(result.graph, request.config, measure_timeout_s);
  const int exit_code = measured.ran && measured.status != "ok" && measured.status != "oom" ? 1 : 0;
  if (!as_json) {
    print_memory(result, measured);
    return exit_code;
  }
  nlohmann::json doc = forecast::to_json(result);
  if (measured.ran) {
    const memory::MemoryReport& report = result.report;
    const int64_t simulated_peak = simulated_profiler_peak(report);
    doc["measured"] = {
        {"status", measured.status},
        {"message", measured.message},
        {"baseline_bytes", measured.baseline_bytes},
        {"peak_bytes", measured.peak_bytes},
        {"simulated_peak_bytes", simulated_peak},
        {"relative_error", measured.status == "ok" ? nlohmann::json(relative_error(simulated_peak, measured.peak_bytes))
                                                   : nlohmann::json(nullptr)}};
    if (report.device == Device::Cuda) {  // peak reserved: totals, as the caching allocator counts them
      doc["measured"]["peak_reserved_bytes"] = measured.peak_reserved_bytes;
      doc["measured"]["simulated_peak_reserved_bytes"] = report.peak_reserved_bytes;
    }
  }
  std::cout << doc.dump(2) << std::endl;
  return exit_code;
}

}  // namespace dnncast::cli
