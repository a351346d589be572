// `dnncast bench-layers --db DATA [--ops KINDS] [--sample N] [--shapes FILE] [--zoo MODELS]`:
// single-layer training microbenchmarks into a dataset, resumably (docs/MEASUREMENT.md "Layer benchmarks").
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "measure/layer_bench.h"
#include "models/layer_cases.h"

namespace dnncast::cli {

int run_bench_layers(const Args& args) {
  CLI::App app(
      "Time single layers alone (forward, backward, backward-data and backward-weight, warm and cold caches) "
      "into a dataset: sampled shapes, the layers of zoo models, or a shape file. Cases already in the dataset "
      "for this machine and thread count are skipped, so running it again resumes (docs/MEASUREMENT.md).",
      "dnncast bench-layers");
  std::string db_path, shapes_path;
  models::SampleOptions sample;
  sample.count = 0;
  std::vector<std::string> kinds, zoo;
  std::vector<int64_t> zoo_inputs{32, 64}, zoo_batches{1, 8, 32};
  measure::LayerBenchOptions options;
  app.add_option("--db", db_path, "dataset file, created when missing")->required();
  app.add_option("--ops", kinds,
                 "layer kinds (default all): act, add, attention, bn, conv, dwconv, gconv, linear, ln, pool")
      ->delimiter(',');
  app.add_option("--sample", sample.count, "sampled shapes, kinds in turn");
  app.add_option("--seed", sample.seed, "seed of the sample")->check(seed_number());
  app.add_option("--batches", sample.batches, "batches the sample draws from (default 1,2,4,...,256)")->delimiter(',');
  app.add_option("--max-gflops", sample.max_gflops, "sampled shapes: forward GFLOPs of the whole batch at most");
  app.add_option("--max-act-mb", sample.max_act_mb, "sampled shapes: input + output MB at most");
  app.add_option("--shapes", shapes_path,
                 "CSV of shapes (header kind,batch,channels,out_channels,height,width,kernel,stride,groups,op)");
  app.add_option("--zoo", zoo, "zoo models whose layers are all included")->delimiter(',');
  app.add_option("--zoo-inputs", zoo_inputs, "image sizes of the zoo models (default 32,64)")->delimiter(',');
  app.add_option("--zoo-batches", zoo_batches, "batches of the zoo models (default 1,8,32)")->delimiter(',');
  app.add_option("--threads", options.threads, "intra-op threads (the measurement is pinned to that many CPUs)");
  app.add_option("--budget", options.time_budget_s, "seconds of warm passes per case (at least 3 passes)");
  app.add_option("--timeout", options.timeout_s, "seconds a case may take before it is killed (status timeout)");
  app.add_option("--stop-after", options.stop_after_s, "start no new slice of cases after this many seconds");
  app.add_flag("--dry-run", options.dry_run, "count the cases and what is already stored; measure nothing");
  if (!parse_args(app, args, "bench-layers")) return 0;
  if (!kinds.empty()) {
    models::check_layer_kinds(kinds);
    sample.kinds = kinds;
  } else {
    kinds = models::layer_kinds();
  }
  if (sample.count < 0) throw InputError("--sample must not be negative");
  if (options.stop_after_s < 0) throw InputError("--stop-after must not be negative");
  for (int64_t value : zoo_inputs)
    if (value < 1 || value > 4096) throw InputError("--zoo-inputs: " + std::to_string(value) + " is outside 1-4096");
  for (int64_t value : zoo_batches)
    if (value < 1 || value > 65536) throw InputError("--zoo-batches: " + std::to_string(value) + " is outside 1-65536");
  // Everything is built and checked before anything is measured.
  std::vector<models::LayerCase> cases;
  if (!zoo.empty()) cases = models::zoo_layer_cases(zoo, zoo_inputs, zoo_batches, kinds, 128);
  if (!shapes_path.empty())
    for (models::LayerCase& c : models::read_shape_file(shapes_path)) cases.push_back(std::move(c));
  if (sample.count > 0)
    for (models::LayerCase& c : models::sample_layer_cases(sample)) cases.push_back(std::move(c));
  cases = models::unique_cases(std::move(cases));
  if (cases.empty()) throw InputError("no layer cases: give --sample N, --shapes FILE or --zoo MODELS");
  options.db_path = db_path;
  measure::LayerBenchSummary summary = measure::run_layer_bench(cases, options);
  std::string statuses;
  for (const auto& [status, count] : summary.by_status) statuses += " " + status + " " + std::to_string(count);
  std::printf("measured %lld (%s), %lld already stored, %.0f s%s\n", static_cast<long long>(summary.measured),
              statuses.empty() ? "none" : statuses.substr(1).c_str(), static_cast<long long>(summary.done_before),
              summary.wall_s, summary.stopped_early ? "; stopped early (--stop-after): run again to resume" : "");
  return 0;
}

}  // namespace dnncast::cli
