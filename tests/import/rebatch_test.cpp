// ModelSource::rebatch: a graph resized to another batch is the graph a build at that batch gives, node for node,
// for every model of the zoo, every config.json of tests/models/hf_configs and a graph file; where it cannot be
// sure of that (a mixture of experts' token shares, an ONNX file, a builder given, a batch a build might refuse),
// it builds, and a refusal is the build's own.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "import/model_source.h"
#include "models/zoo.h"

namespace dnncast::import {
namespace {

const std::string kConfigs = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/";

void expect_same_graph(const Graph& resized, const Graph& built, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(resized.name, built.name);
  EXPECT_EQ(resized.family, built.family);
  EXPECT_EQ(resized.notes, built.notes);
  ASSERT_EQ(resized.size(), built.size());
  for (int index = 0; index < built.size(); ++index) {
    const Node &a = resized.node(index), &b = built.node(index);
    ASSERT_TRUE(a.name == b.name && a.op == b.op && a.inputs == b.inputs) << "node " << index << " " << b.name;
    EXPECT_TRUE(a.attrs == b.attrs) << b.name;
    EXPECT_EQ(a.shape, b.shape) << b.name;
    EXPECT_EQ(a.dtype, b.dtype) << b.name;
  }
  EXPECT_EQ(resized.architecture_hash(), built.architecture_hash());
}

// The source's graph at batch 1, resized to 3 (then to 2), against builds at those batches; whether it resized.
bool resizes_as_built(const ModelSource& source) {
  Graph graph = source.build_at_batch(1);
  bool resized = true;
  for (int64_t batch : {3, 2}) {
    resized = source.rebatch(graph, batch) && resized;
    expect_same_graph(graph, source.build_at_batch(batch), source.name + " at batch " + std::to_string(batch));
  }
  return resized;
}

ModelSource source_of(const std::string& model, const std::string& lora = "", const std::string& quantize = "") {
  ModelArgs args;
  args.model = model;
  if (!lora.empty()) args.lora = lora;
  if (!quantize.empty()) args.quantize = quantize;
  return make_model_source(args, OptionStyle::Flag);
}

TEST(Rebatch, EveryZooModelResizesAsItBuilds) {
  for (const models::ZooEntry& entry : models::zoo())
    EXPECT_TRUE(resizes_as_built(source_of(entry.name))) << entry.name;
  EXPECT_TRUE(resizes_as_built(source_of("synthetic:7")));
  EXPECT_TRUE(resizes_as_built(
      source_of(std::string(DNNCAST_SOURCE_DIR) + "/tests/cli/forecast_fixture/graph_synthetic_900031.json")));
}

TEST(Rebatch, EveryConfigResizesAsItBuildsSaveAMixtureOfExperts) {
  for (const auto& file : std::filesystem::directory_iterator(kConfigs)) {
    const std::string path = file.path().string();
    const Graph graph = source_of(path).build();
    bool experts = false;
    for (const Node& node : graph.nodes()) experts = experts || node.op == "TopKRouting";
    EXPECT_EQ(resizes_as_built(source_of(path)), !experts) << path;  // its token shares: built anew
  }
  const std::string llama = kConfigs + "llama-small-tied.json";
  EXPECT_TRUE(resizes_as_built(source_of(llama, "r=4,targets=q,k,v,o")));
  EXPECT_TRUE(resizes_as_built(source_of(llama, "r=4", "nf4")));
  ModelArgs tuned;
  tuned.model = llama;
  tuned.lora = "r=2";
  tuned.checkpointing = true;
  tuned.attention = "sdpa";
  EXPECT_TRUE(resizes_as_built(make_model_source(tuned, OptionStyle::Flag)));
}

TEST(Rebatch, ABuilderGivenBuilds) {
  int calls = 0;
  ModelArgs args;
  args.model = "graph";
  const ModelSource cached = make_model_source(args, OptionStyle::Field, [&](const models::ModelSpec& spec) {
    ++calls;
    return load_model("resnet18", spec);
  });
  EXPECT_FALSE(resizes_as_built(cached));
  EXPECT_EQ(calls, 5);
}

std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// Past a size limit the build refuses the batch; the resize builds and refuses it alike (a zoo model's token limit,
// a config's shape rule).
TEST(Rebatch, ARefusalIsTheBuildsOwn) {
  for (const std::string& model : {std::string("gpt2_small"), std::string("resnet18"), kConfigs + "gpt2.json"}) {
    const ModelSource source = source_of(model);
    const int64_t batch = int64_t{1} << 20;
    const std::string built = error_of([&] { source.build_at_batch(batch); });
    EXPECT_FALSE(built.empty()) << model;
    Graph graph = source.build();
    EXPECT_EQ(error_of([&] { source.rebatch(graph, batch); }), built);
  }
}

}  // namespace
}  // namespace dnncast::import
