// `dnncast inspect MODEL`: per-layer output shapes, parameters, MACs, activation bytes and bytes
// kept for backward, with totals (torchinfo's summary plus the backward pass). `--json` for tools,
// `--list` for the zoo.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/parse_args.h"
#include "cli/print_inspect.h"
#include "core/error.h"
#include "forecast/forecast.h"
#include "forecast/forecast_json.h"
#include "import/model_source.h"
#include "models/zoo.h"

namespace dnncast::cli {

namespace {

using nlohmann::json;

void print_list(bool as_json) {
  auto input_text = [](const models::ZooEntry& entry) {
    return entry.default_input.size() == 1 ? "seq " + std::to_string(entry.default_input[0])
                                           : TensorShape(entry.default_input).to_string();
  };
  if (as_json) {
    json models = json::array();
    for (const models::ZooEntry& entry : models::zoo())
      models.push_back({{"name", entry.name},
                        {"family", entry.family},
                        {"kind", entry.kind},
                        {"default_input", entry.default_input}});
    std::cout << models.dump(1) << "\n";
    return;
  }
  size_t name_width = 5, family_width = 6;
  for (const models::ZooEntry& entry : models::zoo()) {
    name_width = std::max(name_width, entry.name.size());
    family_width = std::max(family_width, entry.family.size());
  }
  std::printf("%-*s  %-*s  %-11s  %s\n", static_cast<int>(name_width), "Model", static_cast<int>(family_width),
              "Family", "Kind", "Default input");
  for (const models::ZooEntry& entry : models::zoo())
    std::printf("%-*s  %-*s  %-11s  %s\n", static_cast<int>(name_width), entry.name.c_str(),
                static_cast<int>(family_width), entry.family.c_str(), entry.kind.c_str(), input_text(entry).c_str());
  std::printf("\nAlso: synthetic:SEED (seeded random CNNs) and graph JSON files (dnncast-graph/1).\n");
}

}  // namespace

int run_inspect(const Args& args) {
  CLI::App app(
      "Per-layer output shapes, parameters, MACs, activation bytes and bytes kept for backward, with totals.\n"
      "MODEL: a zoo name (--list), a graph JSON file, an ONNX file (.onnx, docs/ONNX.md), or synthetic:SEED.",
      "dnncast inspect");
  std::string model;
  int64_t batch = 0;
  bool as_json = false, list = false;
  app.add_option("MODEL", model, "zoo name, graph JSON file, ONNX file (.onnx), or synthetic:SEED");
  CLI::Option* batch_option = app.add_option("--batch", batch, "batch size (default: 1, or the graph file's)");
  ModelOptions model_options;
  model_options.add_to(app);
  app.add_flag("--json", as_json, "print JSON instead of a table");
  std::string device;
  std::vector<std::string> catalogue_files;
  app.add_option("--device", device,
                 "a GPU of `dnncast devices`: also each layer's forward and backward time on it (fp32, the per-kernel "
                 "model, docs/GPU.md)");
  app.add_option("--catalogue", catalogue_files, "an extra catalogue file (docs/DEVICES.md)");
  std::string phase = "train";
  app.add_option("--phase", phase,
                 "with --device: train (default: the training step's forward and backward kernels) or inference (the "
                 "model in eval mode: no dropout kernel, no backward)");
  app.add_flag("--list", list, "list the models of the zoo");

  if (!parse_args(app, args, "inspect")) return 0;

  if (list) {
    print_list(as_json);
    return 0;
  }
  if (model.empty())
    throw InputError("missing MODEL: a zoo name (dnncast inspect --list), a graph JSON file, or synthetic:SEED");

  const import::ModelSource source =
      model_options.source(model, batch_option->count() > 0 ? std::optional<int64_t>(batch) : std::nullopt);

  check_name_option(app, "--device", device);
  if (phase != "train" && phase != "inference")
    throw InputError("--phase must be train or inference, got " + quote(phase));
  const Graph graph = source.build();  // a bad model is said before a bad device, as it was
  const forecast::Inspection inspection =
      forecast::inspect(graph, forecast::resolve_inspect_device(device, catalogue_files), phase == "train");
  for (const std::string& note : inspection.import_notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (as_json)
    std::cout << forecast::to_json(inspection).dump(1) << "\n";
  else
    print_table(inspection);
  return 0;
}

}  // namespace dnncast::cli
