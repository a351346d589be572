// Exports of real models with Debian's torch.onnx (/usr/bin/python3) into a scratch folder, and
// small hand-built ONNX files (onnx.helper) for the importer's error paths. Nothing is committed.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "forecast/forecast.h"
#include "import/model_source.h"
#include "memory/simulator.h"
#include "python_run.h"

namespace dnncast::onnx_test {

// A scratch folder for this test process, removed with everything in it when the process exits.
struct ScratchFolder {
  std::string path;
  ScratchFolder() {
    char templ[] = "/tmp/dnncast-onnx-XXXXXX";
    const char* made = mkdtemp(templ);
    path = made ? made : "";
  }
  ~ScratchFolder() {
    if (!path.empty()) std::system(("rm -rf '" + path + "'").c_str());
  }
};

inline const std::string& scratch() {
  static const ScratchFolder folder;
  return folder.path;
}

// Python: export(name, module, example, path) with BatchNorm kept (training mode) and a dynamic batch.
inline const char* kExportPrelude = R"PY(
import sys, json, warnings, torch, torchvision
warnings.filterwarnings("ignore")
torch.manual_seed(0)
def export(module, example, path, opset=13):
    names = ["input"] if not isinstance(example, tuple) else ["input%d" % i for i in range(len(example))]
    torch.onnx.export(module, example, path, training=torch.onnx.TrainingMode.TRAINING, opset_version=opset,
                      do_constant_folding=False, input_names=names,
                      dynamic_axes={name: {0: "batch"} for name in names})
)PY";

// Exports torchvision's `model` (at 3x`size`x`size`) to scratch()/model.onnx; the path, or "" with the
// Python output as a test failure.
inline std::string export_torchvision(const std::string& model, int size = 224, int opset = 13) {
  std::string path = scratch() + "/" + model + ".onnx";
  // As the zoo builds them: auxiliary classifiers off; stochastic depth (no IR op, and torch 1.13 cannot
  // export it in training mode) replaced by the identity it is in eval mode.
  std::string script =
      std::string(kExportPrelude) + "name = '" + model + "'\n" +
      "kwargs = dict(aux_logits=False, init_weights=False) if name in ('googlenet', 'inception_v3') else {}\n"
      "module = getattr(torchvision.models, name)(**kwargs)\n"
      "for sub in list(module.modules()):\n"
      "    for key, child in list(sub.named_children()):\n"
      "        if isinstance(child, torchvision.ops.StochasticDepth): setattr(sub, key, torch.nn.Identity())\n"
      "export(module, torch.randn(1, 3, " +
      std::to_string(size) + ", " + std::to_string(size) + "), '" + path + "', " + std::to_string(opset) +
      ")\nprint('ok')\n";
  std::string output = python_test::run_python(script);
  if (output.rfind("FAILED", 0) == 0) {
    ADD_FAILURE() << "export of " << model << " failed:\n" << output;
    return "";
  }
  return path;
}

struct Totals {
  int64_t params = 0, macs = 0, peak_bytes = 0;
};

inline Totals totals(const Graph& graph) {
  Totals out;
  forecast::Inspection inspection = forecast::inspect(graph);
  out.params = inspection.total.params;
  out.macs = inspection.total.macs;
  memory::MemoryConfig config;
  out.peak_bytes = memory::simulate_memory(graph, config).peak_bytes;
  return out;
}

// torchvision's `model` exported and imported at batch 4 against the zoo builder: parameters exactly,
// MACs within 0.5%, the simulated peak (CPU, SGD) equal. The export is removed afterwards.
inline void expect_matches_zoo(const std::string& model) {
  int size = model == "inception_v3" ? 299 : 224;
  std::string path = export_torchvision(model, size);
  ASSERT_FALSE(path.empty());
  models::ModelSpec spec;
  spec.batch = 4;
  Totals imported = totals(import::load_model(path, spec));
  std::remove(path.c_str());
  spec.input = {3, size, size};
  Totals zoo = totals(import::load_model(model, spec));
  EXPECT_EQ(imported.params, zoo.params) << model;
  EXPECT_NEAR(static_cast<double>(imported.macs), static_cast<double>(zoo.macs), 0.005 * static_cast<double>(zoo.macs))
      << model;
  EXPECT_EQ(imported.peak_bytes, zoo.peak_bytes) << model;
}

}  // namespace dnncast::onnx_test
