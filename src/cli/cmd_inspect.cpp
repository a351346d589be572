// `dnncast inspect MODEL`: per-layer output shapes, parameters, MACs, activation bytes and bytes
// kept for backward, with totals (torchinfo's summary plus the backward pass). `--json` for tools,
// `--list` for the zoo.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <set>
#include <nlohmann/json.hpp>

#include "apps/model_source.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/units.h"
#include "graph/op_registry.h"
#include "models/zoo.h"

namespace dnncast::cli {

namespace {

using nlohmann::json;

struct LayerRow {
  std::string name, op, kind;
  TensorShape shape;
  int64_t params = 0, param_bytes = 0, buffers = 0, macs = 0, flops_fwd = 0, flops_bwd = 0;
  int64_t activation_bytes = 0;  // the layer's output tensor
  int64_t saved_bytes = 0;       // tensors it keeps from forward to backward
};

struct Summary {
  std::vector<LayerRow> layers;
  LayerRow total;  // sums; name/op/kind/shape unused
  // Saved tensors counted once each: a layer's output kept by itself and by its consumers
  // (a conv's input is the ReLU output the ReLU also keeps) is one tensor in memory.
  int64_t saved_bytes_distinct = 0;
};

Summary summarize(const Graph& graph) {
  Summary summary;
  std::set<int> saved_outputs;  // nodes whose output some op keeps for backward
  for (int index = 0; index < graph.size(); ++index) {
    const Node& node = graph.node(index);
    OpCost cost = node_cost(graph, index);
    for (const SavedTensor& saved : cost.saved) {
      if (saved.kind == SavedTensor::Kind::Extra) {
        summary.saved_bytes_distinct += saved.bytes;
      } else {
        int owner = saved.kind == SavedTensor::Kind::Output ? index : node.inputs.at(static_cast<size_t>(saved.index));
        if (saved_outputs.insert(owner).second) summary.saved_bytes_distinct += saved.bytes;
      }
    }
    LayerRow row;
    row.name = node.name;
    row.op = node.op;
    row.kind = node_kind(graph, index);
    row.shape = node.shape;
    row.params = cost.params;
    row.param_bytes = cost.params * dtype_bytes(node.dtype);
    row.buffers = cost.buffers;
    row.macs = cost.macs;
    row.flops_fwd = cost.flops_fwd;
    row.flops_bwd = cost.flops_bwd;
    row.activation_bytes = node.shape.numel() * dtype_bytes(node.dtype);
    row.saved_bytes = cost.saved_bytes();
    LayerRow& total = summary.total;
    total.params += row.params;
    total.param_bytes += row.param_bytes;
    total.buffers += row.buffers;
    total.macs += row.macs;
    total.flops_fwd += row.flops_fwd;
    total.flops_bwd += row.flops_bwd;
    total.activation_bytes += row.activation_bytes;
    total.saved_bytes += row.saved_bytes;
    summary.layers.push_back(std::move(row));
  }
  return summary;
}

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
  std::snprintf(buffer, sizeof buffer, scaled >= 99.95 ? "%.0f%s" : scaled >= 9.995 ? "%.1f%s" : "%.2f%s", scaled,
                kUnits[unit]);
  return buffer;
}

// The first Input node's shape without its batch: the "input" of a configuration.
std::pair<int64_t, std::vector<int64_t>> batch_and_input(const Graph& graph) {
  std::vector<int> inputs = graph.inputs();
  if (inputs.empty()) return {0, {}};
  const std::vector<int64_t>& dims = graph.node(inputs[0]).shape.dims;
  return {dims.empty() ? 0 : dims[0], std::vector<int64_t>(dims.begin() + (dims.empty() ? 0 : 1), dims.end())};
}

json layer_json(const LayerRow& row) {
  return {{"name", row.name},
          {"op", row.op},
          {"kind", row.kind},
          {"shape", row.shape.dims},
          {"params", row.params},
          {"macs", row.macs},
          {"flops_fwd", row.flops_fwd},
          {"flops_bwd", row.flops_bwd},
          {"activation_bytes", row.activation_bytes},
          {"saved_bytes", row.saved_bytes}};
}

void print_json(const Graph& graph, const Summary& summary) {
  auto [batch, input] = batch_and_input(graph);
  json layers = json::array();
  for (const LayerRow& row : summary.layers) layers.push_back(layer_json(row));
  const LayerRow& total = summary.total;
  json document = {{"model", graph.name},
                   {"family", graph.family},
                   {"hash", graph.architecture_hash()},
                   {"batch", batch},
                   {"input", input},
                   {"params", total.params},
                   {"param_bytes", total.param_bytes},
                   {"buffers", total.buffers},
                   {"macs", total.macs},
                   {"flops_fwd", total.flops_fwd},
                   {"flops_bwd", total.flops_bwd},
                   {"activation_bytes", total.activation_bytes},
                   {"saved_bytes", total.saved_bytes},
                   {"saved_bytes_distinct", summary.saved_bytes_distinct},
                   {"layers", layers}};
  std::cout << document.dump(1) << "\n";
}

void print_table(const Graph& graph, const Summary& summary) {
  const std::vector<std::string> headers{"Layer", "Op", "Output shape", "Params", "MACs", "Activations", "Saved"};
  std::vector<std::vector<std::string>> cells;
  for (const LayerRow& row : summary.layers) {
    cells.push_back({row.name, row.kind, row.shape.to_string(), row.params ? grouped(row.params) : "-",
                     row.macs ? human_count(row.macs) : "-", core::format_bytes(row.activation_bytes, core::ByteStyle::Significant),
                     row.saved_bytes ? core::format_bytes(row.saved_bytes, core::ByteStyle::Significant) : "-"});
  }
  std::vector<size_t> widths;
  for (const std::string& header : headers) widths.push_back(header.size());
  for (const auto& line : cells)
    for (size_t column = 0; column < line.size(); ++column) widths[column] = std::max(widths[column], line[column].size());
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

  auto [batch, input] = batch_and_input(graph);
  const LayerRow& total = summary.total;
  std::cout << graph.name << " (family " << graph.family << ", hash " << graph.architecture_hash() << "): batch " << batch
            << ", input " << TensorShape(input).to_string() << ", " << graph.size() << " layers\n";
  std::cout << rule << "\n";
  print_line(headers);
  std::cout << rule << "\n";
  for (const auto& line : cells) print_line(line);
  std::cout << rule << "\n";
  auto total_line = [](const std::string& label, const std::string& value) {
    std::cout << label << std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') << value << "\n";
  };
  total_line("Parameters:", grouped(total.params) + " (" + human_count(total.params) + ")");
  total_line("Parameter bytes:", core::format_bytes(total.param_bytes, core::ByteStyle::Significant));
  total_line("Buffers (running stats):", grouped(total.buffers));
  total_line("MACs (forward):", human_count(total.macs));
  total_line("FLOPs forward:", human_count(total.flops_fwd));
  total_line("FLOPs backward:", human_count(total.flops_bwd));
  total_line("Activation bytes:", core::format_bytes(total.activation_bytes, core::ByteStyle::Significant) + " (every layer's output)");
  total_line("Saved for backward:", core::format_bytes(total.saved_bytes, core::ByteStyle::Significant) + " (" + core::format_bytes(summary.saved_bytes_distinct, core::ByteStyle::Significant) +
                                         " distinct: a tensor kept by several layers counted once)");
}

void print_list(bool as_json) {
  auto input_text = [](const ZooEntry& entry) {
    return entry.default_input.size() == 1 ? "seq " + std::to_string(entry.default_input[0])
                                           : TensorShape(entry.default_input).to_string();
  };
  if (as_json) {
    json models = json::array();
    for (const ZooEntry& entry : zoo())
      models.push_back({{"name", entry.name},
                        {"family", entry.family},
                        {"kind", entry.kind},
                        {"default_input", entry.default_input}});
    std::cout << models.dump(1) << "\n";
    return;
  }
  size_t name_width = 5, family_width = 6;
  for (const ZooEntry& entry : zoo()) {
    name_width = std::max(name_width, entry.name.size());
    family_width = std::max(family_width, entry.family.size());
  }
  std::printf("%-*s  %-*s  %-11s  %s\n", static_cast<int>(name_width), "Model", static_cast<int>(family_width), "Family",
              "Kind", "Default input");
  for (const ZooEntry& entry : zoo())
    std::printf("%-*s  %-*s  %-11s  %s\n", static_cast<int>(name_width), entry.name.c_str(),
                static_cast<int>(family_width), entry.family.c_str(), entry.kind.c_str(), input_text(entry).c_str());
  std::printf("\nAlso: synthetic:SEED (seeded random CNNs) and graph JSON files (dnncast-graph/1).\n");
}

}  // namespace

int run_inspect(const Args& args) {
  CLI::App app(
      "Per-layer output shapes, parameters, MACs, activation bytes and bytes kept for backward, with totals.\n"
      "MODEL: a zoo name (--list), a graph JSON file, or synthetic:SEED.",
      "dnncast inspect");
  std::string model;
  int64_t batch = 0;
  bool as_json = false, list = false;
  app.add_option("MODEL", model, "zoo name, graph JSON file, or synthetic:SEED");
  CLI::Option* batch_option = app.add_option("--batch", batch, "batch size (default: 1, or the graph file's)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_flag("--json", as_json, "print JSON instead of a table");
  app.add_flag("--list", list, "list the models of the zoo");

  if (!parse_args(app, args, "inspect")) return 0;

  if (list) {
    print_list(as_json);
    return 0;
  }
  if (model.empty())
    throw InputError("missing MODEL: a zoo name (dnncast inspect --list), a graph JSON file, or synthetic:SEED");

  if (batch_option->count() > 0 && batch <= 0)
    throw InputError("--batch must be a positive integer, got " + std::to_string(batch));
  ModelSpec spec = model_options.spec(model, batch_option->count() > 0 ? batch : 0);

  Graph graph = load_model(model, spec);
  Summary summary = summarize(graph);
  if (as_json)
    print_json(graph, summary);
  else
    print_table(graph, summary);
  return 0;
}

}  // namespace dnncast::cli
