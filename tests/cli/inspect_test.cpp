// `dnncast inspect` run as a user runs it: the built binary, its stdout, stderr and exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"

namespace dnncast {
namespace {

using nlohmann::json;

using cli_test::Result;
using cli_test::shell_quoted;

class Inspect : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dnncast_inspect_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf " + shell_quoted(dir_)).c_str()); }

  Result run(const std::vector<std::string>& args) { return cli_test::run("inspect", args, dir_); }

  json run_json(const std::vector<std::string>& args) {
    Result result = run(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err, "");
    json document = json::parse(result.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded()) << result.out.substr(0, 500);
    return document;
  }

  // A bad input: exit code 2, nothing on stdout, one line on stderr; returns that line.
  std::string expect_input_error(const std::vector<std::string>& args) {
    Result result = run(args);
    std::string shown;
    for (const std::string& arg : args) shown += arg + " ";
    EXPECT_EQ(result.exit_code, 2) << shown << "\n" << result.err;
    EXPECT_EQ(result.out, "") << shown;
    EXPECT_FALSE(result.err.empty()) << shown;
    if (!result.err.empty()) {
      EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << shown << ": not one line:\n" << result.err;
      EXPECT_EQ(result.err.rfind("dnncast inspect: error: ", 0), 0u) << result.err;
    }
    return result.err;
  }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
};

TEST_F(Inspect, Resnet50JsonMatchesTorchvision) {
  json document = run_json({"resnet50", "--json"});
  // torchvision's resnet50: 25,557,032 parameters, 4.09 GFLOPS (their "FLOPS" are MACs).
  EXPECT_EQ(document["params"], 25557032);
  EXPECT_NEAR(document["macs"].get<double>(), 4.09e9, 0.01 * 4.09e9);
  EXPECT_EQ(document["model"], "resnet50");
  EXPECT_EQ(document["family"], "resnet");
  EXPECT_EQ(document["batch"], 1);
  EXPECT_EQ(document["input"], json({3, 224, 224}));
  EXPECT_EQ(document["hash"].get<std::string>().size(), 16u);
  ASSERT_TRUE(document["layers"].is_array());
  ASSERT_GT(document["layers"].size(), 100u);
  // Totals are the sums of the layers.
  for (const char* key : {"params", "macs", "flops_fwd", "flops_bwd", "activation_bytes", "saved_bytes"}) {
    int64_t sum = 0;
    for (const json& layer : document["layers"]) sum += layer.at(key).get<int64_t>();
    EXPECT_EQ(sum, document[key].get<int64_t>()) << key;
  }
  for (const json& layer : document["layers"])
    for (const char* key : {"name", "op", "kind", "shape"}) EXPECT_TRUE(layer.contains(key)) << key;
  EXPECT_EQ(document["layers"].back()["shape"], json({1, 1000}));
  // Tensors kept by several layers (a ReLU's output, its consumer conv's input) count once.
  EXPECT_GT(document["saved_bytes_distinct"].get<int64_t>(), 0);
  EXPECT_LT(document["saved_bytes_distinct"].get<int64_t>(), document["saved_bytes"].get<int64_t>());
  // Training costs more than inference: backward ~2x forward for conv nets.
  EXPECT_GT(document["flops_bwd"].get<double>(), 1.5 * document["flops_fwd"].get<double>());
}

TEST_F(Inspect, TableHasLayersAndTotals) {
  Result result = run({"resnet50"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  for (const char* text : {"layer4.2.conv3", "Conv2d", "1x2048x7x7", "Parameters:", "25,557,032", "MACs",
                           "FLOPs backward:", "Saved for backward:", "MiB"})
    EXPECT_NE(result.out.find(text), std::string::npos) << text;
}

TEST_F(Inspect, BatchAndInputScaleActivationsNotParameters) {
  json one = run_json({"resnet18", "--input", "3x64x64", "--json"});
  json eight = run_json({"resnet18", "--batch", "8", "--input", "3x64x64", "--json"});
  EXPECT_EQ(eight["batch"], 8);
  EXPECT_EQ(eight["input"], json({3, 64, 64}));
  EXPECT_EQ(eight["layers"][0]["shape"], json({8, 3, 64, 64}));
  EXPECT_EQ(eight["params"], one["params"]);
  EXPECT_EQ(eight["hash"], one["hash"]);
  EXPECT_EQ(eight["activation_bytes"].get<int64_t>(), 8 * one["activation_bytes"].get<int64_t>());
  EXPECT_EQ(eight["macs"].get<int64_t>(), 8 * one["macs"].get<int64_t>());
  json classes = run_json({"resnet18", "--classes", "10", "--json"});
  // fc: 512 x 1000 + 1000 -> 512 x 10 + 10.
  EXPECT_EQ(one["params"].get<int64_t>() - classes["params"].get<int64_t>(), 512 * 990 + 990);
}

TEST_F(Inspect, SyntheticSeedIsStable) {
  json first = run_json({"synthetic:7", "--input", "3x32x32", "--json"});
  json second = run_json({"synthetic:7", "--input", "3x32x32", "--json"});
  EXPECT_EQ(first["model"], "synthetic:7");
  EXPECT_EQ(first["family"], "synthetic");
  EXPECT_EQ(first, second);
}

// A hand-written graph file, checked against hand formulas.
TEST_F(Inspect, GraphFileWithOverrides) {
  std::string path = write("tiny.json", R"({"format": "dnncast-graph/1", "name": "tiny", "family": "custom", "nodes": [
    {"name": "x", "op": "Input", "attrs": {"shape": [2, 3, 16, 16]}},
    {"name": "conv", "op": "Conv2d", "inputs": ["x"], "attrs": {"out_channels": 8, "kernel": [3, 3], "padding": [1, 1]}},
    {"name": "relu", "op": "ReLU", "inputs": ["conv"]},
    {"name": "pool", "op": "AdaptiveAvgPool2d", "inputs": ["relu"], "attrs": {"output_size": [1, 1]}},
    {"name": "flat", "op": "Flatten", "inputs": ["pool"]},
    {"name": "fc", "op": "Linear", "inputs": ["flat"], "attrs": {"out_features": 10}}]})");
  json document = run_json({path, "--json"});
  EXPECT_EQ(document["model"], "tiny");
  EXPECT_EQ(document["batch"], 2);
  EXPECT_EQ(document["params"], (8 * 3 * 9 + 8) + (8 * 10 + 10));
  EXPECT_EQ(document["macs"], 2 * 8 * 16 * 16 * 3 * 9 + 2 * 8 * 10);
  json bigger = run_json({path, "--batch", "4", "--input", "3x32x32", "--json"});
  EXPECT_EQ(bigger["layers"][1]["shape"], json({4, 8, 32, 32}));
  EXPECT_EQ(bigger["macs"], 4 * 8 * 32 * 32 * 3 * 9 + 4 * 8 * 10);
  EXPECT_EQ(bigger["hash"], document["hash"]);
}

TEST_F(Inspect, ListAndHelp) {
  Result list = run({"--list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("resnet50"), std::string::npos);
  EXPECT_NE(list.out.find("resnet "), std::string::npos);  // its family
  json models = run_json({"--list", "--json"});
  ASSERT_TRUE(models.is_array());
  bool found = false;
  for (const json& model : models)
    if (model["name"] == "resnet50") found = model["family"] == "resnet" && model["kind"] == "cnn";
  EXPECT_TRUE(found);
  Result help = run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--batch"), std::string::npos);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
}

TEST_F(Inspect, UnknownModelSuggestsNames) {
  std::string line = expect_input_error({"resnet5"});
  EXPECT_NE(line.find("unknown model 'resnet5'"), std::string::npos) << line;
  EXPECT_NE(line.find("did you mean"), std::string::npos) << line;
  EXPECT_NE(line.find("resnet50"), std::string::npos) << line;
}

TEST_F(Inspect, BadInputStrings) {
  for (const char* input : {"3x224", "axb", "0x3x3", "-1x2x2", "3x99999999999x3"}) {
    std::string line = expect_input_error({"resnet50", "--input", input});
    EXPECT_NE(line.find("--input"), std::string::npos) << input << ": " << line;
  }
  expect_input_error({"resnet50", "--input=-1x2x2"});
}

TEST_F(Inspect, BadOptions) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"resnet50", "--batch", "0"},
           {"resnet50", "--batch", "abc"},
           {"resnet50", "--batch", "100000000000", "--input", "3x224x224"},
           {"resnet50", "--seq", "128"},
           {"resnet50", "--bogus"},
           {},
           {"synthetic:abc"},
       }) {
    expect_input_error(args);
  }
}

TEST_F(Inspect, BadGraphFiles) {
  std::string line = expect_input_error({dir_ + "/absent.json"});
  EXPECT_NE(line.find("absent.json"), std::string::npos) << line;
  std::string broken = write("broken.json", "{\"format\": \"dnncast-graph/1\", \"nodes\": [\n  {\"name\": \"x\",\n");
  line = expect_input_error({broken});
  EXPECT_NE(line.find("not valid JSON"), std::string::npos) << line;
  std::string cycle = write("cycle.json", R"({"format": "dnncast-graph/1", "nodes": [
    {"name": "x", "op": "Input", "attrs": {"shape": [1, 4]}},
    {"name": "a", "op": "Add", "inputs": ["x", "b"]},
    {"name": "b", "op": "ReLU", "inputs": ["a"]}]})");
  line = expect_input_error({cycle});
  EXPECT_NE(line.find("cycle"), std::string::npos) << line;
  std::string tiny = write("tiny.json", R"({"format": "dnncast-graph/1", "nodes": [
    {"name": "x", "op": "Input", "attrs": {"shape": [1, 3, 8, 8]}},
    {"name": "c", "op": "Conv2d", "inputs": ["x"], "attrs": {"out_channels": 4, "kernel": [3, 3]}}]})");
  line = expect_input_error({tiny, "--classes", "10"});
  EXPECT_NE(line.find("--classes"), std::string::npos) << line;
  line = expect_input_error({tiny, "--input", "3x2x2"});  // a 3x3 kernel on a 2x2 input
  EXPECT_NE(line.find("node 'c'"), std::string::npos) << line;
  // A few fixtures of the JSON reader (tests/import checks them all; each run of the binary costs
  // a second or two here, libtorch's start-up).
  std::string fixtures = std::string(DNNCAST_SOURCE_DIR) + "/tests/import/fixtures/";
  for (const auto& [file, expected] : std::vector<std::pair<std::string, std::string>>{
           {"wrong_format_version.json", "unsupported format"},
           {"declared_shape_disagrees.json", "declared shape 1x16x32x32"},
           {"attr_string_for_int.json", "attribute 'out_channels' must be an integer"}}) {
    line = expect_input_error({fixtures + file});
    EXPECT_NE(line.find(expected), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace dnncast
