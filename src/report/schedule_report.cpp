// The HTML report of `dnncast schedule --html FILE` (schedule_jobs.h): inline CSS and SVG, no script,
// nothing fetched; in the style of the compare report (html_report.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "decide/schedule_jobs.h"
#include "report/html_report.h"

namespace dnncast::report {

namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string number(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// Seconds as "42 s", "12.5 min", "3.20 h".
std::string duration_text(double seconds) {
  if (seconds < 120) return number(seconds, 0) + " s";
  if (seconds < 7200) return number(seconds / 60, 1) + " min";
  return number(seconds / 3600, 2) + " h";
}

// A tick step of 1, 2 or 5 times a power of ten seconds, minutes or hours, giving 4 to 10 ticks.
double tick_step(double span_s) {
  double step = 1;
  while (span_s / step > 10) {
    const double steps[] = {2, 2.5, 2};
    for (double factor : steps) {
      if (span_s / step <= 10) break;
      step *= factor;
    }
  }
  return step;
}

}  // namespace

std::string render_schedule_html(const decide::Schedule& schedule) {
  const decide::sched::Timeline& timeline = schedule.genetic.timeline;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dnncast schedule</title>\n"
         "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}"
         "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td.l,th.l{text-align:left}"
         "th{background:#f3f3f3}.note{color:#555}svg text{font-size:11px}</style></head><body>\n";
  out << "<h1>Schedule of " << schedule.placed_jobs.size() << " jobs on " << schedule.gpus.size() << " GPUs</h1>\n";
  out << "<p>Objective: <b>" << html_escape(decide::sched::name(schedule.objective)) << "</b>. Makespan "
      << html_escape(duration_text(timeline.makespan_s)) << ", mean JCT "
      << html_escape(duration_text(timeline.mean_jct_s)) << ", cost $" << number(timeline.cost_usd, 2)
      << ". Times are dnncast's GPU forecasts (docs/GPU.md).</p>\n";

  // Gantt: one row per GPU.
  const double label_w = 140, plot_w = 820, row_h = 22, top = 10;
  const double height = top + row_h * static_cast<double>(schedule.gpus.size()) + 30;
  const double span = std::max(timeline.makespan_s, 1.0);
  auto x_of = [&](double seconds) { return label_w + plot_w * seconds / span; };
  std::map<std::string, size_t> colour;
  for (const decide::JobSpec& job : schedule.jobs)
    if (!colour.count(job.model)) colour.emplace(job.model, colour.size() % std::size(kPalette));
  out << "<svg class=\"gantt\" width=\"" << label_w + plot_w + 20 << "\" height=\"" << height << "\">\n";
  for (size_t gpu = 0; gpu < schedule.gpus.size(); ++gpu) {
    const double y = top + row_h * static_cast<double>(gpu);
    out << "<text x=\"4\" y=\"" << y + 15 << "\">"
        << html_escape(schedule.gpus[gpu].label() + " " + schedule.types[schedule.gpus[gpu].type].gpu) << "</text>\n";
    out << "<line x1=\"" << label_w << "\" x2=\"" << label_w + plot_w << "\" y1=\"" << y + row_h << "\" y2=\""
        << y + row_h << "\" stroke=\"#eee\"/>\n";
  }
  for (size_t index = 0; index < schedule.placed_jobs.size(); ++index) {
    const decide::JobSpec& job = schedule.jobs[schedule.placed_jobs[index]];
    const double x0 = x_of(timeline.start_s[index]), x1 = x_of(timeline.end_s[index]);
    // A gang: one bar on each of its GPUs' rows.
    const int64_t first = schedule.genetic.plan.gpu[index];
    for (int64_t gpu = first; gpu < first + schedule.problem.needs(static_cast<int64_t>(index)); ++gpu) {
      const double y = top + row_h * static_cast<double>(gpu);
      out << "<rect class=\"job\" x=\"" << number(x0, 2) << "\" y=\"" << y + 2 << "\" width=\""
          << number(std::max(x1 - x0, 1.0), 2) << "\" height=\"" << row_h - 4 << "\" fill=\""
          << kPalette[colour[job.model]] << "\" stroke=\"#fff\"><title>"
          << html_escape(job.name + ": " + job.model + " batch " + std::to_string(job.spec.batch) + ", " +
                         duration_text(timeline.start_s[index]) + " to " + duration_text(timeline.end_s[index]))
          << "</title></rect>\n";
      if (x1 - x0 > 7 * static_cast<double>(job.name.size()))
        out << "<text x=\"" << number(x0 + 3, 2) << "\" y=\"" << y + 15 << "\" fill=\"#fff\">" << html_escape(job.name)
            << "</text>\n";
    }
  }
  const double step = tick_step(span);
  const double axis_y = top + row_h * static_cast<double>(schedule.gpus.size()) + 14;
  for (double t = 0; t <= span * (1 + 1e-9); t += step)
    out << "<text x=\"" << number(x_of(t) - 8, 2) << "\" y=\"" << axis_y << "\">" << html_escape(duration_text(t))
        << "</text>\n";
  out << "</svg>\n<p class=\"note\">Colour by model:";
  for (const auto& [model, index] : colour)
    out << " <span style=\"color:" << kPalette[index] << "\">&#9632;</span> " << html_escape(model);
  out << "</p>\n";

  out << "<h2>Assignments</h2>\n<table><tr><th class=\"l\">job</th><th class=\"l\">model</th><th>batch</th>"
         "<th class=\"l\">GPU</th><th>start</th><th>end</th><th>peak memory</th><th class=\"l\">basis</th></tr>\n";
  for (size_t index = 0; index < schedule.placed_jobs.size(); ++index) {
    const int64_t job = schedule.placed_jobs[index];
    const decide::JobSpec& spec = schedule.jobs[job];
    const decide::ClusterGpu& gpu = schedule.gpus[schedule.genetic.plan.gpu[index]];
    const decide::JobOnType& on = schedule.forecasts[job][gpu.type];
    out << "<tr class=\"assignment\"><td class=\"l\">" << html_escape(spec.name) << "</td><td class=\"l\">"
        << html_escape(spec.model) << "</td><td>" << spec.spec.batch << "</td><td class=\"l\">"
        << html_escape(gpu.gang_label(spec.gpus) + " " + schedule.types[gpu.type].gpu +
                       (spec.gpus > 1 ? ", " + std::to_string(spec.gpus) + " GPUs " + decide::plan_label(spec) : ""))
        << "</td><td>" << html_escape(duration_text(timeline.start_s[index])) << "</td><td>"
        << html_escape(duration_text(timeline.end_s[index])) << "</td><td>"
        << (on.required_bytes ? number(static_cast<double>(*on.required_bytes) / (1 << 30), 1) + " GiB" : "?")
        << "</td><td class=\"l\">" << html_escape(on.basis) << "</td></tr>\n";
  }
  out << "</table>\n";
  if (!schedule.unplaceable.empty()) {
    out << "<h2>Not scheduled</h2>\n<ul>\n";
    for (const auto& [job, why] : schedule.unplaceable)
      out << "<li class=\"unplaceable\">" << html_escape(schedule.jobs[job].name + ": " + why) << "</li>\n";
    out << "</ul>\n";
  }
  out << "<h2>Solvers on the same forecasts</h2>\n<table><tr><th class=\"l\">solver</th><th>makespan</th>"
         "<th>mean JCT</th><th>cost</th></tr>\n";
  for (const decide::SolverRow& row : schedule.solvers)
    out << "<tr class=\"solver\"><td class=\"l\">" << html_escape(row.solver) << "</td><td>"
        << html_escape(duration_text(row.makespan_s)) << "</td><td>" << html_escape(duration_text(row.mean_jct_s))
        << "</td><td>$" << number(row.cost_usd, 2) << "</td></tr>\n";
  out << "</table>\n";
  if (!schedule.notes.empty()) {
    out << "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& note : schedule.notes) out << "<li class=\"note\">" << html_escape(note) << "</li>\n";
    out << "</ul>\n";
  }
  out << "</body></html>\n";
  return out.str();
}

}  // namespace dnncast::report
