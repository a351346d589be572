// bert_base and gpt2_small written in PyTorch as our builders build them (models/transformers.cpp:
// BertForSequenceClassification's layout with separate q/k/v and post-LN; GPT-2's packed c_attn, causal
// mask and LM head tied to the token table), exported by torch 1.13 in training mode and imported from
// ONNX: parameters equal torch's count and the zoo's, MACs within 0.5% of the zoo's, simulated peak equal.
// Slow (a 440-500 MB export each, 25-50 s): label slow, in rotation.
#include <gtest/gtest.h>

#include <cstdlib>

#include "import/onnx_export.h"
#include "rotation.h"

namespace dnncast::import {
namespace {

// Python: the two models; argv: name, sequence length, output path. Prints torch's parameter count.
const char* kTransformers = R"PY(
import math
D, H, F, LAYERS = 768, 12, 3072, 12
name, L, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def heads(x):
    return x.view(x.shape[0], x.shape[1], H, D // H).permute(0, 2, 1, 3)
def merge(x):
    x = x.permute(0, 2, 1, 3).contiguous()
    return x.view(x.shape[0], x.shape[1], D)
class BertLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value, self.dense = (torch.nn.Linear(D, D) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(D, eps=1e-12), torch.nn.LayerNorm(D, eps=1e-12)
        self.up, self.down = torch.nn.Linear(D, F), torch.nn.Linear(F, D)
        self.drop = torch.nn.Dropout(0.1)
    def forward(self, x):
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        probs = self.drop(torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H), dim=-1))
        x = self.ln1(self.drop(self.dense(merge(torch.matmul(probs, v)))) + x)
        return self.ln2(self.drop(self.down(torch.nn.functional.gelu(self.up(x)))) + x)
class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.word, self.position, self.token_type = torch.nn.Embedding(30522, D), torch.nn.Embedding(512, D), torch.nn.Embedding(2, D)
        self.register_buffer("position_ids", torch.arange(L))
        self.ln, self.drop = torch.nn.LayerNorm(D, eps=1e-12), torch.nn.Dropout(0.1)
        self.layers = torch.nn.ModuleList(BertLayer() for _ in range(LAYERS))
        self.pooler, self.classifier = torch.nn.Linear(D, D), torch.nn.Linear(D, 1000)
    def forward(self, ids, types):
        x = self.word(ids) + self.token_type(types)
        x = self.drop(self.ln(x + self.position(self.position_ids)))
        for layer in self.layers:
            x = layer(x)
        return self.classifier(self.drop(torch.tanh(self.pooler(x[:, 0]))))
class Gpt2Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.c_attn, self.c_proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.c_fc, self.mlp_proj = torch.nn.Linear(D, F), torch.nn.Linear(F, D)
        self.drop = torch.nn.Dropout(0.1)
        self.register_buffer("mask", torch.triu(torch.full((L, L), -1e4), 1))
    def forward(self, x):
        q, k, v = (heads(part) for part in self.c_attn(self.ln_1(x)).split(D, dim=2))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H) + self.mask
        probs = self.drop(torch.softmax(scores, dim=-1))
        x = self.drop(self.c_proj(merge(torch.matmul(probs, v)))) + x
        return self.drop(self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))) + x
class Gpt2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(50257, D), torch.nn.Embedding(1024, D)
        self.register_buffer("position_ids", torch.arange(L))
        self.drop = torch.nn.Dropout(0.1)
        self.blocks = torch.nn.ModuleList(Gpt2Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(D)
    def forward(self, ids):
        x = self.drop(self.wte(ids) + self.wpe(self.position_ids))
        for block in self.blocks:
            x = block(x)
        return torch.nn.functional.linear(self.ln_f(x), self.wte.weight)
if name == "bert_base":
    model, example = Bert(), (torch.randint(0, 30522, (1, L)), torch.randint(0, 2, (1, L)))
else:
    model, example = Gpt2(), torch.randint(0, 50257, (1, L))
export(model, example, path)
print(json.dumps({"params": sum(p.numel() for p in model.parameters())}))
)PY";

void expect_matches_zoo(const std::string& model, int64_t seq) {
  std::string path = onnx_test::scratch() + "/" + model + ".onnx";
  std::string script_path = python_test::write_temp(std::string(onnx_test::kExportPrelude) + kTransformers);
  std::string output =
      python_test::run_python_command(script_path + " " + model + " " + std::to_string(seq) + " " + path);
  std::remove(script_path.c_str());
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  int64_t torch_params = std::stoll(output.substr(output.rfind("\"params\": ") + 10));
  models::ModelSpec spec;
  spec.batch = 4;
  onnx_test::Totals imported = onnx_test::totals(load_model(path, spec));
  std::remove(path.c_str());
  spec.seq_len = seq;
  onnx_test::Totals zoo = onnx_test::totals(load_model(model, spec));
  EXPECT_EQ(imported.params, torch_params) << model;
  EXPECT_EQ(imported.params, zoo.params) << model;
  EXPECT_NEAR(static_cast<double>(imported.macs), static_cast<double>(zoo.macs), 0.005 * static_cast<double>(zoo.macs))
      << model;
  EXPECT_EQ(imported.peak_bytes, zoo.peak_bytes) << model;
}

// 256 tokens for GPT-2: its causal mask (256 x 256) is small enough for the importer to read its values.
const std::vector<std::pair<std::string, int64_t>> kCases = {{"bert_base", 128}, {"gpt2_small", 256}};

// In rotation with the sweep's budget in mind: each case in one of 12 slices (most commits run neither);
// DNNCAST_ONNX_ZOO_MODELS (comma-separated) runs the ones it names.
TEST(OnnxTransformersSlow, BertBaseAndGpt2SmallMatchTheZoo) {
  const char* names = std::getenv("DNNCAST_ONNX_ZOO_MODELS");
  std::vector<std::pair<std::string, int64_t>> cases;
  if (names != nullptr) {
    for (const auto& entry : kCases)
      if (("," + std::string(names) + ",").find("," + entry.first + ",") != std::string::npos) cases.push_back(entry);
  } else {
    cases = rotation::pick(rotation::slice_of("OnnxTransformersSlow", 12), kCases);
  }
  for (const auto& [model, seq] : cases) {
    SCOPED_TRACE(model);
    expect_matches_zoo(model, seq);
  }
}

}  // namespace
}  // namespace dnncast::import
