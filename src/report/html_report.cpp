// The self-contained HTML report of a comparison (html_report.h).
#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/units.h"

namespace dnncast::report {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

// `value` with `digits` significant digits ("%.*g"), never in exponent form below 1e6.
std::string number(double value, int digits = 3) {
  char text[64];
  if (std::fabs(value) >= 1e-3 && std::fabs(value) < 1e6) {
    const int integer_digits = value == 0 ? 1 : static_cast<int>(std::floor(std::log10(std::fabs(value)))) + 1;
    std::snprintf(text, sizeof text, "%.*f", std::max(0, digits - integer_digits), value);
  } else {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
  }
  return text;
}

std::string money(double usd) { return "$" + number(usd, usd >= 100 ? 5 : 3); }

// An axis tick in dollars without trailing zeros: "$500", "$20", "$0.5".
std::string tick_money(double usd) {
  std::string text = number(usd, 3);
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return "$" + text;
}

const char* basis_colour(const std::string& basis) {
  if (basis == "measured") return "#1b9e77";
  if (basis == "calibrated") return "#377eb8";
  if (basis == "specs") return "#e6862a";
  return "#777777";
}

const char* basis_meaning(const std::string& basis) {
  if (basis == "measured") return "our own runs on this GPU";
  if (basis == "calibrated") return "public measurements of this GPU were in the calibration";
  if (basis == "specs") return "only the GPU's catalogue row (peaks, bandwidth, SMs): least certain";
  return "see docs/GPU.md";
}

std::string instance_label(const decide::CompareRow& row) {
  std::string label = row.provider + " " + (row.instance_type.empty() ? "(gpu only)" : row.instance_type);
  if (row.gpu_count > 1) label += " " + std::to_string(row.gpu_count) + "x";
  return label + " " + row.gpu;
}

// One axis of the scatter: values in [low, high] to pixels in [from, to].
struct Axis {
  double low = 0, high = 1;
  double from = 0, to = 1;
  bool log = false;

  static Axis fit(std::vector<double> values, double from, double to) {
    Axis axis;
    axis.from = from;
    axis.to = to;
    const auto [min_it, max_it] = std::minmax_element(values.begin(), values.end());
    double low = values.empty() ? 0 : *min_it, high = values.empty() ? 1 : *max_it;
    axis.log = low > 0 && high / low > kLogAxisSpan;
    if (axis.log) {
      axis.low = std::pow(10, std::floor(std::log10(low) * 10) / 10);
      axis.high = std::pow(10, std::ceil(std::log10(high) * 10) / 10);
    } else {
      const double pad = high > low ? (high - low) * 0.08 : std::max(std::fabs(high) * 0.2, 1e-9);
      axis.low = std::max(0.0, low - pad);
      axis.high = high + pad;
    }
    return axis;
  }
  double at(double value) const {
    double share = log ? (std::log10(std::max(value, low)) - std::log10(low)) / (std::log10(high) - std::log10(low))
                       : (value - low) / (high - low);
    return from + share * (to - from);
  }
  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (int decade = static_cast<int>(std::floor(std::log10(low))); decade <= std::ceil(std::log10(high)); ++decade)
        for (double mantissa : {1.0, 2.0, 5.0}) {
          const double value = mantissa * std::pow(10, decade);
          if (value >= low && value <= high) out.push_back(value);
        }
      return out;
    }
    const double raw = (high - low) / 5, magnitude = std::pow(10, std::floor(std::log10(raw)));
    double step = magnitude;
    for (double factor : {1.0, 2.0, 5.0, 10.0})
      if (factor * magnitude >= raw) {
        step = factor * magnitude;
        break;
      }
    for (double value = std::ceil(low / step) * step; value <= high + step * 1e-9; value += step) out.push_back(value);
    return out;
  }
};

constexpr double kWidth = 960, kHeight = 560, kLeft = 90, kRight = 30, kTop = 30, kBottom = 70;

void axes_svg(std::ostringstream& svg, const Axis& x, const Axis& y) {
  svg << "<rect x='" << kLeft << "' y='" << kTop << "' width='" << kWidth - kLeft - kRight << "' height='"
      << kHeight - kTop - kBottom << "' fill='#fcfcfc' stroke='#999'/>\n";
  for (double tick : x.ticks()) {
    const double px = x.at(tick);
    svg << "<line x1='" << px << "' y1='" << kTop << "' x2='" << px << "' y2='" << kHeight - kBottom
        << "' stroke='#e4e4e4'/><text x='" << px << "' y='" << kHeight - kBottom + 18
        << "' text-anchor='middle' class='tick'>" << number(tick) << "</text>\n";
  }
  for (double tick : y.ticks()) {
    const double py = y.at(tick);
    svg << "<line x1='" << kLeft << "' y1='" << py << "' x2='" << kWidth - kRight << "' y2='" << py
        << "' stroke='#e4e4e4'/><text x='" << kLeft - 8 << "' y='" << py + 4 << "' text-anchor='end' class='tick'>"
        << html_escape(tick_money(tick)) << "</text>\n";
  }
  svg << "<text x='" << (kLeft + kWidth - kRight) / 2 << "' y='" << kHeight - 20
      << "' text-anchor='middle'>total time, hours" << (x.log ? " (log scale)" : "") << "</text>\n"
      << "<text transform='translate(22," << (kTop + kHeight - kBottom) / 2
      << ") rotate(-90)' text-anchor='middle'>total cost, USD" << (y.log ? " (log scale)" : "") << "</text>\n";
}

std::string scatter_svg(const decide::Comparison& comparison) {
  std::vector<double> hours, usd;
  for (const decide::CompareRow& row : comparison.rows) {
    hours.insert(hours.end(), {row.total_hours_low, row.total_hours, row.total_hours_high});
    usd.insert(usd.end(), {row.total_usd_low, row.total_usd, row.total_usd_high});
  }
  const Axis x = Axis::fit(hours, kLeft, kWidth - kRight), y = Axis::fit(usd, kHeight - kBottom, kTop);
  std::ostringstream svg;
  svg << "<svg width='" << kWidth << "' height='" << kHeight << "' viewBox='0 0 " << kWidth << " " << kHeight
      << "' role='img' aria-label='total cost against total time per instance'>\n";
  axes_svg(svg, x, y);
  // Interval whiskers: cost is price x time, so a time interval is a segment along the row's price line.
  for (const decide::CompareRow& row : comparison.rows)
    svg << "<line class='whisker' x1='" << x.at(row.total_hours_low) << "' y1='" << y.at(row.total_usd_low) << "' x2='"
        << x.at(row.total_hours_high) << "' y2='" << y.at(row.total_usd_high) << "' stroke='"
        << (row.fits.value_or(false) ? basis_colour(row.basis) : "#bbbbbb") << "' stroke-width='2' opacity='0.6'/>\n";
  std::vector<const decide::CompareRow*> front;
  for (const decide::CompareRow& row : comparison.rows)
    if (row.on_pareto_front) front.push_back(&row);
  std::sort(front.begin(), front.end(),
            [](const decide::CompareRow* a, const decide::CompareRow* b) { return a->total_hours < b->total_hours; });
  if (!front.empty()) {
    svg << "<polyline class='pareto-line' fill='none' stroke='#d62728' stroke-width='2' points='";
    for (const decide::CompareRow* row : front) svg << x.at(row->total_hours) << "," << y.at(row->total_usd) << " ";
    svg << "'/>\n";
  }
  for (const decide::CompareRow& row : comparison.rows) {
    const bool fits = row.fits.value_or(false);
    svg << "<circle class='point" << (row.on_pareto_front ? " pareto" : "") << "' cx='" << x.at(row.total_hours)
        << "' cy='" << y.at(row.total_usd) << "' r='5' fill='" << (fits ? basis_colour(row.basis) : "none")
        << "' stroke='" << (fits ? "#333" : "#999") << "'><title>"
        << html_escape(instance_label(row) + ": " + number(row.total_hours) + " h, " + money(row.total_usd) +
                       (fits       ? ""
                        : row.fits ? " (does not fit)"
                                   : " (memory unknown)"))
        << "</title></circle>\n";
  }
  // Front points are labelled with their row number in the table (names would overlap where several
  // instances of one GPU sit side by side), alternately above and below the point.
  for (size_t position = 0; position < front.size(); ++position) {
    const decide::CompareRow& row = *front[position];
    const size_t number_in_table = static_cast<size_t>(&row - comparison.rows.data()) + 1;
    svg << "<circle class='pareto-mark' cx='" << x.at(row.total_hours) << "' cy='" << y.at(row.total_usd)
        << "' r='9' fill='none' stroke='#d62728' stroke-width='2'/><text class='label' text-anchor='middle' x='"
        << x.at(row.total_hours) << "' y='" << y.at(row.total_usd) + (position % 2 == 0 ? -13 : 23) << "'>#"
        << number_in_table << "<title>" << html_escape(instance_label(row)) << "</title></text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string optional_count(const std::optional<int64_t>& value) { return value ? std::to_string(*value) : "-"; }

std::string table_html(const decide::Comparison& comparison) {
  std::ostringstream html;
  html << "<table>\n<thead><tr><th>#</th><th>provider</th><th>instance</th><th>GPU</th><th>GPUs</th><th>USD/h</th>"
          "<th>ms/iter (90%)</th><th>epoch s</th><th>total h</th><th>total USD (90%)</th><th>fits</th>"
          "<th>max batch</th><th>basis</th><th>Pareto</th></tr></thead>\n<tbody>\n";
  int index = 0;
  for (const decide::CompareRow& row : comparison.rows) {
    html << "<tr class='instance" << (row.on_pareto_front ? " pareto" : "") << "' data-provider='"
         << html_escape(row.provider) << "' data-gpu='" << html_escape(row.gpu) << "'><td>" << ++index << "</td><td>"
         << html_escape(row.provider) << "</td><td>"
         << html_escape(row.instance_type.empty() ? "(gpu only)" : row.instance_type) << "</td><td title='"
         << html_escape(row.gpu_name) << "'>" << html_escape(row.gpu) << "</td><td>" << row.gpu_count
         << (row.sharding.empty() ? ""
                                  : " <small>" + html_escape(row.sharding) + ", " +
                                        (row.collective_ms ? number(*row.collective_ms) + " ms" : std::string("?")) +
                                        " collectives</small>")
         << "</td><td>" << number(row.price_usd_per_hour, 4) << "</td><td>" << number(row.time_ms) << " <small>("
         << number(row.time_ms_low) << "&ndash;" << number(row.time_ms_high) << ")</small></td><td>"
         << (row.epoch_s ? number(*row.epoch_s) : "-") << "</td><td>" << number(row.total_hours) << "</td><td>"
         << html_escape(money(row.total_usd)) << " <small>(" << html_escape(money(row.total_usd_low)) << "&ndash;"
         << html_escape(money(row.total_usd_high)) << ")</small></td><td>"
         << (row.fits ? (*row.fits ? "yes" : "<b>no</b>") : "?") << "</td><td>" << optional_count(row.max_batch)
         << "</td><td><span class='dot' style='background:" << basis_colour(row.basis) << "'></span>"
         << html_escape(row.basis) << "</td><td>" << (row.on_pareto_front ? "&#9733;" : "") << "</td></tr>\n";
  }
  html << "</tbody>\n</table>\n";
  return html.str();
}

std::string request_html(const decide::Comparison& comparison) {
  std::ostringstream html;
  html << "<dl>\n<dt>model</dt><dd>" << html_escape(comparison.model)
       << (comparison.graph.empty() || comparison.graph == comparison.model
               ? ""
               : " (" + html_escape(comparison.graph) + ")")
       << "</dd>\n<dt>batch</dt><dd>" << comparison.batch << (comparison.multi_gpu ? " per GPU" : "")
       << (comparison.multi_gpu ? "</dd>\n<dt>several GPUs</dt><dd>" + html_escape(comparison.sharding) +
                                      ": one GPU's memory under it; collectives at the link's peak after compute "
                                      "(no overlap; a model, not a measurement)"
                                : std::string())
       << "</dd>\n<dt>input</dt><dd>" << html_escape(comparison.input.empty() ? "default" : comparison.input)
       << "</dd>\n<dt>precision</dt><dd>" << html_escape(name(comparison.precision)) << "</dd>\n<dt>framework</dt><dd>"
       << html_escape(name(comparison.framework)) << "</dd>\n<dt>optimizer</dt><dd>"
       << html_escape(name(comparison.optimizer)) << "</dd>\n<dt>run</dt><dd>";
  if (comparison.epoch_samples > 0)
    html << comparison.epochs << " epoch" << (comparison.epochs == 1 ? "" : "s") << " of " << comparison.epoch_samples
         << " samples";
  else
    html << decide::kIterationsWithoutEpochs << " iterations (no --epoch-samples)";
  html << "</dd>\n<dt>prices</dt><dd>" << (comparison.spot ? "spot" : "on-demand")
       << ", USD per hour, a snapshot of SkyPilot's public catalog, not a quote</dd>\n</dl>\n";
  return html.str();
}

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:bold}dd{margin:0}"
    "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px "
    "7px;text-align:right;white-space:nowrap}"
    "th{background:#eef2f7}td:nth-child(2),td:nth-child(3),td:nth-child(4){text-align:left}"
    "tr.pareto{background:#fff1ee}.dot{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}"
    "svg text{font-size:12px}svg .label{font-size:11px;fill:#a11}.warn{color:#a11;font-weight:bold}";

}  // namespace

std::string render_html(const decide::Comparison& comparison) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n<title>dnncast compare: "
       << html_escape(comparison.model) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n"
       << "<h1>Which instance trains " << html_escape(comparison.model) << "? Time and cost per instance</h1>\n"
       << request_html(comparison);
  if (comparison.fits_nowhere) {
    html << "<p class='warn'>Fits on no instance compared";
    if (comparison.required_bytes)
      html << ": one GPU needs " << html_escape(format_bytes(static_cast<double>(*comparison.required_bytes)));
    html << ".</p>\n";
  }
  html << "<h2>Total cost against total time</h2>\n<p>Each point is an instance, coloured by the basis of its "
          "forecast (hollow: does not fit); the whisker is its 90% interval; the red line joins the Pareto front "
          "(no other fitting instance is both cheaper and faster), its points labelled with their row in the "
          "table.</p>\n"
       << scatter_svg(comparison) << "<h2>Basis of the forecasts</h2>\n<ul class='legend'>\n";
  for (const std::string& basis : comparison.bases)
    html << "<li><span class='dot' style='background:" << basis_colour(basis) << "'></span><b>" << html_escape(basis)
         << "</b>: " << html_escape(basis_meaning(basis)) << "</li>\n";
  html << "</ul>\n<h2>Instances, cheapest first</h2>\n" << table_html(comparison);
  if (!comparison.left_out.empty()) {
    html << "<h2>Not compared</h2>\n<ul class='left-out'>\n";
    for (const decide::LeftOutInstance& left : comparison.left_out)
      html << "<li>"
           << html_escape(left.provider + " " + (left.instance_type.empty() ? "(gpu only)" : left.instance_type) + " " +
                          left.gpu + ": " + left.reason)
           << "</li>\n";
    html << "</ul>\n";
  }
  if (!comparison.notes.empty()) {
    html << "<h2>Notes</h2>\n<ul class='notes'>\n";
    for (const std::string& note : comparison.notes) html << "<li>" << html_escape(note) << "</li>\n";
    html << "</ul>\n";
  }
  html << "<p><small>Written by dnncast compare (docs/COMPARE.md).</small></p>\n</body>\n</html>\n";
  return html.str();
}

void write_html(const decide::Comparison& comparison, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("--html " + quote(path) + ": cannot write the file");
  out << render_html(comparison);
  out.close();
  if (!out) throw InputError("--html " + quote(path) + ": cannot write the file");
}

}  // namespace dnncast::report
