// `dnncast campaign PLAN.json --db DATA.db [--shard i/N] [--dry-run]`: measure a plan into a
// dataset, resumably (docs/DATASET.md).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "measure/campaign.h"
#include "measure/plan.h"

namespace dnncast::cli {

int run_campaign(const Args& args) {
  CLI::App app(
      "Measure every run of a plan into a dataset. Runs already in the dataset are skipped, so "
      "running it again resumes; each run is committed as it finishes (docs/DATASET.md).",
      "dnncast campaign");
  std::string plan_path, db_path, shard_text = "0/1", cpus_text;
  measure::CampaignOptions options;
  std::string progress = "auto";
  app.add_option("PLAN", plan_path, "plan JSON (data/plans/*.json)")->required();
  app.add_option("--db", db_path, "dataset file, created when missing")->required();
  app.add_option("--shard", shard_text, "measure only configurations whose index mod N == i (Slurm job arrays)");
  std::vector<int64_t> threads;
  app.add_option("--threads", threads,
                 "measure only configurations with these thread counts (e.g. 1 while the other core is busy)")
      ->delimiter(',')
      ->check(thread_count());
  app.add_flag("--dry-run", options.dry_run, "validate the plan and list what would run; measure nothing");
  app.add_option("--cpus", cpus_text, "pin the campaign and its measurements to these CPUs (\"0-1\")");
  app.add_option("--max-runs", options.max_runs, "stop after this many new measurements");
  app.add_option("--stop-after", options.stop_after_s, "start no new measurement after this many seconds");
  app.add_option("--progress", progress, "bar | lines | auto (bar on a terminal)")
      ->check(CLI::IsMember({"bar", "lines", "auto"}));
  if (!parse_args(app, args, "campaign")) return 0;
  if (options.max_runs < 0) throw InputError("--max-runs must not be negative");
  if (options.stop_after_s < 0) throw InputError("--stop-after must not be negative");
  options.db_path = db_path;
  options.shard = measure::parse_shard(shard_text);
  for (int64_t count : threads)
    if (count < 1) throw InputError("--threads: thread counts must be at least 1, got " + std::to_string(count));
  options.threads = threads;
  if (!cpus_text.empty()) options.cpus = measure::parse_cpu_list(cpus_text);
  options.progress_bar = progress == "bar" ? 1 : progress == "lines" ? 0 : -1;
  measure::Plan plan = measure::load_plan(plan_path);  // validated completely before anything is measured
  measure::run_campaign(plan, options);
  return 0;
}

}  // namespace dnncast::cli
