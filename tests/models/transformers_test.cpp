// Transformers of the zoo against independent figures:
//   bert_base:  Hugging Face BertModel (bert-base-uncased) has 109,482,240 parameters — the figure the
//               Hugging Face model card / `BertModel.from_pretrained("bert-base-uncased").num_parameters()`
//               gives (Devlin et al. 2019 round it to 110M). bert_base adds BertForSequenceClassification's
//               classifier Linear(768, num_classes): + 768 * C + C.
//   gpt2_small: Hugging Face GPT2LMHeadModel ("gpt2") has 124,439,808 parameters (LM head tied to the
//               token embedding; Radford et al. 2019 round it to 117M/124M).
//   vit_b_16:   torchvision itself, through /usr/bin/python3, per parameter-owning module.
// The zoo-wide torchvision test (zoo_test.cpp) covers MACs; this file covers the transformer specifics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "graph/op_registry.h"
#include "models/zoo.h"
#include "python_run.h"

namespace dnncast::models {
namespace {

constexpr int64_t kBertModelParams = 109482240;
constexpr int64_t kGpt2LmHeadParams = 124439808;

int64_t total_params(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) total += node_cost(graph, index).params;
  return total;
}

int64_t total_macs(const Graph& graph) {
  int64_t total = 0;
  for (int index = 0; index < graph.size(); ++index) total += node_cost(graph, index).macs;
  return total;
}

Graph build(const std::string& name, int64_t batch, int64_t seq_len, int64_t classes = 1000) {
  ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq_len;
  spec.num_classes = classes;
  return build_zoo_model(name, spec);
}

TEST(Transformers, BertBaseParamsEqualPublishedBertModelPlusClassifier) {
  for (int64_t classes : {2, 1000}) {
    Graph graph = build("bert_base", 1, 0, classes);
    EXPECT_EQ(total_params(graph), kBertModelParams + 768 * classes + classes) << classes << " classes";
  }
}

TEST(Transformers, Gpt2SmallParamsEqualPublishedFigureWithTiedHead) {
  Graph graph = build("gpt2_small", 1, 0);
  EXPECT_EQ(total_params(graph), kGpt2LmHeadParams);
  // The head's weight is the token table: untied, the count would grow by the vocabulary x 768.
  int head = graph.find("lm_head");
  ASSERT_GE(head, 0);
  EXPECT_EQ(node_cost(graph, head).params, 0);
  EXPECT_EQ(node_cost(graph, head).macs, 1024LL * 768 * 50257);
}

TEST(Transformers, SequenceLengthIsAParameterAndDefaultsAsDeclared) {
  Graph bert = build("bert_base", 2, 0);
  EXPECT_EQ(bert.node(bert.inputs()[0]).shape, (TensorShape{2, 128}));
  EXPECT_EQ(bert.node(bert.outputs()[0]).shape, (TensorShape{2, 1000}));
  Graph gpt2 = build("gpt2_small", 1, 0);
  EXPECT_EQ(gpt2.node(gpt2.outputs()[0]).shape, (TensorShape{1, 1024, 50257}));
  Graph short_gpt2 = build("gpt2_small", 3, 64);
  EXPECT_EQ(short_gpt2.node(short_gpt2.outputs()[0]).shape, (TensorShape{3, 64, 50257}));
  // Parameters do not depend on the sequence; the architecture hash depends on neither batch nor sequence.
  EXPECT_EQ(total_params(short_gpt2), kGpt2LmHeadParams);
  EXPECT_EQ(short_gpt2.architecture_hash(), gpt2.architecture_hash());
  EXPECT_EQ(build("bert_base", 8, 384).architecture_hash(), bert.architecture_hash());
}

// Hand formula: per layer and token, the linear layers cost D*3D + D*D + 2*D*F MACs and attention
// 2*L*D (q k^T and p v over L keys); plus the heads.
TEST(Transformers, MacsFollowTheTransformerFormula) {
  const int64_t d = 768, ff = 3072, layers = 12;
  for (int64_t seq : {16, 128}) {
    int64_t batch = 2, tokens = batch * seq;
    int64_t per_token = layers * (d * 3 * d + d * d + 2 * d * ff + 2 * seq * d);
    EXPECT_EQ(total_macs(build("gpt2_small", batch, seq)), tokens * per_token + tokens * d * 50257) << seq;
    // BERT: the same encoder, plus pooler and classifier on the first token only.
    EXPECT_EQ(total_macs(build("bert_base", batch, seq, 10)), tokens * per_token + batch * (d * d + d * 10)) << seq;
  }
}

TEST(Transformers, TooLongSequencesAreRejectedByName) {
  for (auto [name, limit] : {std::pair<const char*, int64_t>{"bert_base", 512}, {"gpt2_small", 1024}}) {
    EXPECT_NO_THROW(build(name, 1, limit));
    try {
      build(name, 1, limit + 1);
      ADD_FAILURE() << name << " accepted " << limit + 1 << " tokens";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(std::to_string(limit)), std::string::npos) << error.what();
    }
  }
}

TEST(Transformers, VitRejectsImagesNotDivisibleByThePatch) {
  ModelSpec spec;
  spec.input = {3, 225, 224};
  EXPECT_THROW(build_zoo_model("vit_b_16", spec), InputError);
}

using python_test::run_python;

// Parameters per owning module, torchvision's vit_b_16 vs ours, at the default and another size.
TEST(Transformers, VitB16ParamsEqualTorchvisionPerModule) {
  const std::string script = R"(
import sys, torch, torchvision
for name in ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "xavier_uniform_",
             "kaiming_uniform_", "kaiming_normal_", "lecun_normal_"):
    setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)  # counts only: skip the slow init
for size, classes in ((224, 1000), (384, 10)):
    model = torchvision.models.vit_b_16(image_size=size, num_classes=classes)
    for name, param in model.named_parameters():
        owner = name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name
        owner = owner.replace("in_proj_weight", "in_proj").replace("in_proj_bias", "in_proj")
        print(size, classes, owner, param.numel())
)";
  std::string output = run_python(script);
  if (output.rfind("FAILED", 0) == 0 || output.empty())
    GTEST_FAIL() << "torchvision reference failed (" DNNCAST_PYTHON " needs python3-torch and python3-torchvision):\n"
                 << output;
  std::map<std::pair<int64_t, int64_t>, std::map<std::string, int64_t>> reference;
  std::istringstream lines(output);
  int64_t size, classes, count;
  std::string owner;
  while (lines >> size >> classes >> owner >> count) reference[{size, classes}][owner] += count;
  ASSERT_EQ(reference.size(), 2u) << output;
  for (const auto& [config, expected] : reference) {
    ModelSpec spec;
    spec.input = {3, config.first, config.first};
    spec.num_classes = config.second;
    Graph graph = build_zoo_model("vit_b_16", spec);
    std::map<std::string, int64_t> ours;
    int64_t total = 0, expected_total = 0;
    for (int index = 0; index < graph.size(); ++index) {
      int64_t params = node_cost(graph, index).params;
      if (params == 0) continue;
      ours[graph.node(index).name] += params;
      total += params;
    }
    for (const auto& [name, params] : expected) expected_total += params;
    EXPECT_EQ(total, expected_total) << config.first << "px, " << config.second << " classes";
    EXPECT_EQ(ours, expected) << config.first << "px, " << config.second << " classes";
    if (config == std::make_pair<int64_t, int64_t>(224, 1000)) {
      EXPECT_EQ(total, 86567656);  // torchvision's vit_b_16 documentation
    }
  }
}

}  // namespace
}  // namespace dnncast::models
