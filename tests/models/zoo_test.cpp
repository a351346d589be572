// The model zoo against torchvision itself: parameters exactly, conv + linear MACs within 0.5% at
// batch 1 on the default input. The reference numbers come from scripts/torchvision_reference.py,
// run once here with Debian's python3-torchvision (forward hooks on the real torchvision modules).
#include "models/zoo.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/op_registry.h"

namespace dnncast::models {
namespace {

constexpr double kMacsTolerance = 0.005;  // the bound: within 0.5% of torchvision

int64_t total_params(const Graph& graph) {
  int64_t params = 0;
  for (int index = 0; index < graph.size(); ++index) params += node_cost(graph, index).params;
  return params;
}

// What the reference script counts: MACs of convolutions and linear layers only.
int64_t conv_linear_macs(const Graph& graph) {
  static const std::set<std::string> counted{"Conv2d", "ConvTranspose2d", "Linear"};
  int64_t macs = 0;
  for (int index = 0; index < graph.size(); ++index)
    if (counted.count(graph.node(index).op)) macs += node_cost(graph, index).macs;
  return macs;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Reference {
  nlohmann::json counts;  // {name: {"params", "macs", "layers": {module path: {"type", "params", "macs"}}}}
  std::string error;      // set when the script could not run
};

// Runs scripts/torchvision_reference.py with ARGS; its JSON output, or *error set.
nlohmann::json run_reference_script(const std::string& args, std::string* error) {
  char stderr_path[] = "/tmp/dnncast_zoo_test_XXXXXX";
  int fd = mkstemp(stderr_path);
  if (fd < 0) {
    *error = "cannot create a temporary file for the script's stderr";
    return {};
  }
  close(fd);
  std::string command = std::string(DNNCAST_PYTHON) + " " DNNCAST_SOURCE_DIR "/scripts/torchvision_reference.py " +
                        args + " 2>" + stderr_path;
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *error = "cannot start: " + command;
    return {};
  }
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  int status = pclose(pipe);
  std::string errors = read_file(stderr_path);
  std::remove(stderr_path);
  if (status != 0) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *error = "torchvision reference failed (exit code " + std::to_string(code) + "): " + command + "\n" + errors +
             "\nThis test needs torch and torchvision for " DNNCAST_PYTHON
             " (scripts/setup.sh installs python3-torch and python3-torchvision).";
    return {};
  }
  try {
    return nlohmann::json::parse(output);
  } catch (const nlohmann::json::exception& parse_error) {
    *error = std::string("unreadable output of the torchvision reference: ") + parse_error.what() + "\n" + output;
    return {};
  }
}

// Runs the reference script once for every zoo name; names torchvision lacks are absent from counts.
const Reference& torchvision_reference() {
  static const Reference reference = [] {
    Reference result;
    std::string names;
    for (const ZooEntry& entry : zoo()) names += " " + entry.name;
    result.counts = run_reference_script("--layers" + names, &result.error);
    return result;
  }();
  return reference;
}

// Node names are torchvision's module paths: every parameterised torchvision module (Conv2d,
// ConvTranspose2d, Linear, BatchNorm2d, LayerNorm) is a node of that op, name and cost, and no such
// node exists that torchvision lacks. This pins any MAC or parameter difference to one layer.
void expect_torchvision_layers(const std::string& model, const Graph& graph, const nlohmann::json& layers) {
  static const std::set<std::string> layer_ops{"Conv2d", "ConvTranspose2d", "Linear", "BatchNorm2d", "LayerNorm"};
  int missing = 0;
  for (const auto& [path, layer] : layers.items()) {
    int index = graph.find(path);
    if (index < 0) {
      ADD_FAILURE() << model << ": no node for torchvision module " << path;
      if (++missing >= 5) return;
      continue;
    }
    OpCost cost = node_cost(graph, index);
    std::string type = layer.at("type").get<std::string>();
    EXPECT_EQ(graph.node(index).op, type) << model << " " << path;
    EXPECT_EQ(cost.params, layer.at("params").get<int64_t>()) << model << " " << path;
    if (type != "BatchNorm2d" && type != "LayerNorm") {
      EXPECT_EQ(cost.macs, layer.at("macs").get<int64_t>()) << model << " " << path;
    }
  }
  for (const Node& node : graph.nodes()) {
    if (layer_ops.count(node.op)) {
      EXPECT_TRUE(layers.contains(node.name))
          << model << ": node " << node.name << " (" << node.op << ") is no torchvision module";
    }
  }
}

TEST(Zoo, EveryModelMatchesTorchvision) {
  const Reference& reference = torchvision_reference();
  ASSERT_TRUE(reference.error.empty()) << reference.error;
  int compared = 0;
  std::string skipped;
  std::ostringstream table;
  table << "model                      params          macs (ours)      macs (torchvision)  rel. error\n";
  for (const ZooEntry& entry : zoo()) {
    if (!reference.counts.contains(entry.name)) {
      // Every CNN of the zoo carries a torchvision name; only the language models may be missing.
      EXPECT_NE(entry.kind, "cnn") << entry.name << " is missing from torchvision's answer";
      skipped += " " + entry.name;
      continue;
    }
    const nlohmann::json& expected = reference.counts.at(entry.name);
    Graph graph = build_zoo_model(entry.name, ModelSpec{});
    int64_t params = total_params(graph);
    int64_t macs = conv_linear_macs(graph);
    int64_t expected_macs = expected.at("macs").get<int64_t>();
    double relative = std::fabs(static_cast<double>(macs - expected_macs)) / static_cast<double>(expected_macs);
    EXPECT_EQ(params, expected.at("params").get<int64_t>()) << entry.name;
    EXPECT_LE(relative, kMacsTolerance) << entry.name << ": " << macs << " MACs, torchvision " << expected_macs;
    expect_torchvision_layers(entry.name, graph, expected.at("layers"));
    char line[160];
    std::snprintf(line, sizeof(line), "%-24s %12lld %16lld %16lld %12.2e\n", entry.name.c_str(),
                  static_cast<long long>(params), static_cast<long long>(macs), static_cast<long long>(expected_macs),
                  relative);
    table << line;
    ++compared;
  }
  std::cout << table.str() << "compared " << compared << " models; torchvision lacks:" << skipped << "\n";
  EXPECT_GT(compared, 0);
}

// A spec other than the default, where the model takes one: larger images, shorter sequences.
ModelSpec other_spec(const ZooEntry& entry, int64_t batch) {
  ModelSpec spec;
  spec.batch = batch;
  if (entry.kind == "cnn")
    spec.input = {entry.default_input.at(0), entry.default_input.at(1) + 32, entry.default_input.at(2) + 64};
  else
    spec.seq_len = std::max<int64_t>(1, entry.default_input.at(0) / 2);
  return spec;
}

TEST(Zoo, ParametersIndependentOfBatchAndInputSize) {
  int resized = 0;
  for (const ZooEntry& entry : zoo()) {
    int64_t params = total_params(build_zoo_model(entry.name, ModelSpec{}));
    ModelSpec batched;
    batched.batch = 3;
    EXPECT_EQ(total_params(build_zoo_model(entry.name, batched)), params) << entry.name << " at batch 3";
    Graph other;
    try {
      other = build_zoo_model(entry.name, other_spec(entry, 2));
    } catch (const InputError&) {
      continue;  // a model with a fixed input size (ViT's position embeddings)
    }
    // A vision transformer learns one position embedding per image patch: its parameters grow with
    // the image (torchvision's VisionTransformer(image_size=...) likewise).
    bool per_patch_positions = false;
    for (const Node& node : other.nodes()) per_patch_positions |= entry.kind == "cnn" && node.op == "PositionEmbedding";
    if (per_patch_positions) continue;
    EXPECT_EQ(total_params(other), params) << entry.name << " at another input size";
    ++resized;
  }
  EXPECT_GT(resized, 0);
}

TEST(Zoo, MacsScaleLinearlyWithBatch) {
  for (const ZooEntry& entry : zoo()) {
    ModelSpec spec;
    int64_t macs = conv_linear_macs(build_zoo_model(entry.name, spec));
    EXPECT_GT(macs, 0) << entry.name;
    spec.batch = 5;
    EXPECT_EQ(conv_linear_macs(build_zoo_model(entry.name, spec)), 5 * macs) << entry.name;
  }
}

TEST(Zoo, NumberOfClassesSetsTheClassifier) {
  for (const ZooEntry& entry : zoo()) {
    if (entry.kind != "cnn") continue;
    ModelSpec spec;
    spec.num_classes = 10;
    Graph graph = build_zoo_model(entry.name, spec);
    std::vector<int> outputs = graph.outputs();
    ASSERT_EQ(outputs.size(), 1u) << entry.name;
    EXPECT_EQ(graph.node(outputs[0]).shape, (TensorShape{1, 10})) << entry.name;
  }
}

TEST(Zoo, UnknownNameSuggestsCloseOnes) {
  try {
    zoo_entry("resnet5");
    FAIL() << "resnet5 was accepted";
  } catch (const InputError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("unknown model 'resnet5'"), std::string::npos) << text;
    EXPECT_NE(text.find("resnet50"), std::string::npos) << text;
  }
  try {
    zoo_entry("vgg16bn");
    FAIL() << "vgg16bn was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("vgg16_bn"), std::string::npos) << error.what();
  }
}

TEST(Zoo, TooSmallOrMalformedInputIsAnInputError) {
  for (const ZooEntry& entry : zoo()) {
    if (entry.kind != "cnn") continue;
    ModelSpec tiny;
    tiny.input = {3, 8, 8};
    try {
      build_zoo_model(entry.name, tiny);  // some models take 8x8 (adaptive pools), most cannot
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(entry.name), std::string::npos) << error.what();
    }
    ModelSpec flat;
    flat.input = {224, 224};
    EXPECT_THROW(build_zoo_model(entry.name, flat), InputError) << entry.name;
  }
}

// The smallest square input each model accepts is torchvision's: our shape rules refuse exactly
// the windows PyTorch refuses (inception_v3 needs 75 px, alexnet 63). One model per family (a
// torchvision forward pass per candidate size keeps the whole zoo out of the default suite).
TEST(Zoo, SmallestInputIsTorchvisions) {
  const std::vector<std::string> models = {"alexnet",         "vgg11_bn",           "resnet18",
                                           "resnext50_32x4d", "wide_resnet50_2",    "densenet121",
                                           "googlenet",       "inception_v3",       "mobilenet_v3_small",
                                           "mnasnet0_5",      "shufflenet_v2_x0_5", "squeezenet1_0",
                                           "squeezenet1_1",   "efficientnet_b0",    "regnet_y_400mf",
                                           "convnext_tiny"};
  constexpr int kLargest = 128;
  std::string names;
  for (const std::string& name : models) names += " " + name;
  std::string error;
  nlohmann::json theirs = run_reference_script("--smallest-input " + std::to_string(kLargest) + names, &error);
  ASSERT_TRUE(error.empty()) << error;
  for (const std::string& name : models) {
    ASSERT_TRUE(theirs.contains(name)) << name;
    int ours = 0;
    std::string last_error;
    for (int size = 1; size <= kLargest && ours == 0; ++size) {
      ModelSpec spec;
      spec.input = {3, size, size};
      try {
        build_zoo_model(name, spec);
        ours = size;
      } catch (const InputError& refused) {
        last_error = refused.what();
      }
    }
    EXPECT_EQ(ours, theirs[name].is_null() ? 0 : theirs[name].get<int>()) << name << "; last refusal: " << last_error;
  }
}

TEST(Zoo, EveryModelHasAFamilyAndUniqueName) {
  std::set<std::string> names;
  for (const ZooEntry& entry : zoo()) {
    EXPECT_TRUE(names.insert(entry.name).second) << "duplicate " << entry.name;
    EXPECT_FALSE(entry.family.empty()) << entry.name;
    Graph graph = build_zoo_model(entry.name, ModelSpec{});
    EXPECT_EQ(graph.name, entry.name);
    EXPECT_EQ(graph.family, entry.family) << entry.name;
  }
}

}  // namespace
}  // namespace dnncast::models
