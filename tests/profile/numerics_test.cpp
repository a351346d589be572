// Numerical fidelity: the executor's loss and every parameter's gradient after one step equal what
// PyTorch computes from the same weights, input and targets (docs/MEASUREMENT.md "Numerical
// fidelity"). dump_training_step writes the executor's step; tests/profile/torch_reference_step.py
// (Debian's /usr/bin/python3, torch 1.13) recomputes it — torchvision's own model for every CNN
// family, an independent torch.nn.functional interpreter of the graph JSON for bert, gpt2 and every
// op of the registry — and this file compares: loss relative difference, and per tensor the
// relative L2 difference ||ours - theirs|| / ||theirs||. Dropout is 0 on both sides.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/builder.h"
#include "graph/checkpoint.h"
#include "graph/lora.h"
#include "graph/op_registry.h"
#include "import/graph_json.h"
#include "models/hf_config.h"
#include "models/transformers.h"
#include "models/zoo.h"
#include "profile/measure.h"
#include "python_run.h"

namespace dnncast::profile::test {
namespace {

using json = nlohmann::json;
using Ints = std::vector<int64_t>;
using Attrs = std::map<std::string, AttrValue>;

// Both sides run libtorch 1.13.1's kernels on the same CPU with one thread, so where the executor
// builds the same ops as PyTorch the results are bit-identical; where it builds equivalent ones
// (ViT's attention, SDPA's scaling of q) they differ by ~2e-7. A real difference of the graph gives
// 1e-3 and more (MutationsAreCaught: BatchNorm eps 1e-5 for 1e-3 moves the loss by 7e-4). The
// measured maxima are in docs/MEASUREMENT.md "Numerical fidelity".
constexpr double kLossTolerance = 1e-5;
constexpr double kGradTolerance = 1e-4;

struct Case {
  std::string label;
  Graph graph;
  std::string reference;  // torchvision | interpreter
  std::string model;      // torchvision's name
  json kwargs = json::object();
  std::string reference_graph_json;  // "" = the graph run; else what the interpreter reads instead
};

struct Result {
  std::string label;
  std::string error;  // the reference's error, or a missing gradient
  int64_t params = 0;
  double loss_ours = 0, loss_theirs = 0, loss_rel = 0;
  double grad_rel = 0;    // largest over parameters and float inputs
  std::string worst;      // the tensor with that difference
  double buffer_rel = 0;  // largest over BatchNorm running statistics
  int64_t tensors = 0;    // gradients compared
};

std::vector<float> read_floats(const std::string& path, size_t count) {
  std::vector<float> values(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) return {};
  return values;
}

size_t element_count(const json& entry) {
  size_t count = 1;
  for (const json& dim : entry.at("shape")) count *= dim.get<size_t>();
  return count;
}

// ||a - b|| / ||b|| in double; ||a - b|| itself when b is zero. -1 when a file is unreadable.
double relative_l2(const std::string& ours, const std::string& theirs, size_t count) {
  std::vector<float> a = read_floats(ours, count), b = read_floats(theirs, count);
  if (a.size() != count || b.size() != count) return -1;
  double diff = 0, norm = 0;
  for (size_t index = 0; index < count; ++index) {
    double d = static_cast<double>(a[index]) - static_cast<double>(b[index]);
    diff += d * d;
    norm += static_cast<double>(b[index]) * static_cast<double>(b[index]);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

Result compare_case(const Case& c, const std::string& dir) {
  Result r;
  r.label = c.label;
  json ours = json::parse(std::ifstream(dir + "/manifest.json"));
  json theirs = json::parse(std::ifstream(dir + "/reference.json"));
  if (theirs.contains("error")) {
    r.error = theirs["error"].get<std::string>();
    return r;
  }
  r.loss_ours = ours["loss"].get<double>();
  r.loss_theirs = theirs["loss"].get<double>();
  r.loss_rel = std::abs(r.loss_ours - r.loss_theirs) / std::max(std::abs(r.loss_theirs), 1e-12);
  auto check = [&](const json& entry, const std::string& name, const json& reference_files) {
    if (!entry.contains("grad")) return;
    if (!reference_files.contains(name)) {
      r.error += "no reference gradient for " + name + "; ";
      return;
    }
    double rel = relative_l2(dir + "/" + entry["grad"].get<std::string>(),
                             dir + "/" + reference_files[name].get<std::string>(), element_count(entry));
    if (rel < 0) r.error += "unreadable gradient of " + name + "; ";
    ++r.tensors;
    if (rel > r.grad_rel || rel < 0) {
      r.grad_rel = rel < 0 ? 1e9 : rel;
      r.worst = name;
    }
  };
  for (const json& param : ours["parameters"]) {
    r.params += static_cast<int64_t>(element_count(param));
    check(param, param["name"].get<std::string>(), theirs["grads"]);
    // A frozen parameter (Node::frozen) has no gradient on either side; one side alone is a difference.
    if (!param.contains("grad") && theirs["grads"].contains(param["name"].get<std::string>()))
      r.error += "PyTorch has a gradient of " + param["name"].get<std::string>() + ", the executor none; ";
  }
  for (const json& input : ours["inputs"]) check(input, input["node"].get<std::string>(), theirs["input_grads"]);
  for (const json& buffer : ours["buffers"]) {
    std::string name = buffer["name"].get<std::string>();
    if (buffer["dtype"] != "f32" || name.find(".running_") == std::string::npos) continue;
    if (!theirs["buffers"].contains(name)) {
      r.error += "no reference buffer " + name + "; ";
      continue;
    }
    double rel = relative_l2(dir + "/" + buffer["file"].get<std::string>(),
                             dir + "/" + theirs["buffers"][name].get<std::string>(), element_count(buffer));
    r.buffer_rel = std::max(r.buffer_rel, rel < 0 ? 1e9 : rel);
  }
  return r;
}

// Scratch space for the raw tensors (a few GB per batch of cases): the tmpfs /dev/shm when it has
// room (no disk writes), /tmp otherwise (a container's 64 MB /dev/shm).
std::string scratch_root() {
  struct statvfs stats {};
  if (statvfs("/dev/shm", &stats) == 0 &&
      static_cast<double>(stats.f_bavail) * static_cast<double>(stats.f_frsize) > 6e9)
    return "/dev/shm";
  return "/tmp";
}

std::string make_temp_dir() {
  std::string pattern = scratch_root() + "/dnncast-numerics-XXXXXX";
  std::vector<char> path(pattern.begin(), pattern.end());
  path.push_back('\0');
  const char* made = mkdtemp(path.data());
  return made == nullptr ? "" : made;
}

void remove_dir(const std::string& dir) {
  if (dir.find("/dnncast-numerics-") == std::string::npos) return;  // never anything else
  std::string command = "rm -rf '" + dir + "'";
  if (std::system(command.c_str()) != 0) std::printf("  could not remove %s\n", dir.c_str());
}

// Dumps every case, runs the reference once per batch of cases (batches of at most ~150 M
// parameters, so that the raw files stay a few GB at most), compares, removes the files.
std::vector<Result> run_cases(const std::vector<Case>& cases) {
  std::vector<Result> results;
  size_t next = 0;
  while (next < cases.size()) {
    std::vector<std::pair<size_t, std::string>> batch;
    int64_t batch_params = 0;
    json request = json::array();
    while (next < cases.size() && (batch.empty() || batch_params < 150'000'000)) {
      const Case& c = cases[next];
      std::string dir = make_temp_dir();
      StepDump dump;
      std::string error;
      try {
        dump = dump_training_step(c.graph, dir, /*seed=*/7);
        if (!c.reference_graph_json.empty()) std::ofstream(dir + "/graph.json") << c.reference_graph_json;
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (!error.empty()) {
        Result r;
        r.label = c.label;
        r.error = "executor: " + error;
        results.push_back(r);
        remove_dir(dir);
        ++next;
        continue;
      }
      batch_params += dump.parameters;
      request.push_back({{"dir", dir}, {"reference", c.reference}, {"model", c.model}, {"kwargs", c.kwargs}});
      batch.emplace_back(next++, dir);
    }
    if (batch.empty()) continue;
    std::string request_path = batch.front().second + "/cases.json";
    std::ofstream(request_path) << request.dump();
    std::string output = python_test::run_python_command(std::string(DNNCAST_SOURCE_DIR) +
                                                         "/tests/profile/torch_reference_step.py " + request_path);
    for (const auto& [index, dir] : batch) {
      Result r;
      try {
        r = compare_case(cases[index], dir);
      } catch (const std::exception& e) {
        r.label = cases[index].label;
        r.error = std::string("no reference result (") + e.what() + "); Python said:\n" + output.substr(0, 3000);
      }
      results.push_back(r);
      remove_dir(dir);
    }
  }
  return results;
}

void print_results(const std::vector<Result>& results) {
  std::printf("  %-34s %11s %10s %10s %10s  %s\n", "case", "params", "loss_rel", "grad_rel", "bn_rel", "worst tensor");
  for (const Result& r : results) {
    if (!r.error.empty()) {
      std::printf("  %-34s ERROR %s\n", r.label.c_str(), r.error.substr(0, 300).c_str());
      continue;
    }
    std::printf("  %-34s %11lld %10.2e %10.2e %10.2e  %s (%lld tensors)\n", r.label.c_str(),
                static_cast<long long>(r.params), r.loss_rel, r.grad_rel, r.buffer_rel, r.worst.c_str(),
                static_cast<long long>(r.tensors));
  }
}

void expect_match(const Result& r) {
  EXPECT_TRUE(r.error.empty()) << r.label << ": " << r.error;
  if (!r.error.empty()) return;
  EXPECT_GT(r.tensors, 0) << r.label << ": no gradient compared";
  EXPECT_LT(r.loss_rel, kLossTolerance) << r.label << ": loss " << r.loss_ours << " vs PyTorch " << r.loss_theirs;
  EXPECT_LT(r.grad_rel, kGradTolerance) << r.label << ": gradient of " << r.worst;
  EXPECT_LT(r.buffer_rel, kGradTolerance) << r.label << ": BatchNorm running statistics";
}

// ---- One model per zoo family -------------------------------------------------------------------

struct ZooCase {
  std::string model;
  Ints input;  // C x H x W, or {seq_len}
  json kwargs;
};

// The smallest member of each family at the smallest input it takes (inception_v3 needs 75 px).
const std::vector<ZooCase>& zoo_cases() {
  static const std::vector<ZooCase> cases = {
      {"alexnet", {3, 64, 64}, {{"num_classes", 10}}},
      {"vgg11", {3, 32, 32}, {{"num_classes", 10}}},
      {"resnet18", {3, 32, 32}, {{"num_classes", 10}}},
      {"resnext50_32x4d", {3, 32, 32}, {{"num_classes", 10}}},
      {"wide_resnet50_2", {3, 32, 32}, {{"num_classes", 10}}},
      {"densenet121", {3, 32, 32}, {{"num_classes", 10}}},
      {"efficientnet_b0", {3, 32, 32}, {{"num_classes", 10}}},
      {"regnet_y_400mf", {3, 32, 32}, {{"num_classes", 10}}},
      {"convnext_tiny", {3, 32, 32}, {{"num_classes", 10}}},
      {"googlenet", {3, 32, 32}, {{"num_classes", 10}, {"aux_logits", false}, {"init_weights", false}}},
      {"inception_v3", {3, 75, 75}, {{"num_classes", 10}, {"aux_logits", false}, {"init_weights", false}}},
      {"mobilenet_v3_small", {3, 32, 32}, {{"num_classes", 10}}},
      {"mnasnet0_5", {3, 32, 32}, {{"num_classes", 10}}},
      {"shufflenet_v2_x0_5", {3, 32, 32}, {{"num_classes", 10}}},
      {"squeezenet1_1", {3, 32, 32}, {{"num_classes", 10}}},
      {"vit_b_16", {3, 32, 32}, {{"num_classes", 10}, {"image_size", 32}}},
      {"bert_base", {8}, {}},
      {"gpt2_small", {8}, {}},
  };
  return cases;
}

Case zoo_case(const ZooCase& z) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.num_classes = 10;
  const models::ZooEntry& entry = models::zoo_entry(z.model);
  if (entry.kind == "transformer") {
    spec.seq_len = z.input[0];
  } else {
    spec.input = z.input;
  }
  Case c{z.model, models::build_zoo_model(z.model, spec), "torchvision", z.model, z.kwargs, ""};
  if (entry.family == "bert" || entry.family == "gpt2") c.reference = "interpreter";  // not in torchvision
  std::string input;
  for (int64_t dim : z.input) input += (input.empty() ? "" : "x") + std::to_string(dim);
  c.label = z.model + " " + (entry.kind == "transformer" ? "seq " : "") + input;
  return c;
}

TEST(Numerics, OneModelPerZooFamilyMatchesPyTorch) {
  std::set<std::string> families, covered;
  for (const models::ZooEntry& entry : models::zoo()) families.insert(entry.family);
  std::vector<Case> cases;
  for (const ZooCase& z : zoo_cases()) {
    cases.push_back(zoo_case(z));
    covered.insert(models::zoo_entry(z.model).family);
  }
  EXPECT_EQ(covered, families) << "every zoo family has a case";
  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), cases.size());
  for (const Result& r : results) expect_match(r);
}

// Configs of tests/models/hf_configs at batch 2 x `seq`, each against the interpreter's reading of the same graph.
void expect_configs_match(const std::vector<std::string>& configs, int64_t seq) {
  std::vector<Case> cases;
  for (const std::string& config : configs) {
    const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config + ".json";
    std::ifstream file(path);
    models::ModelSpec spec;
    spec.batch = 2;
    spec.seq_len = seq;
    cases.push_back(
        {config, models::build_hf_config(json::parse(file), spec, path), "interpreter", "", json::object(), ""});
  }
  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), cases.size());
  for (const Result& r : results) expect_match(r);
}

// Mixtures of experts (models/moe.h), small: a mixtral, a qwen2_moe with a gated shared expert and a deepseek_v2 with
// latent attention, a dense first layer and shared experts; the experts' sums chained by index_add_ as the executor
// runs them, against the interpreter's out-of-place index_put of each expert's weighted rows.
TEST(Numerics, MixturesOfExpertsMatchPyTorch) {
  expect_configs_match({"mixtral-small", "qwen2-moe-small", "deepseek-v2-small"}, 6);
}

// The rotary decoders of a Hugging Face config (models/decoders.cpp), small: a llama with grouped-query attention,
// head_dim, biases and a tied LM head, and a gpt_neox with partial rotary and the sequential residual, each against
// the interpreter's torch.nn.functional reading of the same graph.
TEST(Numerics, RotaryDecodersMatchPyTorch) { expect_configs_match({"llama-small-tied", "gpt-neox-sequential"}, 8); }

// LoRA (graph/lora.h) on the small llama: base weights frozen (no gradient on either side), the adapters' A and B
// gradients against the interpreter, which reads frozen=1 as requires_grad False and the scaling as x * scalar.
TEST(Numerics, LoraAdaptersMatchPyTorch) {
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-small-tied.json";
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 8;
  const Graph base = models::build_hf_config(json::parse(std::ifstream(path)), spec, path);
  struct Setting {
    std::string label;
    LoraConfig config;
    int64_t adapted;  // Linear layers with an adapter: each has an A and a B gradient
  };
  const std::vector<Setting> settings = {
      {"llama lora r=4 q,v", {4, 8, {"q", "v"}, false}, 2 * 2},
      {"llama lora r=8 all", {8, 32, {"q", "k", "v", "o", "gate", "up", "down"}, false}, 2 * 7},
      {"llama lora r=4 q,v norms", {4, 4, {"q", "v"}, true}, 2 * 2},
  };
  std::vector<Case> cases;
  for (const Setting& setting : settings)
    cases.push_back({setting.label, apply_lora(base, setting.config), "interpreter", "", json::object(), ""});
  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), cases.size());
  for (size_t index = 0; index < results.size(); ++index) {
    expect_match(results[index]);
    // Only the adapters (and the norms' weights when trained: 2 per layer and the final one) have gradients.
    const int64_t norms = settings[index].config.train_norms ? 2 * 2 + 1 : 0;
    EXPECT_EQ(results[index].tensors, 2 * settings[index].adapted + norms) << results[index].label;
  }
}

// ---- Activation checkpointing (graph/checkpoint.h) ----------------------------------------------------

Graph small_hf(const std::string& config) {
  const std::string path = std::string(DNNCAST_SOURCE_DIR) + "/tests/models/hf_configs/" + config + ".json";
  models::ModelSpec spec;
  spec.batch = 2;
  spec.seq_len = 8;
  return models::build_hf_config(json::parse(std::ifstream(path)), spec, path);
}

// Checkpointed decoders against PyTorch running the same blocks through torch.utils.checkpoint (the interpreter
// of torch_reference_step.py honours checkpoint=1): the recomputation and the nested backward give PyTorch's
// loss and gradients, LoRA's frozen embedding included (no block input requires grad there).
TEST(Numerics, CheckpointedBlocksMatchTorchUtilsCheckpoint) {
  const std::vector<std::string> configs = {"llama-small-tied", "gpt-neox-sequential", "bert-classifier"};
  std::vector<Case> cases;
  for (const std::string& config : configs)
    cases.push_back(
        {config + " checkpointed", apply_checkpointing(small_hf(config)), "interpreter", "", json::object(), ""});
  cases.push_back({"llama lora r=4 q,v checkpointed",
                   apply_checkpointing(apply_lora(small_hf("llama-small-tied"), {4, 8, {"q", "v"}, false})),
                   "interpreter", "", json::object(), ""});
  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), cases.size());
  for (const Result& r : results) expect_match(r);
  EXPECT_EQ(results.back().tensors, 2 * 2 * 2) << "every adapter's A and B has a gradient";
}

// The executor with and without checkpointing: the same loss and gradients (the recomputation runs the same
// kernels on the same values; only the order of a few sums may differ). GPT-2 with dropout 0.1 kept: the
// recomputation draws the same dropout masks only because the forward's RNG state is restored.
TEST(Numerics, CheckpointingChangesNoGradient) {
  for (const char* config : {"llama-small-tied", "bert-classifier", "gpt2 dropout"}) {
    const bool dropout = config == std::string("gpt2 dropout");
    Graph plain = dropout ? Graph() : small_hf(config);
    if (dropout) {
      models::TransformerSize size;  // a small GPT-2 with its dropout 0.1 (embeddings, attention, residuals)
      size.name = "gpt2_dropout";
      size.family = "gpt2";
      size.vocab = 500;
      size.positions = 32;
      size.hidden = 64;
      size.heads = 4;
      size.layers = 3;
      size.mlp = 256;
      models::ModelSpec spec;
      spec.batch = 2;
      spec.seq_len = 16;
      plain = models::build_gpt2(size, spec);
      int dropouts = 0;
      for (const Node& node : plain.nodes()) dropouts += node.op == "Dropout" && node.attr_float("p", 0) > 0 ? 1 : 0;
      ASSERT_EQ(dropouts, 1 + 2 * 3) << "embeddings and two per layer";
    }
    const std::string plain_dir = make_temp_dir(), checkpointed_dir = make_temp_dir();
    ASSERT_FALSE(plain_dir.empty() || checkpointed_dir.empty());
    const StepDump ours = dump_training_step(apply_checkpointing(plain), checkpointed_dir, 11, false, dropout);
    const StepDump theirs = dump_training_step(plain, plain_dir, 11, false, dropout);
    EXPECT_NEAR(ours.loss, theirs.loss, 1e-6 * std::abs(theirs.loss)) << config;
    const json a = json::parse(std::ifstream(checkpointed_dir + "/manifest.json"));
    const json b = json::parse(std::ifstream(plain_dir + "/manifest.json"));
    ASSERT_EQ(a["parameters"].size(), b["parameters"].size());
    int64_t compared = 0;
    for (size_t index = 0; index < a["parameters"].size(); ++index) {
      const json& param = a["parameters"][index];
      ASSERT_EQ(param.contains("grad"), b["parameters"][index].contains("grad")) << param["name"];
      if (!param.contains("grad")) continue;
      const double rel =
          relative_l2(checkpointed_dir + "/" + param["grad"].get<std::string>(),
                      plain_dir + "/" + b["parameters"][index]["grad"].get<std::string>(), element_count(param));
      EXPECT_GE(rel, 0) << param["name"];
      EXPECT_LT(rel, 1e-6) << config << " " << param["name"];
      ++compared;
    }
    EXPECT_GT(compared, 10) << config;
    remove_dir(plain_dir);
    remove_dir(checkpointed_dir);
  }
}

// ---- Every op of the registry on its own ----------------------------------------------------------

struct Operand {
  Ints shape;
  DType dtype = DType::F32;
};
Operand f32(Ints dims) { return {std::move(dims), DType::F32}; }
Operand i64(Ints dims) { return {std::move(dims), DType::I64}; }

struct OpCase {
  std::string label;
  std::string op;
  std::vector<Operand> inputs;
  Attrs attrs;
  std::string before = "";  // "" or an op between each input and this one: "Conv2d" (1x1, a fresh output
                            // so that an in-place activation runs in place), "MatMul" (values of std ~4, so
                            // that clamps and saturations are reached: inputs become a 4x16 @ 16x4 product)
};

// Input(s) [-> producer] -> op; the executor's loss follows (cross-entropy for N x C, MSE otherwise).
Graph op_graph(const OpCase& c) {
  GraphBuilder b("op:" + c.label, "op");
  std::vector<int> xs;
  for (size_t index = 0; index < c.inputs.size(); ++index) {
    const Operand& operand = c.inputs[index];
    std::string name = "x" + std::to_string(index);
    if (c.before == "MatMul") {
      int left = b.input(TensorShape(Ints{2, 3, 4, 16}), DType::F32, name + "_left");
      int right = b.input(TensorShape(Ints{2, 3, 16, 4}), DType::F32, name + "_right");
      xs.push_back(b.op(name, "MatMul", {left, right}));
      continue;
    }
    int x = b.input(TensorShape(operand.shape), operand.dtype, name);
    if (c.before == "Conv2d") x = b.conv(name + "_conv", x, operand.shape[1], 1);
    xs.push_back(x);
  }
  b.op(c.label, c.op, xs, c.attrs);
  return b.finish();
}

std::vector<OpCase> op_cases() {
  using I = int64_t;
  std::vector<OpCase> cases = {
      {"conv_3x3_same",
       "Conv2d",
       {f32({2, 3, 8, 8})},
       {{"out_channels", I{4}}, {"kernel", Ints{3, 3}}, {"padding", Ints{1, 1}}}},
      {"conv_strided_nobias",
       "Conv2d",
       {f32({2, 3, 9, 9})},
       {{"out_channels", I{5}}, {"kernel", I{3}}, {"stride", I{2}}, {"bias", I{0}}}},
      {"conv_dilated",
       "Conv2d",
       {f32({2, 3, 8, 8})},
       {{"out_channels", I{6}}, {"kernel", I{3}}, {"padding", I{2}}, {"dilation", I{2}}}},
      {"conv_grouped",
       "Conv2d",
       {f32({2, 4, 6, 6})},
       {{"out_channels", I{4}}, {"kernel", I{3}}, {"padding", I{1}}, {"groups", I{2}}}},
      {"conv_depthwise",
       "Conv2d",
       {f32({2, 8, 8, 8})},
       {{"out_channels", I{8}}, {"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"groups", I{8}}}},
      {"conv_1x7_asymmetric",
       "Conv2d",
       {f32({2, 3, 6, 9})},
       {{"out_channels", I{2}}, {"kernel", Ints{1, 7}}, {"padding", Ints{0, 3}}}},
      {"deconv",
       "ConvTranspose2d",
       {f32({2, 4, 5, 5})},
       {{"out_channels", I{2}}, {"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"output_padding", I{1}}}},
      {"deconv_grouped",
       "ConvTranspose2d",
       {f32({2, 4, 3, 3})},
       {{"out_channels", I{6}}, {"kernel", I{2}}, {"stride", I{2}}, {"groups", I{2}}}},
      {"linear_3d", "Linear", {f32({2, 5, 12})}, {{"out_features", I{8}}}},
      {"linear_classifier_nobias", "Linear", {f32({4, 12})}, {{"out_features", I{7}}, {"bias", I{0}}}},
      {"batchnorm", "BatchNorm2d", {f32({4, 3, 5, 5})}, {}},
      {"batchnorm_eps_momentum", "BatchNorm2d", {f32({3, 4, 3, 3})}, {{"eps", 1e-3}, {"momentum", 0.01}}},
      {"layernorm", "LayerNorm", {f32({2, 5, 8})}, {{"normalized_shape", Ints{8}}}},
      {"layernorm_2d_no_affine",
       "LayerNorm",
       {f32({2, 4, 8})},
       {{"normalized_shape", Ints{4, 8}}, {"elementwise_affine", I{0}}}},
      {"groupnorm", "GroupNorm", {f32({2, 6, 4, 4})}, {{"groups", I{3}}, {"eps", 1e-4}}},
      {"rmsnorm", "RMSNorm", {f32({2, 5, 8})}, {{"eps", 1e-5}}},
      {"rotary_full", "RotaryEmbedding", {f32({2, 3, 5, 8})}, {}},
      {"rotary_partial_theta", "RotaryEmbedding", {f32({2, 2, 6, 8})}, {{"rotary_dim", I{4}}, {"theta", 500.0}}},
      {"topk_routing", "TopKRouting", {f32({2, 5, 4}), f32({2, 5, 8})}, {{"top_k", I{2}}, {"normalize", I{1}}}},
      {"topk_routing_scaled", "TopKRouting", {f32({2, 3, 6}), f32({2, 3, 4})}, {{"top_k", I{3}}, {"scale", 2.5}}},
      {"expert_gather", "ExpertGather", {f32({2, 5, 8})}, {{"start", I{8}}, {"count", I{3}}, {"top_k", I{2}}}},
      {"expert_combine_first", "ExpertCombine", {f32({3, 8}), f32({2, 5, 2})}, {{"start", I{8}}, {"count", I{3}}}},
      {"repeat_interleave_heads", "RepeatInterleave", {f32({2, 2, 5, 4})}, {{"axis", I{1}}, {"repeats", I{3}}}},
      {"layer_scale_channels", "LayerScale", {f32({2, 6, 3, 3})}, {}},
      {"layer_scale_last_axis", "LayerScale", {f32({2, 5, 8})}, {{"axis", I{-1}}}},
      {"softmax", "Softmax", {f32({2, 3, 7})}, {}},
      {"softmax_axis1", "Softmax", {f32({2, 5, 4})}, {{"axis", I{1}}}},
      {"add_broadcast", "Add", {f32({2, 3, 4, 4}), f32({1, 3, 1, 4})}, {}},
      {"mul_broadcast", "Mul", {f32({2, 3, 4, 4}), f32({3, 1, 1})}, {}},
      {"dropout_zeroed", "Dropout", {f32({2, 10})}, {{"p", 0.5}}},
      {"maxpool_3s2p1", "MaxPool2d", {f32({2, 3, 9, 9})}, {{"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}}},
      {"maxpool_ceil", "MaxPool2d", {f32({2, 3, 8, 8})}, {{"kernel", I{3}}, {"stride", I{2}}, {"ceil_mode", I{1}}}},
      {"maxpool_dilated_default_stride", "MaxPool2d", {f32({2, 2, 9, 9})}, {{"kernel", I{2}}, {"dilation", I{2}}}},
      {"avgpool", "AvgPool2d", {f32({2, 3, 8, 8})}, {{"kernel", I{2}}, {"stride", I{2}}}},
      {"avgpool_ceil_padded",
       "AvgPool2d",
       {f32({2, 3, 8, 8})},
       {{"kernel", I{3}}, {"stride", I{2}}, {"padding", I{1}}, {"ceil_mode", I{1}}}},
      {"avgpool_exclude_pad",
       "AvgPool2d",
       {f32({2, 3, 7, 7})},
       {{"kernel", I{3}}, {"stride", I{1}}, {"padding", I{1}}, {"count_include_pad", I{0}}}},
      {"adaptive_avgpool_1", "AdaptiveAvgPool2d", {f32({2, 3, 5, 5})}, {{"output_size", I{1}}}},
      {"adaptive_avgpool_2x3_uneven", "AdaptiveAvgPool2d", {f32({2, 3, 5, 7})}, {{"output_size", Ints{2, 3}}}},
      {"flatten", "Flatten", {f32({2, 3, 4, 4})}, {}},
      {"flatten_1_2", "Flatten", {f32({2, 3, 4, 5})}, {{"start_dim", I{1}}, {"end_dim", I{2}}}},
      {"concat", "Concat", {f32({2, 3, 4, 4}), f32({2, 5, 4, 4})}, {}},
      {"concat_last_axis", "Concat", {f32({2, 3, 4}), f32({2, 3, 6})}, {{"axis", I{-1}}}},
      {"reshape", "Reshape", {f32({2, 3, 4, 4})}, {{"shape", Ints{0, -1}}}},
      {"reshape_split_heads", "Reshape", {f32({2, 5, 8})}, {{"shape", Ints{0, 0, 2, -1}}}},
      {"permute", "Permute", {f32({2, 3, 4, 5})}, {{"dims", Ints{0, 2, 3, 1}}}},
      {"permute_contiguous", "Permute", {f32({2, 3, 4, 5})}, {{"dims", Ints{0, -2, -1, 1}}, {"contiguous", I{1}}}},
      {"transpose", "Transpose", {f32({2, 3, 4})}, {{"dim0", I{1}}, {"dim1", I{-1}}}},
      {"transpose_contiguous",
       "Transpose",
       {f32({2, 3, 4, 5})},
       {{"dim0", I{1}}, {"dim1", I{2}}, {"contiguous", I{1}}}},
      {"slice_clamped_end", "Slice", {f32({2, 3, 6})}, {{"axis", I{-1}}, {"start", I{2}}, {"end", I{100}}}},
      {"slice_negative_start", "Slice", {f32({2, 6, 4})}, {{"axis", I{1}}, {"start", I{-4}}, {"end", I{5}}}},
      {"channel_shuffle", "ChannelShuffle", {f32({2, 6, 3, 3})}, {{"groups", I{2}}}},
      {"matmul", "MatMul", {f32({2, 4, 6}), f32({2, 6, 3})}, {}},
      {"matmul_broadcast", "MatMul", {f32({2, 3, 4, 6}), f32({3, 6, 5})}, {}},
      {"matmul_matrix_by_batch", "MatMul", {f32({4, 6}), f32({2, 6, 5})}, {}},
      {"embedding", "Embedding", {i64({2, 7})}, {{"num_embeddings", I{20}}, {"embedding_dim", I{6}}}},
      {"sdpa", "ScaledDotProductAttention", {f32({2, 2, 5, 8}), f32({2, 2, 5, 8}), f32({2, 2, 5, 8})}, {}},
      {"sdpa_causal_dropout_zeroed",
       "ScaledDotProductAttention",
       {f32({2, 2, 5, 8}), f32({2, 2, 5, 8}), f32({2, 2, 5, 6})},
       {{"causal", I{1}}, {"dropout_p", 0.1}}},
      {"sdpa_cross_causal",
       "ScaledDotProductAttention",
       {f32({2, 2, 3, 4}), f32({2, 2, 6, 4}), f32({2, 2, 6, 4})},
       {{"causal", I{1}}}},
      {"position_embedding_prefix", "PositionEmbedding", {f32({2, 6, 8})}, {{"length", I{10}}}},
      {"position_embedding_full", "PositionEmbedding", {f32({2, 5, 4})}, {{"length", I{5}}}},
      {"class_token", "ClassToken", {f32({2, 4, 8})}, {}},
      {"cross_entropy", "CrossEntropyLoss", {f32({4, 7})}, {}},
      {"cross_entropy_spatial", "CrossEntropyLoss", {f32({2, 5, 3, 3})}, {}},
      {"mse_implied_target", "MSELoss", {f32({2, 3, 4})}, {}},
      {"mse_two_inputs", "MSELoss", {f32({2, 3, 4}), f32({2, 3, 4})}, {}},
  };
  // Activations: on a MatMul product (values up to ~+-12: ReLU6's clamp, Hardswish's and
  // Hardsigmoid's saturation reached), and after a 1x1 conv where the executor runs them in place.
  for (const char* op : {"ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "Hardswish", "Hardsigmoid"}) {
    std::string name = op;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    cases.push_back({name + "_wide_range", op, {f32({})}, {}, "MatMul"});
    cases.push_back({name + "_after_conv", op, {f32({2, 3, 4, 4})}, {}, "Conv2d"});
  }
  return cases;
}

TEST(Numerics, EveryOpMatchesPyTorch) {
  std::set<std::string> covered;
  std::vector<Case> cases;
  for (const OpCase& c : op_cases()) {
    cases.push_back({c.label, op_graph(c), "interpreter", "", json::object(), ""});
    covered.insert(c.op);
  }
  covered.insert("Input");  // every case starts with one
  std::vector<std::string> names = OpRegistry::instance().names();
  EXPECT_EQ(covered, std::set<std::string>(names.begin(), names.end())) << "every registered op has a case";
  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), cases.size());
  for (const Result& r : results) expect_match(r);
}

// ---- The check catches a graph the executor builds differently ------------------------------------

Graph with_attr(Graph graph, const std::string& node, const std::string& key, AttrValue value) {
  int index = graph.find(node);
  EXPECT_GE(index, 0) << node;
  if (index >= 0) graph.mutable_nodes()[static_cast<size_t>(index)].attrs[key] = value;
  graph.infer_shapes();
  return graph;
}

TEST(Numerics, MutationsAreCaught) {
  models::ModelSpec spec;
  spec.batch = 2;
  spec.input = {3, 32, 32};
  spec.num_classes = 10;
  Graph squeezenet = models::build_zoo_model("squeezenet1_1", spec);
  json kwargs = {{"num_classes", 10}};
  std::vector<Case> cases;
  // A wrong activation: one ReLU of squeezenet is a GELU in the executor's graph; torchvision's is not.
  Graph gelu = squeezenet;
  int relu = gelu.find("features.3.squeeze_activation");
  ASSERT_GE(relu, 0);
  gelu.mutable_nodes()[static_cast<size_t>(relu)].op = "GELU";
  cases.push_back({"squeezenet1_1 ReLU->GELU", gelu, "torchvision", "squeezenet1_1", kwargs, ""});
  // A missing bias: the parameters no longer match torchvision's by name.
  cases.push_back({"squeezenet1_1 no bias", with_attr(squeezenet, "features.3.squeeze", "bias", int64_t{0}),
                   "torchvision", "squeezenet1_1", kwargs, ""});
  // A wrong padding rule: the executor averages over the padding, the reference graph excludes it.
  OpCase pool{
      "avgpool_exclude_pad",
      "AvgPool2d",
      {f32({2, 3, 7, 7})},
      {{"kernel", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}, {"count_include_pad", int64_t{0}}}};
  Graph reference_pool = op_graph(pool);
  Graph wrong_pool = with_attr(reference_pool, pool.label, "count_include_pad", int64_t{1});
  cases.push_back({"avgpool count_include_pad 1 vs 0", wrong_pool, "interpreter", "", json::object(),
                   import::write_graph_json(reference_pool)});
  // A wrong epsilon, the subtlest: BatchNorm eps 1e-5 where the reference has 1e-3 (inception's).
  OpCase norm{"batchnorm", "BatchNorm2d", {f32({2, 3, 2, 2})}, {{"eps", 1e-3}}};
  Graph reference_norm = op_graph(norm);
  cases.push_back({"batchnorm eps 1e-5 vs 1e-3", with_attr(reference_norm, norm.label, "eps", 1e-5), "interpreter", "",
                   json::object(), import::write_graph_json(reference_norm)});

  std::vector<Result> results = run_cases(cases);
  print_results(results);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].error.empty()) << results[0].error;
  EXPECT_GT(results[0].grad_rel, 10 * kGradTolerance) << "the GELU is seen";
  EXPECT_NE(results[1].error.find("features.3.squeeze.bias"), std::string::npos) << results[1].error;
  for (size_t index : {size_t{2}, size_t{3}}) {
    EXPECT_TRUE(results[index].error.empty()) << results[index].error;
    EXPECT_GT(std::max(results[index].loss_rel / kLossTolerance, results[index].grad_rel / kGradTolerance), 1.0)
        << results[index].label << " passes the tolerance";
  }
}

// Loading parameters: a dump from another seed that loads the first dump's parameters holds the
// first dump's values, and loading checks names and shapes.
std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(Numerics, DumpLoadsParametersByName) {
  OpCase c{"linear", "Linear", {f32({4, 6})}, {{"out_features", int64_t{3}}}};
  Graph graph = op_graph(c);
  std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  StepDump first = dump_training_step(graph, dir, 3);
  EXPECT_EQ(first.parameters, 6 * 3 + 3);
  std::string weight = file_text(dir + "/param_0.bin");
  ASSERT_EQ(weight.size(), 6u * 3u * 4u);
  dump_training_step(graph, dir, 4);
  EXPECT_NE(file_text(dir + "/param_0.bin"), weight) << "another seed draws other weights";
  std::ofstream(dir + "/param_0.bin", std::ios::binary) << weight;
  std::string bias = file_text(dir + "/param_1.bin");
  dump_training_step(graph, dir, 5, /*load_parameters=*/true);
  EXPECT_EQ(file_text(dir + "/param_0.bin"), weight);
  EXPECT_EQ(file_text(dir + "/param_1.bin"), bias);
  Graph wider = op_graph({"linear", "Linear", {f32({4, 6})}, {{"out_features", int64_t{5}}}});
  try {
    dump_training_step(wider, dir, 3, true);
    ADD_FAILURE() << "a misshapen parameter was loaded";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("parameter 'linear.weight' has shape"), std::string::npos) << error.what();
  }
  remove_dir(dir);
}

}  // namespace
}  // namespace dnncast::profile::test
