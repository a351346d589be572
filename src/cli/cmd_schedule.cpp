// `dnncast schedule JOBS.json --cluster CLUSTER.json [...]`: places training jobs on a heterogeneous GPU
// cluster with a genetic algorithm over dnncast's own forecasts, beside the baselines (decide/schedule_jobs.h,
// docs/SCHEDULE.md); an assignment table and a Gantt chart, --json, --html.
// `dnncast schedule-study`: the GA against the exact optimum, the baselines and the replay on generated
// instances (decide/schedule_study.h), as markdown for docs/RESULTS.md.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "cli/print_schedule.h"
#include "core/error.h"
#include "decide/schedule_jobs.h"
#include "decide/schedule_study.h"
#include "report/html_report.h"

namespace dnncast::cli {

namespace {

constexpr int64_t kMaxGenerations = 100000, kMaxPopulation = 100000;

}  // namespace

int run_schedule(const Args& args) {
  CLI::App app(
      "Place training jobs on a GPU cluster: each job's time and peak memory on each GPU type from dnncast's GPU\n"
      "forecasts, then a genetic algorithm (seeded, reproducible) that never places a job where it does not fit;\n"
      "baselines (LPT, FIFO, heterogeneity-agnostic, random) on the same forecasts. docs/SCHEDULE.md has the file\n"
      "formats.",
      "dnncast schedule");
  std::string jobs_file, cluster_file, objective = "makespan", html;
  decide::ScheduleRequest request;
  bool as_json = false;
  app.add_option("JOBS", jobs_file, "jobs file (JSON: {\"jobs\": [...]})")->required();
  app.add_option("--cluster", cluster_file, "cluster file (JSON: {\"nodes\": [...]})")->required();
  app.add_option("--objective", objective, "makespan | mean-jct | cost (default makespan)");
  app.add_option("--generations", request.ga.generations, "generations of the genetic algorithm (default 100)")
      ->check(positive_at_most(kMaxGenerations));
  app.add_option("--population", request.ga.population, "plans per generation (default 64)")
      ->check(CLI::Range(int64_t{2}, kMaxPopulation));
  app.add_option("--seed", request.ga.seed, "seed of the genetic algorithm (default 1)")->check(seed_number());
  app.add_flag("--exact", request.exact, "also the exact optimum (at most 10 placeable jobs)");
  app.add_option("--catalogue", request.catalogue_files, "a CSV in gpus.csv's or instances.csv's format; may repeat");
  app.add_flag("--json", as_json, "print JSON instead of the tables");
  app.add_option("--html", html, "also write a self-contained HTML report with the Gantt chart");
  if (!parse_args(app, args, "schedule")) return 0;
  request.objective = decide::sched::parse_objective(objective);
  if (app.count("--html") > 0) check_writable("--html", html);
  request.jobs = decide::read_jobs(jobs_file);
  request.nodes = decide::read_cluster(cluster_file);
  const decide::Schedule schedule = decide::schedule(request);
  if (app.count("--html") > 0) {
    std::ofstream out(html);
    out << report::render_schedule_html(schedule);
    if (!out) throw InputError("--html " + quote(html) + ": writing failed");
  }
  if (as_json)
    std::cout << decide::to_json(schedule).dump(2) << "\n";
  else
    print_schedule(schedule);
  std::cout.flush();
  std::fflush(stdout);
  for (const std::string& note : schedule.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (app.count("--html") > 0) std::fprintf(stderr, "wrote %s\n", html.c_str());
  return 0;
}

int run_schedule_study(const Args& args) {
  CLI::App app(
      "Judge the scheduler on generated instances: the genetic algorithm over the exact optimum (small\n"
      "instances), the baselines over the GA, and a replay of the plans with realised times drawn from the\n"
      "forecasts' held-out error (data/hardware/gpu_forecast_residuals.csv). Prints markdown.",
      "dnncast schedule-study");
  decide::StudyOptions options;
  app.add_option("--seed", options.seed, "seed of the instances and draws (default 1)")->check(seed_number());
  app.add_option("--instances", options.instances, "generated instances of 20-200 jobs (default 12)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  app.add_option("--small", options.small_instances, "small instances solved exactly (default 20)")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  app.add_option("--draws", options.draws, "realisations per instance in the replay (default 5)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  app.add_option("--generations", options.ga.generations, "generations on the generated instances (default 100)")
      ->check(positive_at_most(kMaxGenerations));
  app.add_option("--residuals", options.residuals_file, "the forecasts' error (default the shipped file)");
  if (!parse_args(app, args, "schedule-study")) return 0;
  std::string command = "dnncast schedule-study";
  for (const std::string& arg : args) command += " " + arg;
  const decide::StudyReport report = decide::run_study(options);
  std::cout << decide::study_markdown(report, options, command);
  return 0;
}

}  // namespace dnncast::cli
