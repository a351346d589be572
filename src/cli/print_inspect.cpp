#include "cli/print_inspect.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "core/units.h"

namespace dnncast::cli {

namespace {

// 1234567 -> "1,234,567"
std::string grouped(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text;
  for (size_t index = 0; index < digits.size(); ++index) {
    if (index > 0 && (digits.size() - index) % 3 == 0) text += ',';
    text += digits[index];
  }
  return value < 0 ? "-" + text : text;
}

// 4089184256 -> "4.09 G" (SI units for counts).
std::string human_count(int64_t value) {
  static const char* const kUnits[] = {"", " K", " M", " G", " T", " P", " E"};
  if (value < 1000) return std::to_string(value);
  double scaled = static_cast<double>(value);
  size_t unit = 0;
  while (scaled >= 999.5 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    scaled /= 1000.0;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer,
                scaled >= 99.95   ? "%.0f%s"
                : scaled >= 9.995 ? "%.1f%s"
                                  : "%.2f%s",
                scaled, kUnits[unit]);
  return buffer;
}

}  // namespace

void print_table(const forecast::Inspection& summary) {
  std::vector<std::string> headers{"Layer", "Op", "Output shape", "Params", "MACs", "Activations", "Saved"};
  const bool gpu = !summary.gpu.empty();
  if (gpu) headers.insert(headers.end(), {"Fwd ms", "Bwd ms"});
  auto milliseconds = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, value >= 10 ? "%.1f" : "%.3f", value);
    return std::string(value > 0 ? text : "-");
  };
  std::vector<std::vector<std::string>> cells;
  for (const forecast::LayerRow& row : summary.layers) {
    cells.push_back({row.name, row.kind, row.shape.to_string(), row.params ? grouped(row.params) : "-",
                     row.macs ? human_count(row.macs) : "-", format_bytes(row.activation_bytes, ByteStyle::Significant),
                     row.saved_bytes ? format_bytes(row.saved_bytes, ByteStyle::Significant) : "-"});
    if (gpu)
      cells.back().insert(cells.back().end(), {milliseconds(row.gpu_forward_ms), milliseconds(row.gpu_backward_ms)});
  }
  std::vector<size_t> widths;
  for (const std::string& header : headers) widths.push_back(header.size());
  for (const auto& line : cells)
    for (size_t column = 0; column < line.size(); ++column)
      widths[column] = std::max(widths[column], line[column].size());
  size_t rule_width = headers.size() - 1;
  for (size_t width : widths) rule_width += width + 1;
  const std::string rule(rule_width, '-');
  auto print_line = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t column = 0; column < line.size(); ++column) {
      std::string cell = line[column];
      std::string pad(widths[column] - cell.size(), ' ');
      // Names and kinds read left to right; numbers line up on the right.
      text += column < 3 ? cell + pad : pad + cell;
      if (column + 1 < line.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::cout << text << "\n";
  };

  const forecast::LayerRow& total = summary.total;
  std::cout << summary.model << " (family " << summary.family << ", hash " << summary.hash << "): batch "
            << summary.batch << ", input " << TensorShape(summary.input).to_string() << ", " << summary.layer_count
            << " layers\n";
  std::cout << rule << "\n";
  print_line(headers);
  std::cout << rule << "\n";
  for (const auto& line : cells) print_line(line);
  std::cout << rule << "\n";
  auto total_line = [](const std::string& label, const std::string& value) {
    std::cout << label << std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') << value << "\n";
  };
  total_line("Parameters:", grouped(total.params) + " (" + human_count(total.params) + ")");
  if (summary.active_params != total.params)
    total_line("Active a token:", grouped(summary.active_params) + " (" + human_count(summary.active_params) +
                                      "; top-k of each layer's experts)");
  total_line("Parameter bytes:", format_bytes(total.param_bytes, ByteStyle::Significant));
  total_line("Buffers (running stats):", grouped(total.buffers));
  total_line("MACs (forward):", human_count(total.macs));
  total_line("FLOPs forward:", human_count(total.flops_fwd));
  total_line("FLOPs backward:", human_count(total.flops_bwd));
  total_line("Activation bytes:",
             format_bytes(total.activation_bytes, ByteStyle::Significant) + " (every layer's output)");
  total_line("Saved for backward:", format_bytes(total.saved_bytes, ByteStyle::Significant) + " (" +
                                        format_bytes(summary.saved_bytes_distinct, ByteStyle::Significant) +
                                        " distinct: a tensor kept by several layers counted once)");
  if (gpu)
    total_line("On " + summary.gpu + ":",
               milliseconds(total.gpu_forward_ms) + " ms forward, " + milliseconds(total.gpu_backward_ms) +
                   " ms backward" +
                   (total.gpu_recompute_ms > 0
                        ? " (" + milliseconds(total.gpu_recompute_ms) + " ms of it the checkpointed forward, run again)"
                        : std::string()) +
                   " (fp32 kernels, the per-kernel model; predict --device adds the optimizer step and "
                   "the per-iteration overhead)");
  if (gpu) {
    const double all = total.gpu_forward_ms + total.gpu_backward_ms;
    std::string kinds;
    for (const auto& [kind, ms] : summary.gpu_by_kind) {
      if (ms[0] + ms[1] <= 0) continue;
      char part[96];
      std::snprintf(part, sizeof part, "%s%s %s ms (%.0f%%)", kinds.empty() ? "" : ", ", kind.c_str(),
                    milliseconds(ms[0] + ms[1]).c_str(), all > 0 ? 100 * (ms[0] + ms[1]) / all : 0.0);
      kinds += part;
    }
    total_line("By kind:", kinds + " (forward + backward; docs/GPU.md)");
  }
}

}  // namespace dnncast::cli
