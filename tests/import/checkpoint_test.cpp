// Transformer blocks (the attribute block, GraphBuilder::begin_block) and the checkpointed segments of
// graph/checkpoint.h: which nodes each block holds, what it reads and hands on, and the refusals.
#include "graph/checkpoint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "core/error.h"
#include "graph/lora.h"
#include "import/graph_json.h"
#include "models/hf_config.h"
#include "models/zoo.h"

namespace dnncast::import {
namespace {

Graph zoo(const std::string& name, int64_t seq = 0) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = seq;
  return models::build_zoo_model(name, spec);
}

Graph hf(const std::string& config) {
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config + ".json";
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 8;
  return models::build_hf_config(nlohmann::json::parse(std::ifstream(path)), spec, path);
}

// Each layer of the builder's loop is one block, named by the layer's module path.
void expect_blocks(const Graph& graph, int64_t layers, const std::string& layer_prefix) {
  std::set<int64_t> blocks;
  for (const Node& node : graph.nodes()) {
    if (!node.has_attr("block")) {
      EXPECT_EQ(node.name.find(layer_prefix), std::string::npos) << graph.name << ": " << node.name << " has no block";
      continue;
    }
    const int64_t block = node.attr_int("block");
    blocks.insert(block);
    EXPECT_EQ(node.name.rfind(layer_prefix + std::to_string(block) + ".", 0), 0u) << graph.name << ": " << node.name;
  }
  EXPECT_EQ(static_cast<int64_t>(blocks.size()), layers) << graph.name;
}

TEST(Checkpoint, DecodersAndEncodersLabelTheirLayers) {
  expect_blocks(zoo("gpt2_small", 16), 12, "transformer.h.");
  expect_blocks(zoo("bert_base", 16), 12, "encoder.layer.");
  expect_blocks(zoo("vit_b_16"), 12, "encoder.layers.encoder_layer_");
  expect_blocks(hf("llama-small-tied"), 2, "model.layers.");
  expect_blocks(hf("gpt-neox-sequential"), 2, "gpt_neox.layers.");
}

TEST(Checkpoint, SegmentsReadTheResidualStreamAndHandOnTheLayerOutput) {
  const Graph graph = apply_checkpointing(hf("llama-small-tied"));
  const std::vector<CheckpointSegment> segments = checkpoint_segments(graph);
  ASSERT_EQ(segments.size(), 2u);
  for (size_t layer = 0; layer < segments.size(); ++layer) {
    const CheckpointSegment& segment = segments[layer];
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    EXPECT_EQ(graph.node(segment.first).name, prefix + "input_layernorm");
    EXPECT_EQ(graph.node(segment.last).name, prefix + "add_2");
    ASSERT_EQ(segment.inputs.size(), 1u);  // the residual stream: the embedding or the previous layer's output
    EXPECT_EQ(graph.node(segment.inputs[0]).name, layer == 0 ? "model.embed_tokens" : "model.layers.0.add_2");
    ASSERT_EQ(segment.outputs.size(), 1u);
    EXPECT_EQ(segment.outputs[0], segment.last);
  }
  // Labels without checkpointing: no segment.
  EXPECT_TRUE(checkpoint_segments(hf("llama-small-tied")).empty());
}

TEST(Checkpoint, LoraAdaptersJoinTheirLayersBlock) {
  const Graph graph = apply_checkpointing(apply_lora(hf("llama-small-tied"), {8, 16, {"q", "v"}, false}));
  const std::vector<CheckpointSegment> segments = checkpoint_segments(graph);
  ASSERT_EQ(segments.size(), 2u);
  const int adapter = graph.find("model.layers.1.self_attn.v_proj.lora_B");
  ASSERT_GE(adapter, 0);
  EXPECT_EQ(checkpoint_block(graph.node(adapter)), 1);
  EXPECT_GT(adapter, segments[1].first);
  EXPECT_LT(adapter, segments[1].last);
}

TEST(Checkpoint, BlocksSurviveGraphJsonButNotTheHash) {
  const Graph graph = apply_checkpointing(zoo("gpt2_small", 16));
  const Graph read = read_graph_json(write_graph_json(graph), "round trip");
  EXPECT_EQ(checkpoint_segments(read).size(), 12u);
  // The block label is no architecture; checkpointing (a different training program) is.
  Graph unlabelled = zoo("gpt2_small", 16);
  for (Node& node : unlabelled.mutable_nodes()) node.attrs.erase("block");
  EXPECT_EQ(unlabelled.architecture_hash(), zoo("gpt2_small", 16).architecture_hash());
  EXPECT_NE(graph.architecture_hash(), zoo("gpt2_small", 16).architecture_hash());
}

TEST(Checkpoint, AGraphWithoutBlocksIsRefused) {
  try {
    apply_checkpointing(zoo("resnet18"), "--checkpointing");
    FAIL() << "resnet18 was checkpointed";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("--checkpointing: 'resnet18' has no transformer blocks"),
              std::string::npos)
        << error.what();
  }
}

TEST(Checkpoint, ABlockSplitInTwoIsRefused) {
  Graph graph = apply_checkpointing(hf("llama-small-tied"));
  // Label a node of layer 1 as layer 0: block 0 is no longer contiguous.
  graph.mutable_nodes()[static_cast<size_t>(graph.find("model.layers.1.add_1"))].attrs["block"] = int64_t{0};
  EXPECT_THROW(checkpoint_segments(graph), InputError);
}

}  // namespace
}  // namespace dnncast::import
