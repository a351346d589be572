// Exports of real models with Debian's torch.onnx (/usr/bin/python3) into a scratch folder, and
// small hand-built ONNX files (onnx.helper) for the importer's error paths. Nothing is committed.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "python_run.h"

namespace dnncast::onnx_test {

// A scratch folder for this test process.
inline const std::string& scratch() {
  static const std::string path = [] {
    char templ[] = "/tmp/dnncast-onnx-XXXXXX";
    const char* made = mkdtemp(templ);
    return std::string(made ? made : "/tmp");
  }();
  return path;
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
  std::string script = std::string(kExportPrelude) + "export(torchvision.models." + model + "(), torch.randn(1, 3, " +
                       std::to_string(size) + ", " + std::to_string(size) + "), '" + path + "', " +
                       std::to_string(opset) + ")\nprint('ok')\n";
  std::string output = python_test::run_python(script);
  if (output.rfind("FAILED", 0) == 0) {
    ADD_FAILURE() << "export of " << model << " failed:\n" << output;
    return "";
  }
  return path;
}

}  // namespace dnncast::onnx_test
