// The campaign runner: measures every run of a plan (or of one shard of it) with the profiler and
// commits each result to the dataset as soon as it is known. Runs already in the dataset for this
// environment are skipped, so re-running a plan resumes it. Failed runs (oom, error, timeout) are
// stored too and count as done.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "measure/plan.h"

namespace dnncast::measure {

struct CampaignOptions {
  std::string db_path;
  Shard shard;
  std::vector<int64_t> threads;  // measure only configurations with these thread counts (empty = all), e.g.
                                 // the 1-thread runs on one free core while the other core is busy
  bool dry_run = false;          // print what would run; measure nothing, write nothing
  std::vector<int> cpus;         // pin the runner (and so its measurements) to these CPUs; empty = those allowed now
  int64_t max_runs = 0;          // stop after this many new measurements (0 = no limit)
  double stop_after_s = 0;       // start no new measurement after this long (0 = no limit), e.g. a Slurm time limit
  std::FILE* out = stderr;       // progress and summary
  int progress_bar = -1;         // 1 = redrawn bar, 0 = one line per run, -1 = bar when `out` is a terminal
};

struct CampaignSummary {
  int64_t planned = 0;                              // runs of this shard (entries x repeats)
  int64_t done_before = 0;                          // of those, already in the dataset
  int64_t measured = 0;                             // measured now
  int64_t ok = 0, oom = 0, error = 0, timeout = 0;  // statuses of the runs measured now
  double elapsed_s = 0;
  bool stopped_early = false;  // --max-runs or --stop-after ended it with runs left
};

// Throws InputError before any measurement when a configuration or network of the shard cannot be
// measured here (fp16 on cpu, more threads than CPUs, an op the executor lacks), or when this build
// has no libtorch (dry runs work without it).
CampaignSummary run_campaign(const Plan& plan, const CampaignOptions& options);

// "0-3,6" -> {0, 1, 2, 3, 6}; throws InputError.
std::vector<int> parse_cpu_list(const std::string& text);
// {0, 1, 2, 3, 6} -> "0-3,6".
std::string format_cpu_list(const std::vector<int>& cpus);
// CPUs this process may run on now (its affinity mask).
std::vector<int> allowed_cpus();

}  // namespace dnncast::measure
