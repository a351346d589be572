// `dnncast profile MODEL --batch N`: measures real training iterations with libtorch, each repeat
// in its own child process (docs/MEASUREMENT.md). Prints a summary, or JSON with --json.
// Exit code: 0 when a result was measured (status ok or oom), 1 when the measurement failed or
// timed out (status error / timeout, still printed), 2 on bad input.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "cli/print_profile.h"
#include "core/error.h"
#include "core/units.h"
#include "import/model_source.h"
#include "models/zoo.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::cli {

#ifndef DNNCAST_HAVE_TORCH

int run_profile(const Args&) {
  throw InputError("this dnncast was built without libtorch (configured with -DDNNCAST_WITH_TORCH=OFF): no profiler");
}

#else

namespace {

using nlohmann::json;

}  // namespace

int run_profile(const Args& args) {
  CLI::App app(
      "Measure real training iterations (zero_grad, forward, loss, backward, optimizer step) with libtorch.\n"
      "Each repeat runs in its own child process with a memory limit and a timeout; out of memory, a crash or\n"
      "a timeout become a status (oom / error / timeout). Exit code 0 for ok or oom, 1 for error or timeout,\n"
      "2 for bad input. Protocol: docs/MEASUREMENT.md.",
      "dnncast profile");
  std::string model, optimizer = "sgd", precision = "fp32", device = "cpu", memory_text;
  int64_t batch = 1, threads = 1, repeat = 1;
  uint64_t seed = 0;
  double timeout_s = 300, budget_s = 5, ci_target = 0.02;
  bool as_json = false, per_layer = false;
  app.add_option("MODEL", model, "zoo name, graph JSON file, ONNX file (.onnx), or synthetic:SEED")->required();
  app.add_option("--batch", batch, "batch size (default 1)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", optimizer, optimizer_help());
  app.add_option("--precision", precision,
                 "fp32 | bf16 | fp16 (autocast; fp16 on cuda only) | bf16-pure (model, inputs and optimizer in bf16, "
                 "no autocast;\n"
                 "alias pure-bf16) (default fp32)");
  app.add_option("--threads", threads, "intra-op threads, the child pinned to as many CPUs; 0 = all (default 1)")
      ->check(thread_count(true));
  app.add_option("--device", device, "cpu | cuda (default cpu)");
  app.add_option("--repeat", repeat, "measurements, each in a fresh process (default 1)");
  app.add_flag("--per-layer", per_layer, "also time forward and backward of every node alone");
  app.add_option("--memory-limit", memory_text,
                 "tensor memory the child may hold, bytes or 512M/2G/24GiB/1.5GB (default 90% of available)");
  app.add_option("--timeout", timeout_s, "seconds before a child is killed (default 300)");
  app.add_option("--budget", budget_s, "seconds of timed iterations at most, per repeat (default 5)");
  app.add_option("--ci", ci_target, "stop timing when the median's 95% CI is within +- this fraction (default 0.02)");
  app.add_option("--seed", seed, "seed of parameters, inputs and labels (default 0)")->check(seed_number());
  int64_t grad_accum = 1;
  app.add_option("--grad-accum", grad_accum,
                 "gradient accumulation: K micro-batches of forward + backward per optimizer step (default 1)");
  app.add_flag("--json", as_json, "print JSON instead of a summary");

  if (!parse_args(app, args, "profile")) return 0;

  if (repeat <= 0) throw InputError("--repeat must be a positive integer, got " + std::to_string(repeat));
  if (!(timeout_s > 0)) throw InputError("--timeout must be positive seconds");
  if (!(budget_s > 0)) throw InputError("--budget must be positive seconds");
  if (!(ci_target > 0)) throw InputError("--ci must be a positive fraction");

  profile::TrainConfig config;
  config.optimizer = parse_optimizer(optimizer, "--optimizer");
  config.precision = parse_precision(precision, "--precision");
  config.device = parse_device(device, "--device");
  config.threads = threads;
  config.per_layer = per_layer;
  config.seed = seed;
  config.grad_accum = grad_accum;
  profile::validate_config(config);
  profile::Limits limits;
  limits.timeout_s = timeout_s;
  limits.time_budget_s = budget_s;
  limits.ci_target = ci_target;
  if (!memory_text.empty()) limits.memory_bytes = parse_bytes(memory_text, "--memory-limit");

  Graph graph = model_options.source(model, batch).build();
  profile::check_supported(graph);

  std::vector<profile::Measurement> repeats = profile::measure_repeats(graph, config, limits, repeat);
  profile::Measurement combined = profile::combine_repeats(repeats);

  if (as_json) {
    json doc = profile::to_json(combined);
    doc.erase("iteration_ms");
    const Node& input = graph.node(graph.inputs().front());
    doc["model"] = model;
    doc["graph_hash"] = graph.architecture_hash();
    doc["config"] = {{"batch", batch},
                     {"input", input.shape.to_string()},
                     {"optimizer", name(config.optimizer)},
                     {"precision", name(config.precision)},
                     {"threads", combined.env.threads},
                     {"device", name(config.device)}};
    json list = json::array();
    std::vector<double> medians, normalised;
    for (const profile::Measurement& r : repeats) {
      json entry = profile::to_json(r);
      entry.erase("env");
      entry.erase("layers");
      list.push_back(entry);
      if (r.status == "ok") {
        medians.push_back(r.time_ms.median);
        normalised.push_back(r.time_ms_normalised);
      }
    }
    doc["repeats"] = list;
    doc["repeat_spread"] = {{"time_ms", spread(medians)}, {"time_ms_normalised", spread(normalised)}};
    std::cout << doc.dump(2) << std::endl;
  } else {
    print_summary(model, graph, config, combined, repeats);
  }
  return combined.status == "ok" || combined.status == "oom" ? 0 : 1;
}

#endif

}  // namespace dnncast::cli
