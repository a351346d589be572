// Entry point of the `dnncast` command: dispatches to a subcommand; every error that reaches
// here becomes one line on stderr and a non-zero exit code, never a crash. Built twice where libtorch is
// (src/cli/CMakeLists.txt): build/dnncast, without libtorch, hands the commands that measure to
// build/dnncast-measure beside it (DNNCAST_FORWARD_MEASURING).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/text.h"

namespace {

struct Command {
  std::function<int(const dnncast::cli::Args&)> run;
  const char* summary;
};

#ifdef DNNCAST_FORWARD_MEASURING
// Stands in for a command whose code is in dnncast-measure only; never called (main() forwards first).
int measured_elsewhere(const dnncast::cli::Args&) { return 3; }
#define DNNCAST_MEASURING(function) measured_elsewhere
#else
#define DNNCAST_MEASURING(function) function
#endif

// The commands that run libtorch (a measurement, or its child process): `memory` only with --measure.
bool measures(const std::string& name, int argc, char** argv) {
  if (name == "profile" || name == "campaign" || name == "bench-layers" || name == "calibrate" || name == "host-check")
    return true;
  if (name != "memory") return false;
  for (int index = 2; index < argc; ++index)
    if (std::strcmp(argv[index], "--measure") == 0) return true;
  return false;
}

// Replaces this process with dnncast-measure beside this program, same arguments; returns only on failure.
int forward_to_measure(const std::string& name, char** argv) {
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string path = "dnncast-measure";
  if (length > 0) {
    std::string exe(self, static_cast<size_t>(length));
    path = exe.substr(0, exe.rfind('/') + 1) + "dnncast-measure";
  }
  execv(path.c_str(), argv);
  std::fprintf(stderr,
               "dnncast %s: error: this command measures with libtorch, which runs in %s, and that program cannot be "
               "started (%s); rebuild dnncast with libtorch (make build)\n",
               name.c_str(), path.c_str(), std::strerror(errno));
  return 2;
}

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table{
      {"inspect", {dnncast::cli::run_inspect, "per-layer shapes, parameters, MACs and memory of a model"}},
      {"profile", {DNNCAST_MEASURING(dnncast::cli::run_profile), "measure real training iterations with libtorch"}},
      {"host-check",
       {DNNCAST_MEASURING(dnncast::cli::run_host_check),
        "is this host as fast as the shipped data's? a few small configurations timed here (predict runs it)"}},
      {"dataset", {dnncast::cli::run_dataset, "stats, export, import and merge of measurement databases"}},
      {"bench-layers",
       {DNNCAST_MEASURING(dnncast::cli::run_bench_layers),
        "time single layers alone into a database (proxy benchmarks), resumably"}},
      {"campaign", {DNNCAST_MEASURING(dnncast::cli::run_campaign), "run a profiling plan into a database, resumably"}},
      {"train", {dnncast::cli::run_train, "fit a predictor bundle from a database"}},
      {"evaluate", {dnncast::cli::run_evaluate, "error of learned predictors beside the noise floor"}},
      {"predict", {dnncast::cli::run_predict, "forecast time per iteration/epoch and peak memory"}},
      {"memory", {dnncast::cli::run_memory, "simulated peak memory of training: breakdown, fits, largest batch"}},
      {"transfer", {dnncast::cli::run_transfer, "carry a performance model to another environment: DM, LMS, NMLS, GS"}},
      {"calibrate",
       {DNNCAST_MEASURING(dnncast::cli::run_calibrate),
        "adapt a time predictor to this host with a few guided measurements"}},
      {"devices",
       {dnncast::cli::run_devices, "the GPU catalogue with sources; --instances: cloud instances and prices"}},
      {"calibrate-gpu-kernels",
       {dnncast::cli::run_calibrate_gpu_kernels,
        "fit the per-kernel GPU model to public kernel measurements; held-out GPUs"}},
      {"calibrate-gpus",
       {dnncast::cli::run_calibrate_gpus, "fit the GPU time model to public measurements; leave-one-GPU-out"}},
      {"calibrate-collectives",
       {dnncast::cli::run_calibrate_collectives,
        "fit the NCCL collective model (all-reduce, send/recv) to public measured times; held-out nodes"}},
      {"calibrate-gpu-memory",
       {dnncast::cli::run_calibrate_gpu_memory,
        "fit the GPU memory model (as nvidia-smi sees it) to public measurements"}},
      {"compare",
       {dnncast::cli::run_compare, "time and cost of training per cloud instance; Pareto front; --html report"}},
      {"schedule",
       {dnncast::cli::run_schedule, "place training jobs on a GPU cluster: genetic algorithm over the forecasts"}},
      {"schedule-study",
       {dnncast::cli::run_schedule_study, "the scheduler against the exact optimum, baselines and a replay"}},
      {"serve",
       {dnncast::cli::run_serve, "the forecast API over HTTP: predict, memory, compare, inspect, schedule, devices"}},
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
#ifdef DNNCAST_FORWARD_MEASURING
  if (measures(name, argc, argv)) return forward_to_measure(name, argv);
#else
  (void)measures;
  (void)forward_to_measure;
#endif
  dnncast::cli::Args args(argv + 2, argv + argc);
  try {
    return found->second.run(args);
  } catch (const std::exception& error) {
    // One line whatever the message holds (a user's string is quoted with escapes where it is
    // built; this is the last guard); the exit code of its kind (core/error.h).
    const dnncast::ErrorAnswer& answer = dnncast::error_answer(&error);
    std::fprintf(stderr, "dnncast %s: %s: %s\n", name.c_str(), answer.label,
                 dnncast::escape_control(dnncast::cut_for_message(error.what(), dnncast::kMessageLimit)).c_str());
    return answer.exit_code;
  }
}
