#include "import/model_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/checked.h"
#include "core/error.h"
#include "core/json_limits.h"
#include "core/text.h"
#include "graph/checkpoint.h"
#include "graph/lora.h"
#include "graph/op_registry.h"
#include "graph/quantize.h"
#include "import/graph_json.h"
#include "import/hub_cache.h"
#ifndef DNNCAST_WITHOUT_ONNX
#include "import/onnx.h"
#endif
#include "models/hf_config.h"
#include "models/synthetic.h"

namespace dnncast::import {

namespace {

// Beyond these, element and FLOP counts of the larger models would overflow 64-bit integers.
constexpr int64_t kMaxInputElements = int64_t{1} << 34;
constexpr int64_t kMaxTokens = int64_t{1} << 24;

bool is_regular_file(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Product of `dims` and `batch`, or -1 when it exceeds `limit`.
int64_t bounded_product(int64_t batch, const std::vector<int64_t>& dims, int64_t limit) {
  int64_t product = batch;
  if (product > limit) return -1;
  for (int64_t dim : dims) {
    if (dim > 0 && product > limit / dim) return -1;
    product *= dim;
  }
  return product;
}

void check_spec(const models::ModelSpec& spec) {
  if (!spec.lora.empty()) parse_lora(spec.lora, "lora " + quote(spec.lora));  // fails before any build
  if (!spec.quantize.empty()) {
    parse_quantize(spec.quantize, "quantize");
    if (spec.lora.empty())
      throw InputError("quantize " + quote(spec.quantize) +
                       ": quantized weights cannot be trained; QLoRA quantizes the frozen base of a LoRA fine-tune "
                       "(give lora too)");
  }
  if (!spec.attention.empty() && spec.attention != "eager" && spec.attention != "sdpa")
    throw InputError("attention " + quote(spec.attention) + ": expected eager or sdpa");
  if (spec.batch < 0) throw InputError("batch must be positive, got " + std::to_string(spec.batch));
  if (spec.seq_len < 0) throw InputError("sequence length must be positive, got " + std::to_string(spec.seq_len));
  if (spec.num_classes <= 0)
    throw InputError("number of classes must be positive, got " + std::to_string(spec.num_classes));
  if (!spec.input.empty() && spec.seq_len > 0)
    throw InputError("give an image input (CxHxW) or a sequence length, not both");
  if (!spec.input.empty()) {
    if (spec.input.size() != 3)
      throw InputError("image input must be CxHxW (3 dimensions), got " + TensorShape(spec.input).to_string());
    for (int64_t dim : spec.input)
      if (dim <= 0)
        throw InputError("image input " + TensorShape(spec.input).to_string() + " has a non-positive dimension");
  }
}

void check_size(int64_t batch, const std::vector<int64_t>& input, bool tokens) {
  int64_t limit = tokens ? kMaxTokens : kMaxInputElements;
  if (bounded_product(batch, input, limit) < 0)
    throw InputError("batch " + std::to_string(batch) + " x input " + TensorShape(input).to_string() + " exceeds " +
                     std::to_string(limit) + (tokens ? " tokens" : " elements") + ", more than dnncast can count");
}

uint64_t parse_seed(const std::string& source, const std::string& text) {
  bool digits = !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw InputError("bad synthetic seed in " + quote(source) + ": expected synthetic:N with N an integer from 0 to " +
                     std::to_string(UINT64_MAX));
  return static_cast<uint64_t>(value);
}

Graph load_zoo(const std::string& name, models::ModelSpec spec) {
  const models::ZooEntry& entry = models::zoo_entry(name);
  bool image = entry.default_input.size() == 3;
  if (image && spec.seq_len > 0) throw InputError(name + " takes an image input (CxHxW), not a sequence length");
  if (!image && !spec.input.empty()) throw InputError(name + " takes a sequence length, not an image input CxHxW");
  if (spec.batch == 0) spec.batch = 1;
  if (image) {
    check_size(spec.batch, spec.input.empty() ? entry.default_input : spec.input, false);
  } else {
    check_size(spec.batch, {spec.seq_len > 0 ? spec.seq_len : entry.default_input.at(0)}, true);
  }
  return models::build_zoo_model(name, spec);
}

// A graph read from `path` (a file, or the name of in-memory text), resized to `spec`.
Graph resize_graph(Graph graph, const std::string& path, const models::ModelSpec& spec) {
  if (spec.batch == 0 && spec.input.empty() && spec.seq_len == 0) return graph;
  std::vector<int> inputs = graph.inputs();
  std::string applied;
  for (int index : inputs) {
    Node& node = graph.mutable_nodes()[static_cast<size_t>(index)];
    std::vector<int64_t> shape = node.shape.dims;
    if (spec.batch > 0) shape[0] = spec.batch;
    if (!spec.input.empty()) {
      if (shape.size() != 4)
        throw InputError(path + ": input " + quote(node.name) + " has shape " + node.shape.to_string() +
                         ", not N x C x H x W, so an image input CxHxW does not apply");
      shape = {shape[0], spec.input[0], spec.input[1], spec.input[2]};
    }
    if (spec.seq_len > 0) {
      if (shape.size() != 2)
        throw InputError(path + ": input " + quote(node.name) + " has shape " + node.shape.to_string() +
                         ", not N x L, so a sequence length does not apply");
      shape[1] = spec.seq_len;
    }
    check_size(shape[0], std::vector<int64_t>(shape.begin() + 1, shape.end()), spec.seq_len > 0);
    node.attrs["shape"] = shape;
    applied = TensorShape(shape).to_string();
  }
  try {
    graph.infer_shapes();
  } catch (const InputError& error) {
    throw error.with_context(path + " at input " + applied);
  }
  return graph;
}

#ifndef DNNCAST_WITHOUT_ONNX
OnnxOptions onnx_options(const models::ModelSpec& spec) {
  if (spec.batch > 0 || !spec.input.empty() || spec.seq_len > 0) {
    std::vector<int64_t> size = spec.input.empty() ? std::vector<int64_t>{spec.seq_len} : spec.input;
    if (spec.input.empty() && spec.seq_len == 0) size.clear();
    check_size(spec.batch > 0 ? spec.batch : 1, size, spec.seq_len > 0);
  }
  OnnxOptions options;
  options.batch = spec.batch;
  options.input = spec.input;
  options.seq_len = spec.seq_len;
  options.allow_unknown = spec.allow_unknown_ops;
  return options;
}
#endif

// A .json model file read and parsed once: a Hugging Face config.json (models/hf_config.h: one with "model_type")
// or a graph JSON file.
Graph load_json_file(const std::string& path, const models::ModelSpec& spec) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot open graph file " + quote(path));
  std::stringstream text;
  text << file.rdbuf();
  check_json_nesting(text.str(), path);
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception&) {
    return resize_graph(read_graph_json(text.str(), path), path, spec);  // throws, naming what is wrong
  }
  if (models::is_hf_config(document)) return models::build_hf_config(document, spec, path);
  return resize_graph(graph_from_json(document, path), path, spec);
}

}  // namespace

ModelSourceKind model_source_kind(const std::string& source) {
  if (starts_with(source, "synthetic:")) return ModelSourceKind::Synthetic;
  if (starts_with(source, "zoo:")) return ModelSourceKind::Zoo;
  if (starts_with(source, "onnx:") || ends_with(source, ".onnx")) return ModelSourceKind::Onnx;
  if (starts_with(source, "file:") || ends_with(source, ".json") || source.find('/') != std::string::npos ||
      is_regular_file(source))
    return ModelSourceKind::File;
  return ModelSourceKind::Zoo;
}

namespace {

Graph load_base_model(const std::string& source, const models::ModelSpec& spec) {
  switch (model_source_kind(source)) {
    case ModelSourceKind::Synthetic: {
      uint64_t seed = parse_seed(source, source.substr(std::string("synthetic:").size()));
      if (spec.seq_len > 0)
        throw InputError(source + ": synthetic networks take an image input (CxHxW), not a sequence length");
      models::ModelSpec image = spec;
      if (image.batch == 0) image.batch = 1;
      check_size(image.batch, image.input.empty() ? std::vector<int64_t>{3, 224, 224} : image.input, false);
      return models::make_synthetic(seed, image);
    }
    case ModelSourceKind::File: {
      std::string path = starts_with(source, "file:") ? source.substr(5) : source;
      if (path.empty()) throw InputError("model source " + quote(source) + " names no file");
      if (!starts_with(source, "file:") && !is_regular_file(path) && looks_like_hub_id(path)) {
        // A Hub id (hub_cache.h): its config.json, cached or downloaded; the graph named by the id.
        Graph graph = load_json_file(hub_config(path), spec);
        graph.name = path;
        return graph;
      }
      return load_json_file(path, spec);
    }
    case ModelSourceKind::Onnx: {
      std::string path = starts_with(source, "onnx:") ? source.substr(5) : source;
      if (path.empty()) throw InputError("model source " + quote(source) + " names no file");
#ifdef DNNCAST_WITHOUT_ONNX
      throw InputError(quote(path) +
                       ": this build reads no ONNX files (the standalone profiler of scripts/gpu-profile)");
#else
      return load_onnx_file(path, onnx_options(spec));
#endif
    }
    case ModelSourceKind::Zoo:
      return load_zoo(starts_with(source, "zoo:") ? source.substr(4) : source, spec);
  }
  DNNCAST_ASSERT(false);
  return Graph();
}

// spec.lora: the graph fine-tuned with LoRA (graph/lora.h); the text was checked by check_spec. Then
// spec.checkpointing: every transformer block checkpointed (graph/checkpoint.h), and spec.attention "sdpa":
// every attention node marked fused (graph/ops_attention.cpp).
Graph with_lora(Graph graph, const models::ModelSpec& spec) {
  if (!spec.lora.empty()) graph = apply_lora(graph, parse_lora(spec.lora, "lora " + quote(spec.lora)));
  if (!spec.quantize.empty()) graph = apply_quantization(std::move(graph), spec.quantize);
  if (spec.expert_balance != 1.0 && std::none_of(graph.nodes().begin(), graph.nodes().end(),
                                                 [](const Node& node) { return node.op == "TopKRouting"; }))
    throw InputError("expert balance: " + quote(graph.name) + " is no mixture of experts (it has no router)");
  if (spec.checkpointing) graph = apply_checkpointing(std::move(graph));
  if (spec.attention == "sdpa") {
    bool any = false;
    for (Node& node : graph.mutable_nodes())
      if (node.op == "ScaledDotProductAttention") node.attrs["fused"] = int64_t{1}, any = true;
    if (!any) throw InputError("attention sdpa: " + quote(graph.name) + " has no attention layer to fuse");
  }
  return graph;
}

// Sets the batch of `graph`'s inputs and infers its shapes again; false (the graph half done) where that might differ
// from a build at that batch: an op whose attributes the batch sized, or a build that might refuse the batch (past
// the smallest of the size limits check_size applies, or a shape rule's refusal).
bool resized_to_batch(Graph& graph, int64_t batch) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const Node& node : graph.nodes())
    if (registry.get(node.op).sized_by_batch) return false;
  for (int index : graph.inputs()) {
    Node& node = graph.mutable_nodes()[static_cast<size_t>(index)];
    std::vector<int64_t> shape = node.shape.dims;
    if (shape.empty() || bounded_product(batch, {shape.begin() + 1, shape.end()}, kMaxTokens) < 0) return false;
    shape[0] = batch;
    node.attrs["shape"] = shape;
  }
  try {
    graph.infer_shapes();
  } catch (const InputError&) {
    return false;
  }
  return true;
}

}  // namespace

bool ModelSource::rebatch(Graph& graph, int64_t batch) const {
  const bool built_here = !builder && model_source_kind(name) != ModelSourceKind::Onnx;
  if (built_here && resized_to_batch(graph, batch)) return true;
  graph = build_at_batch(batch);
  return false;
}

Graph load_model(const std::string& source, const models::ModelSpec& spec) {
  check_spec(spec);
  return with_lora(load_base_model(source, spec), spec);
}

Graph load_graph_json_text(const std::string& text, const std::string& source, const models::ModelSpec& spec) {
  check_spec(spec);
  return with_lora(resize_graph(read_graph_json(text, source), source, spec), spec);
}

Graph load_hf_config_text(const std::string& text, const std::string& source, const models::ModelSpec& spec) {
  check_spec(spec);
  check_json_nesting(text, source);
  const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded() || !models::is_hf_config(document))
    throw InputError(source + ": expected a Hugging Face config.json object (with \"model_type\")");
  return with_lora(models::build_hf_config(document, spec, source), spec);
}

Graph load_onnx_bytes(const std::string& bytes, const std::string& source, const models::ModelSpec& spec) {
  check_spec(spec);
#ifdef DNNCAST_WITHOUT_ONNX
  (void)bytes;
  throw InputError(quote(source) + ": this build reads no ONNX files (the standalone profiler of scripts/gpu-profile)");
#else
  return with_lora(read_onnx(bytes, source, onnx_options(spec)), spec);
#endif
}

}  // namespace dnncast::import

namespace dnncast::import {

namespace {

void check_in_range(const std::string& name, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high)
    throw InputError(name + " must be an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "], got " +
                     std::to_string(value));
}

}  // namespace

ModelSource make_model_source(const ModelArgs& args, OptionStyle style, ModelBuilder builder) {
  auto name = [style](const char* keyword) { return option_name(keyword, style); };
  if (args.model.empty()) throw InputError("missing model: a zoo name, a graph JSON or ONNX file, or synthetic:SEED");
  ModelSource source;
  source.name = args.model;
  source.builder = std::move(builder);
  models::ModelSpec& spec = source.spec;
  spec.batch = 0;
  if (args.batch) {
    if (*args.batch < 1)
      throw InputError(name("batch") + " must be a positive integer, got " + std::to_string(*args.batch));
    check_in_range(name("batch"), *args.batch, 1, kMaxTensorElements);
    spec.batch = *args.batch;
  }
  if (args.input && args.seq) throw InputError("give " + name("input_shape") + " or " + name("seq") + ", not both");
  if (args.input) {
    if (args.input->size() != 3)
      throw InputError(name("input_shape") + " must be three positive integers (C, H, W), got " +
                       std::to_string(args.input->size()));
    for (int64_t dim : *args.input) check_in_range(name("input_shape"), dim, 1, kMaxIntegerAttr);
    spec.input = *args.input;
  }
  if (args.seq) {
    check_in_range(name("seq"), *args.seq, 1, kMaxIntegerAttr);
    spec.seq_len = *args.seq;
  }
  if (args.classes) {
    check_in_range(name("classes"), *args.classes, 1, kMaxIntegerAttr);
    const ModelSourceKind kind = args.kind ? *args.kind : model_source_kind(args.model);
    if (kind == ModelSourceKind::File || kind == ModelSourceKind::Onnx)
      throw InputError(name("classes") + " does not apply to " +
                       (kind == ModelSourceKind::Onnx ? "an ONNX model" : "a graph") +
                       " (its classifier is part of it)");
    spec.num_classes = *args.classes;
  }
  if (args.lora) {
    if (args.lora->empty()) throw InputError(name("lora") + ": empty; leave it out for no LoRA");
    parse_lora(*args.lora, name("lora") + " " + quote(*args.lora));
    spec.lora = *args.lora;
  }
  if (args.quantize) {
    if (args.quantize->empty()) throw InputError(name("quantize") + ": empty; leave it out for unquantized weights");
    spec.quantize = parse_quantize(*args.quantize, name("quantize"));
    if (!args.lora)
      throw InputError(name("quantize") + " " + quote(spec.quantize) +
                       ": quantized weights cannot be trained; QLoRA quantizes the frozen base of a LoRA fine-tune "
                       "(give " +
                       name("lora") + " too)");
  }
  if (args.expert_balance) {
    if (!(*args.expert_balance >= 1.0 && *args.expert_balance <= 1e6))
      throw InputError(name("expert_balance") + " " + shown_number(*args.expert_balance) +
                       ": expected the busiest expert's routed tokens over the mean, 1 (balanced) or more");
    spec.expert_balance = *args.expert_balance;
  }
  if (args.attention) {
    if (args.attention->empty()) throw InputError(name("attention") + ": empty; leave it out for eager");
    if (*args.attention != "eager" && *args.attention != "sdpa")
      throw InputError(name("attention") + " " + quote(*args.attention) + ": expected eager or sdpa");
    spec.attention = *args.attention;
  }
  spec.allow_unknown_ops = args.allow_unknown;
  spec.checkpointing = args.checkpointing;
  return source;
}

}  // namespace dnncast::import
