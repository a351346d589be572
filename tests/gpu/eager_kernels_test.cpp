// The kernels PyTorch eager launches beyond the IR's ops (gpu/eager_kernels.h, data/hardware/eager_kernels.csv):
// GPT-2's attention streams its S x S scores once per kernel the modeling code launches, its gelu_new is eight
// kernels, and what that forecasts is what NeuSight measured node by node on a V100 (its published per-node labels,
// an independent measurement); the fused attention is untouched; a malformed file names itself.
#include "gpu/eager_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "core/csv.h"
#include "core/error.h"
#include "gpu/kernel_model.h"
#include "import/model_source.h"
#include "python_run.h"

namespace dnncast::gpu {
namespace {

namespace fs = std::filesystem;

Graph gpt2(int64_t seq, int64_t batch, const std::string& attention = "") {
  models::ModelSpec spec;
  spec.batch = batch;
  spec.seq_len = seq;
  spec.attention = attention;
  return import::load_model("gpt2_small", spec);
}

int node_named(const Graph& graph, const std::string& suffix) {
  for (int index = 0; index < graph.size(); ++index)
    if (graph.node(index).name.size() >= suffix.size() &&
        graph.node(index).name.compare(graph.node(index).name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return index;
  return -1;
}

double bytes_of(const std::vector<KernelShape>& kernels, KernelFamily family) {
  double bytes = 0;
  for (const KernelShape& shape : kernels)
    if (shape.family == family) bytes += shape.bytes;
  return bytes;
}

// GPT2Attention._attn in training (dropout on, causal): forward the scale (8 B), torch.where (8 B: its mask is
// broadcast over batch and heads) and the dropout (9 B) over the S x S scores; backward the dropout's (9), softmax's
// (12), where's (8) and the scale's (8). At batch 2
// the batched GEMMs copy q, k and v forward and the output's gradient backward (8 B each over q's size).
TEST(EagerKernels, Gpt2AttentionStreamsItsScoresOncePerKernel) {
  const Graph graph = gpt2(128, 2);
  const int index = node_named(graph, "h.0.attn.attention");
  ASSERT_GE(index, 0);
  const NodeKernels kernels = node_kernels(graph, index);
  const double scores = 2.0 * 12 * 128 * 128, query = 2.0 * 128 * 768;
  EXPECT_DOUBLE_EQ(bytes_of(kernels.forward, KernelFamily::Elementwise), (8 + 8 + 9) * scores + 3 * 8 * query);
  EXPECT_DOUBLE_EQ(bytes_of(kernels.backward, KernelFamily::Elementwise), (9 + 12 + 8 + 8) * scores + 8 * query);
  // In eval mode (inference) the dropout launches nothing.
  const NodeKernels eval = node_kernels(graph, index, node_cost(graph, index), NodePart::Whole, 1, false);
  EXPECT_DOUBLE_EQ(bytes_of(eval.forward, KernelFamily::Elementwise), (8 + 8) * scores + 3 * 8 * query);
  EXPECT_TRUE(node_kernels(graph, node_named(graph, "h.0.attn.resid_dropout"),
                           node_cost(graph, node_named(graph, "h.0.attn.resid_dropout")), NodePart::Whole, 1, false)
                  .forward.empty());
  // The fused path launches none of them.
  const Graph fused = gpt2(128, 2, "sdpa");
  const NodeKernels none = node_kernels(fused, node_named(fused, "h.0.attn.attention"));
  EXPECT_DOUBLE_EQ(
      bytes_of(none.forward, KernelFamily::Elementwise) + bytes_of(none.backward, KernelFamily::Elementwise), 0.0);
  // gelu_new: eight kernels forward, eleven backward (pow's backward is three), over the MLP's 4 x hidden
  // activations.
  const NodeKernels gelu = node_kernels(graph, node_named(graph, "h.0.mlp.act"));
  EXPECT_EQ(gelu.forward.size(), 8u);
  EXPECT_EQ(gelu.backward.size(), 11u);
}

// Gemma 2's soft-capped scores add the division, tanh and product over the S x S scores each way (rows "softcap");
// a QLoRA Linear dequantizes its weight in forward and in backward (2.5 bytes a weight for nf4: half a byte and its
// block's absmax read, 2 bytes written).
TEST(EagerKernels, SoftCappingAndDequantizationAreKernelsOfTheirOwn) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 32;
  spec.lora = "r=4";
  const std::string configs = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/";
  Graph gemma2 = import::load_model(configs + "gemma-2-2b.json", spec);
  const int attention = node_named(gemma2, "layers.0.self_attn.attention");
  ASSERT_GE(attention, 0);
  const NodeKernels capped = node_kernels(gemma2, attention);
  gemma2.mutable_nodes()[static_cast<size_t>(attention)].attrs.erase("softcap");
  const NodeKernels plain = node_kernels(gemma2, attention);
  const double scores = 2.0 * 8 * 32 * 32;
  EXPECT_DOUBLE_EQ(
      bytes_of(capped.forward, KernelFamily::Elementwise) - bytes_of(plain.forward, KernelFamily::Elementwise),
      (8 + 8 + 8) * scores);
  EXPECT_DOUBLE_EQ(
      bytes_of(capped.backward, KernelFamily::Elementwise) - bytes_of(plain.backward, KernelFamily::Elementwise),
      (8 + 12 + 8) * scores);
  spec.quantize = "nf4";
  const Graph qlora = import::load_model(configs + "llama-2-7b-hf.json", spec);
  const int up = node_named(qlora, "layers.3.mlp.up_proj");
  ASSERT_GE(up, 0);
  ASSERT_TRUE(qlora.node(up).has_attr("quantize"));
  const NodeKernels kernels = node_kernels(qlora, up);
  const double weights = 4096.0 * 11008;
  EXPECT_NEAR(bytes_of(kernels.forward, KernelFamily::Elementwise), (0.5 + 1.0 / 64 + 2) * weights, 1.0);
  EXPECT_NEAR(bytes_of(kernels.backward, KernelFamily::Elementwise), (0.5 + 1.0 / 64 + 2) * weights, 1.0);
}

// NeuSight's per-node labels of GPT2-Large training on a V100 (batch 1, 1,024 tokens): gelu_new's nodes in the first
// layer's MLP (pow, tanh, the muls and adds), forward and backward, less the time a node that launches no kernel
// takes (size, getitem: what timing one node alone costs), against the forecast of the GELU node.
TEST(EagerKernels, Gpt2GeluIsWhatNeuSightMeasuredOnAV100) {
  const fs::path labels = fs::path(DNNCAST_SOURCE_DIR) /
                          "../shared/data/public/neusight/labels/Tesla_V100-PCIE-32GB/gpt2_large-train-1024-1.csv.xz";
  const fs::path config = fs::path(DNNCAST_SOURCE_DIR) / "../shared/data/public/neusight/model_configs/gpt2_large.json";
  if (!fs::exists(labels) || !fs::exists(config)) GTEST_SKIP() << "no NeuSight labels beside the checkout";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("xz -dc '" + labels.string() + "'").c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string text;
  char buffer[65536];
  for (size_t got; (got = fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) text.append(buffer, got);
  std::istringstream in(text);
  std::vector<std::string> fields;
  int64_t line = 0;
  ASSERT_TRUE(read_csv_record(in, fields, line));
  std::map<std::string, size_t> column;
  for (size_t at = 0; at < fields.size(); ++at) column[fields[at]] = at;
  std::vector<double> no_kernel;
  double gelu = 0;
  int gelu_nodes = 0;
  const std::regex gelu_op(R"(function (mul|add)>|method (pow|tanh) )");
  std::vector<std::pair<double, double>> gelu_times;
  while (read_csv_record(in, fields, line)) {
    if (fields.size() < column.size()) continue;
    const std::string& target = fields[column["target"]];
    const double fw = std::atof(fields[column["fw_latency"]].c_str()),
                 bw = std::atof(fields[column["bw_latency"]].c_str());
    if ((target == "size" || target.find("function getitem>") != std::string::npos) && fw > 0) no_kernel.push_back(fw);
    const std::string& shape = fields[column["output_shape"]];  // a tensor's, not a tuple sum's "(1,)"
    if (fields[column["meta"]].find("GPT2MLP") != std::string::npos && std::regex_search(target, gelu_op) &&
        std::count(shape.begin(), shape.end(), ',') == 2)
      gelu_times.emplace_back(fw, bw), ++gelu_nodes;
  }
  ASSERT_GT(no_kernel.size(), 10u);
  std::sort(no_kernel.begin(), no_kernel.end());
  const double floor = no_kernel[no_kernel.size() / 2];
  for (const auto& [fw, bw] : gelu_times)
    gelu += std::max(0.0, fw - floor) + (bw > 0 ? std::max(0.0, bw - floor) : 0.0);
  EXPECT_EQ(gelu_nodes, 8);  // gelu_new's eight calls

  models::ModelSpec spec;
  spec.batch = 1;
  spec.seq_len = 1024;
  const Graph graph = import::load_model(config.string(), spec);
  const GpuKernelModel model = GpuKernelModel::load();
  const KernelDevice device = kernel_device(hardware::shipped_catalogue().gpu("v100-32gb"));
  const NodeKernels kernels = node_kernels(graph, node_named(graph, "h.0.mlp.act"));
  double forecast = 0;
  for (const auto* list : {&kernels.forward, &kernels.backward})
    for (const KernelShape& shape : *list) forecast += model.seconds(shape, device) * 1e3;
  EXPECT_NEAR(forecast / gelu, 1.0, 0.15) << "forecast " << forecast << " ms, measured " << gelu << " ms";
}

// A llama-shaped layer as Hugging Face's eager code runs it, traced op by op through PyTorch's own dispatcher on this
// CPU (scripts/eager-kernels-trace.py: a TorchDispatchMode, autograd's own functions for the backward), against the
// kernels `dnncast inspect --json` lists for the same nodes: every node's memory-bound kernels the same in number and
// within 10% in bytes, forward and backward. Two layers: one of multi-head attention at batch 2 (q, k, v and the
// output's gradient copied for the batched GEMMs), one of grouped-query attention (repeat_kv) at batch 3. And a Phi3
// layer: q, k and v sliced from one projection (each SliceBackward0 zeros the projection's size and copies its part
// in; two sums join them), gate and up chunked from another (one SplitBackward0: a cat). A GPT-2 block at batch 2
// and 1 (c_attn split; the keys' gradient back from q k^T without a copy; LayerNorm's backward two kernels on a GPU;
// gelu_new eight kernels forward, eleven backward). A BERT layer at batch 2 and 1 (its key projection copies the
// keys' transposed gradient to flatten it over several sequences only). A Gemma layer (its RMSNorm's weight an
// offset from 1). An OPT layer at batch 2 (torch.max's backward
// five kernels; _shape's copies' gradients pass back through the head split's view).
TEST(EagerKernels, DecoderLayersLaunchWhatPyTorchsDispatcherRuns) {
  const std::string script = std::string(DNNCAST_SOURCE_DIR) + "/scripts/eager-kernels-trace.py --check --dnncast " +
                             DNNCAST_BINARY_DIR + "/dnncast";
  // It compared something: RMSNorm's six forward kernels (pow, mean, add, rsqrt and two products), gelu_new's eight.
  const std::string rms_norm = "input_layernorm                              forward     6 /  6",
                    gelu_new = "mlp.act                                      backward   11 / 11",
                    layer_norm = "attention.output.LayerNorm                   backward    2 /  2";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"", rms_norm},
      {" --hidden 128 --heads 8 --kv-heads 2 --seq 48 --batch 3 --intermediate 344", rms_norm},
      {" --family phi3 --kv-heads 2", rms_norm},
      // GemmaRMSNorm adds its weight to 1 first: seven kernels.
      {" --family gemma", "input_layernorm                              forward     7 /  7"},
      {" --family gpt2", gelu_new},
      {" --family gpt2 --batch 1", gelu_new},
      {" --family bert", layer_norm},
      {" --family bert --batch 1", layer_norm},
      {" --family opt", "self_attn.attention                          backward    8 /  8"}};
  for (const auto& [size, compared] : runs) {
    const std::string output = python_test::run_python_command(script + size);
    EXPECT_EQ(output.rfind("FAILED", 0), std::string::npos) << size << "\n" << output;
    EXPECT_NE(output.find("\n0 node phases depart"), std::string::npos) << size << "\n" << output;
    EXPECT_NE(output.find(compared), std::string::npos) << size << "\n" << output;
  }
}

// Autograd sums the gradients of a tensor several nodes read, as the later ones arrive: the residual stream and the
// normalized input that q, k and v share. One sum per consumer but the last; none where nothing needs a gradient.
TEST(EagerKernels, GradientsOfASharedTensorAreSummedOncePerExtraConsumer) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 16;
  const Graph graph =
      import::load_model(std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-2-7b-hf.json", spec);
  const std::vector<std::vector<double>> sums = gradient_sums(graph);
  auto count_at = [&](const std::string& suffix) {
    return sums.at(static_cast<size_t>(node_named(graph, suffix))).size();
  };
  EXPECT_EQ(count_at("layers.0.self_attn.q_proj"), 1u);  // q, k and v read the norm's output: two sums
  EXPECT_EQ(count_at("layers.0.self_attn.k_proj"), 1u);
  EXPECT_EQ(count_at("layers.0.self_attn.v_proj"), 0u);
  EXPECT_EQ(count_at("layers.0.post_attention_layernorm"), 1u);  // the residual stream, also read by add_2
  EXPECT_EQ(count_at("layers.0.add_2"), 0u);
  EXPECT_EQ(count_at("model.embed_tokens"), 0u);  // its input is token ids
  // The embedding's output feeds layer 0's norm and its first residual add: one sum, of the hidden states.
  EXPECT_EQ(count_at("layers.0.input_layernorm"), 1u);
  EXPECT_DOUBLE_EQ(sums.at(static_cast<size_t>(node_named(graph, "layers.0.input_layernorm"))).at(0), 2.0 * 16 * 4096);
}

// GPT-2's c_attn output split into query, key and value (torch.split): autograd joins the three parts' gradients in
// one cat (SplitBackward0: read them, write c_attn's output gradient), not in two sums as for tensors read whole.
TEST(EagerKernels, TheGradientsOfASplitsPartsAreJoinedByOneCat) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 16;
  const Graph graph = import::load_model(std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/gpt2.json", spec);
  const std::vector<std::vector<double>> sums = gradient_sums(graph);
  const double whole = 2.0 * 16 * 3 * 768;  // c_attn's output
  double cat_bytes = 0;
  int cats = 0;
  for (const char* part : {"h.0.attn.query", "h.0.attn.key", "h.0.attn.value"}) {
    const int index = node_named(graph, part);
    ASSERT_EQ(graph.node(index).op, "Slice") << part;
    EXPECT_TRUE(sums.at(static_cast<size_t>(index)).empty()) << part;
    for (const KernelShape& kernel : node_kernels(graph, index).backward) cat_bytes += kernel.bytes, ++cats;
  }
  EXPECT_EQ(cats, 1);
  EXPECT_DOUBLE_EQ(cat_bytes, 8 * whole);
  // Without the label the parts are indexed one by one (SliceBackward0 each: zeros of c_attn's size, the part copied
  // in; two sums join them), and the architecture's hash is the same: the forward computes the same.
  Graph indexed = graph;
  for (Node& node : indexed.mutable_nodes()) node.attrs.erase("split");
  cat_bytes = 0, cats = 0;
  for (const char* part : {"h.0.attn.query", "h.0.attn.key", "h.0.attn.value"})
    for (const KernelShape& kernel : node_kernels(indexed, node_named(indexed, part)).backward)
      cat_bytes += kernel.bytes, ++cats;
  EXPECT_EQ(cats, 6);
  EXPECT_DOUBLE_EQ(cat_bytes, 3 * 4 * whole + 8 * whole);
  EXPECT_EQ(gradient_sums(indexed).at(static_cast<size_t>(node_named(indexed, "h.0.attn.query"))).size(), 1u);
  EXPECT_EQ(indexed.architecture_hash(), graph.architecture_hash());
}

TEST(EagerKernels, AMalformedFileNamesFileAndLine) {
  const std::string path = (fs::temp_directory_path() / "dnncast_bad_eager_kernels.csv").string();
  {
    std::ofstream out(path);
    out << "family,op,phase,operand,count,bytes_per_element,flops_per_element,mode,if,what\n"
        << "gpt2,GELU,sideways,output,1,8,1,replace,,x\n";
  }
  try {
    load_eager_kernels(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(path + " line 2: phase must be forward or backward"), std::string::npos)
        << error.what();
  }
  fs::remove(path);
  // The shipped file loads.
  EXPECT_FALSE(load_eager_kernels(default_eager_kernels_path()).empty());
}

}  // namespace
}  // namespace dnncast::gpu
