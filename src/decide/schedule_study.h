// Judging the scheduler (`dnncast schedule-study`, docs/SCHEDULE.md, docs/RESULTS.md): generated
// instances, the GA beside the exact optimum and the baselines, and a discrete-event replay of each
// schedule with realised job times drawn from the forecasts' measured error.
//
// Realised times: a job's time on a GPU type is its forecast times exp(e), e drawn from the log ratios
// measured / forecast of the public GPU measurements held out the way that forecast's basis is
// (data/hardware/gpu_forecast_residuals.csv, written by `calibrate-gpus --residuals`): "calibrated" GPUs
// with the row's model held out of the fit, "specs" GPUs with the row's GPU held out. One draw per
// distinct (model, configuration, GPU type): identical jobs take identical times. Memory: the simulated
// peaks are taken as true (the CUDA rules have no GPU measurements to draw an error from), so a plan
// that respects the forecasts has no out-of-memory event by construction; the replay still counts them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decide/schedule.h"
#include "decide/schedule_jobs.h"

namespace dnncast::decide {

// One public measurement with its forecasts (gpu_forecast_residuals.csv), per iteration.
struct ResidualRow {
  std::string table, gpu, model, precision;
  int64_t batch = 0;
  double measured_ms = 0, held_gpu_ms = 0, held_model_ms = 0, roofline_ms = 0;
  // A broken run: more than kBrokenFactor times every estimate of it (the one lambda_tf row docs/GPU.md
  // names, VGG-16 fp16 on an A100 at 17 times its PCIe twin, and its duplicate). Left out of the draws
  // and of the measured replay.
  bool broken() const;
};
inline constexpr double kBrokenFactor = 4;

struct ForecastErrors {
  std::vector<double> calibrated, specs;  // log(measured / held-out forecast), broken and test-GPU rows left out
  std::vector<ResidualRow> rows;          // all but the test GPUs', broken ones too
  std::string source;                     // the file read
  const std::vector<double>& for_basis(const std::string& basis) const;
};
// data/hardware/gpu_forecast_residuals.csv, or `path`; throws InputError for a missing or malformed file.
ForecastErrors load_forecast_errors(const std::string& path = "");

// A generated instance: `jobs` jobs of zoo models (CNNs at 224 px, transformers at their default
// length), batches 16-256, fp32 or amp, 200-20,000 iterations, 30% arriving within the first hour; a
// cluster of `gpus` GPUs of `types` catalogued types (at least one of each) drawn from a pool of
// calibrated data-centre and workstation GPUs. Seeded: the same seed gives the same instance.
ScheduleRequest generate_instance(uint64_t seed, int64_t jobs, int64_t gpus, int64_t types);

// A plan replayed with other durations (the realised ones): its metrics and the jobs placed where their
// realised peak memory does not fit.
struct Replay {
  sched::Timeline timeline;
  int64_t oom_events = 0;
};

struct StudyOptions {
  uint64_t seed = 1;
  int64_t small_instances = 20, small_jobs = 8, small_gpus = 4, small_generations = 20;
  int64_t instances = 12, min_jobs = 20, max_jobs = 200, min_gpus = 4, max_gpus = 32;
  int64_t draws = 5;  // realisations per instance in the replay
  sched::GaOptions ga;
  std::string residuals_file;
};

struct StudyReport {
  // Small instances: GA (small_generations) and LPT over the exact optimum, makespan.
  std::vector<double> ga_over_exact, lpt_over_exact;
  // Generated instances: each solver's makespan over the GA's, planned with the forecasts.
  std::vector<std::string> solvers;          // "lpt", "fifo", "agnostic", "random"
  std::vector<std::vector<double>> over_ga;  // [solver][instance]
  std::vector<int64_t> instance_jobs, instance_gpus, instance_types;
  std::vector<double> ga_seconds;  // GA alone per instance
  int64_t misplaced = 0;           // GA placements where the job does not fit: must be 0
  // Replay: realised makespan and mean JCT over the oracle's, per (instance, draw), for plans made with
  // dnncast's forecasts and with the roofline (FLOPs and bytes over the peaks, no efficiencies).
  std::vector<double> forecast_makespan, roofline_makespan, forecast_jct, roofline_jct, forecast_cost, roofline_cost;
  int64_t oom_events = 0;
  // Makespan over a lower bound (the longest job on its fastest type after its arrival; the total of
  // every job's shortest time over the GPUs), per instance: GA and LPT.
  std::vector<double> ga_over_bound, lpt_over_bound;
  // Measured replay: the realised times are the public measurements themselves (lambda_tf: five CNNs at
  // fp32/tf32 and fp16 on every GPU of the table, each at the batch the table ran on that GPU, jobs of
  // N samples); plans made with the forecasts held out by GPU, by model, and with the roofline; over
  // the oracle's, per instance.
  std::vector<std::string> measured_gpus, measured_classes, broken_rows;
  std::vector<double> measured_held_gpu, measured_held_model, measured_roofline;
  std::vector<double> measured_held_gpu_jct, measured_held_model_jct, measured_roofline_jct;
  std::string residuals_source;
  int64_t calibrated_errors = 0, specs_errors = 0;
};

StudyReport run_study(const StudyOptions& options);
// The report as markdown tables (docs/RESULTS.md), with the command that made it.
std::string study_markdown(const StudyReport& report, const StudyOptions& options, const std::string& command);

}  // namespace dnncast::decide
