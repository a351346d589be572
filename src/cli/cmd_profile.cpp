// `dnncast profile MODEL --batch N`: measures real training iterations with libtorch, each repeat
// in its own child process (docs/MEASUREMENT.md). Prints a summary, or JSON with --json.
// Exit code: 0 when a result was measured (status ok or oom), 1 when the measurement failed or
// timed out (status error / timeout, still printed), 2 on bad input.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/model_source.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
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

// "2G", "512M", "100000" -> bytes (K/M/G/T are powers of 1024).
int64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError("--memory-limit " + quote(text) + ": expected bytes, optionally with K, M, G or T (e.g. 2G)");
  }
  std::string suffix = text.substr(used);
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B")
    throw InputError("--memory-limit " + quote(text) + ": unknown unit " + quote(suffix) + " (use K, M, G or T)");
  if (!(value > 0) || !std::isfinite(value)) throw InputError("--memory-limit must be positive, got " + quote(text));
  return static_cast<int64_t>(value * scale);
}

// Relative spread of the repeats' medians: (max - min) / median; 0 below 2 repeats.
double spread(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  return median > 0 ? (sorted.back() - sorted.front()) / median : 0;
}

void print_summary(const std::string& model, const Graph& graph, const profile::TrainConfig& config,
                   const profile::Measurement& m, const std::vector<profile::Measurement>& repeats) {
  std::printf("%s  input %s  optimizer %s  precision %s  threads %lld  device %s\n", model.c_str(),
              graph.node(graph.inputs().front()).shape.to_string().c_str(), name(config.optimizer).c_str(),
              name(config.precision).c_str(), static_cast<long long>(m.env.threads), name(config.device).c_str());
  std::printf("status       %s%s%s\n", m.status.c_str(), m.message.empty() ? "" : ": ", m.message.c_str());
  if (m.status != "ok") return;
  std::string ci = std::isfinite(m.time_ms.rel_ci) ? "CI +-" + std::to_string(100 * m.time_ms.rel_ci).substr(0, 4) + "%"
                                                    : "too few for a CI";
  std::printf("time/iter    median %.2f ms  (p10 %.2f, p90 %.2f, mean %.2f; %lld iterations, %s)\n", m.time_ms.median,
              m.time_ms.p10, m.time_ms.p90, m.time_ms.mean, static_cast<long long>(m.time_ms.n), ci.c_str());
  std::printf("normalised   %.2f ms  (probe %.1f / %.1f ms, reference %.1f ms)\n", m.time_ms_normalised,
              m.probe_before_ms, m.probe_after_ms, profile::reference_probe_ms());
  std::printf("peak memory  %.1f MiB above a baseline of %.1f MiB (tensors)\n", m.peak_bytes / 1048576.0,
              m.baseline_bytes / 1048576.0);
  std::printf("parameters   %lld  (params %lld B, grads %lld B, optimizer state %lld B)\n",
              static_cast<long long>(m.params), static_cast<long long>(m.param_bytes),
              static_cast<long long>(m.grad_bytes), static_cast<long long>(m.optimizer_state_bytes));
  if (m.energy_j)
    std::printf("energy       %.3f J/iteration (%s)\n", *m.energy_j, m.energy_note.c_str());
  else
    std::printf("energy       n/a (%s)\n", m.energy_note.c_str());
  std::printf("other load   %.2f CPUs busy with other processes while timing\n", m.load_other_cpus);
  if (repeats.size() > 1) {
    std::printf("repeats     ");
    std::vector<double> medians;
    for (const profile::Measurement& r : repeats) {
      if (r.status == "ok") medians.push_back(r.time_ms.median);
      std::printf(" %s", r.status == "ok" ? (std::to_string(r.time_ms.median).substr(0, 7) + " ms").c_str() : r.status.c_str());
    }
    std::printf("  (spread %.1f%%)\n", 100 * spread(medians));
  }
  if (!m.layers.empty()) {
    std::printf("\n%-36s %-22s %12s %12s %14s %14s\n", "node", "op", "forward ms", "backward ms", "in-iter fwd",
                "in-iter bwd");
    double in_iteration = 0;
    for (const profile::LayerTime& layer : m.layers) {
      std::printf("%-36s %-22s %12.3f %12.3f %14.3f %14.3f\n", layer.node.c_str(), layer.op.c_str(), layer.forward_ms,
                  layer.backward_ms, layer.iteration_forward_ms, layer.iteration_backward_ms);
      in_iteration += layer.iteration_forward_ms + layer.iteration_backward_ms;
    }
    std::printf("iteration %.2f ms = layers %.2f + optimizer step %.2f + zero_grad %.2f + gap %.2f ms (loss, gradient\n"
                "accumulation, dispatch between layers)\n",
                m.time_ms.median, m.layer_sum_ms, m.optimizer_step_ms, m.zero_grad_ms, m.layer_gap_ms);
    std::printf("inside iterations: layers %.2f + loss %.2f + optimizer step %.2f + zero_grad %.2f = %.2f ms\n",
                in_iteration, m.iteration_loss_ms, m.iteration_step_ms, m.iteration_zero_grad_ms,
                in_iteration + m.iteration_loss_ms + m.iteration_step_ms + m.iteration_zero_grad_ms);
  }
}

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
  app.add_option("MODEL", model, "zoo name, graph JSON file, or synthetic:SEED")->required();
  app.add_option("--batch", batch, "batch size (default 1)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_option("--optimizer", optimizer, "sgd (momentum 0.9) | adam | adamw (default sgd)");
  app.add_option("--precision", precision, "fp32 | bf16 | fp16 (autocast; fp16 on cuda only; default fp32)");
  app.add_option("--threads", threads, "intra-op threads, the child pinned to as many CPUs; 0 = all (default 1)")
      ->check(thread_count(true));
  app.add_option("--device", device, "cpu | cuda (default cpu)");
  app.add_option("--repeat", repeat, "measurements, each in a fresh process (default 1)");
  app.add_flag("--per-layer", per_layer, "also time forward and backward of every node alone");
  app.add_option("--memory-limit", memory_text, "tensor memory the child may hold, bytes or 512M/2G (default 90% of available)");
  app.add_option("--timeout", timeout_s, "seconds before a child is killed (default 300)");
  app.add_option("--budget", budget_s, "seconds of timed iterations at most, per repeat (default 5)");
  app.add_option("--ci", ci_target, "stop timing when the median's 95% CI is within +- this fraction (default 0.02)");
  app.add_option("--seed", seed, "seed of parameters, inputs and labels (default 0)");
  app.add_flag("--json", as_json, "print JSON instead of a summary");

  if (!parse_args(app, args, "profile")) return 0;

  if (batch <= 0) throw InputError("--batch must be a positive integer, got " + std::to_string(batch));
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
  profile::validate_config(config);
  profile::Limits limits;
  limits.timeout_s = timeout_s;
  limits.time_budget_s = budget_s;
  limits.ci_target = ci_target;
  if (!memory_text.empty()) limits.memory_bytes = parse_bytes(memory_text);

  Graph graph = load_model(model, model_options.spec(model, batch));
  profile::check_supported(graph);

  std::vector<profile::Measurement> repeats = profile::measure_repeats(graph, config, limits, repeat);
  profile::Measurement combined = profile::combine_repeats(repeats);

  if (as_json) {
    json doc = profile::to_json(combined);
    doc.erase("iteration_ms");
    const Node& input = graph.node(graph.inputs().front());
    doc["model"] = model;
    doc["graph_hash"] = graph.architecture_hash();
    doc["config"] = {{"batch", batch},         {"input", input.shape.to_string()}, {"optimizer", config.optimizer},
                     {"precision", config.precision}, {"threads", combined.env.threads}, {"device", config.device}};
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
