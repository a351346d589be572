// ONNX import: torchvision models exported by Debian's torch agree with the zoo builders (params
// exactly, MACs within 0.5%, simulated peak equal); a small transformer written in PyTorch imports
// with torch's own parameter count and the MACs of its Linear layers and attention; malformed
// files and unsupported ops are one-line errors naming the file (exit 2 in the CLI).
#include "import/onnx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "core/error.h"
#include "forecast/forecast.h"
#include "import/model_source.h"
#include "memory/simulator.h"
#include "models/zoo.h"
#include "onnx_export.h"

namespace dnncast::import {
namespace {

using nlohmann::json;
using onnx_test::scratch;

// Runs `script`, which exports a model to sys.argv[1] and prints a JSON line with PyTorch's "params"
// and "macs" at batch 2, imports `path` at batch 2 into `graph` and checks both counts against it.
void export_and_check_costs(const std::string& script, const std::string& path, Graph& graph) {
  std::string script_path = python_test::write_temp(script);
  std::string output = python_test::run_python_command(script_path + " " + path);
  std::remove(script_path.c_str());
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  std::string json_line = output.substr(output.rfind('{'));
  auto number = [&](const std::string& key) {
    size_t at = json_line.find("\"" + key + "\": ");
    return std::stoll(json_line.substr(at + key.size() + 4));
  };
  models::ModelSpec spec;
  spec.batch = 2;
  graph = load_model(path, spec);
  forecast::Inspection inspection = forecast::inspect(graph);
  EXPECT_EQ(inspection.total.params, number("params"));
  EXPECT_EQ(inspection.total.macs, number("macs"));
}

TEST(OnnxImport, Resnet18MatchesTheZoo) { onnx_test::expect_matches_zoo("resnet18"); }
TEST(OnnxImport, MobilenetV2MatchesTheZoo) { onnx_test::expect_matches_zoo("mobilenet_v2"); }

// A BERT-like encoder layer stack (embeddings, post-LN attention with separate q/k/v, Erf GELU MLP),
// small; PyTorch's own parameter count and a MAC count from its module sizes are the references.
TEST(OnnxImport, TransformerEncoderMatchesTorch) {
  std::string path = scratch() + "/encoder.onnx";
  std::string script = std::string(onnx_test::kExportPrelude) + R"PY(
import math
D, H, L, V, F, LAYERS = 64, 4, 16, 500, 256, 2
class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (torch.nn.Linear(D, D) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(D, eps=1e-12), torch.nn.LayerNorm(D, eps=1e-12)
        self.up, self.down = torch.nn.Linear(D, F), torch.nn.Linear(F, D)
        self.drop = torch.nn.Dropout(0.1)
    def heads(self, x):
        n, l, _ = x.shape
        return x.view(n, l, H, D // H).permute(0, 2, 1, 3)
    def forward(self, x):
        q, k, v = self.heads(self.q(x)), self.heads(self.k(x)), self.heads(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H)
        probs = self.drop(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.shape[0], ctx.shape[1], D)
        x = self.ln1(x + self.drop(self.o(ctx)))
        return self.ln2(x + self.drop(self.down(torch.nn.functional.gelu(self.up(x)))))
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        self.head = torch.nn.Linear(D, 3)
    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x[:, 0])
model = Encoder()
export(model, torch.randint(0, V, (1, L)), sys.argv[1])
N = 2
linear_macs = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear) and m is not model.head) * N * L
attention_macs = LAYERS * 2 * N * H * L * L * (D // H)
print(json.dumps({"params": sum(p.numel() for p in model.parameters()),
                  "macs": linear_macs + attention_macs + N * D * 3}))
)PY";
  Graph graph;
  ASSERT_NO_FATAL_FAILURE(export_and_check_costs(script, path, graph));
  int attention = 0, gelu = 0, layer_norm = 0, embedding = 0;
  for (const Node& node : graph.nodes()) {
    attention += node.op == "ScaledDotProductAttention";
    gelu += node.op == "GELU";
    layer_norm += node.op == "LayerNorm";
    embedding += node.op == "Embedding";
  }
  EXPECT_EQ(attention, 2);
  EXPECT_EQ(gelu, 2);
  EXPECT_EQ(layer_norm, 4);
  EXPECT_EQ(embedding, 1);
}

// The patterns of vit_b_16 and gpt2_small (tests/import/slow has the full models against the zoo), small:
// a ViT block with nn.MultiheadAttention(batch_first), a GPT-2 block (packed c_attn, additive causal mask),
// a position table gathered by position_ids, an LM head tied to the token table.
TEST(OnnxImport, MultiheadAttentionCausalMaskAndTiedHeadMatchTorch) {
  std::string path = scratch() + "/tiny_gpt.onnx";
  std::string script = std::string(onnx_test::kExportPrelude) + R"PY(
import math
D, H, L, V, P = 64, 4, 16, 300, 32
class VitBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(D, eps=1e-6)
        self.attn = torch.nn.MultiheadAttention(D, H, dropout=0.0, batch_first=True)
    def forward(self, x):
        y = self.ln(x)
        y, _ = self.attn(y, y, y, need_weights=False)
        return x + y
class CausalBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn, self.c_proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.register_buffer("mask", torch.triu(torch.full((L, L), -1e4), 1))
    def forward(self, x):
        q, k, v = (p.view(p.shape[0], L, H, D // H).permute(0, 2, 1, 3) for p in self.c_attn(x).split(D, dim=2))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H) + self.mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return self.c_proj(ctx.view(ctx.shape[0], L, D)) + x
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(V, D), torch.nn.Embedding(P, D)
        self.register_buffer("position_ids", torch.arange(L))
        self.vit, self.causal = VitBlock(), CausalBlock()
    def forward(self, ids):
        x = self.causal(self.vit(self.wte(ids) + self.wpe(self.position_ids)))
        return torch.nn.functional.linear(x, self.wte.weight)
model = Net()
export(model, torch.randint(0, V, (1, L)), sys.argv[1])
N = 2
linear = sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear))
macs = N * L * (linear + 3 * D * D + V * D) + 2 * 2 * N * H * L * L * (D // H)
print(json.dumps({"params": sum(p.numel() for p in model.parameters()), "macs": macs}))
)PY";
  Graph graph;
  ASSERT_NO_FATAL_FAILURE(export_and_check_costs(script, path, graph));
  int attention = 0, causal = 0, tied = 0, copies = 0;
  for (const Node& node : graph.nodes()) {
    attention += node.op == "ScaledDotProductAttention";
    causal += node.op == "ScaledDotProductAttention" && node.attr_int("causal", 0) == 1;
    tied += node.op == "Linear" && !node.attr_str("tied_to", "").empty();
    copies += node.op == "Permute" && node.attr_int("contiguous", 0) == 1;
    if (node.op == "PositionEmbedding") {
      EXPECT_EQ(node.attr_int("length", 0), 32);  // the whole table
    }
  }
  EXPECT_EQ(attention, 2);
  EXPECT_EQ(causal, 1);
  EXPECT_EQ(tied, 1);
  EXPECT_EQ(copies, 2);  // the ViT block's head split and merge, as the zoo builds them
}

// Hand-built files (onnx.helper): name -> how it is made. Each must fail with `expected` in the message.
struct BadFile {
  const char* name;
  const char* python;    // builds `model`; helpers h = onnx.helper, T = onnx.TensorProto
  const char* expected;  // substring of the error
};

const BadFile kBadFiles[] = {
    {"dangling", "nodes=[h.make_node('Relu',['nowhere'],['y'],name='relu1')]",
     "node 'relu1' (Relu): input 'nowhere' is produced by no"},
    {"absurd_dims", "nodes=[h.make_node('Conv',['x','w'],['y'],name='conv1')]; inits=[tensor('w',[1<<30,1<<30,3,3])]",
     "initializer 'w': more than"},
    {"big_initializer", "nodes=[h.make_node('Conv',['x','w'],['y'],name='conv1')]; inits=[tensor('w',[4096,4096,3,3])]",
     "initializer 'w': declares 4096x4096x3x3 elements of 4 bytes, more than the file's"},
    {"wrong_channels",
     "nodes=[h.make_node('Conv',['x','w'],['y'],name='conv1')]; inits=[h.make_tensor('w',T.FLOAT,[8,5,3,3],[0.0]*360)]",
     "node 'conv1' (Conv): weight 8x5x3x3 with group 1 takes 5 channels, the input has 3"},
    {"unknown",
     "nodes=[h.make_node('Relu',['x'],['a'],name='r'),h.make_node('TopK',['a'],['b'],name='top1'),h.make_node('TopK',['"
     "b'],['c'],name='top2'),h.make_node('Det',['c'],['y'],name='det1')]",
     "unsupported ONNX ops: Det x1 (first 'det1'), TopK x2 (first 'top1'); --allow-unknown"},
    {"nested",
     "g=h.make_graph([],'leaf',[],[])\nfor i in range(40): "
     "g=h.make_graph([h.make_node('If',['x'],['y'],then_branch=g)],'g',[],[])\nnodes=[h.make_node('If',['x'],['y'],"
     "name='if1',then_branch=g)]",
     "not an ONNX model: the protobuf does not parse (truncated, garbage, or nested deeper than 64)"},
    {"opset", "nodes=[h.make_node('Relu',['x'],['y'],name='r')]; opset=9", "opset 9 is not supported"},
    // Found by fuzz_onnx in CI: an empty Clip bound or Dropout ratio was an internal error (vector::at).
    {"empty_clip_min",
     "nodes=[h.make_node('Clip',['x','lo'],['y'],name='clip1')]; inits=[h.make_tensor('lo',T.FLOAT,[0],[])]",
     "node 'clip1' (Clip): input 1 must hold one value, not 0"},
    {"empty_dropout_ratio",
     "nodes=[h.make_node('Dropout',['x','p'],['y'],name='drop1')]; inits=[h.make_tensor('p',T.FLOAT,[0],[])]",
     "node 'drop1' (Dropout): input 1 must hold one value, not 0"},
};

std::string build_bad_files() {
  std::string script = R"PY(
import sys, onnx
from onnx import helper as h, TensorProto as T
def tensor(name, dims, raw=b''):
    t = T(); t.name = name; t.data_type = T.FLOAT; t.dims.extend(dims); t.raw_data = raw
    return t
def save(name, nodes, inits=[], opset=13):
    x = h.make_tensor_value_info('x', T.FLOAT, ['batch', 3, 8, 8])
    y = h.make_tensor_value_info('y', T.FLOAT, None)
    graph = h.make_graph(nodes, name, [x], [y], initializer=inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid('', opset)])
    open(sys.argv[1] + '/' + name + '.onnx', 'wb').write(model.SerializeToString())
)PY";
  for (const BadFile& bad : kBadFiles)
    script += std::string("inits=[]; opset=13\n") + bad.python + "\nsave('" + bad.name + "', nodes, inits, opset)\n";
  std::string script_path = python_test::write_temp(script);
  std::string output = python_test::run_python_command(script_path + " " + scratch());
  std::remove(script_path.c_str());
  return output;
}

std::string error_of(const std::string& path, bool allow_unknown = false) {
  models::ModelSpec spec;
  spec.allow_unknown_ops = allow_unknown;
  try {
    load_model(path, spec);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(OnnxImport, MalformedFilesAreOneLineErrorsNamingFileAndNode) {
  std::string output = build_bad_files();
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  for (const BadFile& bad : kBadFiles) {
    std::string path = scratch() + "/" + bad.name + ".onnx";
    std::string message = error_of(path);
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << bad.name << ": " << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << bad.name << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // Truncated and garbage bytes: the first half of a valid file, and random bytes.
  std::ifstream file(scratch() + "/unknown.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 20u);
  std::ofstream(scratch() + "/truncated.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>((i * 2654435761u) >> 13);
  std::ofstream(scratch() + "/garbage.onnx", std::ios::binary) << garbage;
  for (const char* name : {"truncated", "garbage"}) {
    std::string path = scratch() + "/" + name + ".onnx";
    std::string message = error_of(path);
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("not an ONNX model"), std::string::npos) << message;
    cli_test::Result cli = cli_test::run("memory", {path, "--batch", "2"}, scratch());
    EXPECT_EQ(cli.exit_code, 2) << cli.err;
    EXPECT_NE(cli.err.find(path + ": not an ONNX model"), std::string::npos) << cli.err;
  }
}

TEST(OnnxImport, AllowUnknownTreatsUnsupportedOpsAsElementwiseAndInspectMarksThem) {
  std::string output = build_bad_files();
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  std::string path = scratch() + "/unknown.onnx";
  models::ModelSpec spec;
  spec.batch = 2;
  spec.allow_unknown_ops = true;
  Graph graph = load_model(path, spec);
  forecast::Inspection inspection = forecast::inspect(graph);
  int marked = 0;
  for (const forecast::LayerRow& row : inspection.layers) marked += row.kind.rfind("unknown:", 0) == 0;
  EXPECT_EQ(marked, 3);
  EXPECT_EQ(graph.node(graph.outputs().at(0)).shape, (TensorShape{2, 3, 8, 8}));
  // The CLI: exit 2 and the file named without the flag; a warning once per type with it.
  cli_test::Result refused = cli_test::run("inspect", {path}, scratch());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find(path + ": unsupported ONNX ops: Det x1"), std::string::npos) << refused.err;
  cli_test::Result allowed = cli_test::run("inspect", {path, "--allow-unknown"}, scratch());
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("unsupported ONNX op TopK (2 nodes, first 'top1') treated as elementwise"),
            std::string::npos)
      << allowed.err;
  EXPECT_NE(allowed.out.find("unknown:TopK"), std::string::npos) << allowed.out;
}

// Issue 37: a file exported for inference (torch.onnx.export's default on model.eval(): BatchNorm folded into the
// convolutions, Dropout dropped) is named so, with the export call that keeps the training graph; a training export
// of the same model is not. Real exports of three families: BatchNorm (resnet18), BatchNorm and Dropout
// (mobilenet_v3_small), Dropout and no BatchNorm (squeezenet1_1).
TEST(OnnxImport, InferenceExportsAreNamedTrainingExportsAreNot) {
  const std::string script = std::string(onnx_test::kExportPrelude) + R"PY(
for name in ["resnet18", "mobilenet_v3_small", "squeezenet1_1"]:
    module = getattr(torchvision.models, name)()
    x = torch.randn(1, 3, 64, 64)
    export(module, x, sys.argv[1] + "/" + name + "-train.onnx")
    torch.onnx.export(module.eval(), x, sys.argv[1] + "/" + name + "-eval.onnx")
print("ok")
)PY";
  const std::string script_path = scratch() + "/export_modes.py";
  std::ofstream(script_path) << script;
  std::string output = python_test::run_python_command(script_path + " " + scratch());
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  for (const char* name : {"resnet18", "mobilenet_v3_small", "squeezenet1_1"}) {
    models::ModelSpec spec;
    spec.batch = 2;
    const Graph trained = load_model(scratch() + "/" + name + "-train.onnx", spec);
    EXPECT_TRUE(trained.notes.empty()) << name << ": " << (trained.notes.empty() ? "" : trained.notes[0]);
    const Graph eval = load_model(scratch() + "/" + name + "-eval.onnx", spec);
    ASSERT_EQ(eval.notes.size(), 1u) << name;
    EXPECT_NE(eval.notes[0].find("looks exported for inference"), std::string::npos) << eval.notes[0];
    EXPECT_NE(eval.notes[0].find("training=torch.onnx.TrainingMode.TRAINING"), std::string::npos) << eval.notes[0];
    EXPECT_LT(forecast::inspect(eval).total.params, forecast::inspect(trained).total.params + 1) << name;
  }
  // The CLI says it once on stderr and in --json.
  const std::string eval_path = scratch() + "/resnet18-eval.onnx";
  cli_test::Result inspect = cli_test::run("inspect", {eval_path, "--batch", "2", "--json"}, scratch());
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(inspect.err.rfind("note: " + eval_path + " looks exported for inference (", 0), 0u) << inspect.err;
  EXPECT_EQ(inspect.err.find('\n'), inspect.err.size() - 1) << inspect.err;
  EXPECT_NE(inspect.out.find("\"import_notes\""), std::string::npos);
  cli_test::Result memory = cli_test::run("memory", {eval_path, "--batch", "2", "--json"}, scratch());
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  EXPECT_NE(memory.out.find("\"import_notes\""), std::string::npos);
}

// Issue 37: a node name that is not UTF-8 (bytes a file may hold) is made valid where the file is read, so every
// JSON writer is safe: `inspect --json` answers instead of an internal error.
TEST(OnnxImport, NamesThatAreNotUtf8AreReplacedWhereRead) {
  const std::string script = std::string(onnx_test::kExportPrelude) + R"PY(
import onnx
from onnx import helper, TensorProto
node = helper.make_node("Relu", ["input"], ["out"], name="RELUNAME")
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3, 8, 8])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
data = model.SerializeToString().replace(b"RELUNAME", b"\xffRELU\xfe\xc3Z")
open(sys.argv[1], "wb").write(data)
print("ok")
)PY";
  const std::string script_path = scratch() + "/bad_utf8.py";
  const std::string path = scratch() + "/bad_utf8.onnx";
  std::ofstream(script_path) << script;
  std::string output = python_test::run_python_command(script_path + " " + path);
  ASSERT_EQ(output.rfind("FAILED", 0), std::string::npos) << output;
  for (const char* command : {"inspect", "memory", "predict"}) {
    cli_test::Result result = cli_test::run(command, {path, "--batch", "1", "--json"}, scratch());
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    json document = json::parse(result.out, nullptr, false);
    EXPECT_FALSE(document.is_discarded()) << command << ": " << result.out;
  }
  cli_test::Result inspect = cli_test::run("inspect", {path, "--batch", "1", "--json"}, scratch());
  EXPECT_NE(inspect.out.find("\xef\xbf\xbdRELU\xef\xbf\xbd"), std::string::npos) << inspect.out;  // U+FFFD each
}

}  // namespace
}  // namespace dnncast::import
