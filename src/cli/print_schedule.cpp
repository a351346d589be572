// The terminal output of `dnncast schedule` (print_schedule.h).
#include "cli/print_schedule.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace dnncast::cli {

namespace {

constexpr int kGanttColumns = 64;

// The mark of the job at `index` in the Gantt chart: A-Z, a-z, 0-9, then again.
char job_mark(size_t index) {
  static const char kMarks[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return kMarks[index % (sizeof kMarks - 1)];
}

std::string hours(double seconds) {
  char text[32];
  if (seconds < 3600)
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  else
    std::snprintf(text, sizeof text, "%.2f h", seconds / 3600);
  return text;
}

// printf onto the end of `out`.
__attribute__((format(printf, 2, 3))) void appendf(std::string& out, const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (length > 0) {
    const size_t end = out.size();
    out.resize(end + static_cast<size_t>(length) + 1);
    std::vsnprintf(out.data() + end, static_cast<size_t>(length) + 1, format, again);
    out.resize(end + static_cast<size_t>(length));
  }
  va_end(again);
}

}  // namespace

void print_schedule(const decide::Schedule& schedule) { std::fputs(format_schedule(schedule).c_str(), stdout); }

std::string format_schedule(const decide::Schedule& schedule) {
  std::string out;
  const decide::sched::Timeline& timeline = schedule.genetic.timeline;
  appendf(out, "%zu jobs on %zu GPUs (", schedule.placed_jobs.size(), schedule.gpus.size());
  for (size_t type = 0; type < schedule.types.size(); ++type)
    appendf(out, "%s%s x%lld", type ? ", " : "", schedule.types[type].gpu.c_str(),
            static_cast<long long>(schedule.types[type].count));
  appendf(out, "), objective %s: makespan %s, mean JCT %s, cost $%.2f\n\n",
          decide::sched::name(schedule.objective).c_str(), hours(timeline.makespan_s).c_str(),
          hours(timeline.mean_jct_s).c_str(), timeline.cost_usd);

  // Assignments by GPU, then start.
  std::vector<size_t> order(schedule.placed_jobs.size());
  for (size_t index = 0; index < order.size(); ++index) order[index] = index;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int64_t gpu_a = schedule.genetic.plan.gpu[a], gpu_b = schedule.genetic.plan.gpu[b];
    return gpu_a != gpu_b ? gpu_a < gpu_b : timeline.start_s[a] < timeline.start_s[b];
  });
  // A column for the jobs' GPUs and plans when some job runs on several.
  bool gangs = false;
  for (int64_t job : schedule.placed_jobs) gangs = gangs || schedule.jobs[job].gpus > 1;
  appendf(out, "  %-4s %-16s %-14s %6s %-20s%s %10s %10s %10s %9s\n", "mark", "job", "model", "batch", "gpu",
          gangs ? " gpus          " : "", "start", "end", "duration", "peak GiB");
  for (size_t index : order) {
    const int64_t job = schedule.placed_jobs[index];
    const decide::JobSpec& spec = schedule.jobs[job];
    const decide::ClusterGpu& gpu = schedule.gpus[schedule.genetic.plan.gpu[index]];
    const decide::JobOnType& on = schedule.forecasts[job][gpu.type];
    const std::string gpu_text = gpu.gang_label(spec.gpus) + " " + schedule.types[gpu.type].gpu;
    std::string gang_text;
    if (gangs) {
      char text[64];
      std::snprintf(text, sizeof text, " %-14s",
                    (spec.gpus > 1 ? std::to_string(spec.gpus) + ", " + decide::plan_label(spec) : "1").c_str());
      gang_text = text;
    }
    appendf(out, "  %-4c %-16s %-14s %6lld %-20s%s %10s %10s %10s %9.1f\n", job_mark(index), spec.name.c_str(),
            spec.model.c_str(), static_cast<long long>(spec.spec.batch), gpu_text.c_str(), gang_text.c_str(),
            hours(timeline.start_s[index]).c_str(), hours(timeline.end_s[index]).c_str(),
            hours(timeline.end_s[index] - timeline.start_s[index]).c_str(),
            on.required_bytes ? static_cast<double>(*on.required_bytes) / (1 << 30) : 0.0);
  }

  // Gantt: one row per GPU, kGanttColumns columns over the makespan; each column shows the job running
  // at its middle ('.' idle).
  const double span = std::max(timeline.makespan_s, 1e-9);
  appendf(out, "\n  Gantt, 0 to %s (one column %s):\n", hours(timeline.makespan_s).c_str(),
          hours(span / kGanttColumns).c_str());
  for (size_t gpu = 0; gpu < schedule.gpus.size(); ++gpu) {
    std::string row(kGanttColumns, '.');
    for (size_t index = 0; index < schedule.placed_jobs.size(); ++index) {
      // A gang's mark on each of its GPUs.
      const int64_t first = schedule.genetic.plan.gpu[index];
      if (static_cast<int64_t>(gpu) < first || static_cast<int64_t>(gpu) >= first + schedule.problem.needs(index))
        continue;
      for (int column = 0; column < kGanttColumns; ++column) {
        const double middle = (column + 0.5) * span / kGanttColumns;
        if (middle >= timeline.start_s[index] && middle < timeline.end_s[index]) row[column] = job_mark(index);
      }
    }
    const std::string label = schedule.gpus[gpu].label() + " " + schedule.types[schedule.gpus[gpu].type].gpu;
    appendf(out, "  %-24s |%s|\n", label.c_str(), row.c_str());
  }

  appendf(out, "\n  %-10s %12s %12s %12s\n", "solver", "makespan", "mean JCT", "cost");
  for (const decide::SolverRow& row : schedule.solvers)
    appendf(out, "  %-10s %12s %12s %11.2f$\n", row.solver.c_str(), hours(row.makespan_s).c_str(),
            hours(row.mean_jct_s).c_str(), row.cost_usd);
  appendf(out,
          "\n  forecasts: %lld computed, %lld reused, %.2f s; genetic algorithm: %zu generations, %lld plans, "
          "%.2f s\n",
          static_cast<long long>(schedule.cache_misses), static_cast<long long>(schedule.cache_hits),
          schedule.forecast_s, schedule.genetic.best_by_generation.size(),
          static_cast<long long>(schedule.genetic.evaluations), schedule.solve_s);
  return out;
}

}  // namespace dnncast::cli
