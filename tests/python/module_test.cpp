// A torch.nn.Module given to the Python package: exported to ONNX inside the call, it must give the
// numbers the CLI gives on the same module exported by the test itself (torch.onnx.export, training
// mode, dynamic batch), and leave the module as it was. docs/PYTHON.md's example must show what it
// prints.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "python_run.h"

namespace dnncast {
namespace {

using cli_test::ScratchDir;
using nlohmann::json;

std::string run_with_package(const std::string& script, const std::string& arguments = "") {
  setenv("PYTHONPATH", (std::string(DNNCAST_BINARY_DIR) + "/python").c_str(), 1);
  std::string path = python_test::write_temp(script);
  if (path.empty()) return "FAILED\ncannot create a temporary file";
  std::string output = python_test::run_python_command(path + " " + arguments);
  std::remove(path.c_str());
  return output;
}

json cli_json(const std::string& command, const std::vector<std::string>& args) {
  ScratchDir dir("python_module_cli");
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  cli_test::Result result = cli_test::run(command, with_json, dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return json::parse(result.out, nullptr, false);
}

// A network of no zoo: a residual block with BatchNorm, Dropout and a classifier.
const char* const kTinyNet =
    "import torch\n"
    "class TinyNet(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1, bias=False),\n"
    "                                        torch.nn.BatchNorm2d(16), torch.nn.ReLU())\n"
    "        self.block = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),\n"
    "                                         torch.nn.BatchNorm2d(16), torch.nn.ReLU(),\n"
    "                                         torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),\n"
    "                                         torch.nn.BatchNorm2d(16))\n"
    "        self.pool = torch.nn.MaxPool2d(2)\n"
    "        self.head = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),\n"
    "                                        torch.nn.Dropout(0.2), torch.nn.Linear(16, 10))\n"
    "    def forward(self, x):\n"
    "        x = self.stem(x)\n"
    "        x = torch.relu(x + self.block(x))\n"
    "        return self.head(self.pool(x))\n";

TEST(PythonModule, PredictAndMemoryEqualTheCliOnTheExportedFile) {
  ScratchDir dir("python_module");
  const std::string onnx_path = dir.path() + "/TinyNet.onnx";
  std::string output = run_with_package(
      std::string(kTinyNet) +
          "import sys, json, warnings, dnncast\n"
          "warnings.simplefilter('ignore')\n"
          "torch.manual_seed(0)\n"
          "model = TinyNet().eval()\n"
          "before = {k: v.clone() for k, v in model.state_dict().items()}\n"
          "rng = torch.get_rng_state()\n"
          "adam = torch.optim.Adam(model.parameters())\n"
          "p = dnncast.predict(model, batch=32, input_shape=(3, 32, 32), optimizer=adam, epoch_samples=50000)\n"
          "m = dnncast.memory(model, batch=32, input_shape=(3, 32, 32), optimizer=adam, fits='1GiB')\n"
          "i = dnncast.inspect(model, input_shape=(3, 32, 32), batch=32)\n"
          "unchanged = not model.training and all(torch.equal(before[k], v) for k, v in model.state_dict().items())\n"
          "unchanged = unchanged and torch.equal(rng, torch.get_rng_state())\n"
          "# The same module exported by hand, as a user would for the CLI.\n"
          "torch.onnx.export(model, (torch.randn(2, 3, 32, 32),), sys.argv[1],\n"
          "                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,\n"
          "                  input_names=['input'], output_names=['output'],\n"
          "                  dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}})\n"
          "print(json.dumps({'predict': p.to_dict(), 'memory': m.to_dict(), 'inspect': i.to_dict(),\n"
          "                  'unchanged': unchanged,\n"
          "                  'torch_params': sum(t.numel() for t in model.parameters())}))\n",
      cli_test::shell_quoted(onnx_path));
  json result;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') result = json::parse(line, nullptr, false);
  ASSERT_TRUE(result.is_object()) << output;
  EXPECT_TRUE(result["unchanged"].get<bool>()) << "the module's buffers, its mode or torch's generator changed";

  // Every field as the CLI's on the hand-exported file, but "model": the class, not a temporary path.
  json predicted = result["predict"], simulated = result["memory"], inspected = result["inspect"];
  EXPECT_EQ(predicted["model"], "TinyNet");
  EXPECT_EQ(simulated["model"], "TinyNet");
  json cli_predict =
      cli_json("predict", {onnx_path, "--batch", "32", "--optimizer", "adam", "--epoch-samples", "50000"});
  json cli_memory = cli_json("memory", {onnx_path, "--batch", "32", "--optimizer", "adam", "--fits", "1GiB"});
  json cli_inspect = cli_json("inspect", {onnx_path, "--batch", "32"});
  for (json* doc : {&predicted, &simulated, &inspected, &cli_predict, &cli_memory, &cli_inspect}) doc->erase("model");
  // memory's and predict's remedies name the file they were given (the package's temporary one).
  for (json* doc : {&simulated, &cli_memory, &predicted, &cli_predict})
    if (doc->contains("host_match")) (*doc)["host_match"].erase("remedy");
  EXPECT_EQ(predicted, cli_predict) << predicted.dump(1) << "\n" << cli_predict.dump(1);
  EXPECT_EQ(simulated, cli_memory) << simulated.dump(1) << "\n" << cli_memory.dump(1);
  EXPECT_EQ(inspected, cli_inspect);
  EXPECT_EQ(inspected["params"], result["torch_params"]);  // torch's own count of the module
  EXPECT_TRUE(simulated["fits"]["fits"].is_boolean());
}

// docs/PYTHON.md: the ```python block after "<!-- example -->" is run; the ```text block after
// "<!-- printed -->" must be what it printed, line for line.
std::string fenced_block_after(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return "";
  size_t open = text.find("```", at);
  size_t body = text.find('\n', open);
  size_t close = text.find("\n```", body);
  if (open == std::string::npos || body == std::string::npos || close == std::string::npos) return "";
  return text.substr(body + 1, close - body);
}

TEST(PythonModule, DocExampleShowsWhatItPrints) {
  const std::string doc = cli_test::read_text(std::string(DNNCAST_SOURCE_DIR) + "/docs/PYTHON.md");
  const std::string example = fenced_block_after(doc, "<!-- example -->");
  const std::string shown = fenced_block_after(doc, "<!-- printed -->");
  ASSERT_FALSE(example.empty()) << "docs/PYTHON.md: no ```python block after <!-- example -->";
  ASSERT_FALSE(shown.empty()) << "docs/PYTHON.md: no ```text block after <!-- printed -->";
  // Its notes (Python warnings: a predictor from another host, torch's export) are silenced.
  std::string output = run_with_package("import warnings\nwarnings.simplefilter('ignore')\n" + example);
  EXPECT_EQ(output, shown) << "docs/PYTHON.md shows something else than its example prints; it printed:\n" << output;
}

}  // namespace
}  // namespace dnncast
