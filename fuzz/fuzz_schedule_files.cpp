// The jobs and cluster files of `dnncast schedule` (src/decide/schedule_jobs.h) through to its printed table: the
// bytes as one JSON document, read both as a jobs file and as a cluster file (each node's GPU looked up in the
// shipped catalogue, data/hardware, found from the source tree that `make fuzz` runs in); when both parse, the
// pair is scheduled as cmd_schedule.cpp does (forecasts, the genetic algorithm, the baselines, --exact) and
// printed as the table (cli/print_schedule.h) and as --json.
//
// The command-line options come from the same document's top level, which the readers ignore: "objective"
// (text, as --objective), "exact" (true), "seed" (0 to 2^32). Bounds that keep one input fast, each far below
// the CLI's: at most kMaxJobs jobs on kMaxGpus GPUs, kGenerations generations of kPopulation plans. Models
// are zoo names and synthetic:SEED; a pair naming a graph or ONNX file is not scheduled (a path would read
// any file of the host; fuzz_graph_json and fuzz_onnx read those bytes).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/print_schedule.h"
#include "decide/schedule_jobs.h"
#include "fuzz_common.h"
#include "hardware/catalogue.h"
#include "import/model_source.h"

namespace {

constexpr size_t kMaxJobs = 12;  // --exact takes up to 10
constexpr int64_t kMaxGpus = 16;
constexpr int64_t kGenerations = 3, kPopulation = 8;
constexpr int64_t kCachedForecasts = 1024;

using dnncast::decide::JobSpec;
using dnncast::decide::NodeSpec;

void schedule_and_print(const nlohmann::json& document) {
  dnncast::decide::ScheduleRequest request;
  request.jobs = dnncast::decide::parse_jobs(document, "jobs.json");
  request.nodes = dnncast::decide::parse_cluster(document, "cluster.json");
  if (request.jobs.size() > kMaxJobs) return;
  int64_t gpus = 0;
  for (const NodeSpec& node : request.nodes) gpus += node.count;
  if (gpus > kMaxGpus) return;
  for (const JobSpec& job : request.jobs) {
    const dnncast::import::ModelSourceKind kind = dnncast::import::model_source_kind(job.model);
    if (kind != dnncast::import::ModelSourceKind::Zoo && kind != dnncast::import::ModelSourceKind::Synthetic) return;
  }
  if (document.contains("objective") && document.at("objective").is_string())
    request.objective = dnncast::decide::sched::parse_objective(document.at("objective").get<std::string>());
  request.exact = document.value("exact", nlohmann::json()).is_boolean() && document.at("exact").get<bool>();
  if (document.contains("seed") && document.at("seed").is_number_unsigned())
    request.ga.seed = document.at("seed").get<uint64_t>() & 0xffffffffu;
  request.ga.generations = kGenerations;
  request.ga.population = kPopulation;

  // The shipped catalogue and calibration, read once per process (schedule(request) reads them per call), and
  // one forecast cache for kCachedForecasts forecasts across inputs: a forecast depends only on its key (model,
  // configuration, GPU), and computing it (the model built, its memory simulated) was 78% of the time (perf,
  // session 23). Only the "computed, reused" counts of the table depend on earlier inputs.
  static const dnncast::gpu::GpuCalibration calibration = dnncast::gpu::load_gpu_calibration();
  static std::optional<dnncast::decide::ForecastCache> cache;
  if (!cache || cache->misses() > kCachedForecasts) cache.emplace(dnncast::hardware::shipped_catalogue(), calibration);
  const dnncast::decide::Schedule schedule = dnncast::decide::schedule(request, *cache);
  const std::string table = dnncast::cli::format_schedule(schedule);
  const std::string json = dnncast::decide::to_json(schedule).dump(2);
  if (table.empty() || json.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json document = nlohmann::json::parse(data, data + size, nullptr, false);
  if (document.is_discarded()) return 0;  // not JSON: read_jobs reports the parser's message
  dnncast::fuzz::run_one([&] { dnncast::decide::parse_jobs(document, "jobs.json"); });
  dnncast::fuzz::run_one([&] {
    for (const dnncast::decide::NodeSpec& node : dnncast::decide::parse_cluster(document, "cluster.json"))
      dnncast::hardware::shipped_catalogue().gpu(node.gpu);
  });
  dnncast::fuzz::run_one([&] { schedule_and_print(document); });
  return 0;
}
