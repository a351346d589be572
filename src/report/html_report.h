// The HTML report of `dnncast compare --html FILE` (docs/COMPARE.md): one self-contained file, inline
// CSS and inline SVG, no script and nothing fetched. It holds the request, a cost-versus-time scatter
// (log axes when the values span more than kLogAxisSpan) with each instance's 90% interval as a
// whisker and the Pareto front as a line through marked points, the basis legend, the notes, and the
// table: one <tr class="instance"> per row of the comparison.
#pragma once

#include <string>

#include "decide/compare.h"
#include "decide/schedule_jobs.h"

namespace dnncast::report {

inline constexpr double kLogAxisSpan = 20;  // max / min of an axis above which it is logarithmic

// `text` with &, <, >, " and ' as entities: safe in element text and in quoted attributes.
std::string html_escape(const std::string& text);

std::string render_html(const decide::Comparison& comparison);

// Writes render_html() to `path`; throws InputError naming --html and the path when it cannot.
void write_html(const decide::Comparison& comparison, const std::string& path);

// The self-contained HTML report of `dnncast schedule --html`: the request, a Gantt chart as inline SVG, the
// assignment table (one <tr class="assignment"> per placed job) and the solvers; nothing fetched, no script.
std::string render_schedule_html(const decide::Schedule& schedule);

}  // namespace dnncast::report
