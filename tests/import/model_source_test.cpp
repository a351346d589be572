// load_model: zoo names, synthetic:SEED and graph JSON files, with the configuration applied.
#include "import/model_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "import/hub_cache.h"
#include "models/synthetic.h"

namespace dnncast::import {
namespace {

int64_t total_params(const Graph& graph) {
  int64_t params = 0;
  for (int index = 0; index < graph.size(); ++index) params += node_cost(graph, index).params;
  return params;
}

models::ModelSpec spec_of(int64_t batch, std::vector<int64_t> input = {}, int64_t seq_len = 0) {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.input = std::move(input);
  spec.seq_len = seq_len;
  return spec;
}

std::string error_of(const std::string& source, const models::ModelSpec& spec) {
  try {
    load_model(source, spec);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// A graph file in a fresh temporary folder, removed at the end of the test.
class GraphFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dnncast_model_source_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& path : written_) std::remove(path.c_str());
    rmdir(dir_.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    written_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> written_;
};

TEST(ModelSource, Kinds) {
  EXPECT_EQ(model_source_kind("resnet50"), ModelSourceKind::Zoo);
  EXPECT_EQ(model_source_kind("zoo:resnet50"), ModelSourceKind::Zoo);
  EXPECT_EQ(model_source_kind("synthetic:7"), ModelSourceKind::Synthetic);
  EXPECT_EQ(model_source_kind("net.json"), ModelSourceKind::File);
  EXPECT_EQ(model_source_kind("models/net"), ModelSourceKind::File);
  EXPECT_EQ(model_source_kind("file:net"), ModelSourceKind::File);
}

TEST(ModelSource, ZooModelWithItsConfiguration) {
  Graph graph = load_model("resnet50", spec_of(0));
  EXPECT_EQ(graph.name, "resnet50");
  EXPECT_EQ(graph.node(graph.inputs()[0]).shape, (TensorShape{1, 3, 224, 224}));
  EXPECT_EQ(total_params(graph), 25557032);  // torchvision's resnet50
  Graph small = load_model("zoo:resnet50", spec_of(8, {3, 64, 48}));
  EXPECT_EQ(small.node(small.inputs()[0]).shape, (TensorShape{8, 3, 64, 48}));
  EXPECT_EQ(small.architecture_hash(), graph.architecture_hash());
}

TEST(ModelSource, UnknownModelSuggestsCloseNames) {
  std::string message = error_of("resnet5", spec_of(0));
  EXPECT_NE(message.find("unknown model 'resnet5'"), std::string::npos) << message;
  EXPECT_NE(message.find("resnet50"), std::string::npos) << message;
}

TEST(ModelSource, ImageOrSequenceMustFitTheModel) {
  EXPECT_NE(error_of("resnet50", spec_of(1, {}, 128)).find("image input"), std::string::npos);
  EXPECT_NE(error_of("resnet50", spec_of(1, {3, 224})).find("CxHxW"), std::string::npos);
  EXPECT_NE(error_of("resnet50", spec_of(-2)).find("batch"), std::string::npos);
  // Too large to count: rejected before anything overflows.
  EXPECT_NE(error_of("resnet50", spec_of(1000000000, {3, 100000, 100000})).find("exceeds"), std::string::npos);
}

TEST(ModelSource, SyntheticSeeds) {
  Graph graph = load_model("synthetic:42", spec_of(4, {3, 32, 32}));
  EXPECT_EQ(graph.name, "synthetic:42");
  EXPECT_EQ(graph.node(graph.inputs()[0]).shape, (TensorShape{4, 3, 32, 32}));
  models::ModelSpec direct = spec_of(4, {3, 32, 32});
  EXPECT_EQ(graph.architecture_hash(), models::make_synthetic(42, direct).architecture_hash());
  EXPECT_NO_THROW(load_model("synthetic:18446744073709551615", spec_of(0, {3, 16, 16})));
  for (const char* bad : {"synthetic:", "synthetic:abc", "synthetic:-1", "synthetic:1.5", "synthetic: 7",
                          "synthetic:18446744073709551616"}) {
    std::string message = error_of(bad, spec_of(0));
    EXPECT_NE(message.find("bad synthetic seed"), std::string::npos) << bad << ": " << message;
  }
  EXPECT_NE(error_of("synthetic:3", spec_of(1, {}, 64)).find("image input"), std::string::npos);
}

TEST_F(GraphFile, FileKeepsItsShapeUnlessOverridden) {
  Graph original = load_model("resnet18", spec_of(2, {3, 96, 96}));
  std::string path = write("resnet18.json", write_graph_json(original));
  Graph same = load_model(path, spec_of(0));
  EXPECT_EQ(write_graph_json(same), write_graph_json(original));

  Graph bigger = load_model(path, spec_of(16, {3, 128, 160}));
  EXPECT_EQ(bigger.node(bigger.inputs()[0]).shape, (TensorShape{16, 3, 128, 160}));
  EXPECT_EQ(bigger.node(bigger.outputs()[0]).shape, (TensorShape{16, 1000}));
  EXPECT_EQ(bigger.architecture_hash(), original.architecture_hash());
  // The override equals building the zoo model at that configuration.
  EXPECT_EQ(write_graph_json(bigger), write_graph_json(load_model("resnet18", spec_of(16, {3, 128, 160}))));

  Graph batch_only = load_model("file:" + path, spec_of(5));
  EXPECT_EQ(batch_only.node(batch_only.inputs()[0]).shape, (TensorShape{5, 3, 96, 96}));
}

TEST_F(GraphFile, OverrideTheModelCannotTakeNamesTheFile) {
  Graph original = load_model("resnet18", spec_of(1));
  std::string path = write("r18.json", write_graph_json(original));
  std::string message = error_of(path, spec_of(1, {}, 128));
  EXPECT_NE(message.find("sequence length does not apply"), std::string::npos) << message;
}

TEST_F(GraphFile, InputTooSmallForTheGraphNamesFileAndNode) {
  std::string path = write("pool.json", R"({"format": "dnncast-graph/1", "name": "pool", "nodes": [
    {"name": "x", "op": "Input", "attrs": {"shape": [1, 3, 32, 32]}},
    {"name": "p", "op": "AvgPool2d", "inputs": ["x"], "attrs": {"kernel": [7, 7], "stride": [1, 1]}}]})");
  EXPECT_EQ(load_model(path, spec_of(0)).node(1).shape, (TensorShape{1, 3, 26, 26}));
  std::string message = error_of(path, spec_of(2, {3, 5, 5}));
  EXPECT_EQ(
      message.rfind(
          path + " at input 2x3x5x5: node 'p' (AvgPool2d): pooling window 7x7 larger than the padded input 5x5", 0),
      0u)
      << message;
}

TEST_F(GraphFile, MissingAndMalformedFiles) {
  std::string message = error_of(dir_ + "/absent.json", spec_of(0));
  EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
  std::string path = write("broken.json", "{\"format\": \"dnncast-graph/1\", \"nodes\": [");
  message = error_of(path, spec_of(0));
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// The one check of what a user gave about a model (issue 50): each mistake one line, the option named as the front
// end that was used spells it.
std::string model_args_error(const ModelArgs& args, OptionStyle style) {
  try {
    make_model_source(args, style);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(ModelSource, OneMessagePerMistakeInEachFrontEndsSpelling) {
  ModelArgs both;
  both.model = "gpt2_small";
  both.input = std::vector<int64_t>{3, 32, 32};
  both.seq = 32;
  EXPECT_EQ(model_args_error(both, OptionStyle::Flag), "give --input or --seq, not both");
  EXPECT_EQ(model_args_error(both, OptionStyle::Keyword), "give input_shape or seq, not both");
  EXPECT_EQ(model_args_error(both, OptionStyle::Field), "give input or seq, not both");

  ModelArgs classes;
  classes.model = "model.onnx";
  classes.classes = 10;
  EXPECT_EQ(model_args_error(classes, OptionStyle::Flag),
            "--classes does not apply to an ONNX model (its classifier is part of it)");
  classes.model = "graph";  // serve's name of an inline graph: the kind is given, not read from the name
  classes.kind = ModelSourceKind::File;
  EXPECT_EQ(model_args_error(classes, OptionStyle::Field),
            "classes does not apply to a graph (its classifier is part of it)");

  ModelArgs bad;
  bad.model = "resnet18";
  bad.batch = 0;
  EXPECT_EQ(model_args_error(bad, OptionStyle::Flag), "--batch must be a positive integer, got 0");
  bad.batch = int64_t{1} << 41;
  EXPECT_NE(model_args_error(bad, OptionStyle::Keyword).find("batch must be an integer in [1, 1099511627776]"),
            std::string::npos);
  bad.batch.reset();
  bad.seq = 0;
  EXPECT_EQ(model_args_error(bad, OptionStyle::Keyword), "seq must be an integer in [1, 2147483647], got 0");
  bad.seq.reset();
  bad.input = std::vector<int64_t>{3, 224};
  EXPECT_EQ(model_args_error(bad, OptionStyle::Keyword),
            "input_shape must be three positive integers (C, H, W), got 2");
  bad.input.reset();
  bad.lora = "";
  EXPECT_EQ(model_args_error(bad, OptionStyle::Keyword), "lora: empty; leave it out for no LoRA");
  bad.lora = "r=0";
  EXPECT_EQ(model_args_error(bad, OptionStyle::Flag), "--lora 'r=0': rank r=0 must be at least 1");
  bad.lora.reset();
  bad.attention = "flash3";
  EXPECT_EQ(model_args_error(bad, OptionStyle::Field), "attention 'flash3': expected eager or sdpa");
  bad.attention.reset();
  bad.model = "";
  EXPECT_NE(model_args_error(bad, OptionStyle::Flag).find("missing model"), std::string::npos);
}

TEST(ModelSource, BuildsAtAnyBatchAsLoadModelDoes) {
  ModelArgs args;
  args.model = "bert_base";
  args.batch = 2;
  args.seq = 16;
  args.lora = "r=4,targets=query,value";
  const ModelSource source = make_model_source(args, OptionStyle::Flag);
  EXPECT_EQ(source.spec.batch, 2);
  EXPECT_EQ(source.spec.seq_len, 16);
  models::ModelSpec at = source.spec;
  at.batch = 5;
  const Graph built = source.build_at_batch(5), loaded = load_model("bert_base", at);
  ASSERT_EQ(built.size(), loaded.size());
  EXPECT_EQ(built.node(built.inputs().front()).shape.dims, (std::vector<int64_t>{5, 16}));
  EXPECT_EQ(total_params(built), total_params(loaded));
  // A builder given (serve's graph cache) is what the source builds with, at the batch asked.
  int calls = 0;
  ModelArgs image;
  image.model = "graph";
  image.batch = 3;
  const ModelSource cached = make_model_source(image, OptionStyle::Field, [&](const models::ModelSpec& spec) {
    ++calls;
    return load_model("resnet18", spec);
  });
  EXPECT_EQ(cached.build().node(0).shape.dims, (std::vector<int64_t>{3, 3, 224, 224}));
  EXPECT_EQ(cached.build_at_batch(7).node(0).shape.dims, (std::vector<int64_t>{7, 3, 224, 224}));
  EXPECT_EQ(calls, 2);
}

// Issue 49: a Hugging Face Hub id names a model by the config.json the Hugging Face tools cached (HF_HOME's hub
// folder laid out as huggingface_hub lays it: refs/main names the snapshot); the same graph as the file itself, named
// by the id; @REVISION picks a ref or a commit; an id in no cache is one line saying what was searched and how to
// fetch only the config; a path that is no id stays a file error.
TEST(ModelSource, AHubIdReadsTheCachedConfig) {
  namespace fs = std::filesystem;
  const fs::path home = fs::temp_directory_path() / ("dnncast_hf_" + std::to_string(::getpid()));
  const fs::path repo = home / "hub" / "models--acme--tiny-llama";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "0123abcd");
  { std::ofstream(repo / "refs" / "main") << "0123abcd"; }
  const std::string config = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-small-tied.json";
  fs::copy_file(config, repo / "snapshots" / "0123abcd" / "config.json");
  const char* saved_home = std::getenv("HF_HOME");
  const std::string saved = saved_home ? saved_home : "";
  const char* saved_cache = std::getenv("HF_HUB_CACHE");
  const std::string saved_hub = saved_cache ? saved_cache : "";
  setenv("HF_HOME", home.c_str(), 1);
  unsetenv("HF_HUB_CACHE");
  models::ModelSpec spec;
  spec.seq_len = 32;
  const Graph by_id = load_model("acme/tiny-llama", spec), by_file = load_model(config, spec);
  EXPECT_EQ(by_id.name, "acme/tiny-llama");
  EXPECT_EQ(by_id.architecture_hash(), by_file.architecture_hash());
  EXPECT_EQ(load_model("acme/tiny-llama@main", spec).architecture_hash(), by_file.architecture_hash());
  EXPECT_EQ(load_model("acme/tiny-llama@0123abcd", spec).architecture_hash(), by_file.architecture_hash());
  try {
    load_model("acme/not-cached", spec);
    FAIL() << "no error";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("'acme/not-cached' is no file"), std::string::npos) << message;
    EXPECT_NE(message.find((home / "hub").string()), std::string::npos) << message;
    EXPECT_NE(message.find("huggingface-cli download acme/not-cached config.json"), std::string::npos) << message;
  }
  EXPECT_THROW(load_model("acme/tiny-llama@nope", spec), InputError);
  EXPECT_FALSE(looks_like_hub_id("./models/x"));
  EXPECT_FALSE(looks_like_hub_id("a/b/c"));
  EXPECT_FALSE(looks_like_hub_id("acme/model.json"));
  EXPECT_TRUE(looks_like_hub_id("Qwen/Qwen2.5-7B"));
  if (saved_home)
    setenv("HF_HOME", saved.c_str(), 1);
  else
    unsetenv("HF_HOME");
  if (saved_cache) setenv("HF_HUB_CACHE", saved_hub.c_str(), 1);
  fs::remove_all(home);
}

}  // namespace
}  // namespace dnncast::import
