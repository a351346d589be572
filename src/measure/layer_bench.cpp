#include "measure/layer_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/clock.h"
#include "core/error.h"
#include "import/graph_json.h"
#include "measure/host_environment.h"
#include "store/store.h"
#ifdef DNNCAST_HAVE_TORCH
#include "profile/measure.h"
#endif

namespace dnncast::measure {
namespace {

using Clock = std::chrono::steady_clock;

using dnncast::seconds_since;

#ifdef DNNCAST_HAVE_TORCH
records::LayerBenchRecord record_of(const models::LayerCase& c, const profile::LayerBench& bench,
                                    int64_t environment_id, const LayerBenchOptions& options,
                                    const records::EnvironmentRecord& environment) {
  records::LayerBenchRecord r;
  r.environment_id = environment_id;
  r.kind = c.kind;
  r.op = c.graph.node(c.graph.size() - 1).op;
  r.key = c.key;
  r.origin = c.origin;
  r.graph_json = import::graph_to_json(c.graph).dump();
  r.batch = c.batch;
  r.threads = options.threads;
  r.flops_forward = c.flops_forward;
  r.status = bench.status;
  r.message = bench.message;
  if (bench.status == "ok") {
    r.forward_ms = bench.forward_ms;
    r.backward_ms = bench.backward_ms;
    r.backward_data_ms = bench.backward_data_ms;
    r.backward_weight_ms = bench.backward_weight_ms;
    r.cold_forward_ms = bench.cold_forward_ms;
    r.cold_backward_ms = bench.cold_backward_ms;
    r.peak_bytes = bench.peak_bytes;
  }
  r.reps = bench.reps;
  r.wall_s = bench.wall_s;
  r.cpus = std::to_string(options.threads) + " of " + std::to_string(environment.threads);
  r.host = environment.host;
  r.plan = options.plan;
  r.measured_at = records::utc_now();
  return r;
}
#endif

}  // namespace

bool starts_another_slice(const LayerBenchOptions& options, double elapsed_s, double slowest_slice_s) {
  if (options.stop_after_s <= 0) return true;
  return elapsed_s + (options.stop_is_deadline ? slowest_slice_s : 0) < options.stop_after_s;
}

LayerBenchSummary run_layer_bench(const std::vector<models::LayerCase>& cases, const LayerBenchOptions& options) {
  Clock::time_point start = Clock::now();
  if (options.threads < 1) throw InputError("threads must be >= 1, got " + std::to_string(options.threads));
  if (options.time_budget_s <= 0 || options.timeout_s <= 0)
    throw InputError("time budget and timeout must be positive");
  LayerBenchSummary summary;
  summary.planned = static_cast<int64_t>(cases.size());
  for (const models::LayerCase& c : cases) ++summary.by_kind[c.kind];
  records::EnvironmentRecord environment = detect_environment(Device::Cpu);
  bool have_db = !options.dry_run || access(options.db_path.c_str(), F_OK) == 0;
  std::optional<store::Store> store;
  int64_t environment_id = 0;
  std::set<std::string> done;
  if (have_db) {
    store = store::Store::open(options.db_path,
                               options.dry_run ? store::Database::Mode::ReadOnly : store::Database::Mode::Create);
    environment_id = store->environment_id(environment, options.dry_run);
    if (environment_id) done = store->layer_bench_keys(environment_id, options.threads);
  }
  std::vector<const models::LayerCase*> todo;
  for (const models::LayerCase& c : cases) {
    if (done.count(c.key))
      ++summary.done_before;
    else
      todo.push_back(&c);
  }
  std::fprintf(options.out, "bench-layers: %lld cases, %lld already in %s, %zu to measure with %lld thread(s)\n",
               static_cast<long long>(summary.planned), static_cast<long long>(summary.done_before),
               options.db_path.c_str(), todo.size(), static_cast<long long>(options.threads));
  if (options.dry_run || todo.empty()) {
    summary.wall_s = seconds_since(start);
    return summary;
  }
#ifdef DNNCAST_HAVE_TORCH
  profile::TrainConfig config;
  config.threads = options.threads;
  profile::Limits limits;
  limits.time_budget_s = options.time_budget_s;
  limits.timeout_s = options.timeout_s;
  limits.memory_bytes = options.memory_limit_bytes;
  // In slices, so that --stop-after is looked at between them.
  const size_t kSlice = std::max<size_t>(1, options.slice);
  double slowest_slice_s = 0;
  for (size_t first = 0; first < todo.size(); first += kSlice) {
    if (!starts_another_slice(options, seconds_since(start), slowest_slice_s)) {
      summary.stopped_early = true;
      break;
    }
    const double slice_start_s = seconds_since(start);
    std::vector<Graph> graphs;
    size_t end = std::min(todo.size(), first + kSlice);
    for (size_t index = first; index < end; ++index) graphs.push_back(todo[index]->graph);
    profile::bench_layers_isolated(graphs, config, limits, [&](size_t index, const profile::LayerBench& bench) {
      const models::LayerCase& c = *todo[first + index];
      store->insert_layer_bench(record_of(c, bench, environment_id, options, environment));
      ++summary.measured;
      ++summary.by_status[bench.status];
      if (bench.status != "ok")
        std::fprintf(options.out, "  %s %s (%s): %s: %s\n", c.kind.c_str(), c.key.c_str(), c.origin.c_str(),
                     bench.status.c_str(), bench.message.c_str());
    });
    slowest_slice_s = std::max(slowest_slice_s, seconds_since(start) - slice_start_s);
    std::fprintf(options.out, "  %lld/%zu measured, %.0f s\n", static_cast<long long>(summary.measured), todo.size(),
                 seconds_since(start));
    std::fflush(options.out);
  }
#else
  throw InputError("this dnncast was built without libtorch: bench-layers cannot measure");
#endif
  summary.wall_s = seconds_since(start);
  return summary;
}

}  // namespace dnncast::measure
