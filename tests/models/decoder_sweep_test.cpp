// The decoder sweep's generator (models/decoder_sweep.h): the same 200 configurations every time, every one a
// config that builds, and the ranges issue 35 asks for covered (three families, 1-3 layers, grouped and multi-query
// attention, tied heads, three optimizers, LoRA off and on).
#include "models/decoder_sweep.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace dnncast::models {
namespace {

TEST(DecoderSweep, TheSameCasesEveryTime) {
  const std::vector<DecoderCase> first = decoder_sweep(), second = decoder_sweep();
  ASSERT_EQ(first.size(), 200u);
  ASSERT_EQ(second.size(), first.size());
  for (size_t index = 0; index < first.size(); ++index) {
    EXPECT_EQ(first[index].describe(), second[index].describe());
    EXPECT_EQ(first[index].config(), second[index].config());
  }
  EXPECT_NE(decoder_sweep(36, 20)[0].describe() + decoder_sweep(36, 20)[1].describe(),
            first[0].describe() + first[1].describe());  // another seed, other cases
}

TEST(DecoderSweep, EveryCaseBuildsAndTheRangesAreCovered) {
  std::map<std::string, int> families;
  std::set<int64_t> layers;
  std::set<Optimizer> optimizers;
  int lora = 0, tied = 0, grouped = 0, multi_query = 0, partial_rotary = 0;
  for (const DecoderCase& c : decoder_sweep()) {
    const Graph graph = c.graph();  // throws InputError for a config the builder refuses
    EXPECT_EQ(graph.name, c.id);
    EXPECT_EQ(graph.node(graph.inputs()[0]).shape.dims, (std::vector<int64_t>{c.batch, c.seq})) << c.describe();
    EXPECT_EQ(c.precision, Precision::Fp32);
    EXPECT_FALSE(c.activation_checkpointing);
    ++families[c.family];
    layers.insert(c.layers);
    optimizers.insert(c.optimizer);
    lora += !c.lora.empty();
    tied += c.tied;
    grouped += c.kv_heads < c.heads;
    multi_query += c.kv_heads == 1 && c.heads > 1;
    partial_rotary += c.family == "gpt_neox" && c.rotary_pct < 1.0;
    if (c.family == "mistral") {
      EXPECT_LT(c.kv_heads, c.heads) << c.id;
    }
    if (c.family == "gpt_neox") {
      EXPECT_EQ(c.kv_heads, c.heads) << c.id;
    }
  }
  EXPECT_EQ(families, (std::map<std::string, int>{{"gpt_neox", 66}, {"llama", 67}, {"mistral", 67}}));
  EXPECT_EQ(layers, (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(optimizers.size(), 3u);
  for (int count : {lora, tied, grouped, multi_query, partial_rotary}) EXPECT_GE(count, 10);
  EXPECT_LE(lora, 150);
}

}  // namespace
}  // namespace dnncast::models
