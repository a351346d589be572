// The Python package (python/dnncast) as a user runs it: /usr/bin/python3 with PYTHONPATH naming
// build/python. Each result is checked against the built CLI's --json on the same input (the package
// must call what the CLI calls), against torchvision, or against the package's own answers at the
// edge of a limit; bad input must raise ValueError with the CLI's message and leave the interpreter
// running.
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

std::string package_dir() { return std::string(DNNCAST_BINARY_DIR) + "/python"; }

// Runs a Python script with the package importable; its stdout and stderr together, "FAILED\n..."
// when it exits non-zero.
std::string run_with_package(const std::string& script, const std::string& arguments = "") {
  setenv("PYTHONPATH", package_dir().c_str(), 1);
  std::string path = python_test::write_temp(script);
  if (path.empty()) return "FAILED\ncannot create a temporary file";
  std::string output = python_test::run_python_command(path + " " + arguments);
  std::remove(path.c_str());
  return output;
}

// The last line of `output` that parses as a JSON object (the scripts print one; torch may warn
// above it).
json last_json(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  json found;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] == '{') found = json::parse(line, nullptr, false);
  return found;
}

// Every field of `expected` (the CLI's) is in `actual` with the same value, and nothing more; a
// difference is named by its path.
void expect_same_fields(const json& expected, const json& actual, const std::string& path = "") {
  if (expected.is_object() && actual.is_object()) {
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (!actual.contains(it.key())) {
        ADD_FAILURE() << "missing field " << path << "/" << it.key();
        continue;
      }
      expect_same_fields(it.value(), actual[it.key()], path + "/" + it.key());
    }
    for (auto it = actual.begin(); it != actual.end(); ++it)
      EXPECT_TRUE(expected.contains(it.key())) << "extra field " << path << "/" << it.key();
    return;
  }
  EXPECT_EQ(expected, actual) << "at " << (path.empty() ? "/" : path);
}

json cli_json(const std::string& command, const std::vector<std::string>& args) {
  ScratchDir dir("python_cli");
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  cli_test::Result result = cli_test::run(command, with_json, dir.path());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return json::parse(result.out, nullptr, false);
}

// The message of the CLI's one error line ("dnncast predict: error: MESSAGE").
std::string cli_error(const std::string& command, const std::vector<std::string>& args) {
  ScratchDir dir("python_cli");
  cli_test::Result result = cli_test::run(command, args, dir.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  const std::string marker = ": error: ";
  size_t at = result.err.find(marker);
  if (at == std::string::npos) return "(no error line) " + result.err;
  std::string message = result.err.substr(at + marker.size());
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return message;
}

TEST(PythonPackage, ReadmeImportLinePrintsTorchvisionsParameterCount) {
  // The README's line, run exactly as written from a folder whose build/ is this build.
  std::ifstream readme(std::string(DNNCAST_SOURCE_DIR) + "/README.md");
  std::string line, readme_line;
  while (std::getline(readme, line))
    if (line.rfind("PYTHONPATH=build/python /usr/bin/python3 -c \"import dnncast", 0) == 0) readme_line = line;
  ASSERT_FALSE(readme_line.empty())
      << "README.md has no line `PYTHONPATH=build/python /usr/bin/python3 -c \"import dnncast...`";
  ScratchDir dir("python_readme");
  ASSERT_EQ(symlink(DNNCAST_BINARY_DIR, (dir.path() + "/build").c_str()), 0);
  std::string command = "cd " + cli_test::shell_quoted(dir.path()) + " && env -u PYTHONPATH sh -c " +
                        cli_test::shell_quoted(readme_line) + " 2>&1";
  std::string printed;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t count;
    while ((count = fread(buffer, 1, sizeof buffer, pipe)) > 0) printed.append(buffer, count);
    EXPECT_EQ(pclose(pipe), 0) << printed;
  }
  // torchvision's own count of the same model.
  std::string reference = python_test::run_python(
      "import torchvision\n"
      "print(sum(p.numel() for p in torchvision.models.resnet18().parameters()))\n");
  ASSERT_EQ(reference, "11689512\n");
  EXPECT_EQ(printed, reference) << readme_line;
}

// The to_dict() of each call of the package (Python expressions, warnings off), in order; empty, with
// the script's output as a test failure, when the script fails or prints fewer results.
std::vector<json> package_results(const std::vector<std::string>& calls) {
  std::string script = "import json, warnings, dnncast\nwarnings.simplefilter('ignore')\n";
  for (const std::string& call : calls) script += "print(json.dumps((" + call + ").to_dict()))\n";
  const std::string output = run_with_package(script);
  std::vector<json> results;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] == '{') results.push_back(json::parse(line, nullptr, false));
  if (output.rfind("FAILED", 0) == 0 || results.size() != calls.size()) {
    ADD_FAILURE() << output;
    return {};
  }
  return results;
}

// Python threads forecast side by side (the module releases the GIL and takes no lock of its own): sixteen distinct
// predict and memory calls on four threads answer exactly what the same calls answer one after another.
TEST(PythonPackage, ThreadsForecastSideBySideAsOneAtATime) {
  const std::string output = run_with_package(
      "import json, warnings, dnncast\n"
      "from concurrent.futures import ThreadPoolExecutor\n"
      "warnings.simplefilter('ignore')\n"
      "calls = []\n"
      "for batch in (3, 17, 64, 200):\n"
      "    calls.append(lambda b=batch: dnncast.predict('resnet50', batch=b))\n"
      "    calls.append(lambda b=batch: dnncast.predict('resnet18', batch=b, device='a100-40gb'))\n"
      "    calls.append(lambda b=batch: dnncast.memory('mobilenet_v2', batch=b))\n"
      "    calls.append(lambda b=batch: dnncast.predict('mobilenet_v2', batch=b, input_shape=(3, 96, 96)))\n"
      "with ThreadPoolExecutor(max_workers=4) as pool:\n"
      "    together = [json.dumps(r.to_dict(), sort_keys=True) for r in pool.map(lambda c: c(), calls)]\n"
      "alone = [json.dumps(c().to_dict(), sort_keys=True) for c in calls]\n"
      "print('SAME' if together == alone else 'DIFFERENT ' + str([i for i in range(len(calls)) if together[i] != "
      "alone[i]]))\n"
      "print(len(calls))\n");
  EXPECT_EQ(output, "SAME\n16\n") << output;
}

TEST(PythonPackage, PredictOnAZooNameEqualsTheCli) {
  const std::vector<json> results =
      package_results({"dnncast.predict('resnet18', batch=8, epoch_samples=1000)",
                       "dnncast.predict('mobilenet_v2', batch=4, input_shape=(3, 96, 96), optimizer='adam')"});
  ASSERT_EQ(results.size(), 2u);
  expect_same_fields(cli_json("predict", {"resnet18", "--batch", "8", "--epoch-samples", "1000"}), results[0]);
  expect_same_fields(cli_json("predict", {"mobilenet_v2", "--batch", "4", "--input", "3x96x96", "--optimizer", "adam"}),
                     results[1]);
}

TEST(PythonPackage, MemoryOnAZooNameEqualsTheCli) {
  const std::vector<json> results =
      package_results({"dnncast.memory('resnet18', batch=16, optimizer='adam', fits='1GiB', max_batch_bytes=4 * 2**30, "
                       "timeline=True)"});
  ASSERT_EQ(results.size(), 1u);
  expect_same_fields(cli_json("memory", {"resnet18", "--batch", "16", "--optimizer", "adam", "--fits", "1GiB",
                                         "--max-batch", "4294967296", "--timeline"}),
                     results[0]);
}

TEST(PythonPackage, FitsAndMaxBatchAnswerAtTheirLimits) {
  // fits: exactly the bytes training requires fit, one byte less does not; max_batch_bytes: the
  // batch it answers fits in the limit and the next one does not, each asked of memory() itself.
  std::string output = run_with_package(
      "import json, dnncast\n"
      "need = dnncast.memory('resnet18', batch=8, input_shape=(3, 64, 64)).required_bytes\n"
      "at = dnncast.memory('resnet18', batch=8, input_shape=(3, 64, 64), fits=need).fits\n"
      "below = dnncast.memory('resnet18', batch=8, input_shape=(3, 64, 64), fits=need - 1).fits\n"
      "top = dnncast.memory('resnet18', input_shape=(3, 64, 64), max_batch_bytes=need).max_batch\n"
      "fit = dnncast.memory('resnet18', batch=top.batch, input_shape=(3, 64, 64)).required_bytes\n"
      "over = dnncast.memory('resnet18', batch=top.batch + 1, input_shape=(3, 64, 64)).required_bytes\n"
      "print(json.dumps({'need': need, 'at': at.fits, 'at_limit': at.limit_bytes, 'below': below.fits,\n"
      "                  'batch': top.batch, 'fit': fit, 'over': over, 'top_required': top.required_bytes}))\n");
  json answer = last_json(output);
  ASSERT_TRUE(answer.is_object()) << output;
  EXPECT_TRUE(answer["at"].get<bool>());
  EXPECT_EQ(answer["at_limit"], answer["need"]);
  EXPECT_FALSE(answer["below"].get<bool>());
  EXPECT_GE(answer["batch"].get<int64_t>(), 8);  // batch 8 needs exactly the limit
  EXPECT_LE(answer["fit"].get<int64_t>(), answer["need"].get<int64_t>());
  EXPECT_GT(answer["over"].get<int64_t>(), answer["need"].get<int64_t>());
  EXPECT_EQ(answer["top_required"], answer["fit"]);
}

TEST(PythonPackage, BadInputRaisesValueErrorWithTheCliMessage) {
  ScratchDir dir("python_bad");
  const std::string bad_graph = dir.path() + "/bad.json";
  std::ofstream(bad_graph) << "{\"format\": \"dnncast-graph/1\", \"nodes\": [";
  std::string output = run_with_package(
      "import sys, json, torch, dnncast\n"
      "def error_of(call):\n"
      "    try:\n"
      "        call()\n"
      "    except ValueError as error:\n"
      "        return str(error)\n"
      "    return 'no ValueError'\n"
      "bad = sys.argv[1]\n"
      "model = torch.nn.Linear(4, 2)\n"
      "print(json.dumps({\n"
      "  'unknown': error_of(lambda: dnncast.predict('resnet5', batch=8)),\n"
      "  'missing': error_of(lambda: dnncast.memory('no/such/model.json', batch=8)),\n"
      "  'malformed': error_of(lambda: dnncast.inspect(bad)),\n"
      "  'seq_model_input': error_of(lambda: dnncast.memory('bert_base', batch=2, input_shape=(3, 32, 32))),\n"
      "  'batch': error_of(lambda: dnncast.predict('resnet18', batch=0)),\n"
      "  'fits': error_of(lambda: dnncast.memory('resnet18', fits='lots')),\n"
      "  'optimizer': error_of(lambda: dnncast.predict('resnet18', batch=8, "
      "optimizer=torch.optim.RMSprop(model.parameters()))),\n"
      "  'module_shape': error_of(lambda: dnncast.inspect(model)),\n"
      "  'type': error_of(lambda: dnncast.inspect(42)),\n"
      "  'export': error_of(lambda: dnncast.inspect(model, input_shape=(3,))),\n"
      "  'after': dnncast.inspect('resnet18').params}))\n",
      cli_test::shell_quoted(bad_graph));
  json errors = last_json(output);
  ASSERT_TRUE(errors.is_object()) << output;
  EXPECT_EQ(errors["unknown"], cli_error("predict", {"resnet5", "--batch", "8"}));
  EXPECT_EQ(errors["missing"], cli_error("memory", {"no/such/model.json", "--batch", "8"}));
  EXPECT_EQ(errors["malformed"], cli_error("inspect", {bad_graph}));
  EXPECT_EQ(errors["seq_model_input"], cli_error("memory", {"bert_base", "--batch", "2", "--input", "3x32x32"}));
  EXPECT_EQ(errors["batch"], "batch must be a positive integer, got 0");
  // The byte grammar's message, naming the keyword where the CLI names the flag.
  std::string fits_cli = cli_error("memory", {"resnet18", "--fits", "lots"});
  EXPECT_NE(fits_cli.find("lots"), std::string::npos) << fits_cli;
  EXPECT_NE(errors["fits"].get<std::string>().find("fits"), std::string::npos) << errors["fits"];
  EXPECT_NE(errors["optimizer"].get<std::string>().find("torch.optim.rmsprop.RMSprop"), std::string::npos)
      << errors["optimizer"];
  EXPECT_NE(errors["module_shape"].get<std::string>().find("input_shape"), std::string::npos);
  EXPECT_NE(errors["type"].get<std::string>().find("int"), std::string::npos);
  EXPECT_EQ(errors["export"].get<std::string>().rfind("cannot export Linear to ONNX", 0), 0) << errors["export"];
  EXPECT_EQ(errors["after"], cli_json("inspect", {"resnet18"})["params"]);  // the interpreter lives on
}

TEST(PythonPackage, OptimizerInstanceCountsAsItsName) {
  std::string output = run_with_package(
      "import json, warnings, torch, dnncast\n"
      "warnings.simplefilter('ignore')\n"
      "params = torch.nn.Linear(4, 2).parameters\n"
      "same = {}\n"
      "for name, optimizer in (('sgd', torch.optim.SGD(params(), lr=0.1, momentum=0.9)),\n"
      "                        ('adam', torch.optim.Adam(params())), ('adamw', torch.optim.AdamW(params()))):\n"
      "    by_name = dnncast.memory('resnet18', batch=4, optimizer=name).to_dict()\n"
      "    by_instance = dnncast.memory('resnet18', batch=4, optimizer=optimizer).to_dict()\n"
      "    same[name] = by_name == by_instance and by_name['config']['optimizer'] == name\n"
      "print(json.dumps(same))\n");
  EXPECT_EQ(last_json(output), json({{"sgd", true}, {"adam", true}, {"adamw", true}})) << output;
}

}  // namespace
}  // namespace dnncast
