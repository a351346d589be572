#include "models/layer_cases.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "core/checked.h"
#include "core/csv.h"
#include "core/error.h"
#include "core/rng.h"
#include "graph/builder.h"
#include "graph/op_registry.h"
#include "models/zoo.h"

namespace dnncast::models {
namespace {

using dnncast::SplitMix64;

const std::vector<std::string> kActivations{"ReLU", "GELU", "SiLU", "Hardswish", "Sigmoid"};
const std::vector<std::string> kPools{"MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"};

// The fields of a shape (a shape-file row; what the sampler draws). 0 = not given.
struct Dims {
  std::string kind, op;
  int64_t batch = 0, channels = 0, out_channels = 0, height = 0, width = 0, kernel = 0, stride = 0, groups = 0;
};

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

int64_t need(int64_t value, const char* field, const Dims& dims) {
  if (value < 1) throw InputError("kind " + dims.kind + " needs " + field + " >= 1");
  if (value > (int64_t{1} << 20))
    throw InputError(std::string(field) + " " + std::to_string(value) + " is above 1048576");
  return value;
}

LayerCase finish_case(GraphBuilder& builder, const std::string& kind, int64_t batch, const std::string& origin) {
  LayerCase result;
  result.kind = kind;
  result.origin = origin;
  result.batch = batch;
  result.graph = builder.finish();
  // The architecture hash leaves input shapes out (they are configuration); a case's shapes are its identity.
  result.key = result.graph.architecture_hash();
  for (int index : result.graph.inputs()) result.key += ":" + result.graph.node(index).shape.to_string();
  result.flops_forward = static_cast<double>(node_cost(result.graph, result.graph.size() - 1).flops_fwd);
  return result;
}

TensorShape image(const Dims& d) {
  return TensorShape({need(d.batch, "batch", d), need(d.channels, "channels", d), need(d.height, "height", d),
                      need(d.width > 0 ? d.width : d.height, "width", d)});
}

// One case from its fields; InputError for what a kind cannot take.
LayerCase build_case(const Dims& d, const std::string& origin) {
  GraphBuilder b(d.kind + ":" + origin, "layer");
  const std::string& k = d.kind;
  if (k == "conv" || k == "dwconv" || k == "gconv") {
    int x = b.input(image(d), DType::F32, "input0");
    int64_t kernel = need(d.kernel, "kernel", d), stride = d.stride > 0 ? d.stride : 1;
    int64_t groups = k == "dwconv" ? d.channels : k == "gconv" ? need(d.groups, "groups", d) : 1;
    int64_t out = k == "dwconv" ? d.channels : need(d.out_channels, "out_channels", d);
    if (k == "gconv" && (groups < 2 || groups >= d.channels))
      throw InputError("kind gconv needs 1 < groups < channels, got groups " + std::to_string(groups));
    if (k == "conv" && d.groups > 1) throw InputError("kind conv is dense (groups 1): use gconv or dwconv");
    b.conv(k, x, out, kernel, stride, kernel / 2, groups, true);
  } else if (k == "linear") {
    TensorShape shape = d.height > 0
                            ? TensorShape({need(d.batch, "batch", d), d.height, need(d.channels, "channels", d)})
                            : TensorShape({need(d.batch, "batch", d), need(d.channels, "channels", d)});
    b.linear(k, b.input(shape, DType::F32, "input0"), need(d.out_channels, "out_channels", d));
  } else if (k == "bn") {
    b.batchnorm(k, b.input(image(d), DType::F32, "input0"));
  } else if (k == "ln") {
    int64_t dim = need(d.channels, "channels", d);
    int x = b.input(TensorShape({need(d.batch, "batch", d), need(d.height, "height (tokens)", d), dim}), DType::F32,
                    "input0");
    b.op(k, "LayerNorm", {x}, {{"normalized_shape", std::vector<int64_t>{dim}}});
  } else if (k == "pool") {
    std::string op = d.op.empty() ? "MaxPool2d" : d.op;
    int x = b.input(image(d), DType::F32, "input0");
    if (op == "MaxPool2d")
      b.maxpool(k, x, 3, 2, 1);
    else if (op == "AvgPool2d")
      b.avgpool(k, x, 2, 2);
    else if (op == "AdaptiveAvgPool2d")
      b.adaptive_avgpool(k, x, 1, 1);
    else
      throw InputError("kind pool: unknown op '" + op + "' (known: " + joined(kPools) + ")");
  } else if (k == "act") {
    std::string op = d.op.empty() ? "ReLU" : d.op;
    if (std::find(kActivations.begin(), kActivations.end(), op) == kActivations.end())
      throw InputError("kind act: unknown op '" + op + "' (known: " + joined(kActivations) + ")");
    b.act(k, op, b.input(image(d), DType::F32, "input0"));
  } else if (k == "add") {
    TensorShape shape = image(d);
    int x = b.input(shape, DType::F32, "input0"), y = b.input(shape, DType::F32, "input1");
    b.add(k, x, y);
  } else if (k == "attention") {
    TensorShape shape({need(d.batch, "batch", d), need(d.channels, "channels (heads)", d),
                       need(d.height, "height (sequence length)", d), need(d.width, "width (head size)", d)});
    int q = b.input(shape, DType::F32, "input0"), kk = b.input(shape, DType::F32, "input1"),
        v = b.input(shape, DType::F32, "input2");
    b.op(k, "ScaledDotProductAttention", {q, kk, v}, {{"causal", int64_t{d.op == "causal" ? 1 : 0}}});
  } else {
    throw InputError("unknown layer kind '" + k + "' (known: " + joined(layer_kinds()) + ")");
  }
  return finish_case(b, k, d.batch, origin);
}

int64_t pick(SplitMix64& rng, const std::vector<int64_t>& values) { return values[rng.below(values.size())]; }
int64_t log_int(SplitMix64& rng, double low, double high) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::lround(rng.log_uniform(low, high))));
}
// Channel counts as networks have them: a multiple of 8 three times in four.
int64_t channels(SplitMix64& rng, double low, double high) {
  int64_t value = log_int(rng, low, high);
  if (rng.below(4) != 0 && value >= 8) value = (value + 4) / 8 * 8;
  return value;
}

Dims draw(SplitMix64& rng, const std::string& kind, int64_t batch) {
  Dims d;
  d.kind = kind;
  d.batch = batch;
  d.height = log_int(rng, 4, 224);
  d.stride = rng.below(4) == 0 ? 2 : 1;
  if (kind == "conv") {
    d.channels = rng.below(8) == 0 ? 3 : channels(rng, 8, 1024);
    d.out_channels = channels(rng, 8, 1024);
    d.kernel = pick(rng, {1, 1, 1, 3, 3, 3, 3, 5, 7});
  } else if (kind == "dwconv") {
    d.channels = channels(rng, 8, 1536);
    d.kernel = pick(rng, {3, 3, 5, 7});
  } else if (kind == "gconv") {
    d.groups = pick(rng, {2, 4, 8, 16, 32, 64});
    int64_t width = log_int(rng, 2, 128);
    d.channels = d.groups * width;
    d.out_channels = d.groups * (rng.below(2) == 0 ? width : log_int(rng, 2, 128));
    d.kernel = pick(rng, {1, 3, 3});
  } else if (kind == "linear") {
    d.channels = channels(rng, 16, 4096);
    d.out_channels = channels(rng, 16, 4096);
    d.height = rng.below(5) < 3 ? 0 : log_int(rng, 4, 256);
  } else if (kind == "ln") {
    d.channels = channels(rng, 32, 2048);
    d.height = log_int(rng, 1, 256);
  } else if (kind == "attention") {
    d.channels = log_int(rng, 1, 16);
    d.height = log_int(rng, 16, 512);
    d.width = pick(rng, {32, 64, 64, 80, 128});
    d.op = rng.below(10) < 3 ? "causal" : "";
  } else {  // bn, pool, act, add: an image tensor
    d.channels = channels(rng, 8, 2048);
    d.height = log_int(rng, 4, 112);
    if (kind == "pool") d.op = kPools[rng.below(kPools.size())];
    if (kind == "act") d.op = kActivations[rng.below(kActivations.size())];
  }
  return d;
}

double activation_bytes(const LayerCase& c) {
  double bytes = 0;
  for (const Node& node : c.graph.nodes()) bytes += static_cast<double>(node.shape.numel()) * 4;
  return bytes;
}

}  // namespace

const std::vector<std::string>& layer_kinds() {
  static const std::vector<std::string> kinds{"act",    "add",   "attention", "bn", "conv",
                                              "dwconv", "gconv", "linear",    "ln", "pool"};
  return kinds;
}

void check_layer_kinds(const std::vector<std::string>& kinds) {
  for (const std::string& kind : kinds)
    if (std::find(layer_kinds().begin(), layer_kinds().end(), kind) == layer_kinds().end())
      throw InputError("unknown layer kind '" + kind + "' (known: " + joined(layer_kinds()) + ")");
}

std::string layer_kind(const Graph& graph, int index) {
  const Node& node = graph.node(index);
  if (node.op == "Conv2d")
    return layer_kind_of(node.op, node.attr_int("groups", 1), graph.node(node.inputs.at(0)).shape[1], node.shape[1]);
  return layer_kind_of(node.op);
}

std::string layer_kind_of(const std::string& op, int64_t groups, int64_t in_channels, int64_t out_channels) {
  if (op == "Conv2d")
    return groups == 1 ? "conv" : groups == in_channels && out_channels == in_channels ? "dwconv" : "gconv";
  if (op == "Linear") return "linear";
  if (op == "BatchNorm2d") return "bn";
  if (op == "LayerNorm") return "ln";
  if (std::find(kPools.begin(), kPools.end(), op) != kPools.end()) return "pool";
  if (std::find(kActivations.begin(), kActivations.end(), op) != kActivations.end()) return "act";
  if (op == "Add") return "add";
  if (op == "ScaledDotProductAttention") return "attention";
  return "";
}

LayerCase case_of_node(const Graph& graph, int index, const std::string& origin) {
  const Node& node = graph.node(index);
  if (node.op == "Input") throw InputError("node '" + node.name + "' is an Input: nothing to time");
  std::string kind = layer_kind(graph, index);
  GraphBuilder b((kind.empty() ? node.op : kind) + ":" + origin, "layer");
  std::vector<int> inputs;
  for (size_t position = 0; position < node.inputs.size(); ++position) {
    const Node& producer = graph.node(node.inputs[position]);
    inputs.push_back(b.input(producer.shape, producer.dtype, "input" + std::to_string(position)));
  }
  // Timed alone, a head tied to the embedding (GPT-2's lm_head, tied_to 'transformer.wte') is a Linear with its
  // own weight: the same products, and no Embedding in the case to share one with (calibrate failed on it).
  std::map<std::string, AttrValue> attrs = node.attrs;
  attrs.erase("tied_to");
  b.op(kind.empty() ? node.op : kind, node.op, inputs, attrs);
  LayerCase result = finish_case(b, kind, node.shape.rank() > 0 ? node.shape[0] : 1, origin);
  return result;
}

std::vector<LayerCase> sample_layer_cases(const SampleOptions& options) {
  check_layer_kinds(options.kinds);
  if (options.kinds.empty()) throw InputError("no layer kinds to sample");
  if (options.batches.empty()) throw InputError("no batches to sample");
  for (int64_t batch : options.batches)
    if (batch < 1 || batch > 65536) throw InputError("batch " + std::to_string(batch) + " is outside 1-65536");
  SplitMix64 rng(options.seed);
  std::vector<LayerCase> cases;
  std::set<std::string> keys;
  int64_t attempts = 0;
  while (static_cast<int64_t>(cases.size()) < options.count) {
    if (++attempts > options.count * 200 + 1000)
      throw InputError("could not draw " + std::to_string(options.count) + " distinct cases within the caps (" +
                       std::to_string(cases.size()) + " drawn); raise --max-gflops or --max-act-mb");
    const std::string& kind = options.kinds[cases.size() % options.kinds.size()];
    Dims dims = draw(rng, kind, pick(rng, options.batches));
    LayerCase c;
    try {
      c = build_case(dims, "sample");
    } catch (const InputError&) {
      continue;  // a draw its op refuses (a kernel larger than the image)
    }
    if (c.flops_forward > options.max_gflops * 1e9 || activation_bytes(c) > options.max_act_mb * 1e6) continue;
    if (!keys.insert(c.key).second) continue;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<LayerCase> zoo_layer_cases(const std::vector<std::string>& models, const std::vector<int64_t>& inputs,
                                       const std::vector<int64_t>& batches, const std::vector<std::string>& kinds,
                                       int64_t seq_len) {
  check_layer_kinds(kinds);
  std::vector<LayerCase> cases;
  for (const std::string& model : models) {
    const ZooEntry& entry = zoo_entry(model);
    for (int64_t batch : batches) {
      std::vector<int64_t> sizes = entry.kind == "cnn" ? inputs : std::vector<int64_t>{seq_len};
      for (int64_t size : sizes) {
        ModelSpec spec;
        spec.batch = batch;
        if (entry.kind == "cnn")
          spec.input = {3, size, size};
        else
          spec.seq_len = size;
        Graph graph = build_zoo_model(model, spec);
        for (int index = 0; index < graph.size(); ++index) {
          std::string kind = layer_kind(graph, index);
          if (kind.empty() || std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
          cases.push_back(case_of_node(graph, index, "zoo:" + model));
        }
      }
    }
  }
  return unique_cases(std::move(cases));
}

std::vector<LayerCase> read_shape_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read shape file '" + path + "'");
  const std::vector<std::string> header{"kind",  "batch",  "channels", "out_channels", "height",
                                        "width", "kernel", "stride",   "groups",       "op"};
  std::vector<std::string> fields;
  int64_t line = 0;
  if (!read_csv_record(in, fields, line) || fields != header)
    throw InputError(path + ": line 1 must be the header " + joined(header));
  std::vector<LayerCase> cases;
  int64_t row_line = line + 1;
  while (read_csv_record(in, fields, line)) {
    std::string where = path + ":" + std::to_string(row_line);
    row_line = line + 1;
    if (fields.size() == 1 && fields[0].empty()) continue;
    if (fields.size() != header.size())
      throw InputError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(header.size()));
    Dims d;
    d.kind = fields[0];
    d.op = fields[9];
    int64_t* numbers[] = {&d.batch, &d.channels, &d.out_channels, &d.height, &d.width, &d.kernel, &d.stride, &d.groups};
    for (size_t at = 0; at < 8; ++at) {
      const std::string& text = fields[at + 1];
      if (text.empty()) continue;
      size_t used = 0;
      long long value = 0;
      try {
        value = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || value < 1 || value > (int64_t{1} << 20))
        throw InputError(where + ": " + header[at + 1] + " '" + text + "' is not an integer in 1-1048576");
      *numbers[at] = value;
    }
    try {
      check_layer_kinds({d.kind});
      LayerCase c = build_case(d, "file:" + where);
      if (c.graph.node(c.graph.size() - 1).shape.numel() > kMaxTensorElements / 64)
        throw InputError("the output is too large to measure");
      cases.push_back(std::move(c));
    } catch (const InputError& error) {
      throw InputError(where + ": " + error.what());
    }
  }
  if (cases.empty()) throw InputError(path + ": no rows");
  return cases;
}

std::vector<LayerCase> unique_cases(std::vector<LayerCase> cases) {
  std::set<std::string> keys;
  std::vector<LayerCase> kept;
  for (LayerCase& c : cases)
    if (keys.insert(c.key).second) kept.push_back(std::move(c));
  return kept;
}

}  // namespace dnncast::models
