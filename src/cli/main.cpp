// Entry point of the `dnncast` command: dispatches to a subcommand; every error that reaches
// here becomes one line on stderr and a non-zero exit code, never a crash.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>

#include "cli/commands.h"
#include "core/error.h"

namespace {

struct Command {
  std::function<int(const dnncast::cli::Args&)> run;
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table{
      {"inspect", {dnncast::cli::run_inspect, "per-layer shapes, parameters, MACs and memory of a model"}},
      {"profile", {dnncast::cli::run_profile, "measure real training iterations with libtorch"}},
      {"dataset", {dnncast::cli::run_dataset, "stats, export, import and merge of measurement databases"}},
      {"bench-layers", {dnncast::cli::run_bench_layers, "time single layers alone into a database (proxy benchmarks), resumably"}},
      {"campaign", {dnncast::cli::run_campaign, "run a profiling plan into a database, resumably"}},
      {"train", {dnncast::cli::run_train, "fit a predictor bundle from a database"}},
      {"evaluate", {dnncast::cli::run_evaluate, "error of learned predictors beside the noise floor"}},
      {"predict", {dnncast::cli::run_predict, "forecast time per iteration/epoch and peak memory"}},
      {"memory", {dnncast::cli::run_memory, "simulated peak memory of training: breakdown, fits, largest batch"}},
      {"transfer", {dnncast::cli::run_transfer, "carry a performance model to another environment: DM, LMS, NMLS, GS"}},
      {"calibrate", {dnncast::cli::run_calibrate, "adapt a time predictor to this host with a few guided measurements"}},
      {"devices", {dnncast::cli::run_devices, "the GPU catalogue with sources; --instances: cloud instances and prices"}},
      {"calibrate-gpus", {dnncast::cli::run_calibrate_gpus, "fit the GPU time model to public measurements; leave-one-GPU-out"}},
      {"compare", {dnncast::cli::run_compare, "time and cost of training per cloud instance; Pareto front; --html report"}},
      {"schedule", {dnncast::cli::run_schedule, "place training jobs on a GPU cluster: genetic algorithm over the forecasts"}},
      {"schedule-study", {dnncast::cli::run_schedule_study, "the scheduler against the exact optimum, baselines and a replay"}},
      {"serve", {dnncast::cli::run_serve, "the forecast API over HTTP: predict, memory, compare, inspect, schedule, devices"}},
  };
  return table;
}

void usage(std::FILE* out) {
  std::fprintf(out, "usage: dnncast COMMAND [options]   (dnncast COMMAND --help for its options)\n\ncommands:\n");
  for (const auto& [name, command] : commands()) std::fprintf(out, "  %-10s %s\n", name.c_str(), command.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  auto found = commands().find(name);
  if (found == commands().end()) {
    std::fprintf(stderr, "dnncast: unknown command '%s'\n", name.c_str());
    usage(stderr);
    return 2;
  }
  dnncast::cli::Args args(argv + 2, argv + argc);
  try {
    return found->second.run(args);
  } catch (const dnncast::InputError& error) {
    // One line whatever the message holds (a user's string is quoted with escapes where it is
    // built; this is the last guard).
    std::fprintf(stderr, "dnncast %s: error: %s\n", name.c_str(), dnncast::escape_control(error.what()).c_str());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dnncast %s: internal error: %s\n", name.c_str(), dnncast::escape_control(error.what()).c_str());
    return 3;
  }
}
