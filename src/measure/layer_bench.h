// The layer-benchmark campaign (`dnncast bench-layers`, docs/MEASUREMENT.md "Layer benchmarks"):
// layer cases (models/layer_cases.h) timed alone in child processes (profile::bench_layers_isolated),
// each stored as it finishes (Store::insert_layer_bench), resumable: cases already in the dataset
// for this environment and thread count are skipped.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models/layer_cases.h"

namespace dnncast::measure {

struct LayerBenchOptions {
  std::string db_path;
  int64_t threads = 1;
  double time_budget_s = 0.2;      // warm passes of a case stop after this (at least 3)
  double timeout_s = 120;          // a case without a result after this: status timeout
  int64_t memory_limit_bytes = 0;  // 0 = 90% of the memory available
  double stop_after_s = 0;         // stop starting cases after this (0 = never); a rerun resumes
  size_t slice = 50;               // cases per child process; stop_after_s is looked at between slices
  // stop_after_s as a deadline: no slice starts that would end past it, judged by the slowest slice so far (a
  // budget shared with what comes after, `calibrate`'s), rather than the time after which none starts.
  bool stop_is_deadline = false;
  std::string plan = "bench-layers";  // stored with each row
  bool dry_run = false;               // count what would be measured; open the dataset read-only
  FILE* out = stdout;                 // progress and summary
};

// Whether another slice of cases may start `elapsed_s` into the bench, the slowest slice so far having taken
// `slowest_slice_s` (0 before the first): always without stop_after_s; else before it, and with stop_is_deadline
// early enough to end by it were it as slow as that one.
bool starts_another_slice(const LayerBenchOptions& options, double elapsed_s, double slowest_slice_s);

struct LayerBenchSummary {
  int64_t planned = 0, done_before = 0, measured = 0;
  std::map<std::string, int64_t> by_status;  // of the measured ones
  std::map<std::string, int64_t> by_kind;    // planned, per kind
  bool stopped_early = false;
  double wall_s = 0;
};

// Throws InputError for a bad option (before anything is measured).
LayerBenchSummary run_layer_bench(const std::vector<models::LayerCase>& cases, const LayerBenchOptions& options);

}  // namespace dnncast::measure
