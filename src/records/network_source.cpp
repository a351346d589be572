#include "records/network_source.h"

#include <map>
#include <mutex>
#include <tuple>

#include "core/error.h"
#include "import/graph_json.h"
#include "models/synthetic.h"
#include "models/zoo.h"

namespace dnncast::records {

namespace {

// A graph file is read once per process (a campaign builds it for every configuration).
const Graph& cached_file_graph(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, Graph> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(path);
  if (found == cache.end()) found = cache.emplace(path, import::load_graph_file(path)).first;
  return found->second;
}

int first_input(const Graph& graph, const std::string& path) {
  std::vector<int> inputs = graph.inputs();
  if (inputs.empty()) throw InputError(path + ": graph has no Input node");
  return inputs.front();
}

// Replaces the batch (and the image size or sequence length) of every Input node, then re-infers.
Graph reshape_file_graph(const std::string& path, const RunConfig& config) {
  Graph graph = cached_file_graph(path);
  for (int index : graph.inputs()) {
    Node& node = graph.mutable_nodes()[static_cast<size_t>(index)];
    std::vector<int64_t> shape = node.attr_ints("shape");
    shape[0] = config.batch;
    if (!config.input.empty() && shape.size() == config.input.size() + 1)
      std::copy(config.input.begin(), config.input.end(), shape.begin() + 1);
    else if (config.seq_len > 0 && shape.size() >= 2)
      shape[1] = config.seq_len;
    node.attrs["shape"] = shape;
  }
  try {
    graph.infer_shapes();
  } catch (const InputError& error) {
    throw error.with_context(path + " at batch " + std::to_string(config.batch));
  }
  return graph;
}

}  // namespace

std::string ModelRef::source() const {
  switch (kind) {
    case Kind::Zoo:
      return "zoo:" + name;
    case Kind::Synthetic:
      return "synthetic:" + std::to_string(seed);
    case Kind::File:
      return "file:" + path;
  }
  DNNCAST_ASSERT(false);
}

bool ModelRef::is_sequence() const {
  switch (kind) {
    case Kind::Zoo:
      return models::zoo_entry(name).kind != "cnn";
    case Kind::Synthetic:
      return false;
    case Kind::File: {
      const Graph& graph = cached_file_graph(path);
      const Node& input = graph.node(first_input(graph, path));
      return input.dtype == DType::I64;
    }
  }
  DNNCAST_ASSERT(false);
}

bool ModelRef::operator<(const ModelRef& other) const {
  return std::tie(kind, name, seed, path) < std::tie(other.kind, other.name, other.seed, other.path);
}

ModelRef parse_model_source(const std::string& source) {
  size_t colon = source.find(':');
  std::string scheme = colon == std::string::npos ? "" : source.substr(0, colon);
  std::string rest = colon == std::string::npos ? source : source.substr(colon + 1);
  ModelRef model;
  if (scheme == "zoo") {
    model.kind = ModelRef::Kind::Zoo;
    model.name = rest;
    models::zoo_entry(rest);  // throws with suggestions when unknown
  } else if (scheme == "synthetic") {
    model.kind = ModelRef::Kind::Synthetic;
    size_t used = 0;
    try {
      model.seed = std::stoll(rest, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != rest.size() || model.seed < 0)
      throw InputError("model source " + quote(source) + ": the seed must be a non-negative integer");
  } else if (scheme == "file") {
    model.kind = ModelRef::Kind::File;
    model.path = rest;
  } else {
    throw InputError("model source " + quote(source) + ": expected zoo:NAME, synthetic:SEED or file:PATH");
  }
  return model;
}

Graph build_network(const ModelRef& model, const RunConfig& config) {
  if (config.batch <= 0) throw InputError("batch must be positive, got " + std::to_string(config.batch));
  models::ModelSpec spec;
  spec.batch = config.batch;
  spec.input = config.input;
  spec.seq_len = config.seq_len;
  switch (model.kind) {
    case ModelRef::Kind::Zoo:
      return models::build_zoo_model(model.name, spec);
    case ModelRef::Kind::Synthetic:
      return models::make_synthetic(static_cast<uint64_t>(model.seed), spec);
    case ModelRef::Kind::File:
      return reshape_file_graph(model.path, config);
  }
  DNNCAST_ASSERT(false);
}

NetworkRecord network_record(const ModelRef& model, const RunConfig& config) {
  RunConfig single = config;
  single.batch = 1;
  Graph graph = build_network(model, single);
  NetworkRecord record;
  record.hash = graph.architecture_hash();
  record.name = model.kind == ModelRef::Kind::File  ? graph.name
                : model.kind == ModelRef::Kind::Zoo ? model.name
                                                    : "synthetic:" + std::to_string(model.seed);
  if (record.name.empty()) record.name = model.path;
  record.family = graph.family.empty() ? "unknown" : graph.family;
  record.source = model.source();
  record.graph_json = import::write_graph_json(graph);
  return record;
}

std::vector<int64_t> file_graph_input(const std::string& path) {
  const Graph& graph = cached_file_graph(path);
  std::vector<int64_t> shape = graph.node(first_input(graph, path)).attr_ints("shape");
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

}  // namespace dnncast::records
