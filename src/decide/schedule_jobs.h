// `dnncast schedule JOBS.json --cluster CLUSTER.json`: the jobs and the cluster as users write them,
// each job's time and peak memory on each GPU type from dnncast's own GPU forecasts (gpu_forecast.h,
// computed once per distinct model, configuration and GPU), and the schedule the genetic algorithm
// finds beside the baselines' (schedule.h, docs/SCHEDULE.md).
//
// JOBS.json: {"jobs": [{"name": "r50", "model": "resnet50", "batch": 64, "input": "3x224x224",
//   "precision": "amp", "iterations": 5000}, ...]}; per job: model (zoo name, graph JSON or ONNX file,
//   synthetic:SEED), batch, and either iterations or epochs and samples (per epoch); optional name,
//   input (CxHxW) or seq (tokens), optimizer, precision, framework, priority (> 0, default 1),
//   arrival_s (default 0), deadline_s, gpus (default 1), parallel ("dp", "tp", "pp" or degrees such as
//   "tp=2,pp=2"; default "dp"), micro_batches (a pipeline's). A job of several GPUs runs as a gang within one
//   node; its batch is each data-parallel replica's, as in `dnncast predict --gpus`.
// CLUSTER.json: {"nodes": [{"name": "n1", "gpu": "a100-80gb", "count": 4, "price_per_hour": 3.0}, ...]};
//   price_per_hour (USD per GPU) optional: default the lowest on-demand price per GPU of the cloud
//   snapshot (data/hardware/instances.csv), said in a note.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/training_setup.h"
#include "decide/schedule.h"
#include "gpu/gpu_forecast.h"
#include "hardware/catalogue.h"
#include "models/zoo.h"

namespace dnncast::decide {

struct JobSpec {
  std::string name;        // unique; default "job<N>" (1-based)
  std::string model;       // as model_source.h reads it
  models::ModelSpec spec;  // batch, input or seq
  Optimizer optimizer = Optimizer::Sgd;
  gpu::GpuPrecision precision = gpu::GpuPrecision::Fp32;
  Precision memory_precision = Precision::Fp32;  // what its memory is simulated in (memory_precision_of)
  gpu::Framework framework = gpu::Framework::PyTorch;
  int64_t iterations = 0;           // given, or epochs x ceil(samples / batch)
  int64_t epochs = 0, samples = 0;  // when given that way
  double priority = 1, arrival_s = 0;
  std::optional<double> deadline_s;
  std::string where;           // "jobs.json: job 2 ('gpt')": where parse_jobs read it, for messages
  int64_t gpus = 1;            // its gang: that many GPUs of one node and one type
  gpu::ParallelPlan parallel;  // how they share the work (gpus_per_node = gpus: the gang is one node's)
};

// "1" for one GPU; else the plan's degrees above 1 and its micro-batches: "tp4", "dp2 tp2", "pp2 mb8".
std::string plan_label(const JobSpec& job);

struct NodeSpec {
  std::string name;
  std::string gpu;  // catalogue name or alias, as written
  int64_t count = 1;
  std::optional<double> price_per_hour;  // USD per GPU
};

// Throw InputError naming the file (or `where`), the job or node and the field: a missing field, a
// wrong type, an unknown field, a value out of range, a duplicate job name, no jobs, no nodes.
std::vector<JobSpec> parse_jobs(const nlohmann::json& document, const std::string& where);
std::vector<NodeSpec> parse_cluster(const nlohmann::json& document, const std::string& where);
std::vector<JobSpec> read_jobs(const std::string& path);
std::vector<NodeSpec> read_cluster(const std::string& path);

// GPU forecasts by (model, configuration, GPU): the first question about a combination forecasts it,
// the next ones reuse it. Failures are kept as their message (a GPU without the peak a precision
// needs), so that they are not retried either.
class ForecastCache {
 public:
  ForecastCache(const hardware::Catalogue& catalogue, gpu::GpuCalibration calibration)
      : catalogue_(catalogue), calibration_(std::move(calibration)) {}
  // nullptr and `error` set when this GPU cannot forecast this job; InputError for a bad model or input
  // (no GPU could).
  const gpu::GpuForecast* get(const JobSpec& job, const std::string& gpu, std::string& error);
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  const hardware::Catalogue& catalogue() const { return catalogue_; }

 private:
  struct Entry {
    std::optional<gpu::GpuForecast> forecast;
    std::string error;
  };
  const hardware::Catalogue& catalogue_;
  gpu::GpuCalibration calibration_;
  std::map<std::string, Entry> entries_;
  int64_t hits_ = 0, misses_ = 0;
};

struct ScheduleRequest {
  std::vector<JobSpec> jobs;
  std::vector<NodeSpec> nodes;
  sched::Objective objective = sched::Objective::Makespan;
  sched::GaOptions ga;
  bool exact = false;  // also the exact optimum (at most sched::kExactMaxJobs placeable jobs)
  std::vector<std::string> catalogue_files;
  std::string calibration_file;  // "": the shipped one
};

// One GPU of the cluster.
struct ClusterGpu {
  std::string node;
  int64_t index = 0;  // within its node
  int64_t type = 0;   // into Schedule::types
  std::string label() const { return node + "/" + std::to_string(index); }
  // The gang of `count` GPUs that starts here: "dgx/0-3" (count 1: label()).
  std::string gang_label(int64_t count) const {
    return count <= 1 ? label() : label() + "-" + std::to_string(index + count - 1);
  }
};

struct GpuType {
  std::string gpu, gpu_name;  // catalogue name, full name
  int64_t count = 0;
  int64_t memory_bytes = 0;   // of one GPU, as catalogued (0: unknown)
  double price_per_hour = 0;  // USD per GPU
  std::string price_source;   // "cluster file", "aws p4d.24xlarge (snapshot)", or "none"
};

// A job's forecast on one GPU type (a job of several GPUs: its plan's iteration, memory per GPU).
struct JobOnType {
  bool fits = false;  // its memory fits, and (several GPUs) a node of this type has enough GPUs
  std::optional<double> time_ms, duration_s, roofline_ms;  // per iteration; the whole job
  std::optional<int64_t> required_bytes;
  std::string basis;  // "measured", "calibrated", "specs"
  std::string error;  // why there is no forecast
};

struct SolverRow {
  std::string solver;  // "genetic", "exact", "lpt", "fifo", "agnostic", "random"
  double makespan_s = 0, mean_jct_s = 0, cost_usd = 0;
};

struct Schedule {
  sched::Objective objective = sched::Objective::Makespan;
  std::vector<JobSpec> jobs;
  std::vector<GpuType> types;
  std::vector<ClusterGpu> gpus;
  std::vector<std::vector<JobOnType>> forecasts;  // [job][type]
  std::vector<std::string> inputs;                // per job: its input without the batch ("3x224x224")
  // The placeable jobs (those that fit some GPU of the cluster) as the problem the solvers saw; index
  // into `jobs` per problem job.
  sched::Problem problem;
  std::vector<int64_t> placed_jobs;
  std::vector<std::pair<int64_t, std::string>> unplaceable;  // job index, why
  sched::GaResult genetic;
  std::vector<SolverRow> solvers;  // genetic first, then exact (if asked), lpt, fifo, agnostic, random
  double forecast_s = 0, solve_s = 0;
  int64_t cache_hits = 0, cache_misses = 0;
  std::vector<std::string> notes;
};

// Throws InputError: an unknown GPU (naming the closest), a bad model or input (a tensor-parallel split the
// model does not allow), a job of more GPUs than any node has, no job that fits, exact asked for more than
// sched::kExactMaxJobs placeable jobs or for a job of several GPUs.
Schedule schedule(const ScheduleRequest& request);
Schedule schedule(const ScheduleRequest& request, ForecastCache& cache);

// The JSON of `dnncast schedule --json`, in reading order.
nlohmann::ordered_json to_json(const Schedule& schedule);

// Its HTML report (`--html`) is report/html_report.h's render_schedule_html.

}  // namespace dnncast::decide
